//! A session's history as the timeline pane lists it: the evicted gap, each
//! turn with its prompt, each message (tool call or command), each entry.
//! Only turns and entries can be selected, and a restore (`Action`) asked
//! of one.

use time::OffsetDateTime;
use turnback::history::prompt;
use turnback::text::{change, escape};
use turnback::when::ago;
use turnback_store::{Entry, Evicted, Turn};

/// What a row of the timeline stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowKind {
    /// What the session's caps evicted: changes no rewind reaches.
    Gap,
    /// A turn's boundary, with its prompt.
    Turn(u32),
    /// Before any turn began.
    NoTurn,
    /// A message (a tool call, or a command a scan bracketed).
    Message,
    /// An entry, by its number.
    Entry(u64),
}

/// What can be selected: a turn or an entry. Kept across a reload, so that
/// the selection does not jump when agents write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A turn, by number.
    Turn(u32),
    /// An entry, by number (`seq`), in its turn.
    Entry(u64, u32),
}

/// One line of the timeline.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub kind: RowKind,
    /// The turn the row is in (0: before any turn).
    pub turn: u32,
    pub text: String,
    /// What `/` searches: a turn's prompt, an entry's file name (lower case).
    pub find: String,
}

impl Row {
    /// What selecting this row selects, if anything.
    pub(crate) fn target(&self) -> Option<Target> {
        match self.kind {
            RowKind::Turn(n) => Some(Target::Turn(n)),
            RowKind::Entry(seq) => Some(Target::Entry(seq, self.turn)),
            RowKind::Gap | RowKind::NoTurn | RowKind::Message => None,
        }
    }
}

/// The rows of a session, oldest first, as `turnback log` groups them:
/// the gap, then every turn before its entries, each run of a message's
/// entries under its message line; how long ago each was, as of `now`.
pub(crate) fn rows(
    entries: &[Entry],
    turns: &[Turn],
    gap: Option<&Evicted>,
    now: OffsetDateTime,
) -> Vec<Row> {
    let mut out = Vec::new();
    if let Some(g) = gap {
        out.push(Row {
            kind: RowKind::Gap,
            turn: 0,
            text: format!(
                "… {} older changes evicted by the caps: no rewind goes past them",
                g.entries
            ),
            find: String::new(),
        });
    }
    let mut next_turn = turns.iter().peekable();
    let mut in_turn: Option<u32> = None;
    let mut message: Option<&str> = None;
    for e in entries {
        while let Some(t) = next_turn.next_if(|t| t.number <= e.turn) {
            out.push(turn_row(t, now));
            in_turn = Some(t.number);
            message = None;
        }
        if in_turn.is_none() && !turns.is_empty() && e.turn == 0 {
            out.push(Row {
                kind: RowKind::NoTurn,
                turn: 0,
                text: "before any turn".into(),
                find: String::new(),
            });
            in_turn = Some(0);
        }
        if message != Some(e.message_id.as_str()) {
            out.push(message_row(e, now));
            message = Some(&e.message_id);
        }
        out.push(Row {
            kind: RowKind::Entry(e.seq),
            turn: e.turn,
            text: format!("  #{:<3} {}  {}", e.seq, escape(&e.path), change(e)),
            find: e.path.to_lowercase(),
        });
    }
    out.extend(next_turn.map(|t| turn_row(t, now)));
    out
}

fn turn_row(t: &Turn, now: OffsetDateTime) -> Row {
    Row {
        kind: RowKind::Turn(t.number),
        turn: t.number,
        text: format!(
            "turn {} {}  {}",
            t.number,
            prompt(&t.prompt, 60),
            ago(t.time, now)
        ),
        find: t.prompt.to_lowercase(),
    }
}

fn message_row(e: &Entry, now: OffsetDateTime) -> Row {
    let name = if e.message_id.is_empty() {
        "(no message id)".into()
    } else {
        escape(&e.message_id).into_owned()
    };
    let what = match e.scan.as_ref().map(|m| m.command.as_deref()) {
        Some(Some(c)) => format!("  $ {}", escape(c)),
        Some(None) => "  (found by a scan)".into(),
        None => String::new(),
    };
    Row {
        kind: RowKind::Message,
        turn: e.turn,
        text: format!(" {name}{what}  {}", ago(e.time, now)),
        find: String::new(),
    }
}

/// The index of the row `target` selects, if it is still there.
pub(crate) fn find(rows: &[Row], target: Target) -> Option<usize> {
    rows.iter().position(|r| r.target() == Some(target))
}

/// The index of the newest selectable row (the newest entry, else the
/// newest turn).
pub(crate) fn newest(rows: &[Row]) -> Option<usize> {
    rows.iter()
        .rposition(|r| matches!(r.kind, RowKind::Entry(_)))
        .or_else(|| rows.iter().rposition(|r| r.target().is_some()))
}

/// The selectable row `step` places from `from` (up when negative), or
/// `from` when there is none that way.
pub(crate) fn step(rows: &[Row], from: usize, step: isize) -> usize {
    let mut at = from;
    let mut left = step.unsigned_abs();
    while left > 0 {
        let next = if step < 0 {
            rows[..at].iter().rposition(|r| r.target().is_some())
        } else {
            rows.iter()
                .skip(at + 1)
                .position(|r| r.target().is_some())
                .map(|i| i + at + 1)
        };
        match next {
            Some(i) => at = i,
            None => break,
        }
        left -= 1;
    }
    at
}

/// What a confirmed restore does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// `u`: rewind the session to just before a turn or an entry.
    Rewind(Target),
    /// `r`: revert one entry's file to how it was before that entry.
    Revert(u64),
    /// `R`: put back what the session's newest undo, revert or rewind took
    /// (the command line's `redo`).
    Redo,
}

impl Action {
    /// What the dialogs call it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Action::Rewind(_) => "rewind",
            Action::Revert(_) => "revert",
            Action::Redo => "redo",
        }
    }
}
