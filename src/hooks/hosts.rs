//! The other agents that run Claude Code's hooks (they read
//! `.claude/settings.json`, `.claude/settings.local.json` and
//! `~/.claude/settings.json`), each with payloads of its own, told apart by
//! the payload alone:
//!
//! - VS Code's Copilot agent: runs every hook on every tool call (it ignores
//!   the matcher); `hookEventName`/`sessionId` (older builds) or
//!   `hook_event_name`/`session_id`; its own tool names (`create_file`,
//!   `replace_string_in_file`, `apply_patch`, `run_in_terminal`, …) with
//!   `tool_input.filePath`; a `tool_use_id` ending in `__vscode-N`; and it
//!   reports a file tool done before the file is on disk.
//! - GitHub Copilot CLI: Claude's envelope with its own tools (`create`,
//!   `str_replace`, `edit`, `apply_patch`, `bash`, `powershell`; the path in
//!   `tool_input.path`), `tool_result` after, often no `tool_use_id`.
//! - Cursor: `conversation_id` for the session, `workspace_roots[]`, its tools
//!   (`Write`, `StrReplace`, `Delete`, `ApplyPatch`, `Shell`), its event names
//!   (`preToolUse`) or Claude's.
//!
//! Qwen Code and Factory Droid send Claude's envelope from settings of their
//! own (`turnback hook qwen`, `turnback hook droid`), with their tools: Qwen
//! `write_file`, `edit` (once `replace`), `run_shell_command`; Droid `Create`,
//! `Edit`, `ApplyPatch`, `Execute`. opencode's plugin (`turnback hook
//! opencode`, `install/opencode.rs`) sends the same envelope with opencode's
//! tools: `write` and `edit` (`filePath`), `apply_patch` (`patchText`),
//! `bash` (`command`); each call in a context of its own (`agent_id` is its
//! call id), since opencode runs the calls of one reply at once.
//!
//! Each is parsed into the same event as Claude Code's, so its edits and shell
//! commands are protected; a tool turnback does not need is passed over in
//! silence, as Claude Code's are.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::codex::patch_paths;
use super::event::{CallId, EventKind, HookEvent, Tool, ToolCall, digest_named};
use super::payload::{BadEvent, Payload, absolute, tool_path};

/// Who sent a payload to `turnback hook claude-code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    ClaudeCode,
    VsCode,
    CopilotCli,
    Cursor,
    /// Qwen Code, through its own settings (`turnback hook qwen`).
    Qwen,
    /// Factory Droid, through its own settings (`turnback hook droid`).
    Droid,
    /// opencode, through turnback's plugin (`turnback hook opencode`).
    Opencode,
}

/// VS Code's file tools (and their names as the extension contributes them).
const VSCODE_FILES: [&str; 16] = [
    "create_file",
    "replace_string_in_file",
    "multi_replace_string_in_file",
    "insert_edit_into_file",
    "edit_notebook_file",
    "apply_patch",
    "editFiles",
    "edit_files",
    "copilot_createFile",
    "copilot_replaceString",
    "copilot_multiReplaceString",
    "copilot_insertEdit",
    "copilot_editNotebook",
    "copilot_applyPatch",
    "copilot_editFiles",
    "createFile",
];
const VSCODE_SHELL: [&str; 2] = ["run_in_terminal", "runTerminalCommand"];
/// Copilot CLI's tools that change files, and its shells.
const COPILOT_FILES: [&str; 6] = [
    "create",
    "str_replace",
    "edit",
    "insert",
    "str_replace_editor",
    "apply_patch",
];
const COPILOT_SHELL: [&str; 2] = ["bash", "powershell"];

impl Host {
    /// The host of `p`, from the fields only it sends.
    pub(crate) fn of(p: &Payload) -> Host {
        let has = |k: &str| p.get(k).is_some();
        let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        if has("conversation_id") || has("workspace_roots") || has("cursor_version") {
            return Host::Cursor;
        }
        let transcript = text("transcript_path").to_ascii_lowercase();
        if has("hookEventName")
            || has("sessionId")
            || text("tool_use_id").contains("__vscode")
            || transcript.contains("github.copilot-chat")
        {
            return Host::VsCode;
        }
        let tool = text("tool_name");
        if has("tool_result") || COPILOT_FILES.contains(&tool) || COPILOT_SHELL.contains(&tool) {
            return Host::CopilotCli;
        }
        if VSCODE_FILES.contains(&tool) || VSCODE_SHELL.contains(&tool) {
            return Host::VsCode;
        }
        Host::ClaudeCode
    }

