//! Factory Droid: hooks in the user's `~/.factory/settings.json` (the
//! default, `--user`; `FACTORY_HOME_OVERRIDE` moves `~/.factory`) or the
//! workspace's `.factory/settings.json` (`--project`), in Claude Code's shape,
//! as a shell command line `turnback hook droid`. Where a `hooks.json` is
//! beside it, Droid reads hooks from that file alone and ignores the
//! settings' `hooks`: install refuses rather than write hooks Droid would not
//! run (and never makes a `hooks.json` itself).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{AgentHooks, Scope, Wanted, is_our_hook, our_program, shell_quote};

pub(crate) struct Droid;

/// The tools whose calls turnback brackets.
const TOOLS: &str = "Create|Edit|MultiEdit|ApplyPatch|Execute";

/// Droid's directory of the user's settings.
fn config_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("FACTORY_HOME_OVERRIDE").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set: cannot find ~/.factory")?;
    Ok(PathBuf::from(home).join(".factory"))
}

impl AgentHooks for Droid {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Project => ws.join(".factory/settings.json"),
            Scope::Default | Scope::User => config_dir()?.join("settings.json"),
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = json!({
            "type": "command",
            "command": format!("{} hook droid", shell_quote(&exe.to_string_lossy())),
            "timeout": 30,
        });
        let tool = |event| Wanted::new(event, Some(TOOLS), &handler);
        let any = |event| Wanted::new(event, None, &handler);
        vec![
            any("SessionStart"),
            any("UserPromptSubmit"),
            tool("PreToolUse"),
            tool("PostToolUse"),
            any("Stop"),
            any("SessionEnd"),
        ]
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "droid")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "droid")
    }
}

/// The `hooks.json` beside `settings`, when there is one: Droid then reads
/// its hooks from there only.
pub(crate) fn hooks_json_beside(settings: &Path) -> Option<PathBuf> {
    let h = settings.with_file_name("hooks.json");
    h.exists().then_some(h)
}
