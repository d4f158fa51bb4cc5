//! Planning a revert per file and classifying each file: still as the
//! session left it, already back, changed since (and by whom), or never
//! committed; and the report a plan becomes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{ChangedBy, Conflict, ConflictReason, Error, Result};
use crate::index::{Entry, FileState, Index, RevertRecord, WorkspaceRoot};
use crate::relpath::RelPath;
use crate::session::Session;
use crate::workspace::Workspace;

use super::report::{FileRevert, FileStatus, RevertAction, RevertOptions, RevertReport};

/// A file's part of a revert.
pub(super) struct FilePlan {
    pub(super) root: WorkspaceRoot,
    pub(super) rel: RelPath,
    /// The entries reverted for this file, newest first.
    pub(super) seqs: Vec<u64>,
    /// What the file is restored to.
    pub(super) target: FileState,
    /// What the session left the file as (the newest entry's "after"); `None`
    /// when that change was never committed.
    pub(super) expected: Option<FileState>,
    pub(super) created_dirs: Vec<RelPath>,
    pub(super) temps: Vec<String>,
    pub(super) status: FileStatus,
    /// The file as the check found it.
    pub(super) now: FileState,
    /// Other sessions that may share a change of the file (a scan's
    /// [`crate::ScanMark::shared_with`]): the revert refuses unless forced.
    pub(super) shared_with: Vec<String>,
    /// True when an entry of it is a scan's (which may record directories).
    pub(super) scan: bool,
    /// A directory the revert would delete that holds something it does not
    /// take away (this, relative to the workspace): it stays.
    pub(super) kept: Option<String>,
}

impl FilePlan {
    pub(super) fn file(&self) -> PathBuf {
        self.rel.under(&self.root.path)
    }

    pub(super) fn touches(&self) -> bool {
        self.status != FileStatus::AlreadyReverted
    }
}

/// Groups the selected entries by file, newest first; each file goes back to
/// the "before" of its oldest selected entry.
pub(super) fn plan(idx: &Index, seqs: &[u64]) -> Vec<FilePlan> {
    // Sets and maps, not scans of lists: a shell command's step may hold
    // 100,000 files.
    let mut plans: Vec<FilePlan> = Vec::new();
    let mut by_file: HashMap<PathBuf, usize> = HashMap::new();
    let wanted: HashSet<u64> = seqs.iter().copied().collect();
    let mut selected: Vec<&Entry> = idx
        .entries
        .iter()
        .filter(|e| wanted.contains(&e.seq))
        .collect();
    selected.sort_by_key(|e| std::cmp::Reverse(e.seq));
    for e in selected {
        let temp = e.in_flight.as_ref().and_then(|f| f.temp.clone());
        let shared = e.scan.iter().flat_map(|m| m.shared_with.clone());
        let file = e.absolute_path();
        let at = by_file.get(&file).copied();
        if at.is_none() {
            by_file.insert(file, plans.len());
        }
        match at.map(|i| &mut plans[i]) {
            Some(p) => {
                p.shared_with.extend(shared);
                p.scan |= e.scan.is_some();
                p.seqs.push(e.seq);
                p.target = e.before.clone();
                p.created_dirs = e.created_dirs.iter().map(|d| RelPath::checked(d)).collect();
                p.temps.extend(temp);
            }
            None => plans.push(FilePlan {
                root: e.workspace.clone(),
                rel: e.rel_path(),
                seqs: vec![e.seq],
                target: e.before.clone(),
                expected: e.after.clone(),
                created_dirs: e.created_dirs.iter().map(|d| RelPath::checked(d)).collect(),
                temps: temp.into_iter().collect(),
                status: FileStatus::Safe,
                now: FileState::absent(),
                shared_with: shared.collect(),
                scan: e.scan.is_some(),
                kept: None,
            }),
        }
    }
    plans
}

