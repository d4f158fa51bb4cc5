//! Qwen Code: hooks in the workspace's `.qwen/settings.json` (the default,
//! `--project`) or the user's `~/.qwen/settings.json` (`--user`), in Claude
//! Code's shape (`PreToolUse`, a matcher, `{"type": "command", …}`), as a
//! shell command line `turnback hook qwen` (timeouts in milliseconds).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{AgentHooks, Scope, Wanted, is_our_hook, our_program, shell_quote};

pub(crate) struct Qwen;

/// The tools whose calls turnback brackets (`edit` was once `replace`).
const TOOLS: &str = "write_file|edit|replace|run_shell_command";

impl AgentHooks for Qwen {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Default | Scope::Project => ws.join(".qwen/settings.json"),
            Scope::User => {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .ok_or("HOME is not set: cannot find ~/.qwen")?;
                PathBuf::from(home).join(".qwen/settings.json")
            }
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = json!({
            "type": "command",
            "command": format!("{} hook qwen", shell_quote(&exe.to_string_lossy())),
            "timeout": 30_000,
        });
        let tool = |event| Wanted::new(event, Some(TOOLS), &handler);
        let any = |event| Wanted::new(event, None, &handler);
        vec![
            any("SessionStart"),
            any("UserPromptSubmit"),
            tool("PreToolUse"),
            tool("PostToolUse"),
            tool("PostToolUseFailure"),
            any("Stop"),
            any("SessionEnd"),
        ]
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "qwen")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "qwen")
    }

    /// Qwen Code reads its settings as Gemini CLI does, comments and all.
    fn comments(&self) -> bool {
        true
    }
}
