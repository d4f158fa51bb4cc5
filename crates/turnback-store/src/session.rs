//! A session: one agent conversation's entries, and every operation that adds
//! to them (checkpoint, write-through, remove-through).
//!
//! Every change to the index happens under the session's exclusive lock, on the
//! index as on disk under that lock: another process may have changed it, so the
//! handle's cached copy is brought up to date (`journal/`) at every
//! acquisition, never trusted across them. A handle opens the lock file anew
//! for every operation, so it is `Send + Sync` and threads exclude each other
//! exactly as processes do. The one file it keeps open is `live`, locked
//! shared while the handle lives, which keeps prune away (`retention.rs`).
//!
//! A protected write, and what a crash after each step leaves (`docs/FORMAT.md`
//! has the full table):
//! 1. the file's lock is taken (shared by all sessions);
//! 2. the old contents are streamed into a durable blob, on a second thread
//!    while
//! 3. the new contents are streamed into an unnamed temporary beside the file and
//!    synced;
//! 4. under the session lock the entry is recorded, with the intended "after" and
//!    the name the temporary will be linked as, marked in flight: one journal
//!    line, synced;
//! 5. the temporary is named and renamed over the file; directory synced;
//! 6. the in-flight mark is cleared (a journal line that need not be synced).
//!
//! An entry still in flight whose file lock is free belongs to a dead process;
//! the next process to change the session settles it: file at "before" → the
//! write never happened, drop the entry; otherwise keep it. Either way the
//! temporary name it recorded is deleted, and nothing else.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use time::OffsetDateTime;

use crate::blobs::Blobs;
use crate::checkpoint::Checkpoint;
use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{Entry, FileState, InFlight, Index};
use crate::journal::{self, Loaded, State, Tracked};
use crate::lock::{self, LockError, LockGuard, Mode};
use crate::store::Store;
use crate::workspace::{NewContents, OpenFile, Workspace};

/// One session of a store. Cheap to clone (clones share one cache of the
/// index and one hold on the session). While the session's directory exists,
/// a handle holds one open file: a shared lock on `live`, which tells
/// [`Store::prune`] that the session is in use.
#[derive(Debug, Clone)]
pub struct Session {
    store: Store,
    id: String,
    dir: PathBuf,
    blobs: Blobs,
    /// The index as this process last read it under the lock; brought up to
    /// date (usually by reading a few journal lines) at every acquisition.
    cache: Arc<Mutex<Option<Loaded>>>,
    /// The shared lock on `<dir>/live`, taken at open if the directory exists,
    /// else when the first change makes it; released when the last clone goes.
    live: Arc<Mutex<Option<LockGuard>>>,
    /// The directory restores are confined to ([`Session::confine_to`]).
    scope: Option<PathBuf>,
}

/// The file in a session's directory that every handle using the directory
/// holds a shared lock on, and prune an exclusive one while it removes the
/// session: a session some live process has open is never removed. Never
/// replaced or deleted while the session exists.
pub(crate) const LIVE_FILE: &str = "live";

/// An entry about to be recorded.
pub(crate) struct Draft {
    pub(crate) rel: String,
    pub(crate) before: FileState,
    pub(crate) after: Option<FileState>,
    pub(crate) created_dirs: Vec<String>,
    pub(crate) in_flight: Option<InFlight>,
}

/// What the caller says the new contents of a write will be
/// ([`Session::write_expecting`]); each part given must match what arrives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// The size in bytes.
    pub size: Option<u64>,
    /// The SHA-256 in hex (either case).
    pub sha256: Option<String>,
}

impl Expected {
    /// True when there is something to check.
    pub fn is_set(&self) -> bool {
        self.size.is_some() || self.sha256.is_some()
    }

    /// Compares what arrived for `path` with what was expected.
    fn check(&self, path: &Path, sha256: &str, size: u64) -> Result<()> {
        let size_ok = self.size.is_none_or(|n| n == size);
        let hash_ok = self
            .sha256
            .as_deref()
            .is_none_or(|h| h.eq_ignore_ascii_case(sha256));
        if size_ok && hash_ok {
            return Ok(());
        }
        Err(Error::ContentsMismatch {
            path: path.to_owned(),
            expected_size: self.size,
            expected_sha256: self.sha256.as_ref().map(|h| h.to_ascii_lowercase()),
            actual_size: size,
            actual_sha256: sha256.to_owned(),
        })
    }
}

/// A file a session has entries for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TrackedFile {
    /// The workspace root.
    pub workspace: PathBuf,
    /// The path relative to it.
    pub path: String,
}

