//! The write-through protocol: backing a file up, recording its entry, then
//! changing the file, and what each step leaves when the process dies there.
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

use time::OffsetDateTime;

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{Entry, FileState, InFlight};
use crate::journal::Need;
use crate::lock::LockGuard;
use crate::relpath::RelPath;
use crate::workspace::{NewContents, OpenFile, Workspace};

use super::handle::Session;

/// An entry about to be recorded.
pub(crate) struct Draft {
    pub(crate) rel: RelPath,
    pub(crate) before: FileState,
    pub(crate) after: Option<FileState>,
    pub(crate) created_dirs: Vec<RelPath>,
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

impl Session {
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
        contents: impl Read,
        message_id: &str,
        expected: &Expected,
    ) -> Result<Entry> {
        let written = self.write_inner(workspace, path, contents, message_id, expected, false)?;
        Ok(written.expect("a write that keeps the same bytes still records"))
    }

    /// [`Session::write_expecting`], except that contents the file already
    /// holds (the same bytes, and its mode kept) change nothing: the file is
    /// not touched and no entry is recorded (`Ok(None)`), so an undo never
    /// takes back a write that did nothing. What `turnback write` does.
    ///
    /// The old contents are still streamed into a backup while the new ones
    /// arrive (they are only known to be the same at the end); a backup no
    /// entry names is deleted by the next prune, as for any failed write.
    pub fn write_unless_same(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        contents: impl Read,
        message_id: &str,
        expected: &Expected,
    ) -> Result<Option<Entry>> {
        self.write_inner(workspace, path, contents, message_id, expected, true)
    }

