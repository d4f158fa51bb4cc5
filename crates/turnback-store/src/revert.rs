//! Undo, revert and rewind: plan, check, then restore.
//!
//! Every revert is planned in full before anything is touched: the entries are
//! grouped by file, each file's state now is compared with what the session left
//! (the newest entry's "after"), and a single file that changed since (or was never
//! committed) refuses the whole revert unless `force` is given. Only then are files
//! restored, newest first, each through the workspace capability: from a backup
//! verified against its hash into an unnamed temporary that replaces the file in
//! one rename, or by deleting a file the session created.
//!
//! A file already back in its "before" state counts as done: that is how a crash
//! between restoring files and updating the index heals on the next run.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::durable::Durability;
use crate::error::{ChangedBy, Conflict, ConflictReason, Error, Result};
use crate::hash;
use crate::index::{
    Entry, FileState, Index, RemovedDir, RevertRecord, RevertedFile, WorkspaceRoot,
    is_relative_path,
};
use crate::lock::LockGuard;
use crate::session::Session;
use crate::workspace::{NewContents, Workspace};

/// How a revert may proceed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevertOptions {
    /// Restore files even when they changed since the session wrote them, or the
    /// change was never committed.
    pub force: bool,
    /// Only plan: report what would happen, touch nothing.
    pub dry_run: bool,
}

/// What a revert did, or with `dry_run` would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertReport {
    /// The session whose entries were reverted.
    pub session: String,
    /// False for a dry run: nothing was touched.
    pub applied: bool,
    /// One item per file, newest change first.
    pub files: Vec<FileRevert>,
}

/// The revert of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRevert {
    /// The workspace root.
    pub workspace: PathBuf,
    /// The file's path relative to it.
    pub path: String,
    /// The entries reverted for this file, newest first.
    pub seqs: Vec<u64>,
    /// What the file is restored to.
    pub action: RevertAction,
    /// The state the file is restored to (its contents are a backup).
    pub target: FileState,
    /// Whether the file was still as the session left it.
    pub status: FileStatus,
}

/// What a revert does to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertAction {
    /// The file is written back with these contents.
    Write {
        /// Size of the restored contents.
        size: u64,
    },
    /// The file did not exist before: it is deleted.
    Delete,
}

/// A file's state now, compared with what the session left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// Still as the session left it: safe to restore.
    Safe,
    /// Already back in its "before" state: nothing to do.
    AlreadyReverted,
    /// Changed since, by someone else (named where the store knows).
    ChangedSince {
        /// Who changed it, where the store knows.
        by: Option<ChangedBy>,
    },
    /// The change was never committed: what the write left is unknown.
    NeverCommitted,
}

impl FileStatus {
    /// True when this status stops a revert that is not forced.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            FileStatus::ChangedSince { .. } | FileStatus::NeverCommitted
        )
    }
}

/// Which entries a revert takes, read from the index under its lock.
type Select<'a> = &'a dyn Fn(&Index) -> Result<Vec<u64>>;

/// What kind of revert, as recorded for redo; `None` for a checkpoint's
/// rollback, which is not recorded (its change never happened as far as the
/// session is concerned).
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) name: Option<&'static str>,
    /// A rewind to a turn also takes away that turn and the later ones.
    pub(crate) turns_from: Option<u32>,
}

impl Kind {
    const fn named(name: &'static str) -> Kind {
        Kind {
            name: Some(name),
            turns_from: None,
        }
    }
}

/// A file's part of a revert.
struct FilePlan {
    root: WorkspaceRoot,
    rel: String,
    /// The entries reverted for this file, newest first.
    seqs: Vec<u64>,
    /// What the file is restored to.
    target: FileState,
    /// What the session left the file as (the newest entry's "after"); `None`
    /// when that change was never committed.
    expected: Option<FileState>,
    created_dirs: Vec<String>,
    temps: Vec<String>,
    status: FileStatus,
}