    /// The host's name in the ids turnback makes for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::VsCode => "vscode",
            Host::CopilotCli => "copilot-cli",
            Host::Cursor => "cursor",
            Host::Qwen => "qwen",
            Host::Droid => "droid",
            Host::Opencode => "opencode",
        }
    }
}

/// The event of one hook call of `host` (not Claude Code).
pub(crate) fn parse(host: Host, p: &Payload) -> Result<HookEvent, BadEvent> {
    let name = first_str(p, &["hook_event_name", "hookEventName"])?.unwrap_or_default();
    let cwd = match first_str(p, &["cwd"])? {
        Some(dir) if !dir.is_empty() => absolute(&dir, "cwd")?,
        // VS Code leaves `cwd` out unless the hook names one: the hook runs
        // in the workspace.
        _ => match roots(p).first() {
            Some(root) => root.clone(),
            None => std::env::current_dir()
                .map_err(|e| BadEvent(format!("no `cwd`, and no current directory: {e}")))?,
        },
    };
    let kind = match name.as_str() {
        "UserPromptSubmit" | "userPromptSubmitted" | "beforeSubmitPrompt" => EventKind::Prompt {
            prompt: first_str(p, &["prompt"])?.unwrap_or_default(),
        },
        "PreToolUse" | "preToolUse" => EventKind::Before(tool_call(host, p, &cwd)?),
        "PostToolUse" | "postToolUse" => {
            let call = tool_call(host, p, &cwd)?;
            if failed(p) {
                EventKind::Failed(call)
            } else {
                EventKind::After(call)
            }
        }
        "PostToolUseFailure" | "postToolUseFailure" | "PermissionDenied" => {
            EventKind::Failed(tool_call(host, p, &cwd)?)
        }
        // Cursor's own shell events: the command at the top level.
        "beforeShellExecution" => EventKind::Before(shell_event(host, p)?),
        "afterShellExecution" => EventKind::After(shell_event(host, p)?),
        _ => EventKind::Other,
    };
    let workspace = workspace(p, &kind, &cwd);
    let session = session(host, p, &workspace)?;
    Ok(HookEvent {
        session,
        workspace,
        name,
        context: first_str(p, &["agent_id"])?,
        kind,
        late_writes: host == Host::VsCode,
    })
}

/// The first of `keys` that is there, as a string (null is absent).
fn first_str(p: &Payload, keys: &[&str]) -> Result<Option<String>, BadEvent> {
    for k in keys {
        if let Some(s) = p.opt_str(k)? {
            return Ok(Some(s.to_owned()));
        }
    }
    Ok(None)
}