    /// The write; with `skip_same`, contents equal to the file's record
    /// nothing (`None`).
    fn write_inner(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        mut contents: impl Read,
        message_id: &str,
        expected: &Expected,
        skip_same: bool,
    ) -> Result<Option<Entry>> {
        let rel = workspace.resolve_rel(path)?;
        self.store.refuse_inside(&rel.under(workspace.root()))?;
        let _lock = self.lock_file(workspace, &rel)?;
        // Before the directories are looked at: none of them may go while
        // the new contents are made in the last.
        let mut dir_lock = self.lock_parent_dir(workspace, &rel)?;
        // A damaged index must not leave a new backup behind that no entry
        // will name.
        self.view_live(|_| ())?;
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
        let display = rel.under(workspace.root());
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
                // The file lock is held: the file is still at `before`, so
                // leaving it alone leaves it exactly as asked.
                if skip_same && early.is_none() && before.same_state(&after) {
                    return Ok((new, None));
                }
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
                Ok((new, Some(entry)))
            });
            let backed_up = backup
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (recorded, backed_up)
        });
        let (new, entry) = match (recorded, backed_up) {
            (Some(Ok((new, Some(entry)))), Ok(_)) => (new, entry),
            (Some(Ok((new, None))), Ok(_)) => {
                // The same bytes: the temporary goes, nothing is recorded.
                drop(new);
                drop(dir_lock);
                return Ok(None);
            }
            (recorded, backed_up) => {
                // The file is untouched: the entries made for it go, with the
                // directories this writer made. The backup's error comes first.
                let mut seqs = early_seqs;
                if let Some(Ok((_, Some(e)))) = &recorded {
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
        Ok(Some(Entry {
            in_flight: None,
            ..entry
        }))
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
        created: &[RelPath],
    ) -> Result<Entry> {
        self.mutate_entry(Durability::Full, |idx| {
            self.entry_in(idx, seq)?;
            let e = idx.entry_mut(seq).expect("found just now");
            e.after = Some(after.clone());
            e.in_flight = Some(in_flight.clone());
            e.created_dirs = created.iter().map(RelPath::to_string).collect();
            let (file, done) = (workspace.root().join(&e.path), e.clone());
            idx.mark_read(file, after.clone());
            Ok(done)
        })
    }

    /// Step 6: the change is on disk. Losing this update in a crash is harmless
    /// (recovery finds the file at "after" and clears the mark), so the index is
    /// synced but its directory is not; and an error here is not the caller's:
    /// their file was written.
    pub(super) fn land(&self, seqs: &[u64]) {
        let _ = self.mutate_live(Durability::MayBeLost, Need::OPEN_ONLY, |idx| {
            for &seq in seqs {
                if let Some(e) = idx.entry_mut(seq) {
                    e.in_flight = None;
                }
            }
            Ok(())
        });
    }

    /// A change that failed before it touched the file: its entries go (the
    /// writer knows, so the file is not asked), and so do the directories this
    /// writer made for it, if still empty. Best effort, like any cleanup on an
    /// error path; a crash here is settled as any other.
    /// `dir_lock` is the writer's own hold on the file's directory, let go
    /// first: removing a directory needs its lock free.
    pub(super) fn forget(
        &self,
        workspace: &Workspace,
        seqs: &[u64],
        made: &[RelPath],
        dir_lock: &mut Option<LockGuard>,
    ) {
        if !seqs.is_empty() {
            let _ = self.mutate_live(Durability::Full, Need::OPEN_ONLY, |idx| {
                idx.remove_entries(seqs);
                Ok(())
            });
        }
        drop(dir_lock.take());
        self.store.remove_unused_dirs(workspace, made);
    }

    /// Step 5 failed, maybe after the rename (a failed directory sync): let
    /// recovery decide from the file itself, as it would after a crash, while this
    /// writer still holds the file's lock. Best effort; the next change settles it
    /// otherwise.
    pub(super) fn settle_own(&self, workspace: &Workspace, rel: &RelPath) {
        self.settle_held(&BTreeSet::from([rel.under(workspace.root())]));
    }

    /// [`Session::settle_own`] for the files of `held`, whose locks the caller
    /// holds.
    pub(super) fn settle_held(&self, held: &BTreeSet<PathBuf>) {
        let _ = self.mutate_with(
            Durability::Full,
            Some(held),
            Need::OPEN_ONLY,
            |_| Ok(()),
            || {},
        );
    }

    /// [`Session::back_up`] once the index is known to be readable: a damaged
    /// index must not leave a new backup behind that no entry will name.
    pub(crate) fn back_up_checked(
        &self,
        workspace: &Workspace,
        rel: &RelPath,
    ) -> Result<FileState> {
        self.view_live(|_| ())?;
        self.back_up(workspace, rel)
    }

    /// Streams the file into a blob, or records its absence.
    pub(crate) fn back_up(&self, workspace: &Workspace, rel: &RelPath) -> Result<FileState> {
        self.back_up_opened(workspace.open_regular(rel)?, |_| {})
    }

    /// [`Session::back_up`] of a file opened already (`None`: absent), telling
    /// `hashed` the state as soon as it is known, before the blob is durable
    /// (see [`crate::blobs::Blobs::store_file_then`]).
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
        self.record_marked(workspace, message_id, drafts, None)
    }

    /// [`Session::record`] of the changes a scan found, each entry marked with
    /// `mark` (its scan, and with whom the change of each is shared: by the
    /// draft's place).
    pub(crate) fn record_marked(
        &self,
        workspace: &Workspace,
        message_id: &str,
        drafts: Vec<Draft>,
        marks: Option<Vec<crate::index::ScanMark>>,
    ) -> Result<Vec<Entry>> {
        let root = workspace.identity();
        let grouped = drafts.len() > 1;
        // What the caps count of the new backups (each state that names one).
        let bytes = drafts
            .iter()
            .filter(|d| d.before.sha256.is_some())
            .map(|d| d.before.size)
            .sum();
        let need = Need::Live {
            adds: drafts.len(),
            bytes,
        };
        self.mutate_live(Durability::Full, need, |idx| {
            let group = grouped.then_some(idx.next_seq);
            let turn = idx.current_turn();
            let mut made = Vec::new();
            let mut marks = marks.clone().map(Vec::into_iter);
            for d in drafts {
                let scan = marks.as_mut().and_then(Iterator::next).map(Box::new);
                let file = d.rel.under(&root.path);
                let version = 1 + idx.entries_for(&file);
                let entry = Entry {
                    seq: idx.take_seq(),
                    message_id: message_id.to_owned(),
                    workspace: root.clone(),
                    path: d.rel.into(),
                    version,
                    time: OffsetDateTime::now_utc(),
                    before: d.before,
                    after: d.after,
                    created_dirs: d.created_dirs.iter().map(RelPath::to_string).collect(),
                    in_flight: d.in_flight,
                    turn,
                    group,
                    scan,
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
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
