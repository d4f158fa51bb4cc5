//! The checkpoint handle: the bracket around a write the caller makes itself.
//!
//! While a [`Checkpoint`] lives it holds the file's lock, so no other turnback
//! user (another agent, another session) can change the file in between, and the
//! "after" that [`Checkpoint::commit`] records is this writer's own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::durable::Durability;
use crate::error::Result;
use crate::index::Entry;
use crate::lock::LockGuard;
use crate::relpath::RelPath;
use crate::revert::{self, RevertOptions, RevertReport};
use crate::session::{Draft, Session};
use crate::workspace::Workspace;

/// A taken checkpoint, to be ended by [`Checkpoint::commit`] or
/// [`Checkpoint::rollback`]. Dropped without either, its entry stays uncommitted
/// (reverting it then needs `force`) and the file's lock is released.
#[must_use = "end a checkpoint with commit() or rollback()"]
#[derive(Debug)]
pub struct Checkpoint<'a> {
    session: &'a Session,
    workspace: &'a Workspace,
    rel: RelPath,
    seq: u64,
    _lock: LockGuard,
}

impl<'a> Checkpoint<'a> {
    pub(crate) fn new(
        session: &'a Session,
        workspace: &'a Workspace,
        rel: RelPath,
        seq: u64,
        lock: LockGuard,
    ) -> Self {
        Checkpoint {
            session,
            workspace,
            rel,
            seq,
            _lock: lock,
        }
    }

    /// The entry's sequence number in its session.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The file's real path relative to the workspace.
    pub fn path(&self) -> &str {
        self.rel.as_str()
    }

    /// The file's absolute path.
    pub fn absolute_path(&self) -> PathBuf {
        self.rel.under(self.workspace.root())
    }

    /// Records the file as the write left it ("after") and releases the lock.
    pub fn commit(self) -> Result<Entry> {
        self.session
            .commit_locked(self.workspace, &self.rel, self.seq)
    }

    /// Puts the file back as it was at the checkpoint (deleting it if it did not
    /// exist), drops the entry and releases the lock: for a write that failed.
    pub fn rollback(self) -> Result<()> {
        self.session
            .rollback_locked(self.workspace, &self.rel, self.seq)
    }

    /// What [`Checkpoint::rollback`] would do, changing nothing and keeping the
    /// lock: the preview of a rollback for a caller that holds the checkpoint
    /// ([`Session::rollback_with`] would wait for the lock this holds).
    pub fn rollback_preview(&self) -> Result<RevertReport> {
        let held = BTreeSet::from([self.absolute_path()]);
        let opts = RevertOptions {
            force: false,
            dry_run: true,
        };
        revert::rollback(self.session, self.seq, opts, &held)
    }
}

impl Session {
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
        let rel = workspace.resolve_rel(path)?;
        self.store().refuse_inside(&rel.under(workspace.root()))?;
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
}

/// The bracket by entry number, for a caller in another process than the one
/// that took the checkpoint (`turnback checkpoint` / `commit` / `rollback`).
/// The file's lock is taken again for the call; between the processes it is not
/// held, so prefer [`Session::write`] where one process does the write.
impl Session {
    /// Commits entry `seq`: records its file as it is now as the entry's "after".
    pub fn commit(&self, seq: u64) -> Result<Entry> {
        let entry = self.uncommitted(seq)?;
        let ws = Workspace::reopen(&entry.workspace)?;
        let _lock = self.lock_file(&ws, &entry.rel_path())?;
        self.commit_locked(&ws, &entry.rel_path(), seq)
    }

    /// Rolls entry `seq` back: its file returns to "before" and the entry is
    /// dropped. Refused ([`crate::Error::Refused`], naming who made it) when a change
    /// to the file was recorded since the checkpoint, by this session or any
    /// other: [`Session::rollback_with`] can force it.
    pub fn rollback(&self, seq: u64) -> Result<()> {
        self.rollback_with(seq, RevertOptions::default()).map(drop)
    }

