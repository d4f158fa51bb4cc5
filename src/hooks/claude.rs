//! Claude Code's hook payloads (`turnback hook claude-code`): every event
//! carries `session_id`, `cwd`, `hook_event_name`; tool events `tool_name`,
//! `tool_input`, `tool_use_id`. `CLAUDE_PROJECT_DIR` names the workspace.
//! Other agents run these hooks too, with payloads of their own: those go to
//! `hosts.rs`.

use super::event::{Agent, CallId, EventKind, HookEvent, Tool, ToolCall, digest_of};
use super::hosts::{self, Host};
use super::payload::{BadEvent, Payload, input_str, tool_path, workspace_from};

/// The event of one Claude Code hook call.
pub(crate) fn parse(p: &Payload) -> Result<HookEvent, BadEvent> {
    let host = Host::of(p);
    if host != Host::ClaudeCode {
        return hosts::parse(host, p);
    }
    let session = p.str("session_id")?.to_owned();
    let name = p.str("hook_event_name")?.to_owned();
    let cwd = p.cwd()?;
    let workspace = workspace_from("CLAUDE_PROJECT_DIR", &cwd)?;
    let call = || tool_call(p, &cwd);
    let kind = match name.as_str() {
        "UserPromptSubmit" => EventKind::Prompt {
            prompt: p.str("prompt")?.to_owned(),
        },
        "PreToolUse" => EventKind::Before(call()?),
        "PostToolUse" => {
            let c = call()?;
            // A Bash call cut short reports itself in its response.
            let interrupted = p
                .get("tool_response")
                .and_then(|r| r.get("interrupted"))
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            if interrupted {
                EventKind::Failed(c)
            } else {
                EventKind::After(c)
            }
        }
        "PostToolUseFailure" | "PermissionDenied" => EventKind::Failed(call()?),
        _ => EventKind::Other,
    };
    Ok(HookEvent {
        session,
        workspace,
        name,
        context: p.opt_str("agent_id")?.map(str::to_owned),
        kind,
        late_writes: false,
    })
}

fn tool_call(p: &Payload, cwd: &std::path::Path) -> Result<ToolCall, BadEvent> {
    let tool_name = p.str("tool_name")?.to_owned();
    let input = p.tool_input()?;
    let tool = match tool_name.as_str() {
        "Write" | "Edit" | "MultiEdit" => Tool::Files(vec![tool_path(
            cwd,
            input_str(&input, "file_path")?,
            "tool_input.file_path",
        )?]),
        "NotebookEdit" => Tool::Files(vec![tool_path(
            cwd,
            input_str(&input, "notebook_path")?,
            "tool_input.notebook_path",
        )?]),
        "Bash" => Tool::Shell {
            command: input_str(&input, "command")?.to_owned(),
        },
        _ => Tool::Untracked,
    };
    // Older builds (mid-2025) send no tool_use_id: the input names the call.
    let id = match p.opt_str("tool_use_id")? {
        Some(id) if !id.is_empty() => CallId::Given(id.to_owned()),
        _ => CallId::Digest(digest_of(
            Agent::ClaudeCode,
            &tool_name,
            &serde_json::Value::Object(input),
        )),
    };
    Ok(ToolCall {
        id,
        tool_name,
        tool,
    })
}
