//! The locks a session's operations take: the session's own (not had in
//! time: [`crate::Error::SessionBusy`]), and the store's per-file and
//! per-directory locks, held in this session's name (not had in time:
//! [`crate::Error::FileBusy`], naming the holder).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::lock::{LockGuard, Mode};
use crate::relpath::RelPath;
use crate::workspace::Workspace;

use super::handle::Session;

impl Session {
    pub(crate) fn lock_session(&self, mode: Mode) -> Result<LockGuard> {
        self.dir
            .lock(mode, self.store.options().session_lock_timeout)
    }

    /// Takes the locks of `files` (absolute real paths)
    /// ([`crate::Store::lock_files`]: past a few dozen, one gate instead).
    pub(crate) fn lock_files(&self, files: &BTreeSet<PathBuf>) -> Result<Vec<LockGuard>> {
        self.store.lock_files(files, &self.holder())
    }

    /// Takes the lock shared by every session on one real file.
    pub(crate) fn lock_file(&self, workspace: &Workspace, rel: &RelPath) -> Result<LockGuard> {
        self.lock_file_at(&rel.under(workspace.root()))
    }

    /// Takes the lock of the file at the absolute real path `file`.
    pub(crate) fn lock_file_at(&self, file: &Path) -> Result<LockGuard> {
        self.store.lock_file(file, &self.holder())
    }

    /// Takes, shared, the lock of the directory that holds `rel` in
    /// `workspace`, for a writer about to make new contents there
    /// ([`crate::Store::lock_parent_dir`]).
    pub(crate) fn lock_parent_dir(
        &self,
        workspace: &Workspace,
        rel: &RelPath,
    ) -> Result<Option<LockGuard>> {
        self.store.lock_parent_dir(workspace, rel, &self.holder())
    }

    /// Who this handle is, as a lock it holds says to a waiter that gives up.
    pub(crate) fn holder(&self) -> String {
        format!("session {:?} (pid {})", self.id(), std::process::id())
    }
}
