//! Shell tools (Claude Code `Bash`, Codex `Bash`, Gemini CLI
//! `run_shell_command`): what a command changes can only be found by a scan
//! of the workspace before and after it, the store's scan bracket.
//!
//! Before the command: `Session::begin_scan` with the call's message id and
//! the command line. After it (succeeded, failed or interrupted alike: what
//! a command changed before it failed is still a change to undo): the open
//! scan whose message is this call's is committed, one step of the message.
//! The scan record is the only state: which scan is whose is read back from
//! `Session::open_scans`. A scan left open by a call that never got its
//! After is committed at the next prompt, stop or end (`settle_all`).
//!
//! Two scans of one session must never overlap: a bracket that ends inside
//! another's would take the other's earlier changes for its own, or lose
//! them. So a shell call that begins while another of its session is open
//! waits for it (the agents run some shell calls concurrently), for at most
//! `WAIT`; a bracket still open then is committed as it stands (its call's
//! changes so far are its own, what it changes later falls into this call's
//! bracket) and the person is told.

use std::time::{Duration, Instant};

use turnback_store::{OpenScan, ScanReport, Session, Unrecorded, Workspace};

use super::event::{CallId, ToolCall};
use super::outcome::{Outcome, ShellOutcome};

/// How long a shell call waits for another one of its session to end
/// before it begins its own bracket: well under the hooks' timeout (30 s as
/// installed), long enough for the quick read-only commands agents run
/// side by side.
const WAIT: Duration = Duration::from_secs(3);

/// The directory of the store home holding each session's shell lock.
const LOCKS: &str = "hook-locks";

/// Before a shell call: begin its bracket, once no other shell call of the
/// session has one open.
pub(crate) fn before(
    session: &Session,
    ws: &Workspace,
    command: &str,
    message: &str,
    writer_pid: u32,
    out: &mut Outcome,
) -> ShellOutcome {
    if is_turnback_command(command) {
        return ShellOutcome::Turnback;
    }
    // Seeing no bracket open and beginning one is one step: two calls
    // that start together must not both see none.
    let _turn = match crate::sys::lock_exclusive(
        &session.store().home().join(LOCKS),
        &format!("{}.lock", session.id()),
    ) {
        Ok(f) => f,
        Err(e) => {
            out.backup_failed = true;
            out.say(format!(
                "`{}` is NOT backed up: cannot take the shell lock: {e}",
                short(command)
            ));
            return ShellOutcome::Failed;
        }
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let open = match session.open_scans() {
            Ok(open) => open,
            Err(e) => {
                out.backup_failed = true;
                out.say(format!("`{}` is NOT backed up: {e}", short(command)));
                return ShellOutcome::Failed;
            }
        };
        if open.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            for s in &open {
                out.say(format!(
                    "`{}` still runs beside `{}`: what it changed so far is recorded with it, \
                     what it changes from now on with this call",
                    short(s.command.as_deref().unwrap_or("?")),
                    short(command)
                ));
                commit(session, s, out);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The agent ends the bracket: while it runs, a prune keeps the session.
    let opts = turnback_store::ScanOptions {
        owner_pid: Some(writer_pid),
        ..Default::default()
    };
    match session.begin_scan_with(ws, message, Some(command), &opts) {
        Ok(id) => ShellOutcome::Begun(id),
        Err(e) => {
            out.backup_failed = true;
            out.say(format!("`{}` is NOT backed up: {e}", short(command)));
            ShellOutcome::Failed
        }
    }
}

/// After a shell call (or its failure): commit its bracket.
pub(crate) fn after(
    session: &Session,
    call: &ToolCall,
    command: &str,
    out: &mut Outcome,
) -> ShellOutcome {
    if is_turnback_command(command) {
        return ShellOutcome::Turnback;
    }
    let open = match session.open_scans() {
        Ok(open) => open,
        Err(e) => {
            out.say(format!(
                "`{}`: its changes were NOT recorded: {e}",
                short(command)
            ));
            return ShellOutcome::Failed;
        }
    };
    match own_scan(&open, call) {
        Some(s) => match commit(session, s, out) {
            Some(n) => ShellOutcome::Committed(n),
            None => ShellOutcome::Failed,
        },
        None => ShellOutcome::NotOpen,
    }
}

/// Commits every bracket still open in the session: at a moment when no
/// tool of it can be running (a prompt, a stop, an end), a bracket still
/// open is a call that never got its After (an interrupt, a call the
/// person declined).
pub(crate) fn settle_all(session: &Session, out: &mut Outcome) {
    match session.open_scans() {
        Ok(open) => {
            for s in &open {
                commit(session, s, out);
            }
        }
        Err(e) => out.say(format!("open shell brackets could not be settled: {e}")),
    }
}

/// The numbers already taken by calls named `prefix…` in open brackets.
pub(crate) fn open_messages(session: &Session, prefix: &str) -> Vec<String> {
    session
        .open_scans()
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.message_id)
        .filter(|m| m.starts_with(prefix))
        .collect()
}

/// This call's open bracket: by its id, or for a digest the oldest open
/// one of that digest (first in, first out).
fn own_scan<'a>(open: &'a [OpenScan], call: &ToolCall) -> Option<&'a OpenScan> {
    match &call.id {
        CallId::Given(id) => open.iter().find(|s| &s.message_id == id),
        CallId::Digest(_) => {
            let prefix = call.message_prefix();
            open.iter().find(|s| s.message_id.starts_with(&prefix))
        }
    }
}

/// Commits `scan`, saying what it could not record; the number of files
/// recorded, `None` when the commit failed.
fn commit(session: &Session, scan: &OpenScan, out: &mut Outcome) -> Option<usize> {
    let command = short(scan.command.as_deref().unwrap_or("?"));
    match session.commit_scan(&scan.id) {
        Ok(report) => {
            say_unrecorded(&report, &command, out);
            Some(report.changes.len())
        }
        // Committed meanwhile by a parallel hook of the same session.
        Err(e) if e.kind() == turnback_store::ErrorKind::NoSuchScan => Some(0),
        Err(e) => {
            out.say(format!("`{command}`: its changes were NOT recorded: {e}"));
            None
        }
    }
}

fn say_unrecorded(report: &ScanReport, command: &str, out: &mut Outcome) {
    for u in &report.unrecorded {
        let text = match u {
            Unrecorded::Link { path, before, now } => format!(
                "{path}: {} by `{command}`: NOT undoable (turnback records no symbolic link)",
                turnback::text::link_change(before, now)
            ),
            Unrecorded::UnderLink { path, link } => format!(
                "{path} was in a directory the symbolic link {link} replaced (`{command}`): NOT restorable"
            ),
            Unrecorded::TooBig { path, size } => format!(
                "{path} ({size} bytes, over the size limit) changed by `{command}`: NOT backed up"
            ),
            Unrecorded::NoBackup { path, reason } => {
                format!("{path} changed by `{command}`: NOT backed up: {reason}")
            }
            // Another record holds it: nothing is missing.
            Unrecorded::RecordedBy { .. } => continue,
        };
        out.say(text);
    }
}

/// A command line cut to fit a message.
fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or("");
    let mut s: String = line.chars().take(60).collect();
    if s.len() < command.len() {
        s.push('…');
    }
    s
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