impl FilePlan {
    fn file(&self) -> PathBuf {
        self.root.path.join(&self.rel)
    }
}

/// The newest entry's step: it, and the other entries of its group.
fn with_group(idx: &Index, newest: &Entry) -> Vec<u64> {
    match newest.group {
        Some(g) => idx
            .entries
            .iter()
            .filter(|e| e.group == Some(g))
            .map(|e| e.seq)
            .collect(),
        None => vec![newest.seq],
    }
}

impl Session {
    /// Reverts the session's newest step: its newest entry (with the other side
    /// of a rename).
    pub fn undo(&self, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        revert_entries(self, opts, Kind::named("undo"), &move |idx| {
            idx.entries
                .last()
                .map(|e| with_group(idx, e))
                .ok_or_else(|| Error::NothingToUndo {
                    session: id.clone(),
                })
        })
    }

    /// Reverts the newest entry for `path` in `workspace` (with the other side
    /// of a rename).
    pub fn revert(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        opts: RevertOptions,
    ) -> Result<RevertReport> {
        let path = path.as_ref();
        let candidates = candidate_files(workspace, path)?;
        let id = self.id().to_owned();
        revert_entries(self, opts, Kind::named("revert"), &move |idx| {
            idx.entries
                .iter()
                .rev()
                .find(|e| candidates.contains(&e.absolute_path()))
                .map(|e| with_group(idx, e))
                .ok_or_else(|| Error::NoChangeToFile {
                    session: id.clone(),
                    path: path.to_owned(),
                })
        })
    }

    /// Reverts every entry from the first one of `message_id` to the newest,
    /// newest first: every file goes back to how it was before that message.
    pub fn rewind(&self, message_id: &str, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        revert_entries(self, opts, Kind::named("rewind"), &move |idx| {
            let first = idx
                .entries
                .iter()
                .find(|e| e.message_id == message_id)
                .ok_or_else(|| Error::MessageNotFound {
                    session: id.clone(),
                    message_id: message_id.to_owned(),
                })?;
            Ok(from_seq(idx, first.seq))
        })
    }

    /// Puts back what the newest undo, revert or rewind took away (files and
    /// entries, and the turns of a rewind to a turn), with the same safety check:
    /// a file changed since that revert refuses the redo unless forced.
    pub fn redo(&self, opts: RevertOptions) -> Result<RevertReport> {
        for _ in 0..8 {
            let record = self.view(|s| s.history.last().cloned())?;
            let record = record.ok_or_else(|| Error::NothingToRedo {
                session: self.id().to_owned(),
            })?;
            if opts.dry_run {
                let mut plans = redo_plans(&record);
                classify(self, &mut plans)?;
                return Ok(report(self, &plans, false));
            }
            let files: BTreeSet<PathBuf> = record
                .files
                .iter()
                .map(|f| f.workspace.path.join(&f.path))
                .collect();
            let _guards = lock_files(self, &files)?;
            let id = record.id;
            let outcome = self.mutate_holding(Durability::Full, Some(&files), |idx| {
                let Some(record) = idx.history.last().filter(|r| r.id == id).cloned() else {
                    return Ok(Attempt::Retry);
                };
                let mut plans = redo_plans(&record);
                classify(self, &mut plans)?;
                if let Err(e) = refuse_conflicts(self, &plans, opts) {
                    return Ok(Attempt::Done(Err(e)));
                }
                if let Err(e) = check_backups(self, &plans) {
                    return Ok(Attempt::Done(Err(e)));
                }
                if let Err(e) = make_dirs(&record.removed_dirs) {
                    return Ok(Attempt::Done(Err(e)));
                }
                let temps = match mark_temps(self, &plans) {
                    Ok(t) => t,
                    Err(e) => return Ok(Attempt::Done(Err(e))),
                };
                for (p, temp) in plans.iter().zip(temps) {
                    if let Err(e) = restore(self, p, false, temp) {
                        // Nothing of the record is put back: the files restored so
                        // far are at their redone state, which a second redo finds
                        // "already" done.
                        unmark_temps(self);
                        return Ok(Attempt::Done(Err(e)));
                    }
                }
                unmark_temps(self);
                idx.pop_record();
                for e in record.entries {
                    idx.insert_entry(e);
                }
                idx.insert_turns(record.turns);
                Ok(Attempt::Done(Ok(report(self, &plans, true))))
            })?;
            if let Attempt::Done(r) = outcome {
                return r;
            }
        }
        Err(Error::SessionBusy {
            session: self.id().to_owned(),
            waited: std::time::Duration::ZERO,
        })
    }

