//! Undo, revert, rewind, redo and rollback: plan, check, back up, then restore.
//!
//! Every revert is planned in full before anything is touched: the entries are
//! grouped by file, each file's state now (contents and mode) is compared with
//! what the session left (the newest entry's "after"), and a single file that
//! changed since (or was never committed) refuses the whole revert unless
//! `force` is given. Then what each file to touch holds is backed up (for redo,
//! and for recovery), the revert is written down (`marker.rs`), and only then
//! are files restored, newest first, each through the workspace capability:
//! from a backup verified against its hash into a temporary that replaces the
//! file in one rename, or by deleting a file the session created. The index
//! records the revert last, and the marker goes after it.
//!
//! A revert is all or nothing across its files: one whose process dies part
//! way is undone by the next holder of the session's lock (`marker.rs`), so the
//! index always says what the files hold, and a revert run again afterwards
//! starts from the beginning.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use time::OffsetDateTime;

use crate::durable::Durability;
use crate::error::{ChangedBy, Conflict, ConflictReason, Error, Result};
use crate::hash;
use crate::index::{
    Entry, FileState, Index, RemovedDir, RevertRecord, RevertedFile, WorkspaceRoot,
    is_relative_path,
};
use crate::journal::Tracked;
use crate::lock::LockGuard;
use crate::marker::{self, DoneWhen, MarkedFile};
use crate::session::Session;
use crate::workspace::{NewContents, Parent, Workspace};

/// How a revert may proceed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevertOptions {
    /// Restore files even when they changed since the session wrote them, or the
    /// change was never committed. What they held is backed up first.
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
    /// Already back in its "before" state (contents and mode): nothing to do.
    AlreadyReverted,
    /// Changed since (its contents or its mode), by someone else (named where
    /// the store knows).
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

/// What kind of revert, as recorded for redo.
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    pub(crate) name: &'static str,
    /// A rewind to a turn also takes away that turn and the later ones.
    pub(crate) turns_from: Option<u32>,
}

impl Kind {
    const fn named(name: &'static str) -> Kind {
        Kind {
            name,
            turns_from: None,
        }
    }
}

/// The message id of the entry a forced redo records for each file it
/// overwrote, so that an undo brings back what it found.
pub const REDO_OVERWRITE_MESSAGE: &str = "turnback-redo";

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
    /// The file as the check found it.
    now: FileState,
}

impl FilePlan {
    fn file(&self) -> PathBuf {
        self.root.path.join(&self.rel)
    }

