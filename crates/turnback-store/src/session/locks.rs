//! The locks a session's operations take (the session's own, and the store's
//! per-file and per-directory locks), and what it means when one is not had
//! in time: [`Error::SessionBusy`], [`Error::FileBusy`] naming the holder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::lock::{self, LockError, LockGuard, Mode};
use crate::workspace::Workspace;

use super::handle::Session;

impl Session {
    pub(crate) fn lock_session(&self, mode: Mode) -> Result<LockGuard> {
        self.dir
            .lock(mode, self.store.options().session_lock_timeout)
    }

    /// Takes the locks of `files` (absolute real paths), in the order of
    /// their lock names so that no two callers can deadlock.
    pub(crate) fn lock_files(&self, files: &BTreeSet<PathBuf>) -> Result<Vec<LockGuard>> {
        self.store
            .locks()
            .lock_sorted(files, |file| self.lock_file_at(file))
    }

    /// Takes the lock shared by every session on one real file.
    pub(crate) fn lock_file(&self, workspace: &Workspace, rel: &str) -> Result<LockGuard> {
        self.lock_file_at(&workspace.root().join(rel))
    }

    /// Takes the lock of the file at the absolute real path `file`.
    pub(crate) fn lock_file_at(&self, file: &Path) -> Result<LockGuard> {
        let path = self.store.locks().file_lock_path(file);
        self.take_lock(&path, file, Mode::Exclusive)
    }

    /// Takes, shared, the lock of the directory that holds `rel` in
    /// `workspace` (see [`crate::lock::LockDir::dir_lock_path`]), for a writer about to make
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
        let path = self.store.locks().dir_lock_path(&dir);
        self.take_lock(&path, &dir, Mode::Shared).map(Some)
    }

    /// The exclusive lock of workspace directory `dir` if no writer holds it
    /// now: what removing the directory needs.
    pub(crate) fn try_lock_dir(&self, dir: &Path) -> Option<LockGuard> {
        lock::try_acquire(&self.store.locks().dir_lock_path(dir))
            .ok()
            .flatten()
    }

    /// Takes the lock at `path` (in `<home>/locks/`), of the workspace file or
    /// directory `of`, waiting at most the file lock timeout.
    fn take_lock(&self, path: &Path, of: &Path, mode: Mode) -> Result<LockGuard> {
        let locks = path.parent().expect("lock paths have a parent");
        self.store.check_locks_dir()?;
        crate::sys::create_store_dir_all(locks).map_err(Error::io("create directory", locks))?;
        let holder = format!("session {:?} (pid {})", self.id(), std::process::id());
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
