//! Gemini CLI: hooks in `~/.gemini/settings.json` (the default, `--user`)
//! or the workspace's `.gemini/settings.json` (`--project`, which Gemini CLI
//! runs after asking once). Its hook command is a shell command line, so the
//! binary's path is quoted; timeouts are in milliseconds.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{AgentHooks, Scope, Wanted, is_our_hook, our_program, shell_quote};

pub(crate) struct Gemini;

/// The tools whose calls turnback brackets (a regex to Gemini CLI).
const TOOLS: &str = "write_file|replace|run_shell_command";

/// The name the hooks carry in Gemini CLI's lists.
const NAME: &str = "turnback";

impl AgentHooks for Gemini {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Project => ws.join(".gemini/settings.json"),
            Scope::Default | Scope::User => {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .ok_or("HOME is not set: cannot find ~/.gemini")?;
                PathBuf::from(home).join(".gemini/settings.json")
            }
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = json!({
            "name": NAME,
            "type": "command",
            "command": format!("{} hook gemini", shell_quote(&exe.to_string_lossy())),
            "timeout": 30_000,
        });
        let tool = |event| Wanted::new(event, Some(TOOLS), &handler);
        let any = |event| Wanted::new(event, None, &handler);
        vec![
            any("SessionStart"),
            any("BeforeAgent"),
            tool("BeforeTool"),
            tool("AfterTool"),
            any("AfterAgent"),
            any("SessionEnd"),
        ]
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "gemini")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "gemini")
    }

    /// Gemini CLI strips comments from its settings before it parses them.
    fn comments(&self) -> bool {
        true
    }
}
