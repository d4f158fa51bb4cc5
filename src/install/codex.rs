//! Codex CLI: hooks in `$CODEX_HOME/hooks.json` (the default, `--user`;
//! `CODEX_HOME` defaults to `~/.codex`) or the workspace's
//! `.codex/hooks.json` (`--project`, loaded in a trusted project). Its hook
//! command is a shell command line, so the binary's path is quoted.
//!
//! Codex skips a hook it does not trust, without a word. Trust is a hash of
//! each hook's definition kept in its `config.toml`; the installed Codex
//! computes it: `codex app-server` answers `hooks/list` with each hook's
//! `currentHash` and `trustStatus`, and `config/batchWrite` records it
//! (`codex_trust.rs`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{AgentHooks, Scope, Wanted, is_our_hook, our_program, shell_quote};

pub(crate) struct Codex;

/// Every hook waits at most this long (seconds).
const TIMEOUT: u64 = 30;

/// Codex's home: `CODEX_HOME`, else `~/.codex`.
pub(crate) fn codex_home() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("CODEX_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set: cannot find ~/.codex")?;
    Ok(PathBuf::from(home).join(".codex"))
}

impl AgentHooks for Codex {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Project => ws.join(".codex/hooks.json"),
            Scope::Default | Scope::User => codex_home()?.join("hooks.json"),
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = json!({
            "type": "command",
            "command": format!("{} hook codex", shell_quote(&exe.to_string_lossy())),
            "timeout": TIMEOUT,
        });
        let tool = |event| Wanted::new(event, Some("*"), &handler);
        let any = |event| Wanted::new(event, None, &handler);
        // Codex gives these two at most 3 s, and says so on every run when
        // a hook asks for more.
        let mut brief = handler.clone();
        brief["timeout"] = json!(3);
        let end = |event| Wanted::new(event, None, &brief);
        vec![
            any("SessionStart"),
            any("UserPromptSubmit"),
            tool("PreToolUse"),
            tool("PostToolUse"),
            any("Stop"),
            // Codex fires no PostToolUse after an interrupt or a failed
            // patch: these settle what is left open.
            end("Interrupt"),
            end("SessionEnd"),
        ]
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "codex")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "codex")
    }
}
