//! Codex CLI's hook payloads (`turnback hook codex`): every event carries
//! `session_id`, `cwd`, `hook_event_name` (and, in a turn, `turn_id`); a
//! file edit is `apply_patch` with the whole patch in `tool_input.command`,
//! whose `*** Add File:`, `*** Update File:`, `*** Move to:` and
//! `*** Delete File:` lines name every path it touches, relative to `cwd`.
//! Codex sends no PostToolUse after a failed patch or an interrupt: the
//! next event settles what is open.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::event::{Agent, CallId, EventKind, HookEvent, Tool, ToolCall, digest_of};
use super::payload::{BadEvent, Payload, tool_path};

/// The event of one Codex hook call.
pub(crate) fn parse(p: &Payload) -> Result<HookEvent, BadEvent> {
    let session = p.str("session_id")?.to_owned();
    let name = p.str("hook_event_name")?.to_owned();
    let cwd = p.cwd()?;
    let kind = match name.as_str() {
        "UserPromptSubmit" => EventKind::Prompt {
            prompt: p.str("prompt")?.to_owned(),
        },
        "PreToolUse" => EventKind::Before(tool_call(p, &cwd)?),
        "PostToolUse" => EventKind::After(tool_call(p, &cwd)?),
        _ => EventKind::Other,
    };
    Ok(HookEvent {
        session,
        workspace: cwd,
        name,
        context: p.opt_str("agent_id")?.map(str::to_owned),
        kind,
        late_writes: false,
    })
}

fn tool_call(p: &Payload, cwd: &Path) -> Result<ToolCall, BadEvent> {
    let tool_name = p.str("tool_name")?.to_owned();
    let input = p.get("tool_input").cloned().unwrap_or(Value::Null);
    // The patch is `tool_input.command` (older builds: the input itself, or
    // `patch`/`input`).
    let text = match &input {
        Value::String(s) => Some(s.as_str()),
        Value::Object(m) => ["command", "patch", "input"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str)),
        _ => None,
    };
    let is_patch = text.is_some_and(|t| t.trim_start().starts_with("*** Begin Patch"));
    let tool = match tool_name.as_str() {
        "apply_patch" | "Write" | "Edit" if is_patch => {
            Tool::Files(patch_paths(cwd, text.unwrap_or_default())?)
        }
        "apply_patch" => return Err(BadEvent("`apply_patch` without a patch".into())),
        "Bash" | "shell" | "exec_command" | "local_shell" => match text {
            Some(command) => Tool::Shell {
                command: command.to_owned(),
            },
            None => return Err(BadEvent("`tool_input.command` is missing".into())),
        },
        _ => Tool::Untracked,
    };
    let id = match p.opt_str("tool_use_id")? {
        Some(id) if !id.is_empty() => CallId::Given(id.to_owned()),
        _ => CallId::Digest(digest_of(Agent::Codex, &tool_name, &input)),
    };
    Ok(ToolCall {
        id,
        tool_name,
        tool,
    })
}

/// Every path a patch names (added, updated, moved to, deleted), in order,
/// each once, absolute against `cwd`.
pub(crate) fn patch_paths(cwd: &Path, patch: &str) -> Result<Vec<PathBuf>, BadEvent> {
    const HEADS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    let mut paths: Vec<PathBuf> = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end_matches('\r');
        let Some(name) = HEADS.iter().find_map(|h| line.strip_prefix(h)) else {
            continue;
        };
        let p = tool_path(cwd, name.trim(), "a path of the patch")?;
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    if paths.is_empty() {
        return Err(BadEvent("the patch names no file".into()));
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_every_path_once_moves_included() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: c/d.txt\n@@\n-x\n+y\n*** Delete File: e.txt\n*** Update File: a.txt\n*** End Patch\n";
        let got = patch_paths(Path::new("/w"), patch).unwrap();
        let want: Vec<PathBuf> = ["a.txt", "b.txt", "c/d.txt", "e.txt"]
            .iter()
            .map(|p| Path::new("/w").join(p))
            .collect();
        assert_eq!(got, want);
        assert!(patch_paths(Path::new("/w"), "*** Begin Patch\n*** End Patch").is_err());
    }
}
