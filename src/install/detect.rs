//! Which agents are on this machine, for `turnback install` with no agent
//! named: an agent's program on `PATH`, or its configuration directory in the
//! user's home (where its settings would be).

use std::path::{Path, PathBuf};

use crate::hooks::event::Agent;

/// Every agent turnback installs into, in the order install and doctor list
/// them.
pub(crate) const AGENTS: [Agent; 8] = [
    Agent::ClaudeCode,
    Agent::Codex,
    Agent::Gemini,
    Agent::Cursor,
    Agent::Copilot,
    Agent::Qwen,
    Agent::Droid,
    Agent::Opencode,
];

/// The programs that are `agent`.
fn programs(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::ClaudeCode => &["claude"],
        Agent::Codex => &["codex"],
        Agent::Gemini => &["gemini"],
        Agent::Cursor => &["cursor", "cursor-agent"],
        Agent::Copilot => &["copilot"],
        Agent::Qwen => &["qwen"],
        Agent::Droid => &["droid"],
        Agent::Opencode => &["opencode"],
    }
}

/// `agent`'s configuration directory: its variable's, else the one in HOME.
fn config_dir(agent: Agent) -> Option<PathBuf> {
    let (var, dir) = match agent {
        Agent::ClaudeCode => (Some("CLAUDE_CONFIG_DIR"), ".claude"),
        Agent::Codex => (Some("CODEX_HOME"), ".codex"),
        Agent::Gemini => (None, ".gemini"),
        Agent::Cursor => (None, ".cursor"),
        Agent::Copilot => (Some("COPILOT_HOME"), ".copilot"),
        Agent::Qwen => (None, ".qwen"),
        Agent::Droid => (Some("FACTORY_HOME_OVERRIDE"), ".factory"),
        // `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`.
        Agent::Opencode => return super::opencode::user_dir(),
    };
    if let Some(v) = var.and_then(std::env::var_os).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(dir))
}

/// Why `agent` counts as installed here (`None`: it is not found).
pub(crate) fn found(agent: Agent) -> Option<String> {
    if let Some(p) = programs(agent).iter().find_map(|p| on_path(p)) {
        return Some(format!("{} on PATH", p.display()));
    }
    config_dir(agent)
        .filter(|d| d.is_dir())
        .map(|d| format!("{} exists", d.display()))
}

/// `program` in a directory of `PATH`, an executable file.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