    /// [`Session::rollback`] with options: `force` rolls back over changes
    /// recorded since (this session's later changes to the file go with it),
    /// backing up what it overwrites and recording the rollback so that
    /// [`Session::redo`] puts it all back; `dry_run` only reports.
    pub fn rollback_with(&self, seq: u64, opts: RevertOptions) -> Result<RevertReport> {
        let entry = self.uncommitted(seq)?;
        let ws = Workspace::reopen(&entry.workspace)?;
        let _lock = self.lock_file(&ws, &entry.rel_path())?;
        let held = BTreeSet::from([entry.absolute_path()]);
        revert::rollback(self, seq, opts, &held)
    }

    fn uncommitted(&self, seq: u64) -> Result<Entry> {
        // An open entry is in the summary; the error for any other needs the
        // whole index.
        match self.open_entry(seq)? {
            Some(e) => Ok(e),
            None => self.view(|s| self.uncommitted_in(s, seq).cloned())?,
        }
    }

    pub(crate) fn commit_locked(&self, ws: &Workspace, rel: &RelPath, seq: u64) -> Result<Entry> {
        let after = ws.current_state(rel)?;
        self.mutate_entry(Durability::Full, |idx| {
            self.uncommitted_in(idx, seq)?;
            let e = idx.entry_mut(seq).expect("found just now");
            e.after = Some(after.clone());
            Ok(e.clone())
        })
    }

    fn rollback_locked(&self, ws: &Workspace, rel: &RelPath, seq: u64) -> Result<()> {
        let held = BTreeSet::from([rel.under(ws.root())]);
        revert::rollback(self, seq, RevertOptions::default(), &held).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Store};

    #[test]
    fn commit_and_rollback_by_number_from_another_handle() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path());
        let ws = Workspace::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("a"), "old").unwrap();
        let seq = {
            let s = store.session("s").unwrap();
            let cp = s.checkpoint(&ws, "a", "m").unwrap();
            cp.seq() // dropped uncommitted, as a process that exits would
        };
        std::fs::write(dir.path().join("a"), "new").unwrap();
        let other = store.open_session("s").unwrap();
        let e = other.commit(seq).unwrap();
        assert_eq!(e.after.unwrap().size, 3);
        assert!(matches!(
            other.commit(seq),
            Err(Error::AlreadyCommitted { .. })
        ));
        assert!(matches!(
            other.rollback(seq),
            Err(Error::AlreadyCommitted { .. })
        ));
        assert!(matches!(
            other.commit(99),
            Err(Error::NoSuchEntry { seq: 99, .. })
        ));

        let cp = other.checkpoint(&ws, "b", "m2").unwrap();
        let seq = cp.seq();
        drop(cp);
        std::fs::write(dir.path().join("b"), "half").unwrap();
        other.rollback(seq).unwrap();
        assert!(!dir.path().join("b").exists());
        assert_eq!(other.entries().unwrap().len(), 1);
        assert!(matches!(
            other.rollback(seq),
            Err(Error::NoSuchEntry { .. })
        ));
    }

    #[test]
    fn a_held_checkpoint_previews_its_rollback_and_keeps_its_lock() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let quick = crate::store::Options {
            file_lock_timeout: std::time::Duration::from_millis(50),
            ..Default::default()
        };
        let store = Store::new(home.path()).with_options(quick);
        let ws = Workspace::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("a"), "old").unwrap();
        let s = store.session("s").unwrap();
        let cp = s.checkpoint(&ws, "a", "m").unwrap();
        std::fs::write(dir.path().join("a"), "half").unwrap();
        let preview = cp.rollback_preview().unwrap();
        assert!(!preview.applied);
        assert_eq!(preview.files.len(), 1);
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"half");
        // Still held: another handle's rollback by number waits and gives up.
        let other = store.open_session("s").unwrap();
        assert!(matches!(
            other.rollback(cp.seq()),
            Err(Error::FileBusy { .. })
        ));
        cp.rollback().unwrap();
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"old");
    }
}
