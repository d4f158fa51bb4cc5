//! Cursor: hooks in the workspace's `.cursor/hooks.json` (the default, and
//! `--project`) or the user's `~/.cursor/hooks.json` (`--user`), on Cursor's
//! generic `preToolUse`/`postToolUse` (its `afterFileEdit` comes after the
//! write: too late to back anything up). Each hook is a handler in its
//! event's list, its matcher in it (`{"version": 1, "hooks": {"preToolUse":
//! [{"command": …, "matcher": …}]}}`); its command is a shell command line,
//! so the binary's path is quoted; timeouts are in seconds.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{AgentHooks, Layout, Scope, Wanted, is_our_hook, our_program, shell_quote};

pub(crate) struct Cursor;

/// The tools whose calls turnback brackets: its file tools and its shell.
const TOOLS: &str = "Write|StrReplace|Delete|ApplyPatch|EditNotebook|Shell";

/// Every hook waits at most this long (seconds).
const TIMEOUT: u64 = 30;

impl AgentHooks for Cursor {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Default | Scope::Project => ws.join(".cursor/hooks.json"),
            Scope::User => {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .ok_or("HOME is not set: cannot find ~/.cursor")?;
                PathBuf::from(home).join(".cursor/hooks.json")
            }
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let command = format!("{} hook cursor", shell_quote(&exe.to_string_lossy()));
        let any = |event| {
            let handler = json!({"command": command, "timeout": TIMEOUT});
            Wanted::new(event, None, &handler)
        };
        let tool = |event| {
            let handler = json!({"command": command, "matcher": TOOLS, "timeout": TIMEOUT});
            Wanted::new(event, Some(TOOLS), &handler)
        };
        vec![
            any("beforeSubmitPrompt"),
            tool("preToolUse"),
            tool("postToolUse"),
            tool("postToolUseFailure"),
            any("stop"),
            any("sessionEnd"),
        ]
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "cursor")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "cursor")
    }

    fn layout(&self) -> Layout {
        Layout::Flat
    }

    /// Cursor's hooks files carry their format's version.
    fn preamble(&self) -> Vec<(&'static str, Value)> {
        vec![("version", json!(1))]
    }
}