    fn touches(&self) -> bool {
        self.status != FileStatus::AlreadyReverted
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
    /// a file changed since that revert refuses the redo unless forced. What a
    /// forced redo overwrites is backed up and recorded as a change of its own
    /// (message [`REDO_OVERWRITE_MESSAGE`]), so that an undo brings it back.
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
            let outcome = self.mutate_holding_then(
                Durability::Full,
                Some(&files),
                |idx| {
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
                    let applied = match apply(self, &plans, true, |_| DoneWhen::RecordGone(id)) {
                        Ok(a) => a,
                        Err(e) => return Ok(Attempt::Done(Err(e))),
                    };
                    if let Err(e) = applied.outcome {
                        // Nothing of the record is put back: the files redone so
                        // far go back to what the redo found, as after a crash.
                        marker::settle(self, idx, Some(&files));
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
                || marker::remove(self.dir()),
            )?;
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

/// A forced redo over files changed since records, for each such file, a change
/// of its own from what it found to what it wrote (one step for all of them),
/// so that undo can take the overwrite back.
fn record_overwrites(idx: &mut Tracked, restored: &[(&FilePlan, Option<FileState>)]) {
    let forced: Vec<(&FilePlan, &FileState)> = restored
        .iter()
        .filter(|(p, _)| matches!(p.status, FileStatus::ChangedSince { .. }))
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
            path: p.rel.clone(),
            version,
            time: OffsetDateTime::now_utc(),
            before: found.clone(),
            after: Some(p.target.clone()),
            created_dirs: Vec::new(),
            in_flight: None,
            turn,
            group,
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
        || marker::remove(session.dir()),
    )
}

/// Takes the entries of the restored files out of the index and records what
/// was done for redo (a revert record of kind `name`), with the directories
/// the reverted changes made, now removed when empty.
fn record_revert(
    session: &Session,
    idx: &mut Tracked,
    name: &'static str,
    restored: &[(&FilePlan, Option<FileState>)],
    turns: Vec<crate::index::Turn>,
) {
    let taken: Vec<u64> = restored.iter().flat_map(|(p, _)| p.seqs.clone()).collect();
    let entries: Vec<Entry> = idx
        .entries
        .iter()
        .filter(|e| taken.contains(&e.seq))
        .cloned()
        .collect();
    idx.remove_entries(&taken);
    let restored_plans: Vec<&FilePlan> = restored.iter().map(|(p, _)| *p).collect();
    let removed_dirs = remove_created_dirs(session, &restored_plans);
    if entries.is_empty() && turns.is_empty() {
        return;
    }
    // A file found already restored was overwritten with nothing: the revert
    // found it at its target, and redo leaves it there.
    let files = restored
        .iter()
        .map(|(p, found)| RevertedFile {
            workspace: p.root.clone(),
            path: p.rel.clone(),
            overwritten: match p.status {
                FileStatus::AlreadyReverted => Some(p.target.clone()),
                _ => found.clone(),
            },
            restored: p.target.clone(),
        })
        .collect();
    idx.push_record(RevertRecord {
        id: 0, // numbered by the index
        kind: name.to_owned(),
        time: OffsetDateTime::now_utc(),
        entries,
        turns,
        files,
        removed_dirs,
    });
}

/// What [`apply`] did: each file restored, with what it held before (backed
/// up; `None` when not kept or not touched), in order, and how it ended.
struct Applied<'p> {
    restored: Vec<(&'p FilePlan, Option<FileState>)>,
    outcome: Result<()>,
}

/// How many files [`apply`] prepares at once: each holds two descriptors
/// (its directory and its new contents) until it is renamed into place.
const CHUNK: usize = 64;

/// Restores the files of `plans` in order, writing the revert down
/// ([`marker`]) before any temporary gets a name and before any file is
/// replaced. Chunk by chunk, every file's
/// new contents are made and verified first; then (with `keep`) what each
/// file holds is backed up and the marker rewritten with it, so that a
/// replacement is backed up only once it is known good and recovery can put
/// back every file touched; then the files are replaced. Stops at the first
/// file that fails; the caller records what was restored (the index then
/// matches the files) and removes the marker.
fn apply<'p>(
    session: &Session,
    plans: &'p [FilePlan],
    keep: bool,
    done_when: impl Fn(&FilePlan) -> DoneWhen,
) -> Result<Applied<'p>> {
    if marker::exists(session.dir()) {
        // A dead revert's marker that could not be settled yet (one of its
        // files was busy): writing ours would lose what it knows.
        return Err(Error::SessionBusy {
            session: session.id().to_owned(),
            waited: std::time::Duration::ZERO,
        });
    }
    let temps: Vec<String> = plans
        .iter()
        .map(|_| crate::workspace::new_temp_name())
        .collect();
    // Each touched plan's place in the marker.
    let mut slot = Vec::with_capacity(plans.len());
    let mut marked: Vec<MarkedFile> = Vec::new();
    for (p, temp) in plans.iter().zip(&temps) {
        slot.push(p.touches().then_some(marked.len()));
        if p.touches() {
            marked.push(MarkedFile {
                workspace: p.root.clone(),
                path: p.rel.clone(),
                temp: temp.clone(),
                target: p.target.clone(),
                overwritten: None,
                done_when: done_when(p),
            });
        }
    }
    let mut applied = Applied {
        restored: Vec::new(),
        outcome: Ok(()),
    };
    // The marker is written before the first named temporary (only where the
    // filesystem cannot make unnamed ones) and, with `keep`, before each
    // chunk's files are replaced; an unnamed temporary vanishes with a crash.
    let mut marker = Marking {
        files: marked,
        written: false,
    };
    let all: Vec<usize> = (0..plans.len()).collect();
    for chunk in all.chunks(CHUNK) {
        let (restored, outcome) =
            apply_chunk(session, plans, chunk, &temps, &slot, keep, &mut marker);
        applied.restored.extend(restored);
        if outcome.is_err() {
            applied.outcome = outcome;
            break;
        }
    }
    Ok(applied)
}

/// The marker of a revert being applied, and whether it is on disk yet.
struct Marking {
    files: Vec<MarkedFile>,
    written: bool,
}

impl Marking {
    fn write(&mut self, session: &Session) -> Result<()> {
        if !self.files.is_empty() {
            marker::write(session.dir(), self.files.clone())?;
            self.written = true;
        }
        Ok(())
    }
}

/// What [`apply_chunk`] restored, and how it ended.
type ChunkOutcome<'p> = (Vec<(&'p FilePlan, Option<FileState>)>, Result<()>);

