//! What one hook event does to the store: settle what an earlier call left
//! open, then begin a turn, checkpoint a file tool's paths before it runs, or
//! commit (or settle) them after. Every failure becomes a message for the
//! person; nothing here ends the process or decides the agent's permission.

use std::path::{Path, PathBuf};

use turnback_store::{Entry, ErrorKind, Session, Settled, Store, Workspace};

use super::event::{CallId, EventKind, HookEvent, Tool, ToolCall};
use super::outcome::Outcome;
use super::shell;

/// After a tool whose checkpoint is no longer open: a file whose mark says
/// this session backed it up for the call, while the session has lost that
/// entry (a prune removed the session meanwhile), is said NOT backed up,
/// never passed over in silence.
fn gone_while_writing(session: &Session, ws: &Workspace, paths: &[PathBuf], out: &mut Outcome) {
    // Read once, and only if a file has a mark of this session: the
    // session's entries, or `None` when the prune took it whole.
    let mut entries: Option<Option<Vec<u64>>> = None;
    for p in paths {
        let Ok(rel) = ws.resolve(p) else {
            continue;
        };
        let file = ws.root().join(&rel);
        let Some(mark) = session.mark_of(&file) else {
            continue;
        };
        if mark.session != session.id() {
            continue;
        }
        let seqs = entries.get_or_insert_with(|| match session.entries() {
            Ok(es) => Some(es.iter().map(|e| e.seq).collect()),
            Err(_) => None,
        });
        let lost = match seqs {
            Some(seqs) => !seqs.contains(&mark.seq),
            // Gone whole: the prune took the session.
            None => !session.dir().exists(),
        };
        if lost {
            out.say(format!(
                "{rel}: the change was NOT backed up: its session {} was pruned while the tool ran, and its backup with it",
                session.id()
            ));
        }
    }
}

/// Runs `ev` against `store`; `writer_pid` is the agent's process, which
/// makes the writes between a checkpoint and its commit.
pub(crate) fn apply(store: &Store, ev: &HookEvent, writer_pid: u32) -> Outcome {
    let mut out = Outcome::default();
    let ws = match Workspace::open(&ev.workspace) {
        Ok(ws) => ws,
        Err(e) => {
            if protects_before(&ev.kind) {
                out.backup_failed = true;
            }
            out.say(format!("cannot open the workspace: {e}"));
            return out;
        }
    };
    // Only what makes a change creates the session; the rest needs one.
    let creates = matches!(&ev.kind, EventKind::Prompt { .. }) || protects_before(&ev.kind);
    let session = if creates {
        store.session(&ev.session)
    } else {
        store.open_session(&ev.session)
    };
    let session = match session {
        Ok(s) => s,
        Err(e) if e.kind() == ErrorKind::SessionNotFound => {
            // A session a prune removed while its tool ran says so.
            if let (EventKind::After(call), Ok(gone)) = (&ev.kind, store.session(&ev.session))
                && let Tool::Files(paths) = &call.tool
            {
                gone_while_writing(&gone, &ws, paths, &mut out);
            }
            return out;
        }
        Err(e) => {
            out.backup_failed = creates;
            out.say(format!("session {}: {e}", ev.session));
            return out;
        }
    };
    let mine = match &ev.kind {
        EventKind::After(call) | EventKind::Failed(call) => Some(call),
        _ => None,
    };
    let open = match session.open_entries() {
        Ok(entries) => entries,
        Err(e) => {
            out.say(format!("session {}: {e}", ev.session));
            Vec::new()
        }
    };
    let (own, others) = split_own(open, mine);
    // Only what cannot be running beside this event is settled: at a
    // prompt, a stop or an end of the main agent, everything; at a tool
    // call, what the same agent (or subagent) left open, since each runs
    // its tools one at a time while subagents run beside each other.
    let everything =
        ev.context.is_none() && matches!(ev.kind, EventKind::Prompt { .. } | EventKind::Other);
    for e in &others {
        // An entry without its mark yet (its checkpoint is still being
        // taken) or any more waits for a moment when nothing runs.
        let free = match context_of(&session, e) {
            Some(context) => everything || context == ev.context,
            None => everything,
        };
        if free {
            settle(&session, &ws, e, &mut out);
        }
    }
    // A shell bracket of this session may belong to a call running beside
    // this one (agents run shell calls concurrently, even in one context):
    // only a moment when nothing runs settles it.
    if everything {
        shell::settle_all(&session, &mut out);
    }
    match &ev.kind {
        EventKind::Prompt { prompt } => {
            if let Err(e) = session.begin_turn(prompt, None) {
                out.say(format!("the turn was not recorded: {e}"));
            }
        }
        EventKind::Before(call) => match &call.tool {
            Tool::Files(paths) => {
                let message = message_id(&session, call);
                for p in paths {
                    checkpoint(&session, &ws, ev, p, &message, writer_pid, &mut out);
                }
            }
            Tool::Shell { command } => {
                let message = message_id(&session, call);
                out.shell = Some(shell::before(
                    &session, &ws, command, &message, writer_pid, &mut out,
                ));
            }
            Tool::Untracked => {}
        },
        EventKind::After(call) => match &call.tool {
            Tool::Files(paths) => {
                if own.is_empty() {
                    gone_while_writing(&session, &ws, paths, &mut out);
                }
                // Writes that reach the disk after this event: the next
                // event settles the call's backups once they have. A call
                // that left its file as it was (the same bytes written
                // again) changed nothing: its checkpoint is dropped, as for a
                // failed call, so that an undo never takes back nothing. Any
                // other is committed.
                let now = if ev.late_writes { &[][..] } else { &own[..] };
                for e in now {
                    match session.settle_marked(e.seq) {
                        Ok(_) => {}
                        // Settled meanwhile by a parallel hook of the same
                        // session: committed (recorded all the same), or
                        // dropped because the file was as it was (nothing to
                        // record).
                        Err(err)
                            if matches!(
                                err.kind(),
                                ErrorKind::AlreadyCommitted | ErrorKind::NoSuchEntry
                            ) => {}
                        Err(err) => {
                            let shown = shown(&ws, &e.absolute_path());
                            out.say(format!("{shown}: the change was NOT recorded: {err}"));
                        }
                    }
                }
            }
            Tool::Shell { command } => {
                out.shell = Some(shell::after(&session, call, command, &mut out));
            }
            Tool::Untracked => {}
        },
        EventKind::Failed(call) => {
            for e in &own {
                settle(&session, &ws, e, &mut out);
            }
            if let Tool::Shell { command } = &call.tool {
                // What a failed or interrupted command changed before it
                // stopped is still a change to undo: committed, like a
                // success.
                out.shell = Some(shell::after(&session, call, command, &mut out));
            }
        }
        EventKind::Other => {}
    }
    out
}

