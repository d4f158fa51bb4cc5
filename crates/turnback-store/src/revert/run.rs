//! Running a revert: the loop that takes the locks of its files (sorted) and
//! starts over when the selection took in another file meanwhile, and the
//! core under the session's lock (refuse, check the backups, apply) that an
//! undo, revert or rewind shares with a redo.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::marker::{self, DoneWhen};
use crate::session::Session;

use super::apply::{Applied, apply};
use super::backups::check_backups;
use super::plan::{FilePlan, classify, plan, refuse_conflicts, report};
use super::record::record_revert;
use super::report::{RevertOptions, RevertReport};

/// Which entries a revert takes, read from the index under its lock.
type Select<'a> = &'a dyn Fn(&Index) -> Result<Vec<u64>>;

/// What kind of revert, as recorded for redo.
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) name: &'static str,
    /// A rewind to a turn also takes away that turn and the later ones.
    pub(crate) turns_from: Option<u32>,
}

impl Kind {
    pub(crate) const fn named(name: &'static str) -> Kind {
        Kind {
            name,
            turns_from: None,
        }
    }
}

/// How one try of a revert under its locks ended.
pub(super) enum Attempt {
    Done(Result<RevertReport>),
    /// The selection now includes a file whose lock this call does not hold.
    Retry,
}

/// How many times a revert starts over when its selection keeps taking in
/// files whose locks it does not hold, before it gives up as busy.
const TRIES: usize = 8;

/// The loop every revert that can race with a change of its selection runs
/// (undo, revert, rewind, redo): `select` reads, without the session's lock,
/// what the revert will take and the files that concerns; their locks are
/// taken (sorted, so two reverts cannot deadlock), and `attempt` runs with
/// them, under the session's lock, saying [`Attempt::Retry`] if the selection
/// changed in between to take in another file. After [`TRIES`] tries,
/// [`Error::SessionBusy`].
pub(super) fn retrying<C>(
    session: &Session,
    mut select: impl FnMut() -> Result<(C, BTreeSet<PathBuf>)>,
    mut attempt: impl FnMut(C, &BTreeSet<PathBuf>) -> Result<Attempt>,
) -> Result<RevertReport> {
    for _ in 0..TRIES {
        let (chosen, files) = select()?;
        let _guards = session.lock_files(&files)?;
        match attempt(chosen, &files)? {
            Attempt::Done(r) => return r,
            Attempt::Retry => continue,
        }
    }
    Err(Error::SessionBusy {
        session: session.id().to_owned(),
        waited: std::time::Duration::ZERO,
    })
}

/// The core of every revert [`retrying`] runs, under the session's lock and
/// the locks of its files, once each file is classified: refuses on a
/// conflict unless forced, checks every backup it will write, runs `before`
/// (redo makes again the directories its revert removed), then applies the
/// plans ([`apply`], the marker saying how the index tells each file done).
/// The caller records what was applied and removes the marker.
pub(super) fn refuse_check_apply<'p>(
    session: &Session,
    plans: &'p [FilePlan],
    opts: RevertOptions,
    done_when: impl Fn(&FilePlan) -> DoneWhen,
    before: impl FnOnce() -> Result<()>,
) -> Result<Applied<'p>> {
    refuse_conflicts(session, plans, opts)?;
    check_backups(session, plans)?;
    before()?;
    apply(session, plans, true, done_when)
}

/// What a revert would do, touching nothing: the plans, classified.
pub(super) fn preview(session: &Session, mut plans: Vec<FilePlan>) -> Result<RevertReport> {
    classify(session, &mut plans)?;
    Ok(report(session, &plans, false))
}

/// Takes the locks of the selected files (sorted, so two reverts cannot
/// deadlock), then plans and applies under the session lock. If the selection
/// changed in between to take in another file, starts over.
pub(crate) fn revert_entries(
    session: &Session,
    opts: RevertOptions,
    kind: Kind,
    select: Select,
) -> Result<RevertReport> {
    if opts.dry_run {
        let plans = session.view(|idx| select(idx).map(|seqs| plan(idx, &seqs)))??;
        return preview(session, plans);
    }
    retrying(
        session,
        || {
            Ok((
                (),
                session.view(|idx| select(idx).map(|seqs| files_of(idx, &seqs)))??,
            ))
        },
        |(), files| attempt(session, opts, kind, select, files),
    )
}

/// The absolute paths of the files the entries `seqs` change.
fn files_of(idx: &Index, seqs: &[u64]) -> BTreeSet<PathBuf> {
    let wanted: std::collections::HashSet<u64> = seqs.iter().copied().collect();
    idx.entries
        .iter()
        .filter(|e| wanted.contains(&e.seq))
        .map(Entry::absolute_path)
        .collect()
}

/// One try of an undo, revert or rewind under the locks of `locked`.
fn attempt(
    session: &Session,
    opts: RevertOptions,
    kind: Kind,
    select: Select,
    locked: &BTreeSet<PathBuf>,
) -> Result<Attempt> {
    session.mutate_holding_then(
        Durability::Full,
        Some(locked),
        |idx| {
            let seqs = select(idx)?;
            if !files_of(idx, &seqs).is_subset(locked) {
                return Ok(Attempt::Retry);
            }
            let mut plans = plan(idx, &seqs);
            classify(session, &mut plans)?;
            let entries_gone = |p: &FilePlan| DoneWhen::EntriesGone(p.seqs.clone());
            let applied = match refuse_check_apply(session, &plans, opts, entries_gone, || Ok(())) {
                Ok(a) => a,
                Err(e) => return Ok(Attempt::Done(Err(e))),
            };
            // A failure part way leaves the files restored so far recorded as
            // reverted, and the rest as they were: the index matches the files.
            let turns = match (kind.turns_from, applied.outcome.is_ok()) {
                (Some(n), true) => idx.split_turns(n),
                _ => Vec::new(),
            };
            record_revert(session, idx, kind.name, &applied.restored, turns);
            Ok(Attempt::Done(
                applied.outcome.map(|()| report(session, &plans, true)),
            ))
        },
        || marker::remove(session.session_dir()),
    )
}