/// One chunk of [`apply`]: prepare, back up and mark, replace.
fn apply_chunk<'p>(
    session: &Session,
    plans: &'p [FilePlan],
    chunk: &[usize],
    temps: &[String],
    slot: &[Option<usize>],
    keep: bool,
    marker: &mut Marking,
) -> ChunkOutcome<'p> {
    let fail = |e| (Vec::new(), Err(e));
    // The directories of the files to write, made where missing, and held
    // (their locks, shared) until the files are in place.
    let mut parents: Vec<Option<Parent>> = Vec::with_capacity(chunk.len());
    let mut dir_locks = Vec::new();
    for &i in chunk {
        let p = &plans[i];
        let parent = match (p.touches(), p.target.sha256.is_some()) {
            (true, true) => match Workspace::reopen(&p.root).and_then(|ws| {
                dir_locks.extend(session.lock_parent_dir(&ws, &p.rel)?);
                let parent = ws
                    .parent_of(&p.rel, true)?
                    .expect("parent_of creates what is missing");
                parent.target_kind(ws.root())?;
                Ok(parent)
            }) {
                Ok(parent) => Some(parent),
                Err(e) => return fail(e),
            },
            _ => None,
        };
        parents.push(parent);
    }
    // Their new contents, verified, before anything is backed up or replaced.
    let mut news: Vec<Option<NewContents<'_>>> = Vec::with_capacity(chunk.len());
    for (&i, parent) in chunk.iter().zip(&parents) {
        let new = match parent {
            Some(parent) => {
                let temp = temps[i].clone();
                match prepare(session, parent, &plans[i], temp, &mut *marker) {
                    Ok(new) => Some(new),
                    Err(e) => return fail(e),
                }
            }
            None => None,
        };
        news.push(new);
    }
    let mut found: Vec<Option<FileState>> = Vec::with_capacity(chunk.len());
    for &i in chunk {
        let p = &plans[i];
        found.push(match (keep, p.touches()) {
            (true, true) => match keep_current(session, p) {
                Ok(f) => Some(f),
                Err(e) => return fail(e),
            },
            _ => None,
        });
    }
    if keep {
        for (&i, f) in chunk.iter().zip(&found) {
            if let Some(at) = slot[i] {
                marker.files[at].overwritten = f.clone();
            }
        }
        if let Err(e) = marker.write(session) {
            return fail(e);
        }
    }
    let mut restored = Vec::with_capacity(chunk.len());
    for ((&i, new), found) in chunk.iter().zip(news).zip(found) {
        let p = &plans[i];
        if let Err(e) = replace(p, new).and_then(|()| remove_temps(p)) {
            return (restored, Err(e));
        }
        restored.push((p, found));
    }
    (restored, Ok(()))
}

/// The new contents of a file to write back: its backup, copied beside it
/// through the temporary `temp` and verified against its hash, with its mode.
fn prepare<'a>(
    session: &Session,
    parent: &'a Parent,
    p: &FilePlan,
    temp: String,
    marker: &mut Marking,
) -> Result<NewContents<'a>> {
    let hash = p.target.sha256.as_deref().expect("a file to write back");
    let blob_path = session.blobs().path(hash);
    let mut blob = session
        .blobs()
        .open(hash)
        .map_err(|_| missing_backup(session, &p.rel, hash))?;
    let mut new = NewContents::create_named_then(parent, 0o600, temp, || match marker.written {
        true => Ok(()),
        false => marker.write(session),
    })?;
    let (actual, _) = new.fill(&mut blob, &blob_path)?;
    if actual != hash {
        return Err(corrupt_backup(session, &p.rel, hash, actual));
    }
    new.keep_owner(owners_for(&p.target, parent));
    new.seal(p.target.mode)?;
    Ok(new)
}