/// True for the start of a call whose changes turnback backs up first: a
/// file tool, or a shell command other than turnback itself.
pub(crate) fn protects_before(kind: &EventKind) -> bool {
    match kind {
        EventKind::Before(call) => match &call.tool {
            Tool::Files(_) => true,
            Tool::Shell { command } => !shell::is_turnback_command(command),
            Tool::Untracked => false,
        },
        _ => false,
    }
}

/// The agent part that took the open entry `e` (`Some(None)`: the main
/// agent), as its mark says; `None` when it has no mark of its own.
fn context_of(session: &Session, e: &Entry) -> Option<Option<String>> {
    session
        .mark_of(&e.absolute_path())
        .filter(|m| m.session == session.id() && m.seq == e.seq)
        .map(|m| m.context)
}

/// The open entries that are this call's (for an After or a failure), and
/// the others. A call named by a digest takes the oldest of its calls still
/// open: first in, first out.
fn split_own(open: Vec<Entry>, call: Option<&ToolCall>) -> (Vec<Entry>, Vec<Entry>) {
    let Some(call) = call else {
        return (Vec::new(), open);
    };
    let target = match &call.id {
        CallId::Given(id) => Some(id.clone()),
        CallId::Digest(_) => {
            let prefix = call.message_prefix();
            open.iter()
                .filter(|e| e.message_id.starts_with(&prefix))
                .min_by_key(|e| e.seq)
                .map(|e| e.message_id.clone())
        }
    };
    open.into_iter()
        .partition(|e| Some(&e.message_id) == target.as_ref())
}

/// The message id a new call's entries get: the agent's id, or the digest
/// numbered after every earlier call with the same digest in the session.
fn message_id(session: &Session, call: &ToolCall) -> String {
    match &call.id {
        CallId::Given(id) => id.clone(),
        CallId::Digest(_) => {
            let prefix = call.message_prefix();
            let mut seen: Vec<String> = session
                .entries()
                .unwrap_or_default()
                .into_iter()
                .filter(|e| e.message_id.starts_with(&prefix))
                .map(|e| e.message_id)
                .collect();
            // A shell call's bracket holds its message before any entry.
            seen.extend(shell::open_messages(session, &prefix));
            seen.sort();
            seen.dedup();
            format!("{prefix}{}", seen.len() + 1)
        }
    }
}

/// Backs up `path` before the tool runs, unless it is outside the workspace.
fn checkpoint(
    session: &Session,
    ws: &Workspace,
    ev: &HookEvent,
    path: &Path,
    message: &str,
    writer_pid: u32,
    out: &mut Outcome,
) {
    let given_root = &ev.workspace;
    let shown = shown(ws, path);
    if !lexically_under(path, ws.root()) && !lexically_under(path, given_root) {
        out.say(format!(
            "{shown} is outside the workspace {}: left alone, NOT backed up",
            ws.root().display()
        ));
        return;
    }
    match session.checkpoint_marked(ws, path, message, writer_pid, ev.context.as_deref()) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::OutsideWorkspace => out.say(format!(
            "{shown} leads outside the workspace {}: left alone, NOT backed up",
            ws.root().display()
        )),
        Err(e) => {
            out.backup_failed = true;
            out.say(format!("{shown} NOT backed up: {e}"));
        }
    }
}

/// Settles an entry a call left open; a failure is said, never fatal.
fn settle(session: &Session, ws: &Workspace, e: &Entry, out: &mut Outcome) {
    match session.settle_marked(e.seq) {
        Ok(Settled::Committed(_) | Settled::Dropped(_)) => {}
        // Settled meanwhile by a parallel hook of the same session.
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::NoSuchEntry | ErrorKind::AlreadyCommitted
            ) => {}
        Err(err) => {
            let shown = shown(ws, &e.absolute_path());
            out.say(format!(
                "{shown}: an open backup could not be settled: {err}"
            ));
        }
    }
}

/// `path` as the person knows it: relative to the workspace where it is in it.
fn shown(ws: &Workspace, path: &Path) -> String {
    let p = path.strip_prefix(ws.root()).unwrap_or(path);
    turnback::text::escape_path(p)
}

/// True when `path`, with `.` and `..` taken lexically, is under `root`.
fn lexically_under(path: &Path, root: &Path) -> bool {
    use std::path::Component;
    let mut parts: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.len() > 1 {
                    parts.pop();
                }
            }
            c => parts.push(c),
        }
    }
    let normal: std::path::PathBuf = parts.iter().collect();
    normal.starts_with(root) && normal != root
}
