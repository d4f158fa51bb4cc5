//! The checkpoint handle: the bracket around a write the caller makes itself.
//!
//! While a [`Checkpoint`] lives it holds the file's lock, so no other turnback
//! user (another agent, another session) can change the file in between, and the
//! "after" that [`Checkpoint::commit`] records is this writer's own.

use std::path::PathBuf;

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::Entry;
use crate::lock::LockGuard;
use crate::revert::{self, RevertOptions};
use crate::session::Session;
use crate::workspace::Workspace;

/// A taken checkpoint, to be ended by [`Checkpoint::commit`] or
/// [`Checkpoint::rollback`]. Dropped without either, its entry stays uncommitted
/// (reverting it then needs `force`) and the file's lock is released.
#[must_use = "end a checkpoint with commit() or rollback()"]
#[derive(Debug)]
pub struct Checkpoint<'a> {
    session: &'a Session,
    workspace: &'a Workspace,
    rel: String,
    seq: u64,
    _lock: LockGuard,
}

impl<'a> Checkpoint<'a> {
    pub(crate) fn new(
        session: &'a Session,
        workspace: &'a Workspace,
        rel: String,
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
        &self.rel
    }

    /// The file's absolute path.
    pub fn absolute_path(&self) -> PathBuf {
        self.workspace.root().join(&self.rel)
    }

    /// Records the file as the write left it ("after") and releases the lock.
    pub fn commit(self) -> Result<Entry> {
        let after = self.workspace.current_state(&self.rel)?;
        self.session.mutate(Durability::Full, |idx| {
            let e = idx.entry_mut(self.seq).ok_or_else(|| Error::EntryGone {
                session: self.session.id().to_owned(),
                seq: self.seq,
            })?;
            e.after = Some(after);
            Ok(e.clone())
        })
    }

    /// Puts the file back as it was at the checkpoint (deleting it if it did not
    /// exist), drops the entry and releases the lock: for a write that failed.
    pub fn rollback(self) -> Result<()> {
        let opts = RevertOptions {
            force: true,
            dry_run: false,
        };
        let seq = self.seq;
        revert::revert_locked(self.session, opts, &|idx| {
            Ok(if idx.entries.iter().any(|e| e.seq == seq) {
                vec![seq]
            } else {
                Vec::new()
            })
        })?;
        Ok(())
    }
}
