//! Gemini CLI's hook payloads (`turnback hook gemini`): `BeforeAgent` opens
//! a turn, `BeforeTool`/`AfterTool` bracket a tool. No tool-call id reaches
//! a hook, so a call is named by a digest of its tool name and exact input;
//! a `file_path` may be relative to `cwd`. `GEMINI_PROJECT_DIR` names the
//! workspace.

use super::event::{Agent, CallId, EventKind, HookEvent, Tool, ToolCall, digest_of};
use super::payload::{BadEvent, Payload, input_str, tool_path, workspace_from};

/// The event of one Gemini CLI hook call.
pub(crate) fn parse(p: &Payload) -> Result<HookEvent, BadEvent> {
    let session = p.str("session_id")?.to_owned();
    let name = p.str("hook_event_name")?.to_owned();
    let cwd = p.cwd()?;
    let workspace = workspace_from("GEMINI_PROJECT_DIR", &cwd)?;
    let kind = match name.as_str() {
        "BeforeAgent" => EventKind::Prompt {
            prompt: p.str("prompt")?.to_owned(),
        },
        "BeforeTool" => EventKind::Before(tool_call(p, &cwd)?),
        "AfterTool" => {
            let c = tool_call(p, &cwd)?;
            // A failed `replace` still fires AfterTool, with an error.
            let failed = p
                .get("tool_response")
                .and_then(|r| r.get("error"))
                .is_some_and(|e| !e.is_null());
            if failed {
                EventKind::Failed(c)
            } else {
                EventKind::After(c)
            }
        }
        _ => EventKind::Other,
    };
    Ok(HookEvent {
        session,
        workspace,
        name,
        context: None,
        kind,
        late_writes: false,
    })
}

fn tool_call(p: &Payload, cwd: &std::path::Path) -> Result<ToolCall, BadEvent> {
    let tool_name = p.str("tool_name")?.to_owned();
    let input = p.tool_input()?;
    let tool = match tool_name.as_str() {
        "write_file" | "replace" => Tool::Files(vec![tool_path(
            cwd,
            input_str(&input, "file_path")?,
            "tool_input.file_path",
        )?]),
        "run_shell_command" => Tool::Shell {
            command: input_str(&input, "command")?.to_owned(),
        },
        _ => Tool::Untracked,
    };
    let id = CallId::Digest(digest_of(
        Agent::Gemini,
        &tool_name,
        &serde_json::Value::Object(input),
    ));
    Ok(ToolCall {
        id,
        tool_name,
        tool,
    })
}
