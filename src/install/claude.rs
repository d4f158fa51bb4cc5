//! Claude Code: hooks in `.claude/settings.local.json` (the default: this
//! workspace, not committed), `.claude/settings.json` (`--project`) or
//! `~/.claude/settings.json` (`--user`; `CLAUDE_CONFIG_DIR` moves `~/.claude`),
//! in exec form (`command` is the binary, `args` its arguments: no shell).
//! Its slash commands `/turnback-undo`, `/turnback-rewind`, `/turnback-log`
//! go in the `commands/` beside the settings.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{AgentHooks, Scope, Wanted, is_our_hook, our_program};

pub(crate) struct ClaudeCode;

/// The tools whose calls turnback brackets (matched by exact name).
const TOOLS: &str = "Write|Edit|MultiEdit|NotebookEdit|Bash";

/// Every hook waits at most this long (seconds); a file's mark is waited
/// for 10 s at most.
const TIMEOUT: u64 = 30;

/// The line that marks a slash command file as turnback's own.
pub(crate) const COMMAND_MARK: &str = "<!-- written by `turnback install claude-code`; `turnback uninstall claude-code` removes it -->";

/// Claude Code's directory of the user's settings.
fn config_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set: cannot find ~/.claude")?;
    Ok(PathBuf::from(home).join(".claude"))
}

impl AgentHooks for ClaudeCode {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Default => ws.join(".claude/settings.local.json"),
            Scope::Project => ws.join(".claude/settings.json"),
            Scope::User => config_dir()?.join("settings.json"),
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = json!({
            "type": "command",
            "command": exe.to_string_lossy(),
            "args": ["hook", "claude-code"],
            "timeout": TIMEOUT,
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
        // Exec form as install writes it, or a shell form written by hand.
        is_our_hook(handler, "claude-code")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "claude-code")
    }
}

/// Where the slash commands of `scope` go: the `commands/` beside its
/// settings file.
pub(crate) fn commands_dir(scope: Scope, ws: &Path) -> Result<PathBuf, String> {
    Ok(match scope {
        Scope::Default | Scope::Project => ws.join(".claude/commands"),
        Scope::User => config_dir()?.join("commands"),
    })
}

/// The slash commands: (file name, contents) running `exe`.
pub(crate) fn slash_commands(exe: &Path) -> Vec<(&'static str, String)> {
    let q = super::shell_quote(&exe.to_string_lossy());
    let make = |what: &str, tools: &str, body: String| {
        format!("---\ndescription: {what}\nallowed-tools: {tools}\n---\n{COMMAND_MARK}\n\n{body}\n")
    };
    let bash = |sub: &str| format!("Bash({q} {sub}:*)");
    vec![
        (
            "turnback-undo.md",
            make(
                "Undo the newest change turnback backed up in this workspace",
                &bash("undo"),
                format!(
                    "Run this command with the Bash tool, exactly as written, and show the user its whole output:\n\n    {q} undo $ARGUMENTS\n\nDo not change any file yourself. If it is refused because a file changed since, tell the user and show them the command with `--force`; do not run that yourself."
                ),
            ),
        ),
        (
            "turnback-rewind.md",
            make(
                "Rewind this workspace to the start of a turn (turnback rewind --turn N)",
                &format!("{}, {}", bash("rewind"), bash("log")),
                format!(
                    "If a turn number was given (`$ARGUMENTS`), run this command with the Bash tool and show the user its whole output:\n\n    {q} rewind --turn $ARGUMENTS\n\nIf none was given, run `{q} log` instead, show the user its output, and ask which turn to go back to. Do not change any file yourself."
                ),
            ),
        ),
        (
            "turnback-log.md",
            make(
                "Show what turnback backed up in this workspace, by message",
                &bash("log"),
                format!(
                    "Run this command with the Bash tool, exactly as written, and show the user its whole output:\n\n    {q} log $ARGUMENTS"
                ),
            ),
        ),
    ]
}