/// Who a restored file should belong to: the owner recorded with its backup,
/// else that of the file it replaces (else the process's, and then
/// `NewContents::keep_owner` drops setuid and setgid).
fn owners_for(target: &FileState, parent: &Parent) -> Vec<(u32, u32)> {
    target
        .owner()
        .into_iter()
        .chain(parent.target_owner())
        .collect()
}

/// Puts the prepared contents in place, or deletes a file whose target is
/// absence; a file already at its target is left alone.
fn replace(p: &FilePlan, new: Option<NewContents>) -> Result<()> {
    if !p.touches() {
        return Ok(());
    }
    match new {
        Some(new) => new.replace_target(),
        None => {
            let ws = Workspace::reopen(&p.root)?;
            if let Some(parent) = ws.parent_of(&p.rel, false)?
                && parent.target_kind(ws.root())?.exists()
            {
                parent.remove_target()?;
            }
            Ok(())
        }
    }
}

/// Deletes the temporaries that dead writers of the plan's entries left.
fn remove_temps(p: &FilePlan) -> Result<()> {
    if p.temps.is_empty() {
        return Ok(());
    }
    let ws = Workspace::reopen(&p.root)?;
    if let Some(parent) = ws.parent_of(&p.rel, false)? {
        for t in &p.temps {
            parent.remove_temp(t);
        }
    }
    Ok(())
}

/// Makes sure what the file holds now (as the check found it) is a backup of
/// the session, and returns its state. A file whose contents are a backup
/// already (the usual case for a redo) is not copied again.
fn keep_current(session: &Session, p: &FilePlan) -> Result<FileState> {
    match p.now.sha256.as_deref() {
        None => Ok(FileState::absent()),
        Some(hash) if session.blobs().exists(hash) => {
            // Only its owner is to be read, for a redo to give it back.
            let ws = Workspace::reopen(&p.root)?;
            Ok(match ws.open_regular(&p.rel)? {
                Some(f) => p.now.clone().with_owner(f.owner.0, f.owner.1),
                None => p.now.clone(),
            })
        }
        Some(_) => {
            let ws = Workspace::reopen(&p.root)?;
            session.back_up(&ws, &p.rel)
        }
    }
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
                now: FileState::absent(),
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
                now: FileState::absent(),
            })
        })
        .collect()
}

