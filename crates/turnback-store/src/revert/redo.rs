//! Redo: putting back what the newest undo, revert or rewind took away, with
//! the same safety check, and recording what a forced redo overwrote.

use std::collections::BTreeSet;
use std::path::PathBuf;

use time::OffsetDateTime;

use crate::durable::Durability;
use crate::error::{ConflictReason, Error, Result};
use crate::index::{Entry, FileState, RemovedDir, RevertRecord, RevertedFile};
use crate::journal::Tracked;
use crate::marker::{self, DoneWhen};
use crate::relpath::RelPath;
use crate::session::Session;
use crate::workspace::Workspace;

use super::plan::{FilePlan, classify, redo_plans, report};
use super::report::{FileStatus, RevertOptions, RevertReport};
use super::run::{Attempt, preview, refuse_check_apply, retrying};

/// The message id of the entry a forced redo records for each file it
/// overwrote, so that an undo brings back what it found.
pub const REDO_OVERWRITE_MESSAGE: &str = "turnback-redo";

impl Session {
    /// Puts back what the newest undo, revert or rewind took away (files and
    /// entries, and the turns of a rewind to a turn), with the same safety check:
    /// a file changed since that revert refuses the redo unless forced. What a
    /// forced redo overwrites is backed up and recorded as a change of its own
    /// (message [`REDO_OVERWRITE_MESSAGE`]), so that an undo brings it back.
    pub fn redo(&self, opts: RevertOptions) -> Result<RevertReport> {
        let newest = || -> Result<RevertRecord> {
            let record = self.view(|s| s.history.last().cloned())?;
            record.ok_or_else(|| Error::NothingToRedo {
                session: self.id().to_owned(),
            })
        };
        if opts.dry_run {
            return preview(self, redo_plans(&newest()?));
        }
        let select = || {
            let record = newest()?;
            let files: BTreeSet<PathBuf> = record
                .files
                .iter()
                .map(RevertedFile::absolute_path)
                .collect();
            Ok((record.id, files))
        };
        retrying(self, select, |id, files| {
            self.mutate_holding_then(
                Durability::Full,
                Some(files),
                |idx| {
                    let Some(record) = idx.history.last().filter(|r| r.id == id).cloned() else {
                        return Ok(Attempt::Retry);
                    };
                    let mut plans = redo_plans(&record);
                    classify(self, &mut plans)?;
                    let record_gone = |_: &FilePlan| DoneWhen::RecordGone(id);
                    let remake_dirs = || make_dirs(&record.removed_dirs);
                    let applied =
                        match refuse_check_apply(self, &plans, opts, record_gone, remake_dirs) {
                            Ok(a) => a,
                            Err(e) => return Ok(Attempt::Done(Err(e))),
                        };
                    if let Err(e) = applied.outcome {
                        // Nothing of the record is put back: the files redone so
                        // far go back to what the redo found, as after a crash.
                        crate::recovery::settle_revert(
                            self.store(),
                            self.session_dir(),
                            &self.holder(),
                            idx,
                            Some(files),
                        );
                        return Ok(Attempt::Done(Err(e)));
                    }
                    idx.pop_record();
                    for e in record.entries {
                        idx.insert_entry(e);
                    }
                    idx.insert_turns(record.turns);
                    record_overwrites(idx, &applied.restored);
                    Ok(Attempt::Done(Ok(report(self, &plans, true))))
                },
                || marker::remove(self.session_dir()),
            )
        })
    }
}

/// A forced redo over files changed since records, for each such file, a change
/// of its own from what it found to what it wrote (one step for all of them),
/// so that undo can take the overwrite back.
fn record_overwrites(idx: &mut Tracked, restored: &[(&FilePlan, Option<FileState>)]) {
    let forced: Vec<(&FilePlan, &FileState)> = restored
        .iter()
        .filter(|(p, _)| {
            matches!(
                p.status,
                FileStatus::Conflict(ConflictReason::ChangedSince { .. })
            )
        })
        .filter_map(|(p, found)| found.as_ref().map(|f| (*p, f)))
        .collect();
    let group = (forced.len() > 1).then_some(idx.next_seq);
    let turn = idx.current_turn();
    for (p, found) in forced {
        let file = p.file();
        // Counted here: the index's lookups catch up with the entries this
        // redo put back only when its change is recorded.
        let version = 1 + idx
            .entries
            .iter()
            .filter(|e| e.absolute_path() == file)
            .count() as u32;
        let entry = Entry {
            seq: idx.take_seq(),
            message_id: REDO_OVERWRITE_MESSAGE.to_owned(),
            workspace: p.root.clone(),
            path: p.rel.to_string(),
            version,
            time: OffsetDateTime::now_utc(),
            before: found.clone(),
            after: Some(p.target.clone()),
            created_dirs: Vec::new(),
            in_flight: None,
            turn,
            group,
            scan: None,
        };
        idx.mark_read(file, p.target.clone());
        idx.insert_entry(entry);
    }
}

/// Makes again, outermost first, the directories a revert removed; one that
/// exists is kept, anything else in the way (a file, a link) is an error.
fn make_dirs(dirs: &[RemovedDir]) -> Result<()> {
    for d in dirs {
        let ws = Workspace::reopen(&d.workspace)?;
        // Walked to as to a file in it, which makes every directory on the way.
        let inside = RelPath::checked(&d.path).child("x").expect("a plain name");
        ws.parent_of(&inside, true)?;
    }
    Ok(())
}