/// Cursor's `workspace_roots`, those that are absolute paths.
fn roots(p: &Payload) -> Vec<PathBuf> {
    p.get("workspace_roots")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter_map(|r| absolute(r, "workspace_roots").ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The workspace: `CLAUDE_PROJECT_DIR` if the host sets it; else, of several
/// roots, the one that holds the tool's first path (or `cwd`); else `cwd`.
fn workspace(p: &Payload, kind: &EventKind, cwd: &Path) -> PathBuf {
    if let Ok(dir) = std::env::var("CLAUDE_PROJECT_DIR")
        && let Ok(dir) = absolute(&dir, "CLAUDE_PROJECT_DIR")
    {
        return dir;
    }
    let roots = roots(p);
    let first = match kind {
        EventKind::Before(c) | EventKind::After(c) | EventKind::Failed(c) => match &c.tool {
            Tool::Files(paths) => paths.first().cloned(),
            _ => None,
        },
        _ => None,
    };
    let target = first.unwrap_or_else(|| cwd.to_owned());
    roots
        .iter()
        .find(|r| target.starts_with(r))
        .or(roots.first())
        .cloned()
        .unwrap_or_else(|| cwd.to_owned())
}

/// The session: the host's id where it is a valid turnback session id, else
/// one made from it (VS Code once sent a URI), or from the workspace when
/// none came.
fn session(host: Host, p: &Payload, workspace: &Path) -> Result<String, BadEvent> {
    let given = first_str(p, &["session_id", "sessionId", "conversation_id"])?;
    Ok(match given {
        Some(id) if turnback_store::validate_session_id(&id).is_ok() => id,
        Some(id) => digest_named(host.name(), "session", &Value::String(id)),
        None => {
            let ws = workspace.to_string_lossy().into_owned();
            digest_named(host.name(), "workspace", &Value::String(ws))
        }
    })
}

/// True when an After reports that the tool failed (Copilot CLI's
/// `tool_result`, Claude's interrupted `tool_response`).
fn failed(p: &Payload) -> bool {
    let result = p
        .get("tool_result")
        .and_then(|r| r.get("result_type"))
        .and_then(Value::as_str);
    let interrupted = p
        .get("tool_response")
        .and_then(|r| r.get("interrupted"))
        .and_then(Value::as_bool);
    matches!(result, Some("failure" | "rejected" | "denied")) || interrupted == Some(true)
}

fn tool_call(host: Host, p: &Payload, cwd: &Path) -> Result<ToolCall, BadEvent> {
    let tool_name = first_str(p, &["tool_name", "toolName"])?.unwrap_or_default();
    let input = p
        .get("tool_input")
        .or(p.get("toolArgs"))
        .cloned()
        .unwrap_or(Value::Null);
    let tool = tool_of(host, &tool_name, &input, cwd)?;
    Ok(ToolCall {
        id: call_id(host, p, &tool_name, &input)?,
        tool_name,
        tool,
    })
}

/// Cursor's `beforeShellExecution`/`afterShellExecution`: `command` at the
/// top level, no call id.
fn shell_event(host: Host, p: &Payload) -> Result<ToolCall, BadEvent> {
    let command =
        first_str(p, &["command"])?.ok_or_else(|| BadEvent("`command` is missing".into()))?;
    let input = Value::String(command.clone());
    Ok(ToolCall {
        id: call_id(host, p, "Shell", &input)?,
        tool_name: "Shell".into(),
        tool: Tool::Shell { command },
    })
}

fn call_id(host: Host, p: &Payload, tool: &str, input: &Value) -> Result<CallId, BadEvent> {
    Ok(match first_str(p, &["tool_use_id", "toolUseId"])? {
        Some(id) if !id.is_empty() => CallId::Given(id),
        _ => CallId::Digest(digest_named(host.name(), tool, input)),
    })
}

/// What the host's tool `name` touches.
fn tool_of(host: Host, name: &str, input: &Value, cwd: &Path) -> Result<Tool, BadEvent> {
    const PATHS: [&str; 5] = [
        "filePath",
        "file_path",
        "path",
        "notebook_path",
        "target_notebook",
    ];
    let one = || Ok(Tool::Files(vec![path_in(input, &PATHS, cwd)?]));
    let shell = || -> Result<Tool, BadEvent> {
        match input.get("command").and_then(Value::as_str) {
            Some(c) => Ok(Tool::Shell {
                command: c.to_owned(),
            }),
            None => Err(BadEvent("`tool_input.command` is missing".into())),
        }
    };
    match (host, name) {
        (Host::VsCode, "multi_replace_string_in_file" | "copilot_multiReplaceString") => {
            let list = input.get("replacements").and_then(Value::as_array);
            let items: Vec<&Value> = list.map(|l| l.iter().collect()).unwrap_or_default();
            paths_of(items, &PATHS, cwd)
        }
        (Host::VsCode, "editFiles" | "edit_files" | "copilot_editFiles") => {
            let list = input.get("files").and_then(Value::as_array);
            let items: Vec<&Value> = list.map(|l| l.iter().collect()).unwrap_or_default();
            paths_of(items, &PATHS, cwd)
        }
        (Host::VsCode | Host::CopilotCli, "apply_patch" | "copilot_applyPatch")
        | (Host::Cursor, "ApplyPatch") => patch(input, &PATHS, cwd),
        (Host::VsCode, n) if VSCODE_FILES.contains(&n) => one(),
        (Host::VsCode, n) if VSCODE_SHELL.contains(&n) => shell(),
        // `str_replace_editor` also views a file.
        (Host::CopilotCli, "str_replace_editor")
            if input.get("command").and_then(Value::as_str) == Some("view") =>
        {
            Ok(Tool::Untracked)
        }
        (Host::CopilotCli, n) if COPILOT_FILES.contains(&n) => one(),
        (Host::CopilotCli, n) if COPILOT_SHELL.contains(&n) => shell(),
        (
            Host::Cursor,
            "Write" | "Edit" | "MultiEdit" | "StrReplace" | "Delete" | "EditNotebook"
            | "NotebookEdit",
        ) => one(),
        (Host::Cursor, "Shell" | "Bash") => shell(),
        // Qwen Code: Gemini CLI's tools (`edit` was `replace`).
        (Host::Qwen, "write_file" | "edit" | "replace") => one(),
        (Host::Qwen, "run_shell_command") => shell(),
        (Host::Droid, "ApplyPatch") => patch(input, &PATHS, cwd),
        (Host::Droid, "Create" | "Edit" | "MultiEdit" | "Write") => one(),
        (Host::Droid, "Execute") => shell(),
        (Host::Opencode, "apply_patch") => patch(input, &PATHS, cwd),
        (Host::Opencode, "write" | "edit" | "multiedit") => one(),
        (Host::Opencode, "bash") => shell(),
        _ => Ok(Tool::Untracked),
    }
}

/// The first of `keys` in `input` that is a path, against `cwd`.
fn path_in(input: &Value, keys: &[&str], cwd: &Path) -> Result<PathBuf, BadEvent> {
    let text = keys
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .ok_or_else(|| BadEvent(format!("`tool_input` names no file ({})", keys.join(", "))))?;
    tool_path(cwd, text, "the tool's file")
}

/// Every path a list names (each a string, or an object with a path), in
/// order, each once.
fn paths_of(items: Vec<&Value>, keys: &[&str], cwd: &Path) -> Result<Tool, BadEvent> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for item in items {
        let p = match item.as_str() {
            Some(text) => tool_path(cwd, text, "the tool's file")?,
            None => path_in(item, keys, cwd)?,
        };
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    if paths.is_empty() {
        return Err(BadEvent("`tool_input` names no file".into()));
    }
    Ok(Tool::Files(paths))
}

/// A patch tool: every path its patch text names (the input itself, or its
/// `input`, `patch` or `command`), else the file its input names.
fn patch(input: &Value, keys: &[&str], cwd: &Path) -> Result<Tool, BadEvent> {
    let text = match input {
        Value::String(s) => Some(s.as_str()),
        _ => ["input", "patch", "patchText", "command"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str)),
    };
    match text {
        Some(t) if t.contains("*** ") => Ok(Tool::Files(patch_paths(cwd, t)?)),
        _ => Ok(Tool::Files(vec![path_in(input, keys, cwd)?])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(v: Value) -> Payload {
        match v {
            Value::Object(m) => Payload(m),
            _ => unreachable!(),
        }
    }

    #[test]
    fn each_host_is_told_by_its_payload() {
        let cases = [
            (
                json!({"hook_event_name": "PreToolUse", "tool_name": "Write"}),
                Host::ClaudeCode,
            ),
            (json!({"hook_event_name": "Stop"}), Host::ClaudeCode),
            (
                json!({"hookEventName": "PreToolUse", "tool_name": "read_file"}),
                Host::VsCode,
            ),
            (
                json!({"tool_use_id": "toolu_1__vscode-17", "tool_name": "x"}),
                Host::VsCode,
            ),
            (json!({"tool_name": "replace_string_in_file"}), Host::VsCode),
            (
                json!({"tool_name": "str_replace", "session_id": "s"}),
                Host::CopilotCli,
            ),
            (
                json!({"tool_name": "view", "tool_result": {}}),
                Host::CopilotCli,
            ),
            (
                json!({"conversation_id": "c", "tool_name": "Write"}),
                Host::Cursor,
            ),
            (
                json!({"workspace_roots": ["/w"], "tool_name": "Shell"}),
                Host::Cursor,
            ),
        ];
        for (v, want) in cases {
            assert_eq!(Host::of(&payload(v.clone())), want, "{v}");
        }
    }

    #[test]
    fn a_patch_or_a_list_names_every_file_once() {
        let cwd = Path::new("/w");
        let patch = json!({"input": "*** Begin Patch\n*** Update File: /w/a.ts\n@@\n-x\n+y\n*** Add File: b.ts\n+z\n*** End Patch"});
        let got = tool_of(Host::VsCode, "apply_patch", &patch, cwd).unwrap();
        assert_eq!(got, Tool::Files(vec!["/w/a.ts".into(), "/w/b.ts".into()]));
        let multi = json!({"replacements": [{"filePath": "/w/a.ts"}, {"filePath": "/w/c.ts"}, {"filePath": "/w/a.ts"}]});
        let got = tool_of(Host::VsCode, "multi_replace_string_in_file", &multi, cwd).unwrap();
        assert_eq!(got, Tool::Files(vec!["/w/a.ts".into(), "/w/c.ts".into()]));
        let view = json!({"command": "view", "path": "/w/a.ts"});
        let got = tool_of(Host::CopilotCli, "str_replace_editor", &view, cwd).unwrap();
        assert_eq!(got, Tool::Untracked);
        let read = json!({"filePath": "/w/a.ts"});
        assert_eq!(
            tool_of(Host::VsCode, "read_file", &read, cwd).unwrap(),
            Tool::Untracked
        );
    }
}