/// The files a redo puts back: each to what the revert found, expected to be
/// as the revert left it.
pub(super) fn redo_plans(record: &RevertRecord) -> Vec<FilePlan> {
    let mut of_file: HashMap<PathBuf, Vec<&Entry>> = HashMap::new();
    for e in &record.entries {
        of_file.entry(e.absolute_path()).or_default().push(e);
    }
    let mut plans: Vec<FilePlan> = record
        .files
        .iter()
        .filter_map(|f| {
            let of_file = of_file.get(&f.absolute_path());
            let mut seqs: Vec<u64> =
                of_file.map_or(Vec::new(), |es| es.iter().map(|e| e.seq).collect());
            let scan = of_file.is_some_and(|es| es.iter().any(|e| e.scan.is_some()));
            seqs.sort_by_key(|s| std::cmp::Reverse(*s));
            Some(FilePlan {
                root: f.workspace.clone(),
                rel: RelPath::checked(&f.path),
                seqs,
                target: f.overwritten.clone()?,
                expected: Some(f.restored.clone()),
                created_dirs: Vec::new(),
                temps: Vec::new(),
                status: FileStatus::Safe,
                now: FileState::absent(),
                shared_with: Vec::new(),
                scan,
                kept: None,
            })
        })
        .collect();
    // Where a directory is made or removed the order matters: a redo goes
    // the other way from its revert (a directory made before what goes in
    // it, and emptied before it goes). Files alone keep the revert's order.
    let dirs =
        |p: &FilePlan| p.target.is_dir() || p.expected.as_ref().is_some_and(FileState::is_dir);
    if plans.iter().any(dirs) {
        plans.reverse();
    }
    plans
}

/// Compares each file as it is now (contents and mode) with its target and
/// with what the session left: every file is checked before any is touched.
/// A directory is a state too (a scan records the ones a command made or
/// removed): a file under one this revert makes again, where a file is now,
/// is absent, and a file goes back where a directory is only if the revert
/// empties it.
pub(super) fn classify(session: &Session, plans: &mut [FilePlan]) -> Result<()> {
    let made: Vec<PathBuf> = plans
        .iter()
        .filter(|p| p.target.is_dir())
        .map(FilePlan::file)
        .collect();
    let taken: HashSet<PathBuf> = plans
        .iter()
        .filter(|p| !p.target.exists)
        .map(FilePlan::file)
        .collect();
    for p in plans.iter_mut() {
        session.check_scope(&p.root.path)?;
        let ws = Workspace::reopen(&p.root)?;
        let file = p.file();
        // Only a scan's plan (a scan records the directories a command made,
        // removed or swapped) reads a directory as a state; any other finds
        // one in its file's place refused as before (`NotRegularFile`): no
        // entry of it made that directory.
        let involves_dir =
            p.scan || p.target.is_dir() || p.expected.as_ref().is_some_and(FileState::is_dir);
        let read = if involves_dir {
            ws.state_of(&p.rel)
        } else {
            ws.current_state(&p.rel)
        };
        let now = match read {
            Ok(now) => now,
            Err(Error::UnsafePath {
                what: "not a directory",
                ..
            }) if made.iter().any(|d| file.starts_with(d) && file != *d) => FileState::absent(),
            Err(e) => return Err(e),
        };
        p.status = if now.same_state(&p.target) {
            FileStatus::AlreadyReverted
        } else {
            match &p.expected {
                None => FileStatus::Conflict(ConflictReason::NeverCommitted),
                Some(a) if now.same_state(a) && !p.shared_with.is_empty() => {
                    FileStatus::Conflict(ConflictReason::Shared {
                        with: p.shared_with.clone(),
                    })
                }
                Some(a) if now.same_state(a) => FileStatus::Safe,
                Some(_) => FileStatus::Conflict(ConflictReason::ChangedSince {
                    by: find_changer(session, &p.file(), &now),
                }),
            }
        };
        if now.is_dir() && !p.target.is_dir() {
            let found = left_in(&ws, &p.rel, &taken)?;
            match found {
                Some(found) if p.target.exists => {
                    p.status = FileStatus::Conflict(ConflictReason::NotEmpty { found });
                }
                // A directory to delete that holds more than the revert
                // takes away is only emptied (`apply::replace`): it stays.
                kept => p.kept = kept,
            }
        }
        p.now = now;
    }
    Ok(())
}

