//! GitHub Copilot CLI: turnback's own hooks file, `~/.copilot/hooks/turnback.json`
//! (the default, `--user`; `COPILOT_HOME` moves `~/.copilot`) or the
//! repository's `.github/hooks/turnback.json` (`--project`), in Copilot's
//! format: `{"version": 1, "hooks": {EVENT: [{"type": "command", "bash": …,
//! "timeoutSec": 30}]}}`, each handler in its event's list. The events carry
//! Claude Code's PascalCase names: under those Copilot CLI sends the
//! snake_case, Claude-shaped payload (`hook_event_name`, `session_id`,
//! `tool_name`, `tool_input`), which `turnback hook copilot` reads. Its
//! handlers have no matcher: every tool call runs the hook, which passes
//! over the tools that change nothing in silence. A file of that name that
//! holds anything but turnback's hooks is the user's: install and uninstall
//! refuse it, untouched.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{AgentHooks, Layout, Scope, Wanted, is_our_hook, our_program, shell_quote};

pub(crate) struct Copilot;

/// The file's name in its directory.
pub(crate) const FILE: &str = "turnback.json";

/// Every hook waits at most this long (seconds).
const TIMEOUT: u64 = 30;

/// Copilot CLI's directory of the user's settings.
fn config_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("COPILOT_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set: cannot find ~/.copilot")?;
    Ok(PathBuf::from(home).join(".copilot"))
}

impl AgentHooks for Copilot {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Project => ws.join(".github/hooks").join(FILE),
            Scope::Default | Scope::User => config_dir()?.join("hooks").join(FILE),
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = json!({
            "type": "command",
            "bash": format!("{} hook copilot", shell_quote(&exe.to_string_lossy())),
            "timeoutSec": TIMEOUT,
        });
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd",
        ]
        .into_iter()
        .map(|event| Wanted::new(event, None, &handler))
        .collect()
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "copilot")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "copilot")
    }

    fn layout(&self) -> Layout {
        Layout::Flat
    }

    /// Copilot's hooks files carry their format's version.
    fn preamble(&self) -> Vec<(&'static str, Value)> {
        vec![("version", json!(1))]
    }
}

/// Why a file at turnback's path is not turnback's (`None` when it holds
/// nothing but `version` and turnback's hooks).
pub(crate) fn not_ours(settings: &Map<String, Value>) -> Option<String> {
    if let Some(k) = settings.keys().find(|k| *k != "version" && *k != "hooks") {
        return Some(format!("it has a `{k}` turnback does not write"));
    }
    let hooks = match settings.get("hooks") {
        None => return None,
        Some(Value::Object(h)) => h,
        Some(_) => return Some("its `hooks` is not an object".into()),
    };
    for (event, list) in hooks {
        let Value::Array(list) = list else {
            return Some(format!("its `hooks.{event}` is not a list"));
        };
        if list.iter().any(|h| !Copilot.is_ours(h)) {
            return Some(format!(
                "its `hooks.{event}` holds a hook that is not turnback's"
            ));
        }
    }
    None
}

/// True when `settings` holds nothing turnback would keep: no hooks, at
/// most the `version` install wrote.
pub(crate) fn is_empty(settings: &Map<String, Value>) -> bool {
    settings.keys().all(|k| k == "version")
}