/// Compares each file as it is now (contents and mode) with its target and
/// with what the session left: every file is checked before any is touched.
fn classify(session: &Session, plans: &mut [FilePlan]) -> Result<()> {
    for p in plans.iter_mut() {
        session.check_scope(&p.root.path)?;
        let ws = Workspace::reopen(&p.root)?;
        let now = ws.current_state(&p.rel)?;
        p.status = if now.same_state(&p.target) {
            FileStatus::AlreadyReverted
        } else {
            match &p.expected {
                None => FileStatus::NeverCommitted,
                Some(a) if now.same_state(a) => FileStatus::Safe,
                Some(_) => FileStatus::ChangedSince {
                    by: find_changer(session, &p.file(), &now),
                },
            }
        };
        p.now = now;
    }
    Ok(())
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
fn newest_change(session: &Session, wanted: impl Fn(&Entry) -> bool) -> Option<ChangedBy> {
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

/// Makes `rel` in `ws` hold `state`: its contents from the session's backup,
/// verified against their hash before they replace anything (through the
/// temporary `temp`), with its mode; or no file at all.
pub(crate) fn write_state(
    session: &Session,
    ws: &Workspace,
    rel: &str,
    state: &FileState,
    temp: String,
) -> Result<()> {
    let Some(hash) = state.sha256.as_deref() else {
        if let Some(parent) = ws.parent_of(rel, false)?
            && parent.target_kind(ws.root())?.exists()
        {
            parent.remove_target()?;
        }
        return Ok(());
    };
    let _dir_lock = session.lock_parent_dir(ws, rel)?;
    let parent = ws
        .parent_of(rel, true)?
        .expect("parent_of creates what is missing");
    parent.target_kind(ws.root())?;
    let blob_path = session.blobs().path(hash);
    let mut blob = session
        .blobs()
        .open(hash)
        .map_err(|_| missing_backup(session, rel, hash))?;
    let mut new = NewContents::create_named(&parent, 0o600, temp)?;
    let (actual, _) = new.fill(&mut blob, &blob_path)?;
    if actual != hash {
        return Err(corrupt_backup(session, rel, hash, actual));
    }
    new.keep_owner(owners_for(state, &parent));
    new.seal(state.mode)?;
    new.replace_target()
}

/// The error for a backup that is not there under its name: corrupt, if it
/// was found corrupt and moved aside before, else missing.
fn missing_backup(session: &Session, rel: &str, hash: &str) -> Error {
    let aside = session.blobs().quarantined(hash);
    let actual = aside.as_ref().and_then(|p| {
        let mut f = std::fs::File::open(p).ok()?;
        hash::hash_reader(&mut f).ok().map(|(h, _)| h)
    });
    match (aside, actual) {
        (Some(aside), Some(actual)) => Error::BlobCorrupt {
            session: session.id().to_owned(),
            path: rel.to_owned(),
            hash: hash.to_owned(),
            actual,
            moved_to: Some(aside.into_boxed_path()),
        },
        _ => Error::BlobMissing {
            session: session.id().to_owned(),
            path: rel.to_owned(),
            hash: hash.to_owned(),
        },
    }
}

/// The error for a backup whose contents do not match its name. The blob is
/// moved aside first (kept, never deleted), so that the next backup of the
/// same bytes writes it whole again instead of trusting the damaged copy.
fn corrupt_backup(session: &Session, rel: &str, hash: &str, actual: String) -> Error {
    let moved_to = session
        .blobs()
        .quarantine(hash)
        .ok()
        .map(PathBuf::into_boxed_path);
    Error::BlobCorrupt {
        session: session.id().to_owned(),
        path: rel.to_owned(),
        hash: hash.to_owned(),
        actual,
        moved_to,
    }
}

/// Every backup a revert will write must be there, and when the revert restores
/// more than one file, intact: a damaged backup found half way would leave the
/// revert half done. (A single file's backup is verified as it is copied, before
/// it replaces anything.)
fn check_backups(session: &Session, plans: &[FilePlan]) -> Result<()> {
    let writes: Vec<(&FilePlan, &str)> = plans
        .iter()
        .filter(|p| p.touches())
        .filter_map(|p| p.target.sha256.as_deref().map(|h| (p, h)))
        .collect();
    let to_touch = plans.iter().filter(|p| p.touches()).count();
    for (p, hash) in &writes {
        if to_touch <= 1 {
            if !session.blobs().exists(hash) {
                return Err(missing_backup(session, &p.rel, hash));
            }
            continue;
        }
        let mut blob = session
            .blobs()
            .open(hash)
            .map_err(|_| missing_backup(session, &p.rel, hash))?;
        let blob_path = session.blobs().path(hash);
        let (actual, _) = hash::hash_reader(&mut blob).map_err(Error::io("read", &blob_path))?;
        if actual != *hash {
            return Err(corrupt_backup(session, &p.rel, hash, actual));
        }
    }
    Ok(())
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
        let e = match idx.entry(seq) {
            None => {
                return Err(Error::NoSuchEntry {
                    session: id.clone(),
                    seq,
                });
            }
            Some(e) if e.is_committed() => {
                return Err(Error::AlreadyCommitted {
                    session: id.clone(),
                    seq,
                });
            }
            Some(e) => e,
        };
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
        let mut plans = session.view(|idx| choose(idx).map(|(seqs, _)| plan(idx, &seqs)))??;
        classify(session, &mut plans)?;
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
        || marker::remove(session.dir()),
    )?
}

/// Removes the directories that the reverted changes created, once every file
/// is restored and deepest first (one file's directory may hold another's);
/// returns those removed, for redo to make again.
fn remove_created_dirs(session: &Session, restored: &[&FilePlan]) -> Vec<RemovedDir> {
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
        let gone = session.remove_unused_dirs(&ws, &dirs.into_iter().cloned().collect::<Vec<_>>());
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