/// Something in the directory `dir` that the revert does not take away
/// (`taken`: the absolute paths it leaves absent), looking into the
/// directories it does take; `None` when it leaves the directory empty. A
/// scan's rollback asks the same before it records anything.
pub(crate) fn left_in(
    ws: &Workspace,
    dir: &RelPath,
    taken: &HashSet<PathBuf>,
) -> Result<Option<String>> {
    for name in ws.dir_names(dir)? {
        let Some(child) = dir.child(&name) else {
            return Ok(Some(format!("{dir}/{name}")));
        };
        if !taken.contains(&child.under(ws.root())) {
            return Ok(Some(child.to_string()));
        }
        if ws.dir_mode(&child)?.is_some()
            && let Some(found) = left_in(ws, &child, taken)?
        {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The newest entry in any session of the store whose "after" is the file as it
/// is now: the change that made it so. The caller may hold `session`'s lock.
fn find_changer(session: &Session, file: &Path, now: &FileState) -> Option<ChangedBy> {
    let made_it_so = |e: &Entry| {
        e.absolute_path() == file && e.after.as_ref().is_some_and(|a| a.same_state(now))
    };
    newest_change(session, made_it_so)
}

/// The newest entry in effect, in any session, that `wanted` accepts, as who
/// made it. The caller may hold `session`'s lock.
pub(super) fn newest_change(
    session: &Session,
    wanted: impl Fn(&Entry) -> bool,
) -> Option<ChangedBy> {
    let (session, e) = session
        .store()
        .newest_entry_where(Some(session.id()), wanted)
        .ok()??;
    Some(ChangedBy {
        session,
        message_id: e.message_id,
        seq: e.seq,
    })
}

pub(super) fn refuse_conflicts(
    session: &Session,
    plans: &[FilePlan],
    opts: RevertOptions,
) -> Result<()> {
    let conflicts: Vec<Conflict> = plans
        .iter()
        .filter_map(|p| {
            Some(Conflict {
                workspace: p.root.path.clone(),
                path: p.rel.to_string(),
                seq: p.seqs.first().copied().unwrap_or(0),
                reason: p.status.conflict()?.clone(),
            })
        })
        .collect();
    // Forced, a revert still never deletes what a directory holds that the
    // changes it reverts did not make.
    let forcible = |c: &Conflict| !matches!(c.reason, ConflictReason::NotEmpty { .. });
    if conflicts.is_empty() || opts.force && conflicts.iter().all(forcible) {
        return Ok(());
    }
    Err(Error::Refused {
        session: session.id().to_owned(),
        conflicts,
    })
}

pub(super) fn report(session: &Session, plans: &[FilePlan], applied: bool) -> RevertReport {
    RevertReport {
        session: session.id().to_owned(),
        applied,
        files: plans
            .iter()
            .map(|p| FileRevert {
                workspace: p.root.path.clone(),
                path: p.rel.to_string(),
                seqs: p.seqs.clone(),
                action: if p.target.is_dir() {
                    RevertAction::Directory
                } else if let Some(holding) = &p.kept {
                    RevertAction::KeepDirectory {
                        holding: holding.clone(),
                    }
                } else if p.target.exists {
                    RevertAction::Write {
                        size: p.target.size,
                    }
                } else {
                    RevertAction::Delete
                },
                target: p.target.clone(),
                status: p.status.clone(),
            })
            .collect(),
        evicted: Vec::new(),
    }
}
