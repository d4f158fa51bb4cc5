//! Running an undo, revert or rewind: taking the locks of its files (sorted),
//! then planning, checking and applying it under the session's lock, and
//! starting over when the selection took in another file meanwhile.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::marker::{self, DoneWhen};
use crate::session::Session;

use super::apply::apply;
use super::backups::check_backups;
use super::plan::{classify, plan, refuse_conflicts, report};
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
    pub(super) const fn named(name: &'static str) -> Kind {
        Kind {
            name,
            turns_from: None,
        }
    }
}

pub(super) enum Attempt {
    Done(Result<RevertReport>),
    /// The selection now includes a file whose lock this call does not hold.
    Retry,
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
        let mut plans = session.view(|idx| select(idx).map(|seqs| plan(idx, &seqs)))??;
        classify(session, &mut plans)?;
        return Ok(report(session, &plans, false));
    }
    for _ in 0..8 {
        let files = session.view(|idx| select(idx).map(|seqs| files_of(idx, &seqs)))??;
        let _guards = session.lock_files(&files)?;
        match attempt(session, opts, kind, select, &files)? {
            Attempt::Done(r) => return r,
            Attempt::Retry => continue,
        }
    }
    Err(Error::SessionBusy {
        session: session.id().to_owned(),
        waited: std::time::Duration::ZERO,
    })
}

/// The absolute paths of the files the entries `seqs` change.
fn files_of(idx: &Index, seqs: &[u64]) -> BTreeSet<PathBuf> {
    idx.entries
        .iter()
        .filter(|e| seqs.contains(&e.seq))
        .map(Entry::absolute_path)
        .collect()
}

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
            if let Err(e) = refuse_conflicts(session, &plans, opts) {
                return Ok(Attempt::Done(Err(e)));
            }
            if let Err(e) = check_backups(session, &plans) {
                return Ok(Attempt::Done(Err(e)));
            }
            let applied = match apply(session, &plans, true, |p| {
                DoneWhen::EntriesGone(p.seqs.clone())
            }) {
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