impl Session {
    pub(crate) fn open(store: Store, id: String, dir: PathBuf) -> Result<Session> {
        store.check_session_dirs(Some(&dir))?;
        let blobs = Blobs::new(dir.join("blobs"));
        let session = Session {
            store,
            id,
            dir,
            blobs,
            cache: Arc::new(Mutex::new(None)),
            live: Arc::new(Mutex::new(None)),
            scope: None,
        };
        session.hold_live(false)?;
        // Settle what a dead writer or revert left half done, so that a session
        // that opens leaves no stray temporary in a workspace.
        if crate::marker::exists(&session.dir) || session.view(|s| !s.in_flight().is_empty())? {
            session.mutate(Durability::Full, |_| Ok(()))?;
        }
        Ok(session)
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// This handle (sharing everything with it), confined to `dir`: every
    /// undo, revert, rewind, redo and rollback through it refuses
    /// ([`Error::OutsideScope`], before any file is touched) a change whose
    /// workspace root is neither `dir`, nor a directory above it, nor one
    /// inside it. A person's command confines the session to the directory it
    /// runs in, so that a session naming an unrelated workspace (planted by
    /// hand, or meant for another project) cannot restore files there.
    /// `dir` is made canonical when it can be, as workspace roots are.
    pub fn confine_to(&self, dir: impl AsRef<Path>) -> Session {
        let dir = dir.as_ref();
        let scope = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        Session {
            scope: Some(scope),
            ..self.clone()
        }
    }

    /// [`Error::OutsideScope`] unless a restore in the workspace `root` is
    /// within this handle's scope (always, for a handle not confined).
    pub(crate) fn check_scope(&self, root: &Path) -> Result<()> {
        match &self.scope {
            Some(scope) if !(root.starts_with(scope) || scope.starts_with(root)) => {
                Err(Error::OutsideScope {
                    workspace: root.to_owned(),
                    scope: scope.clone(),
                    session: self.id.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The session's directory in the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store the session belongs to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn blobs(&self) -> &Blobs {
        &self.blobs
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        self.view(|s| s.entries.clone())
    }

    /// Every file the session has entries for, sorted.
    pub fn files(&self) -> Result<Vec<TrackedFile>> {
        let mut files: Vec<TrackedFile> = self.view(|s| {
            s.entries
                .iter()
                .map(|e| TrackedFile {
                    workspace: e.workspace.path.clone(),
                    path: e.path.clone(),
                })
                .collect()
        })?;
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// Folds the journal (`journal.jsonl`, one line per change) into
    /// `index.json` now, so that `index.json` alone holds the whole session.
    /// Changes do this by themselves once the journal has grown as large as
    /// `index.json`; call it before reading `index.json` with another tool.
    pub fn compact(&self) -> Result<()> {
        if !self.dir.is_dir() {
            return Ok(());
        }
        let _g = self.lock_session(Mode::Exclusive)?;
        let mut cache = self.cache();
        Loaded::refresh(&mut cache, &self.dir, &self.id)?;
        let compacted = cache
            .as_mut()
            .expect("refreshed")
            .compact_if_needed(&self.dir);
        if compacted.is_err() {
            *cache = None;
        }
        compacted
    }

    /// Takes a checkpoint of `path` in `workspace` before the caller changes it:
    /// backs the file up (or records its absence) and holds the file's lock until
    /// [`Checkpoint::commit`] or [`Checkpoint::rollback`]. Prefer [`Session::write`]
    /// and [`Session::remove`], which do all three steps.
    pub fn checkpoint<'a>(
        &'a self,
        workspace: &'a Workspace,
        path: impl AsRef<Path>,
        message_id: &str,
    ) -> Result<Checkpoint<'a>> {
        let rel = workspace.resolve(path)?;
        self.store.refuse_inside(&workspace.root().join(&rel))?;
        let lock = self.lock_file(workspace, &rel)?;
        let before = self.back_up_checked(workspace, &rel)?;
        let created_dirs = workspace.missing_dirs(&rel);
        let draft = Draft {
            rel: rel.clone(),
            before,
            after: None,
            created_dirs,
            in_flight: None,
        };
        let entry = self.record(workspace, message_id, vec![draft])?.remove(0);
        Ok(Checkpoint::new(self, workspace, rel, entry.seq, lock))
    }

    /// Replaces `path` in `workspace` with the bytes of `contents`, protected: the
    /// old file is backed up first, the new contents replace it atomically (an
    /// existing file keeps its mode; missing parent directories are created), and
    /// the entry records "after" from the bytes written. Returns the entry.
    pub fn write(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        contents: impl Read,
        message_id: &str,
    ) -> Result<Entry> {
        self.write_expecting(workspace, path, contents, message_id, &Expected::default())
    }

    /// [`Session::write`], refusing contents that are not what `expected` says
    /// ([`Error::ContentsMismatch`]): a producer that dies half way ends its
    /// output like any other, and only the caller knows what it meant to send.
    /// On a mismatch the file is untouched and no entry or backup is made (so
    /// with an expectation the backup starts only once the contents are in).
    pub fn write_expecting(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        mut contents: impl Read,
        message_id: &str,
        expected: &Expected,
    ) -> Result<Entry> {
        let rel = workspace.resolve(path)?;
        self.store.refuse_inside(&workspace.root().join(&rel))?;
        let _lock = self.lock_file(workspace, &rel)?;
        // Before the directories are looked at: none of them may go while
        // the new contents are made in the last.
        let mut dir_lock = self.lock_parent_dir(workspace, &rel)?;
        // A damaged index must not leave a new backup behind that no entry
        // will name.
        self.view(|_| ())?;
        // Directories to make are recorded before they are made (an entry in
        // flight, "after" not known yet), so that a crash in between leaves
        // nothing in the workspace that recovery does not know to remove.
        // Where a directory is missing the file is too: nothing to back up.
        let missing = workspace.missing_dirs(&rel);
        let early = if missing.is_empty() {
            None
        } else {
            let draft = Draft {
                rel: rel.clone(),
                before: self.back_up(workspace, &rel)?,
                after: None,
                created_dirs: missing,
                in_flight: Some(InFlight { temp: None }),
            };
            Some(self.record(workspace, message_id, vec![draft])?.remove(0))
        };
        let early_seqs: Vec<u64> = early.iter().map(|e| e.seq).collect();
        let parent = match workspace.parent_of(&rel, true) {
            Ok(p) => p.expect("parent_of creates what is missing"),
            Err(e) => {
                self.forget(workspace, &early_seqs, &[], &mut dir_lock);
                return Err(e);
            }
        };
        // The backup of the old contents and the new contents beside the file
        // are independent until the entry names both: write, hash and sync them
        // at the same time, the backup on a second thread.
        let old = match &early {
            Some(_) => None,
            None => match workspace.open_regular(&rel) {
                Ok(old) => old,
                Err(e) => {
                    self.forget(workspace, &[], &parent.created, &mut dir_lock);
                    return Err(e);
                }
            },
        };
        let old_mode = old.as_ref().map(|f| f.mode);
        let old_owner: Vec<(u32, u32)> = old.iter().map(|f| f.owner).collect();
        let known = early.as_ref().map(|e| e.before.clone());
        let display = workspace.root().join(&rel);
        let mut prepare = || {
            NewContents::create(&parent, 0o666).and_then(|mut new| {
                let (sha256, size) = new.fill(&mut contents, Path::new("the new contents"))?;
                expected.check(&display, &sha256, size)?;
                // The file stays its owner's where the process may make it so;
                // where not, it loses setuid and setgid.
                new.keep_owner(old_owner.clone());
                let mode = new.seal(old_mode)?;
                Ok((new, FileState::present(sha256, size, mode)))
            })
        };
        // With an expectation the contents are checked before the backup
        // starts: a backup made for contents that then do not match could not
        // be deleted safely (another writer may name the same blob by then).
        let mut checked = None;
        if expected.is_set() {
            match prepare() {
                Ok(prepared) => checked = Some(prepared),
                Err(e) => {
                    self.forget(workspace, &early_seqs, &parent.created, &mut dir_lock);
                    return Err(e);
                }
            }
        }
        // Made here, not on the thread: a crash from now on leaves the session
        // there (empty at worst), however the threads interleave.
        if let Err(e) = self.ensure_dir() {
            self.forget(workspace, &[], &parent.created, &mut dir_lock);
            return Err(e);
        }
        // The backup's name is known before its blob is durable, so the entry
        // is recorded (a synced journal line) while the blob's fsyncs run: an
        // entry in flight whose file is still at "before" is dropped by
        // recovery, blob or no blob. The file is replaced only once both are
        // durable.
        let (hashed_tx, hashed_rx) = std::sync::mpsc::sync_channel::<FileState>(1);
        let (recorded, backed_up) = std::thread::scope(|scope| {
            let backup = scope.spawn(move || {
                let tell = |state: &FileState| {
                    let _ = hashed_tx.send(state.clone());
                };
                match known {
                    Some(before) => {
                        tell(&before);
                        Ok(before)
                    }
                    None => self.back_up_opened(old, tell),
                }
            });
            let prepared = match checked.take() {
                Some(prepared) => Ok(prepared),
                None => prepare(),
            };
            // No state: the backup failed, and says why when joined.
            let recorded = hashed_rx.recv().ok().map(|before| {
                crate::crash::point("backup-known");
                let (new, after) = prepared?;
                let in_flight = InFlight {
                    temp: Some(new.temp_name().to_owned()),
                };
                let entry = match &early {
                    Some(e) => {
                        self.complete(workspace, e.seq, after, in_flight, &parent.created)?
                    }
                    None => {
                        let draft = Draft {
                            rel: rel.clone(),
                            before,
                            after: Some(after),
                            created_dirs: parent.created.clone(),
                            in_flight: Some(in_flight),
                        };
                        self.record(workspace, message_id, vec![draft])?.remove(0)
                    }
                };
                Ok((new, entry))
            });
            let backed_up = backup
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (recorded, backed_up)
        });
        let (new, entry) = match (recorded, backed_up) {
            (Some(Ok(r)), Ok(_)) => r,
            (recorded, backed_up) => {
                // The file is untouched: the entries made for it go, with the
                // directories this writer made. The backup's error comes first.
                let mut seqs = early_seqs;
                if let Some(Ok((_, e))) = &recorded {
                    seqs.push(e.seq);
                }
                self.forget(workspace, &seqs, &parent.created, &mut dir_lock);
                return Err(match (backed_up, recorded) {
                    (Err(e), _) | (Ok(_), Some(Err(e))) => e,
                    (Ok(_), _) => unreachable!("a backup that succeeded told its state"),
                });
            }
        };
        if let Err(failed) = new.replace_target_reporting() {
            match failed.visible {
                // Replaced, but perhaps not durably: let the file decide.
                true => self.settle_own(workspace, &rel),
                false => self.forget(workspace, &[entry.seq], &parent.created, &mut dir_lock),
            }
            return Err(failed.error);
        }
        self.land(&[entry.seq]);
        Ok(Entry {
            in_flight: None,
            ..entry
        })
    }

    /// Completes an entry recorded before its new contents were known, and
    /// narrows the directories it claims to those this writer made (another
    /// writer may have made some of them at the same moment).
    fn complete(
        &self,
        workspace: &Workspace,
        seq: u64,
        after: FileState,
        in_flight: InFlight,
        created: &[String],
    ) -> Result<Entry> {
        self.mutate(Durability::Full, |idx| {
            let e = idx.entry_mut(seq).ok_or_else(|| Error::NoSuchEntry {
                session: self.id.clone(),
                seq,
            })?;
            e.after = Some(after.clone());
            e.in_flight = Some(in_flight);
            e.created_dirs = created.to_vec();
            let (file, done) = (workspace.root().join(&e.path), e.clone());
            idx.mark_read(file, after);
            Ok(done)
        })
    }

    /// Deletes `path` in `workspace`, protected: backed up first, then removed.
    /// Returns the entry.
    pub fn remove(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        message_id: &str,
    ) -> Result<Entry> {
        let rel = workspace.resolve(path)?;
        self.store.refuse_inside(&workspace.root().join(&rel))?;
        let _lock = self.lock_file(workspace, &rel)?;
        let before = self.back_up_checked(workspace, &rel)?;
        let display = workspace.root().join(&rel);
        let parent = match workspace.parent_of(&rel, false)? {
            Some(p) if before.exists => p,
            _ => return Err(Error::FileNotFound { path: display }),
        };
        let in_flight = InFlight { temp: None };
        let draft = Draft {
            rel: rel.clone(),
            before,
            after: Some(FileState::absent()),
            created_dirs: Vec::new(),
            in_flight: Some(in_flight),
        };
        let entry = self.record(workspace, message_id, vec![draft])?.remove(0);
        if let Err(failed) = parent.remove_target_reporting() {
            match failed.visible {
                true => self.settle_own(workspace, &rel),
                false => self.forget(workspace, &[entry.seq], &[], &mut None),
            }
            return Err(failed.error);
        }
        self.land(&[entry.seq]);
        Ok(Entry {
            in_flight: None,
            ..entry
        })
    }

    /// Step 6: the change is on disk. Losing this update in a crash is harmless
    /// (recovery finds the file at "after" and clears the mark), so the index is
    /// synced but its directory is not; and an error here is not the caller's:
    /// their file was written.
    fn land(&self, seqs: &[u64]) {
        let _ = self.mutate(Durability::MayBeLost, |idx| {
            for &seq in seqs {
                if let Some(e) = idx.entry_mut(seq) {
                    e.in_flight = None;
                }
            }
            Ok(())
        });
    }

    /// Step 5 failed, maybe after the rename (a failed directory sync): let
    /// recovery decide from the file itself, as it would after a crash, while this
    /// writer still holds the file's lock. Best effort; the next change settles it
    /// otherwise.
    /// A change that failed before it touched the file: its entries go (the
    /// writer knows, so the file is not asked), and so do the directories this
    /// writer made for it, if still empty. Best effort, like any cleanup on an
    /// error path; a crash here is settled as any other.
    /// `dir_lock` is the writer's own hold on the file's directory, let go
    /// first: removing a directory needs its lock free.
    fn forget(
        &self,
        workspace: &Workspace,
        seqs: &[u64],
        made: &[String],
        dir_lock: &mut Option<LockGuard>,
    ) {
        if !seqs.is_empty() {
            let _ = self.mutate(Durability::Full, |idx| {
                idx.remove_entries(seqs);
                Ok(())
            });
        }
        drop(dir_lock.take());
        self.remove_unused_dirs(workspace, made);
    }

    fn settle_own(&self, workspace: &Workspace, rel: &str) {
        self.settle_held(&BTreeSet::from([workspace.root().join(rel)]));
    }

    fn settle_held(&self, held: &BTreeSet<PathBuf>) {
        let _ = self.mutate_holding(Durability::Full, Some(held), |_| Ok(()));
    }

    /// Moves `from` to `to` (both in `workspace`) as one undoable step: undo puts
    /// the file back under its old name and removes the new one (or restores
    /// what `to` held before), refusing if either changed since. The move is one
    /// `rename` through the capability; missing directories of `to` are created.
    /// Returns the two entries (`from`, then `to`), which share a group.
    pub fn rename(
        &self,
        workspace: &Workspace,
        from: impl AsRef<Path>,
        to: impl AsRef<Path>,
        message_id: &str,
    ) -> Result<Vec<Entry>> {
        let from_rel = workspace.resolve(&from)?;
        let to_rel = workspace.resolve(&to)?;
        for rel in [&from_rel, &to_rel] {
            self.store.refuse_inside(&workspace.root().join(rel))?;
        }
        let files = BTreeSet::from([
            workspace.root().join(&from_rel),
            workspace.root().join(&to_rel),
        ]);
        if files.len() == 1 {
            return Err(Error::io("move", workspace.root().join(&to_rel))(
                std::io::Error::other("it is the same file as the source"),
            ));
        }
        let _locks = crate::revert::lock_files(self, &files)?;
        self.view(|_| ())?;
        let before_from = self.back_up(workspace, &from_rel)?;
        let from_parent = match workspace.parent_of(&from_rel, false)? {
            Some(p) if before_from.exists => p,
            _ => {
                return Err(Error::FileNotFound {
                    path: workspace.root().join(&from_rel),
                });
            }
        };
        let before_to = self.back_up(workspace, &to_rel)?;
        let mut dir_lock = self.lock_parent_dir(workspace, &to_rel)?;
        // Recorded before they are made, as for a write.
        let missing = workspace.missing_dirs(&to_rel);
        let drafts = vec![
            Draft {
                rel: from_rel.clone(),
                before: before_from.clone(),
                after: Some(FileState::absent()),
                created_dirs: Vec::new(),
                in_flight: Some(InFlight { temp: None }),
            },
            Draft {
                rel: to_rel.clone(),
                before: before_to,
                after: Some(before_from),
                created_dirs: missing,
                in_flight: Some(InFlight { temp: None }),
            },
        ];
        let entries = self.record(workspace, message_id, drafts)?;
        let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
        let to_parent = match workspace.parent_of(&to_rel, true) {
            Ok(p) => p.expect("parent_of creates what is missing"),
            Err(e) => {
                self.forget(workspace, &seqs, &[], &mut dir_lock);
                return Err(e);
            }
        };
        if let Err(e) = from_parent
            .dir
            .rename(&from_parent.name, &to_parent.dir, &to_parent.name)
        {
            self.forget(workspace, &seqs, &to_parent.created, &mut dir_lock);
            return Err(Error::io("move", workspace.root().join(&from_rel))(e));
        }
        let synced = crate::sys::fsync_dir(&to_parent.dir)
            .and_then(|()| crate::sys::fsync_dir(&from_parent.dir));
        if let Err(e) = synced {
            // Moved, but perhaps not durably: let the files decide.
            self.settle_held(&files);
            return Err(Error::io(
                "sync directory of",
                workspace.root().join(&to_rel),
            )(e));
        }
        self.land(&seqs);
        Ok(entries
            .into_iter()
            .map(|e| Entry {
                in_flight: None,
                ..e
            })
            .collect())
    }

    /// [`Session::back_up`] once the index is known to be readable: a damaged
    /// index must not leave a new backup behind that no entry will name.
    fn back_up_checked(&self, workspace: &Workspace, rel: &str) -> Result<FileState> {
        self.view(|_| ())?;
        self.back_up(workspace, rel)
    }

    /// Streams the file into a blob, or records its absence.
    pub(crate) fn back_up(&self, workspace: &Workspace, rel: &str) -> Result<FileState> {
        self.back_up_opened(workspace.open_regular(rel)?, |_| {})
    }

    /// [`Session::back_up`] of a file opened already (`None`: absent), telling
    /// `hashed` the state as soon as it is known, before the blob is durable
    /// (see [`Blobs::store_file_then`]).
    fn back_up_opened(
        &self,
        file: Option<OpenFile>,
        hashed: impl FnOnce(&FileState),
    ) -> Result<FileState> {
        self.ensure_dir()?;
        match file {
            None => {
                hashed(&FileState::absent());
                Ok(FileState::absent())
            }
            Some(mut f) => {
                let (mode, (uid, gid)) = (f.mode, f.owner);
                let state = |h: String, n| FileState::present(h, n, mode).with_owner(uid, gid);
                let (sha256, size) =
                    self.blobs
                        .store_file_then(&mut f.file, &f.display, |h, n| {
                            hashed(&state(h.to_owned(), n))
                        })?;
                Ok(state(sha256, size))
            }
        }
    }

    /// Appends entries for one step (two for a rename, grouped), in the turn
    /// under way, and marks the files as this session leaves them (so that the
    /// stale-read guard lets the agent write them again).
    pub(crate) fn record(
        &self,
        workspace: &Workspace,
        message_id: &str,
        drafts: Vec<Draft>,
    ) -> Result<Vec<Entry>> {
        let root = workspace.identity();
        let grouped = drafts.len() > 1;
        self.mutate(Durability::Full, |idx| {
            let group = grouped.then_some(idx.next_seq);
            let turn = idx.current_turn();
            let mut made = Vec::new();
            for d in drafts {
                let file = root.path.join(&d.rel);
                let version = 1 + idx.entries_for(&file);
                let entry = Entry {
                    seq: idx.take_seq(),
                    message_id: message_id.to_owned(),
                    workspace: root.clone(),
                    path: d.rel,
                    version,
                    time: OffsetDateTime::now_utc(),
                    before: d.before,
                    after: d.after,
                    created_dirs: d.created_dirs,
                    in_flight: d.in_flight,
                    turn,
                    group,
                };
                if let Some(after) = &entry.after {
                    idx.mark_read(file, after.clone());
                }
                idx.insert_entry(entry.clone());
                made.push(entry);
            }
            Ok(made)
        })
    }

    /// Runs `f` on the index as on disk now, read under a shared lock (from the
    /// cache, brought up to date).
    pub(crate) fn view<T>(&self, f: impl FnOnce(&State) -> T) -> Result<T> {
        if !self.dir.is_dir() {
            return Ok(f(&State::new(Index::empty(&self.id))));
        }
        let _g = self.lock_session(Mode::Shared)?;
        let mut cache = self.cache();
        Loaded::refresh(&mut cache, &self.dir, &self.id)?;
        Ok(f(&cache.as_ref().expect("refreshed").state))
    }

    /// The handle's cache of the index. A thread that panicked while holding
    /// it may have left it half changed, so then it is dropped (and read again).
    fn cache(&self) -> std::sync::MutexGuard<'_, Option<Loaded>> {
        self.cache.lock().unwrap_or_else(|poisoned| {
            let mut cache = poisoned.into_inner();
            *cache = None;
            self.cache.clear_poison();
            cache
        })
    }

    /// A copy of the index as on disk now.
    pub(crate) fn read_index(&self) -> Result<Index> {
        self.view(|s| s.index().clone())
    }

    /// Creates the session's directory with its first change, durably, and
    /// holds it (see [`Session::hold_live`]).
    fn ensure_dir(&self) -> Result<()> {
        self.hold_live(true)
    }

    fn make_dir(&self) -> Result<()> {
        self.store.check_session_dirs(None)?;
        crate::sys::create_store_dir_all(&self.dir)
            .map_err(Error::io("create session directory", &self.dir))?;
        let sessions = self.store.sessions_dir();
        crate::sys::fsync_dir_path(&sessions).map_err(Error::io("sync directory", &sessions))?;
        crate::sys::fsync_dir_path(self.store.home())
            .map_err(Error::io("sync directory", self.store.home()))
    }

    /// Takes this handle's shared lock on the session's `live` file, once: a
    /// prune that wants to remove the session must lock it exclusively first,
    /// so it never removes a directory some handle is using (a writer between
    /// storing its backup and recording its entry, say). Without the
    /// directory, nothing is held, unless `create` makes it. A lock that turns
    /// out to be on a file no longer at its path belongs to a session a prune
    /// renamed away meanwhile: the directory is made again (with `create`).
    fn hold_live(&self, create: bool) -> Result<()> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if live.is_some() {
            return Ok(());
        }
        let path = self.dir.join(LIVE_FILE);
        let timeout = self.store.options().session_lock_timeout;
        for _ in 0..8 {
            if !self.dir.is_dir() {
                if !create {
                    return Ok(());
                }
                self.make_dir()?;
            }
            match lock::acquire(&path, Mode::Shared, timeout, None) {
                Ok(guard) if guard.is_at(&path) => {
                    *live = Some(guard);
                    return Ok(());
                }
                // Renamed away (by a prune) between the look and the lock.
                Ok(_) => continue,
                Err(LockError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(LockError::TimedOut { waited, .. }) => {
                    return Err(Error::SessionBusy {
                        session: self.id.clone(),
                        waited,
                    });
                }
                Err(LockError::Io(e)) => return Err(crate::trust::store_io("lock", &path)(e)),
            }
        }
        Err(Error::SessionBusy {
            session: self.id.clone(),
            waited: std::time::Duration::ZERO,
        })
    }

    /// Read-modify-write of the index under the exclusive lock. In-flight entries
    /// of dead writers are settled first. The index is written only when `f`
    /// succeeds and something changed.
    pub(crate) fn mutate<T>(
        &self,
        durability: Durability,
        f: impl FnOnce(&mut Tracked) -> Result<T>,
    ) -> Result<T> {
        self.mutate_holding(durability, None, f)
    }

    /// [`Session::mutate`] for a caller that holds the file locks of `held`
    /// (whose in-flight entries it may then settle itself).
    pub(crate) fn mutate_holding<T>(
        &self,
        durability: Durability,
        held: Option<&BTreeSet<PathBuf>>,
        f: impl FnOnce(&mut Tracked) -> Result<T>,
    ) -> Result<T> {
        self.mutate_holding_then(durability, held, f, || {})
    }

    /// [`Session::mutate_holding`], running `then` still under the session's
    /// lock once `f`'s change is recorded (a revert removes its marker there:
    /// after the index says what the files hold, before anyone else looks).
    pub(crate) fn mutate_holding_then<T>(
        &self,
        durability: Durability,
        held: Option<&BTreeSet<PathBuf>>,
        f: impl FnOnce(&mut Tracked) -> Result<T>,
        then: impl FnOnce(),
    ) -> Result<T> {
        self.ensure_dir()?;
        let _g = self.lock_session(Mode::Exclusive)?;
        let mut cache = self.cache();
        // Settling is its own change, durable on its own: what it found is true
        // of the files whatever `f` then does. A dead revert is settled first:
        // it held the locks of its files, so no in-flight write is among them.
        journal::change(&mut cache, &self.dir, &self.id, Durability::Full, |idx| {
            crate::marker::settle(self, idx, held);
            self.settle_in_flight(idx, held);
            Ok(())
        })?;
        let out = journal::change_again(&mut cache, &self.dir, &self.id, durability, f)?;
        then();
        Ok(out)
    }

    /// Recovery for write-through changes whose process died between recording
    /// the entry and clearing its mark. An entry whose file lock is held belongs to
    /// a live writer and is left alone.
    fn settle_in_flight(&self, idx: &mut Tracked, held: Option<&BTreeSet<PathBuf>>) {
        for seq in idx.in_flight() {
            let e = idx.entry(seq).expect("in flight").clone();
            let file = e.absolute_path();
            let _guard = if held.is_some_and(|h| h.contains(&file)) {
                None
            } else {
                let lock_path = self.store.file_lock_path(&file);
                let Ok(Some(guard)) = lock::try_acquire(&lock_path) else {
                    continue;
                };
                Some(guard)
            };
            let Ok(ws) = Workspace::reopen(&e.workspace) else {
                continue;
            };
            if let (Some(temp), Ok(Some(parent))) = (
                e.in_flight.as_ref().and_then(|f| f.temp.as_deref()),
                ws.parent_of(&e.path, false),
            ) {
                parent.remove_temp(temp);
            }
            let Ok(now) = ws.current_state(&e.path) else {
                continue;
            };
            let done = e.after.as_ref().is_some_and(|a| now.same_contents(a));
            if !done && now.same_contents(&e.before) {
                idx.remove_entries(&[seq]);
                self.remove_unused_dirs(&ws, &e.created_dirs);
            } else if let Some(entry) = idx.entry_mut(seq) {
                entry.in_flight = None;
            }
        }
    }

    pub(crate) fn lock_session(&self, mode: Mode) -> Result<LockGuard> {
        lock_session_dir(&self.store, &self.id, &self.dir, mode)
    }

    /// Takes the lock shared by every session on one real file.
    pub(crate) fn lock_file(&self, workspace: &Workspace, rel: &str) -> Result<LockGuard> {
        self.lock_file_at(&workspace.root().join(rel))
    }

    /// Takes the lock of the file at the absolute real path `file`.
    pub(crate) fn lock_file_at(&self, file: &Path) -> Result<LockGuard> {
        let path = self.store.file_lock_path(file);
        self.take_lock(&path, file, Mode::Exclusive)
    }

    /// Takes, shared, the lock of the directory that holds `rel` in
    /// `workspace` (see [`Store::dir_lock_path`]), for a writer about to make
    /// new contents there; `None` for a file at the root, which is never
    /// removed.
    pub(crate) fn lock_parent_dir(
        &self,
        workspace: &Workspace,
        rel: &str,
    ) -> Result<Option<LockGuard>> {
        let Some((dir, _)) = rel.rsplit_once('/') else {
            return Ok(None);
        };
        let dir = workspace.root().join(dir);
        let path = self.store.dir_lock_path(&dir);
        self.take_lock(&path, &dir, Mode::Shared).map(Some)
    }

    /// The exclusive lock of workspace directory `dir` if no writer holds it
    /// now: what removing the directory needs.
    pub(crate) fn try_lock_dir(&self, dir: &Path) -> Option<LockGuard> {
        lock::try_acquire(&self.store.dir_lock_path(dir))
            .ok()
            .flatten()
    }

    /// Takes the lock at `path` (in `<home>/locks/`), of the workspace file or
    /// directory `of`, waiting at most the file lock timeout.
    fn take_lock(&self, path: &Path, of: &Path, mode: Mode) -> Result<LockGuard> {
        let locks = path.parent().expect("lock paths have a parent");
        self.store.check_locks_dir()?;
        crate::sys::create_store_dir_all(locks).map_err(Error::io("create directory", locks))?;
        let holder = format!("session {:?} (pid {})", self.id, std::process::id());
        lock::acquire(
            path,
            mode,
            self.store.options().file_lock_timeout,
            Some(&holder),
        )
        .map_err(|e| match e {
            LockError::TimedOut { waited, holder } => Error::FileBusy {
                path: of.to_owned(),
                holder,
                waited,
            },
            LockError::Io(e) => crate::trust::store_io("lock", path)(e),
        })
    }

    /// Removes the directories `dirs` of `workspace` (outermost first) that
    /// are empty and that no writer is using.
    pub(crate) fn remove_unused_dirs(&self, workspace: &Workspace, dirs: &[String]) -> Vec<String> {
        workspace.remove_empty_dirs(dirs, |d| self.try_lock_dir(&workspace.root().join(d)))
    }
}

/// Takes the lock of session `id`, whose directory is `dir`, waiting at most
/// the store's `session_lock_timeout`.
pub(crate) fn lock_session_dir(
    store: &Store,
    id: &str,
    dir: &Path,
    mode: Mode,
) -> Result<LockGuard> {
    let path = dir.join("lock");
    let timeout = store.options().session_lock_timeout;
    lock::acquire(&path, mode, timeout, None).map_err(|e| match e {
        LockError::TimedOut { waited, .. } => Error::SessionBusy {
            session: id.to_owned(),
            waited,
        },
        LockError::Io(e) => crate::trust::store_io("lock", &path)(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Session, Workspace) {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let session = Store::new(home.path()).session("s1").unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        (home, wsdir, session, ws)
    }

    #[test]
    fn write_records_before_and_after() {
        let (_h, dir, s, ws) = setup();
        std::fs::write(dir.path().join("a.txt"), "old").unwrap();
        let e = s.write(&ws, "a.txt", &b"new!"[..], "m1").unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"new!");
        assert_eq!(e.before.size, 3);
        assert_eq!(e.after.as_ref().unwrap().size, 4);
        assert!(e.in_flight.is_none());
        let stored = s.entries().unwrap();
        assert_eq!(stored, vec![e.clone()]);
        let blob = s.blobs().path(e.before.sha256.as_deref().unwrap());
        assert_eq!(std::fs::read(blob).unwrap(), b"old");
    }

    #[test]
    fn versions_count_changes_per_file() {
        let (_h, _d, s, ws) = setup();
        s.write(&ws, "a", &b"1"[..], "m").unwrap();
        s.write(&ws, "b", &b"1"[..], "m").unwrap();
        let e = s.write(&ws, "a", &b"2"[..], "m").unwrap();
        assert_eq!(e.version, 2);
        assert_eq!(e.seq, 3);
    }

    #[test]
    fn a_dead_writers_half_done_change_is_settled_by_the_next_one() {
        let (_h, dir, s, ws) = setup();
        std::fs::write(dir.path().join("f"), "before").unwrap();
        // Entry recorded and temporary linked, then the writer "died".
        let before = s.back_up(&ws, "f").unwrap();
        let parent = ws.parent_of("f", true).unwrap().unwrap();
        let mut new = NewContents::create(&parent, 0o666).unwrap();
        let (h, n) = new.fill(&mut &b"after"[..], Path::new("x")).unwrap();
        new.seal(None).unwrap();
        new.link().unwrap();
        let temp = new.temp_name().to_owned();
        std::mem::forget(new);
        let after = FileState::present(h, n, 0o644);
        let inflight = InFlight {
            temp: Some(temp.clone()),
        };
        let draft = Draft {
            rel: "f".into(),
            before,
            after: Some(after),
            created_dirs: vec![],
            in_flight: Some(inflight),
        };
        s.record(&ws, "m", vec![draft]).unwrap();
        assert!(dir.path().join(&temp).exists());
        // Any later change settles it: file at before, so the entry goes.
        s.write(&ws, "g", &b"x"[..], "m2").unwrap();
        let entries = s.entries().unwrap();
        assert_eq!(
            entries.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
            ["g"]
        );
        assert!(!dir.path().join(&temp).exists());
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"before");
    }

    #[test]
    fn new_contents_that_fail_to_arrive_change_nothing() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("pipe closed"))
            }
        }
        let (_h, dir, s, ws) = setup();
        std::fs::write(dir.path().join("kept"), "old").unwrap();
        let err = s.write(&ws, "kept", Broken, "m").unwrap_err();
        assert!(err.to_string().contains("pipe closed"), "{err}");
        let err = s.write(&ws, "new/deep/f", Broken, "m").unwrap_err();
        assert!(
            matches!(&err, Error::Io { op: "read", .. }) && err.to_string().contains("pipe closed"),
            "{err:?}"
        );
        assert!(s.entries().unwrap().is_empty());
        assert_eq!(std::fs::read(dir.path().join("kept")).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("kept")],
            "directories or temporaries left"
        );
    }

    #[test]
    fn a_panic_in_the_middle_of_a_change_leaves_no_trace_in_the_cache() {
        let (_h, _d, s, ws) = setup();
        s.write(&ws, "a", &b"1"[..], "m").unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.mutate(Durability::Full, |idx| -> Result<()> {
                idx.take_seq();
                idx.remove_entries(&[1]);
                panic!("a bug half way through a change");
            })
        }));
        assert!(panicked.is_err());
        // The half-made change was never journaled, and the handle forgot it.
        assert_eq!(s.entries().unwrap().len(), 1);
        assert_eq!(s.write(&ws, "b", &b"2"[..], "m").unwrap().seq, 2);
    }

    #[test]
    fn remove_of_a_missing_file_records_nothing() {
        let (_h, _d, s, ws) = setup();
        match s.remove(&ws, "nope", "m") {
            Err(Error::FileNotFound { path }) => assert_eq!(path, ws.root().join("nope")),
            other => panic!("expected FileNotFound, got {other:?}"),
        }
        assert!(s.entries().unwrap().is_empty());
    }

    #[test]
    fn a_session_handle_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Session>();
        check::<Workspace>();
    }
}
