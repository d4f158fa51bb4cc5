//! What the screen shows, read through the store's API as the other
//! commands read it (`log`, `turns`, `diff`, `rewind`): the workspace's
//! sessions, one session's history, a diff, a restore planned or done.

use std::collections::BTreeSet;

use time::OffsetDateTime;
use turnback::output::Out;
use turnback::text;
use turnback_store::{
    Entry, Evicted, FileDiff, RevertOptions, RevertReport, Session, SessionSummary, Turn,
};

use crate::cli_error::CliError;
use crate::context::Context;

use super::timeline::{Action, Target};

/// A session of the sessions pane.
#[derive(Debug, Clone)]
pub(crate) struct SessionRow {
    pub id: String,
    pub last_change: Option<OffsetDateTime>,
    /// Entries in effect.
    pub entries: usize,
    /// Files its entries changed, once its history has been read.
    pub files: Option<usize>,
    /// Its first turn's prompt, once its history has been read (`None`
    /// inside: it has no turn).
    pub prompt: Option<Option<String>>,
    /// Why it could not be read, if it could not.
    pub problem: Option<String>,
}

/// The sessions that changed the workspace (or the one `--session` names),
/// newest change first.
pub(crate) fn sessions(ctx: &Context) -> Result<Vec<SessionRow>, CliError> {
    let mut list: Vec<SessionRow> = match ctx.named_session() {
        Some(id) => {
            let s = ctx.open_session(id)?;
            let entries = s.entries()?;
            vec![SessionRow {
                id: id.to_owned(),
                last_change: entries.last().map(|e| e.time),
                files: Some(files(&entries)),
                prompt: Some(s.turn_bounds()?.into_iter().next().map(|t| t.prompt)),
                entries: entries.len(),
                problem: None,
            }]
        }
        None => return Ok(rows(ctx.workspace_summaries()?)),
    };
    list.sort_by(|a, b| b.last_change.cmp(&a.last_change).then(a.id.cmp(&b.id)));
    Ok(list)
}

/// The sessions pane's rows of the store's `summaries`, newest change first.
pub(crate) fn rows(summaries: Vec<SessionSummary>) -> Vec<SessionRow> {
    let mut list: Vec<SessionRow> = summaries
        .into_iter()
        .map(|s| SessionRow {
            id: s.id,
            last_change: s.last_change,
            entries: s.entries,
            files: None,
            prompt: None,
            problem: s.problem.map(|e| e.to_string()),
        })
        .collect();
    list.sort_by(|a, b| b.last_change.cmp(&a.last_change).then(a.id.cmp(&b.id)));
    list
}

/// What the history read tells of its session's row: its files, its first
/// prompt.
pub(crate) fn fill(row: &mut SessionRow, h: &History) {
    row.files = Some(files(&h.entries));
    row.prompt = Some(h.turns.first().map(|t| t.prompt.clone()));
}

/// The agent a session id names, where turnback made the id: `person-…`
/// for a person's commands, `HOST-` and 24 hex digits for a host that sent
/// no usable id (`cursor-…`, `copilot-cli-…`). `None` for an agent's own
/// id (a UUID): the store records no agent.
pub(crate) fn agent(id: &str) -> Option<&str> {
    if id.starts_with("person-") {
        return Some("person");
    }
    let (name, hex) = id.rsplit_once('-')?;
    let made = hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    let word = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
    (made && word).then_some(name)
}

/// How many files `entries` changed.
pub(crate) fn files(entries: &[Entry]) -> usize {
    entries
        .iter()
        .map(|e| (&e.workspace.path, &e.path))
        .collect::<BTreeSet<_>>()
        .len()
}

/// One session's history, read once per change of the store.
pub(crate) struct History {
    pub session: Session,
    pub entries: Vec<Entry>,
    pub turns: Vec<Turn>,
    pub gap: Option<Evicted>,
}

/// Reads session `id`'s history.
pub(crate) fn history(ctx: &Context, id: &str) -> Result<History, CliError> {
    history_of(ctx.open_session(id)?)
}

/// Reads `session`'s history.
pub(crate) fn history_of(session: Session) -> Result<History, CliError> {
    Ok(History {
        entries: session.entries()?,
        turns: session.turn_bounds()?,
        gap: session.evicted()?,
        session,
    })
}

/// What a diff pane shows: the target's files, and those whose contents
/// after it are not kept.
pub(crate) type Diff = (Vec<FileDiff>, Vec<String>);

/// What `target` did (`whole_turn`: its whole turn), as `turnback diff '#N'`
/// or `turnback diff --turn N` shows it.
pub(crate) fn diff(h: &History, target: Target, whole_turn: bool) -> Result<Diff, CliError> {
    let seqs: Vec<u64> = match target {
        Target::Entry(seq, _) if !whole_turn => vec![seq],
        Target::Entry(_, turn) | Target::Turn(turn) => h
            .entries
            .iter()
            .filter(|e| e.turn == turn)
            .map(|e| e.seq)
            .collect(),
    };
    if seqs.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    Ok(h.session.entries_diff(&seqs)?)
}

/// `action`, a dry run or done, as the command line does it: a rewind to
/// just before an entry or a turn as `turnback rewind '#N'` and `--turn N`,
/// a revert of one entry's file to before it, a redo as `turnback redo`.
pub(crate) fn restore(
    session: &Session,
    action: Action,
    force: bool,
    dry_run: bool,
) -> Result<RevertReport, CliError> {
    let opts = RevertOptions { force, dry_run };
    Ok(match action {
        Action::Rewind(Target::Entry(seq, _)) => session.rewind_to_entry(seq, opts)?,
        Action::Rewind(Target::Turn(n)) => session.rewind_to_turn(n, opts)?,
        Action::Revert(seq) => session.revert_file_to_entry(seq, opts)?,
        Action::Redo => session.redo(opts)?,
    })
}

/// What `action` is called (`entries`: the session's, to name a file).
pub(crate) fn action_name(action: Action, entries: &[Entry]) -> String {
    match action {
        Action::Rewind(Target::Entry(seq, _)) => format!("rewind to before #{seq}"),
        Action::Rewind(Target::Turn(n)) => format!("rewind to the start of turn {n}"),
        Action::Revert(seq) => match entries.iter().find(|e| e.seq == seq) {
            Some(e) => format!("revert {} to before #{seq}", text::escape(&e.path)),
            None => format!("revert the file of #{seq} to before it"),
        },
        Action::Redo => "redo".to_owned(),
    }
}

/// A restore's report as the command line words it, without colour (the
/// dialog colours it line by line).
pub(crate) fn report_text(what: &str, r: &RevertReport) -> String {
    let mut t = text::revert(&Out { color: false }, what, r, &[]);
    for f in &r.evicted {
        t.push_str(&format!(
            "left {} as it is: the session's caps evicted the changes it would need\n",
            text::escape_path(f)
        ));
    }
    t
}
