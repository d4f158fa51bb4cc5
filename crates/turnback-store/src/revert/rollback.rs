//! Rolling back a checkpoint never committed: a revert of its entry (and,
//! forced, of the session's later changes to the file).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::durable::Durability;
use crate::error::{ChangedBy, Conflict, ConflictReason, Error, Result};
use crate::index::{Entry, Index};
use crate::marker::{self, DoneWhen};
use crate::session::Session;

use super::apply::apply;
use super::backups::check_backups;
use super::plan::{FilePlan, classify, newest_change, plan, report};
use super::record::{record_revert, remove_created_dirs};
use super::report::{FileStatus, RevertOptions, RevertReport};

/// The preview's status of each file, decided as the rollback itself decides
/// (not as an undo would): a change recorded since is the conflict, named;
/// without one, what the file holds is the caller's own half-made write,
/// safe to overwrite. A file already at "before" stays as it is.
fn as_a_rollback_sees_it(plans: &mut [FilePlan], conflict: Option<&Conflict>) {
    for p in plans.iter_mut().filter(|p| p.touches()) {
        p.status = match conflict {
            Some(c) => FileStatus::Conflict(c.reason.clone()),
            None => FileStatus::Safe,
        };
    }
}

/// Rolls back entry `seq`, a checkpoint never committed: its file returns to
/// "before" and the entry goes. The caller holds the file's lock (`held`).
///
/// A rollback is a revert: when a change to the file was recorded after the
/// checkpoint (by this session or any other), it refuses, naming who made
/// it, unless forced; forced, it also takes this session's later changes to
/// the file, backs up what it overwrites and is recorded, so that redo puts
/// it all back. Without a later change, what it overwrites is the caller's own
/// half-made write, which is neither kept nor recorded.
pub(crate) fn rollback(
    session: &Session,
    seq: u64,
    opts: RevertOptions,
    held: &BTreeSet<PathBuf>,
) -> Result<RevertReport> {
    let id = session.id().to_owned();
    let choose = |idx: &Index| -> Result<(Vec<u64>, Option<Conflict>)> {
        let e = session.uncommitted_in(idx, seq)?;
        let file = e.absolute_path();
        let later: Vec<&Entry> = idx
            .entries
            .iter()
            .filter(|x| x.seq > seq && x.absolute_path() == file)
            .collect();
        let by = match later.last() {
            Some(newest) => Some(ChangedBy {
                session: id.clone(),
                message_id: newest.message_id.clone(),
                seq: newest.seq,
            }),
            None => newest_change(session, |x| x.absolute_path() == file && x.time > e.time),
        };
        let conflict = by.map(|by| Conflict {
            workspace: e.workspace.path.clone(),
            path: e.path.clone(),
            seq,
            reason: ConflictReason::ChangedSince { by: Some(by) },
        });
        let mut seqs = vec![seq];
        seqs.extend(later.iter().map(|x| x.seq));
        Ok((seqs, conflict))
    };
    if opts.dry_run {
        let (mut plans, conflict) =
            session.view(|idx| choose(idx).map(|(seqs, c)| (plan(idx, &seqs), c)))??;
        classify(session, &mut plans)?;
        as_a_rollback_sees_it(&mut plans, conflict.as_ref());
        return Ok(report(session, &plans, false));
    }
    session.mutate_holding_then(
        Durability::Full,
        Some(held),
        |idx| {
            let (seqs, conflict) = choose(idx)?;
            if let Some(c) = &conflict
                && !opts.force
            {
                return Ok(Err(Error::Refused {
                    session: id.clone(),
                    conflicts: vec![c.clone()],
                }));
            }
            let mut plans = plan(idx, &seqs);
            classify(session, &mut plans)?;
            if let Err(e) = check_backups(session, &plans) {
                return Ok(Err(e));
            }
            let recorded = conflict.is_some();
            let applied = match apply(session, &plans, recorded, |p| {
                DoneWhen::EntriesGone(p.seqs.clone())
            }) {
                Ok(a) => a,
                Err(e) => return Ok(Err(e)),
            };
            if recorded {
                record_revert(session, idx, "rollback", &applied.restored, Vec::new());
            } else {
                let taken: Vec<u64> = applied
                    .restored
                    .iter()
                    .flat_map(|(p, _)| p.seqs.clone())
                    .collect();
                idx.remove_entries(&taken);
                let restored: Vec<&FilePlan> = applied.restored.iter().map(|(p, _)| *p).collect();
                remove_created_dirs(session, &restored);
            }
            Ok(applied.outcome.map(|()| report(session, &plans, true)))
        },
        || marker::remove(session.session_dir()),
    )?
}