    /// The undos, reverts and rewinds that `redo` can still put back, oldest first.
    pub fn history(&self) -> Result<Vec<RevertRecord>> {
        self.view(|s| s.history.clone())
    }
}

/// Makes again, outermost first, the directories a revert removed; one that
/// exists is kept, anything else in the way (a file, a link) is an error.
fn make_dirs(dirs: &[RemovedDir]) -> Result<()> {
    for d in dirs {
        let ws = Workspace::reopen(&d.workspace)?;
        ws.parent_of(&format!("{}/x", d.path), true)?;
    }
    Ok(())
}

/// Every entry from `first` on.
pub(crate) fn from_seq(idx: &Index, first: u64) -> Vec<u64> {
    idx.entries
        .iter()
        .filter(|e| e.seq >= first)
        .map(|e| e.seq)
        .collect()
}

/// The absolute paths an entry for `path` may be recorded under: as written (`.`
/// and `..` applied lexically), and with links resolved as a checkpoint would.
/// Entries are matched by absolute path, so nested workspaces see each other's.
pub(crate) fn candidate_files(workspace: &Workspace, path: &Path) -> Result<Vec<PathBuf>> {
    Ok(candidate_paths(workspace, path)?
        .into_iter()
        .map(|rel| workspace.root().join(rel))
        .collect())
}

fn candidate_paths(workspace: &Workspace, path: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let relative = if path.is_absolute() {
        path.strip_prefix(workspace.root()).ok().map(Path::to_owned)
    } else {
        Some(path.to_owned())
    };
    if let Some(lexical) = relative.and_then(|r| lexical_normal(&r)) {
        out.push(lexical);
    }
    match workspace.resolve(path) {
        Ok(real) if !out.contains(&real) => out.push(real),
        Ok(_) => {}
        Err(e) if out.is_empty() => return Err(e),
        Err(_) => {}
    }
    Ok(out)
}

fn lexical_normal(p: &Path) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str()?),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    let s = parts.join("/");
    is_relative_path(&s).then_some(s)
}

enum Attempt {
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
        let _guards = lock_files(session, &files)?;
        match attempt(session, opts, kind, select, Some(&files))? {
            Attempt::Done(r) => return r,
            Attempt::Retry => continue,
        }
    }
    Err(Error::SessionBusy {
        session: session.id().to_owned(),
        waited: std::time::Duration::ZERO,
    })
}

/// Takes the locks of `files`, sorted by lock name so that no two callers can
/// deadlock.
pub(crate) fn lock_files(session: &Session, files: &BTreeSet<PathBuf>) -> Result<Vec<LockGuard>> {
    let mut by_lock: Vec<_> = files
        .iter()
        .map(|file| (session.store().file_lock_path(file), file))
        .collect();
    by_lock.sort();
    by_lock
        .iter()
        .map(|(_, file)| session.lock_file_at(file))
        .collect()
}

/// A revert by a caller that already holds the locks of the files concerned
/// (a checkpoint rolling back its own change).
pub(crate) fn revert_locked(
    session: &Session,
    opts: RevertOptions,
    select: Select,
) -> Result<RevertReport> {
    let rollback = Kind {
        name: None,
        turns_from: None,
    };
    match attempt(session, opts, rollback, select, None)? {
        Attempt::Done(r) => r,
        Attempt::Retry => unreachable!("without a lock set there is nothing to retry"),
    }
}

