//! Shell tools (Claude Code `Bash`, Codex `Bash`, Gemini CLI
//! `run_shell_command`): what a command changes can only be found by a scan
//! of the workspace before and after it.
//!
//! TODO(scan bracket): route these through `Session::begin_scan` before the
//! command and `commit_scan` / `rollback_scan` after it, once the scan
//! bracket of the scan issue is in the store. Until then a shell call
//! records nothing, and docs/INTEGRATIONS.md says so.

use super::event::ToolCall;

/// Which side of the call the hook is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Before,
    After,
    Failed,
}

/// What the hook did for a shell call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShellOutcome {
    /// The command is turnback itself (`turnback undo` from a slash
    /// command): never scanned, or its own restore would be recorded as the
    /// agent's change.
    Turnback,
    /// Nothing recorded yet: the scan bracket is not wired.
    NotScanned,
}

/// The one place a shell call goes: before, after, or after a failure.
pub(crate) fn on_shell(_call: &ToolCall, command: &str, _side: Side) -> ShellOutcome {
    if is_turnback_command(command) {
        return ShellOutcome::Turnback;
    }
    ShellOutcome::NotScanned
}

/// True when `command` is one plain run of turnback (the program's file name
/// is `turnback`, after any `NAME=value` assignments) and nothing else: no
/// second command, pipe, redirection or substitution that could change a
/// file besides it.
pub(crate) fn is_turnback_command(command: &str) -> bool {
    if command.chars().any(|c| {
        matches!(
            c,
            ';' | '&' | '|' | '<' | '>' | '`' | '$' | '(' | ')' | '\n'
        )
    }) {
        return false;
    }
    let program = command
        .split_whitespace()
        .find(|w| !is_assignment(w))
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''));
    match program {
        Some(p) => std::path::Path::new(p)
            .file_name()
            .is_some_and(|n| n == "turnback"),
        None => false,
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_run_of_turnback_is_turnback() {
        for yes in [
            "turnback undo",
            "/usr/local/bin/turnback log --json",
            "TURNBACK_HOME=/x turnback rewind --turn 2",
        ] {
            assert!(is_turnback_command(yes), "{yes}");
        }
        for no in [
            "turnback undo && rm -rf src",
            "echo turnback",
            "turnback log > out.txt",
            "sed -i s/a/b/ f; turnback undo",
            "turnbackx undo",
            "X=$(rm f) turnback undo",
            "",
        ] {
            assert!(!is_turnback_command(no), "{no}");
        }
    }
}