/// The absolute paths of the files the entries `seqs` change.
fn files_of(idx: &Index, seqs: &[u64]) -> BTreeSet<PathBuf> {
    idx.entries
        .iter()
        .filter(|e| seqs.contains(&e.seq))
        .map(Entry::absolute_path)
        .collect()
}

fn refuse_conflicts(session: &Session, plans: &[FilePlan], opts: RevertOptions) -> Result<()> {
    let conflicts: Vec<Conflict> = plans
        .iter()
        .filter(|p| p.status.is_conflict())
        .map(|p| Conflict {
            workspace: p.root.path.clone(),
            path: p.rel.clone(),
            seq: p.seqs.first().copied().unwrap_or(0),
            reason: match &p.status {
                FileStatus::ChangedSince { by } => ConflictReason::ChangedSince { by: by.clone() },
                _ => ConflictReason::NeverCommitted,
            },
        })
        .collect();
    if conflicts.is_empty() || opts.force {
        return Ok(());
    }
    Err(Error::Refused {
        session: session.id().to_owned(),
        conflicts,
    })
}

fn attempt(
    session: &Session,
    opts: RevertOptions,
    kind: Kind,
    select: Select,
    locked: Option<&BTreeSet<PathBuf>>,
) -> Result<Attempt> {
    session.mutate_holding(Durability::Full, locked, |idx| {
        let seqs = select(idx)?;
        if let Some(locked) = locked
            && !files_of(idx, &seqs).is_subset(locked)
        {
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
        let temps = match mark_temps(session, &plans) {
            Ok(t) => t,
            Err(e) => return Ok(Attempt::Done(Err(e))),
        };
        // Restore newest first; drop the entries of each file as it is done, so
        // that a failure part way leaves an index that matches the files.
        let recorded = kind.name.is_some();
        let mut outcome = Ok(());
        let mut restored: Vec<(&FilePlan, Option<FileState>)> = Vec::new();
        for (p, temp) in plans.iter().zip(temps) {
            match restore(session, p, recorded, temp) {
                Ok(overwritten) => restored.push((p, overwritten)),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        // Every temporary is renamed over its file or deleted by now.
        unmark_temps(session);
        let taken: Vec<u64> = restored.iter().flat_map(|(p, _)| p.seqs.clone()).collect();
        let entries: Vec<Entry> = idx
            .entries
            .iter()
            .filter(|e| taken.contains(&e.seq))
            .cloned()
            .collect();
        idx.remove_entries(&taken);
        let mut turns = Vec::new();
        if let (Some(n), true) = (kind.turns_from, outcome.is_ok()) {
            turns = idx.split_turns(n);
        }
        let removed_dirs =
            remove_created_dirs(&restored.iter().map(|(p, _)| *p).collect::<Vec<_>>());
        if let Some(name) = kind.name
            && (!entries.is_empty() || !turns.is_empty())
        {
            // A file found already restored was overwritten with nothing: the
            // revert found it at its target, and redo leaves it there.
            let files = restored
                .iter()
                .map(|(p, overwritten)| RevertedFile {
                    workspace: p.root.clone(),
                    path: p.rel.clone(),
                    overwritten: match p.status {
                        FileStatus::AlreadyReverted => Some(p.target.clone()),
                        _ => overwritten.clone(),
                    },
                    restored: p.target.clone(),
                })
                .collect();
            idx.push_record(RevertRecord {
                id: 0, // numbered by the index
                kind: name.to_owned(),
                time: time::OffsetDateTime::now_utc(),
                entries,
                turns,
                files,
                removed_dirs,
            });
        }
        Ok(Attempt::Done(
            outcome.map(|()| report(session, &plans, true)),
        ))
    })
}

/// Groups the selected entries by file, newest first; each file goes back to
/// the "before" of its oldest selected entry.
fn plan(idx: &Index, seqs: &[u64]) -> Vec<FilePlan> {
    let mut plans: Vec<FilePlan> = Vec::new();
    let mut selected: Vec<&Entry> = idx
        .entries
        .iter()
        .filter(|e| seqs.contains(&e.seq))
        .collect();
    selected.sort_by_key(|e| std::cmp::Reverse(e.seq));
    for e in selected {
        let temp = e.in_flight.as_ref().and_then(|f| f.temp.clone());
        match plans.iter_mut().find(|p| p.file() == e.absolute_path()) {
            Some(p) => {
                p.seqs.push(e.seq);
                p.target = e.before.clone();
                p.created_dirs = e.created_dirs.clone();
                p.temps.extend(temp);
            }
            None => plans.push(FilePlan {
                root: e.workspace.clone(),
                rel: e.path.clone(),
                seqs: vec![e.seq],
                target: e.before.clone(),
                expected: e.after.clone(),
                created_dirs: e.created_dirs.clone(),
                temps: temp.into_iter().collect(),
                status: FileStatus::Safe,
            }),
        }
    }
    plans
}

/// The files a redo puts back: each to what the revert found, expected to be
/// as the revert left it.
fn redo_plans(record: &RevertRecord) -> Vec<FilePlan> {
    record
        .files
        .iter()
        .filter_map(|f| {
            let file = f.workspace.path.join(&f.path);
            let mut seqs: Vec<u64> = record
                .entries
                .iter()
                .filter(|e| e.absolute_path() == file)
                .map(|e| e.seq)
                .collect();
            seqs.sort_by_key(|s| std::cmp::Reverse(*s));
            Some(FilePlan {
                root: f.workspace.clone(),
                rel: f.path.clone(),
                seqs,
                target: f.overwritten.clone()?,
                expected: Some(f.restored.clone()),
                created_dirs: Vec::new(),
                temps: Vec::new(),
                status: FileStatus::Safe,
            })
        })
        .collect()
}

/// Compares each file as it is now with its target and with what the session
/// left: every file is checked before any is touched.
fn classify(session: &Session, plans: &mut [FilePlan]) -> Result<()> {
    for p in plans.iter_mut() {
        session.check_scope(&p.root.path)?;
        let ws = Workspace::reopen(&p.root)?;
        let now = ws.current_state(&p.rel)?;
        p.status = if now.same_contents(&p.target) {
            FileStatus::AlreadyReverted
        } else {
            match &p.expected {
                None => FileStatus::NeverCommitted,
                Some(a) if now.same_contents(a) => FileStatus::Safe,
                Some(_) => FileStatus::ChangedSince {
                    by: find_changer(session, &p.file(), &now),
                },
            }
        };
    }
    Ok(())
}

/// The newest entry in any session of the store whose "after" is the file as it
/// is now: the change that made it so. The caller may hold `session`'s lock.
fn find_changer(session: &Session, file: &Path, now: &FileState) -> Option<ChangedBy> {
    let made_it_so = |e: &Entry| {
        e.absolute_path() == file && e.after.as_ref().is_some_and(|a| a.same_contents(now))
    };
    let store = session.store();
    let (session, e) = store
        .newest_entry_where(Some(session.id()), made_it_so)
        .ok()??;
    Some(ChangedBy {
        session,
        message_id: e.message_id,
        seq: e.seq,
    })
}

/// Where a revert writes down the temporaries it will name in the workspace,
/// before it names any. A revert runs under the session's lock, so a marker that
/// the next holder of the lock finds belongs to a process that died part way:
/// [`sweep_temps`] deletes exactly the names it lists.
const MARKER: &str = "reverting.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct MarkedTemp {
    workspace: WorkspaceRoot,
    /// The file (relative to the root) the temporary was to replace.
    path: String,
    /// The temporary's name in that file's directory.
    temp: String,
}

/// Chooses a temporary name for each file the revert will write and writes
/// them down durably; `None` for files it deletes or leaves.
fn mark_temps(session: &Session, plans: &[FilePlan]) -> Result<Vec<Option<String>>> {
    let names: Vec<Option<String>> = plans
        .iter()
        .map(|p| {
            (p.status != FileStatus::AlreadyReverted && p.target.exists)
                .then(crate::workspace::new_temp_name)
        })
        .collect();
    let marked: Vec<MarkedTemp> = plans
        .iter()
        .zip(&names)
        .filter_map(|(p, n)| {
            n.as_ref().map(|temp| MarkedTemp {
                workspace: p.root.clone(),
                path: p.rel.clone(),
                temp: temp.clone(),
            })
        })
        .collect();
    if !marked.is_empty() {
        let bytes = serde_json::to_vec(&marked).expect("a marker always serializes");
        crate::durable::replace(session.dir(), MARKER, &bytes, Durability::Full)?;
    }
    Ok(names)
}

fn unmark_temps(session: &Session) {
    let _ = std::fs::remove_file(session.dir().join(MARKER));
}

/// True when a revert's list of temporaries is there (its process died).
pub(crate) fn has_marker(session_dir: &Path) -> bool {
    std::fs::symlink_metadata(session_dir.join(MARKER)).is_ok()
}

/// Deletes the temporaries a dead revert listed, then its list. Call under the
/// session's exclusive lock.
pub(crate) fn sweep_temps(session_dir: &Path) {
    let path = session_dir.join(MARKER);
    let Ok(bytes) = crate::trust::open_read(&path).and_then(|mut f| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut bytes).map(|_| bytes)
    }) else {
        return;
    };
    let marked: Vec<MarkedTemp> = serde_json::from_slice(&bytes).unwrap_or_default();
    for m in marked {
        if !is_relative_path(&m.path) || !crate::index::is_temp_name(&m.temp) {
            continue;
        }
        if let Ok(ws) = Workspace::reopen(&m.workspace)
            && let Ok(Some(parent)) = ws.parent_of(&m.path, false)
        {
            parent.remove_temp(&m.temp);
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// Restores one file; with `keep_overwritten`, first backs up what it replaces
/// (for redo) and returns its state. `temp` is the name written down for it.
fn restore(
    session: &Session,
    p: &FilePlan,
    keep_overwritten: bool,
    temp: Option<String>,
) -> Result<Option<FileState>> {
    let ws = Workspace::reopen(&p.root)?;
    let mut overwritten = None;
    if p.status != FileStatus::AlreadyReverted {
        // What is replaced is backed up only once the replacement is known good.
        let mut keep = |ws: &Workspace| -> Result<()> {
            if keep_overwritten {
                overwritten = Some(session.back_up(ws, &p.rel)?);
            }
            Ok(())
        };
        match p.target.sha256.as_deref() {
            Some(hash) => {
                let parent = ws
                    .parent_of(&p.rel, true)?
                    .expect("parent_of creates what is missing");
                parent.target_kind(ws.root())?;
                let blob_path = session.blobs().path(hash);
                let mut blob = session.blobs().open(hash).map_err(|_| Error::BlobMissing {
                    session: session.id().to_owned(),
                    path: p.rel.clone(),
                    hash: hash.to_owned(),
                })?;
                let mut new = match temp {
                    Some(name) => NewContents::create_named(&parent, 0o600, name)?,
                    None => NewContents::create(&parent, 0o600)?,
                };
                let (actual, _) = new.fill(&mut blob, &blob_path)?;
                if actual != hash {
                    return Err(Error::BlobCorrupt {
                        session: session.id().to_owned(),
                        path: p.rel.clone(),
                        hash: hash.to_owned(),
                        actual,
                    });
                }
                new.seal(p.target.mode)?;
                keep(&ws)?;
                new.replace_target()?;
            }
            None => {
                keep(&ws)?;
                if let Some(parent) = ws.parent_of(&p.rel, false)?
                    && parent.target_kind(ws.root())?.exists()
                {
                    parent.remove_target()?;
                }
            }
        }
    }
    if !p.temps.is_empty()
        && let Some(parent) = ws.parent_of(&p.rel, false)?
    {
        for t in &p.temps {
            parent.remove_temp(t);
        }
    }
    Ok(overwritten)
}

/// Every backup a revert will write must be there, and when the revert restores
/// more than one file, intact: a damaged backup found half way would leave the
/// revert half done. (A single file's backup is verified as it is copied, before
/// it replaces anything.)
fn check_backups(session: &Session, plans: &[FilePlan]) -> Result<()> {
    let writes: Vec<(&FilePlan, &str)> = plans
        .iter()
        .filter(|p| p.status != FileStatus::AlreadyReverted)
        .filter_map(|p| p.target.sha256.as_deref().map(|h| (p, h)))
        .collect();
    let to_touch = plans
        .iter()
        .filter(|p| p.status != FileStatus::AlreadyReverted)
        .count();
    for (p, hash) in &writes {
        let missing = || Error::BlobMissing {
            session: session.id().to_owned(),
            path: p.rel.clone(),
            hash: hash.to_string(),
        };
        if to_touch <= 1 {
            if !session.blobs().exists(hash) {
                return Err(missing());
            }
            continue;
        }
        let mut blob = session.blobs().open(hash).map_err(|_| missing())?;
        let blob_path = session.blobs().path(hash);
        let (actual, _) = hash::hash_reader(&mut blob).map_err(Error::io("read", &blob_path))?;
        if actual != *hash {
            return Err(Error::BlobCorrupt {
                session: session.id().to_owned(),
                path: p.rel.clone(),
                hash: hash.to_string(),
                actual,
            });
        }
    }
    Ok(())
}

/// Removes the directories that the reverted changes created, once every file
/// is restored and deepest first (one file's directory may hold another's);
/// returns those removed, for redo to make again.
fn remove_created_dirs(restored: &[&FilePlan]) -> Vec<RemovedDir> {
    let mut removed = Vec::new();
    let mut by_root: Vec<(&WorkspaceRoot, Vec<&String>)> = Vec::new();
    for p in restored.iter().filter(|p| !p.target.exists) {
        match by_root.iter_mut().find(|(r, _)| *r == &p.root) {
            Some((_, dirs)) => dirs.extend(&p.created_dirs),
            None => by_root.push((&p.root, p.created_dirs.iter().collect())),
        }
    }
    for (root, mut dirs) in by_root {
        let Ok(ws) = Workspace::reopen(root) else {
            continue;
        };
        // Outermost first, as remove_empty_dirs expects (it works from the end).
        dirs.sort_by_key(|d| (d.matches('/').count(), d.as_str()));
        dirs.dedup();
        let gone = ws.remove_empty_dirs(&dirs.into_iter().cloned().collect::<Vec<_>>());
        removed.extend(gone.into_iter().map(|path| RemovedDir {
            workspace: root.clone(),
            path,
        }));
    }
    removed
}

fn report(session: &Session, plans: &[FilePlan], applied: bool) -> RevertReport {
    RevertReport {
        session: session.id().to_owned(),
        applied,
        files: plans
            .iter()
            .map(|p| FileRevert {
                workspace: p.root.path.clone(),
                path: p.rel.clone(),
                seqs: p.seqs.clone(),
                action: if p.target.exists {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_paths() {
        assert_eq!(
            lexical_normal(Path::new("a/./b/../c")).as_deref(),
            Some("a/c")
        );
        assert_eq!(lexical_normal(Path::new("../a")), None);
        assert_eq!(lexical_normal(Path::new("/a")), None);
        assert_eq!(lexical_normal(Path::new(".")), None);
    }
}
