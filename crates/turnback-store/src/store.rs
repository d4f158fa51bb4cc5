//! The store home: where it is, its tunables, the trust checks of its
//! directories before they are used, and the locks of workspace files and
//! directories shared by every session. (`layout.rs` names what is where;
//! listing the sessions is `listing.rs`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::home;
use crate::layout::{LOCKS_DIR, SESSIONS_DIR, SessionDir};
use crate::lock::{self, LockDir, LockError, LockGuard, MOST_FILE_LOCKS, Mode};
use crate::relpath::RelPath;
use crate::settings::Settings;
use crate::trust::{self, Tightened};
use crate::workspace::Workspace;

/// Tunables of a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long a checkpoint, write or revert waits for another one on the same
    /// file before it fails with [`Error::FileBusy`].
    pub file_lock_timeout: Duration,
    /// How long an operation waits for a session's lock before it fails with
    /// [`Error::SessionBusy`].
    pub session_lock_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            file_lock_timeout: Duration::from_secs(10),
            session_lock_timeout: Duration::from_secs(30),
        }
    }
}

/// A store home holding every session.
#[derive(Debug, Clone)]
pub struct Store {
    home: PathBuf,
    /// `<home>/locks`.
    locks: LockDir,
    options: Options,
    /// Retention and the per-session caps, as the caller loaded them
    /// ([`Settings::load`]); the defaults unless given.
    settings: Arc<Settings>,
    /// Set once the home and `locks/` passed their check (`trust.rs`): a
    /// writer takes a file lock for every change, and the check need not
    /// cost that often.
    locks_checked: Arc<OnceLock<()>>,
    /// The directories made private so far, for [`Store::take_notices`].
    notices: Arc<Mutex<Vec<Tightened>>>,
    /// The home's real path, once it exists (`refuse_inside`).
    real_home: Arc<OnceLock<PathBuf>>,
}

impl Store {
    /// The store at the default home (see [`crate::default_home`]).
    pub fn open_default() -> Result<Store> {
        Ok(Store::new(home::default_home()?))
    }

    /// The store at `home`. Nothing is created until a session is. A relative
    /// `home` is made absolute now, against the current directory, so that a
    /// later change of directory (or a path resolved against a workspace)
    /// cannot move the store.
    pub fn new(home: impl Into<PathBuf>) -> Store {
        let home = home.into();
        let home = std::path::absolute(&home).unwrap_or(home);
        Store {
            locks: LockDir::new(home.join(LOCKS_DIR)),
            home,
            options: Options::default(),
            settings: Arc::new(Settings::default()),
            locks_checked: Arc::new(OnceLock::new()),
            notices: Arc::new(Mutex::new(Vec::new())),
            real_home: Arc::new(OnceLock::new()),
        }
    }

    /// Replaces the store's tunables.
    pub fn with_options(mut self, options: Options) -> Store {
        self.options = options;
        self
    }

    /// Replaces the store's settings (retention, caps), loaded once by the
    /// caller: the store never reads a config file or the environment itself.
    pub fn with_settings(mut self, settings: Settings) -> Store {
        self.settings = Arc::new(settings);
        self
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The store's tunables.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The locks of the workspace files and directories the sessions change.
    pub(crate) fn locks(&self) -> &LockDir {
        &self.locks
    }

    pub(crate) fn sessions_dir(&self) -> PathBuf {
        self.home.join(SESSIONS_DIR)
    }

    /// Session `id`'s directory (which may not exist yet).
    pub(crate) fn session_dir(&self, id: &str) -> SessionDir {
        SessionDir::new(&self.sessions_dir(), id)
    }

    /// The store directories this handle (or a clone, or a session of it)
    /// made private since the last call: directories of an existing store that
    /// other users could read, as builds before 0700/0600 left them. Each is
    /// 0700 now, and its files 0600. A caller tells its user (the command line
    /// prints a note per directory).
    pub fn take_notices(&self) -> Vec<Tightened> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// [`trust::secure_dir`] (or `secure_home`), keeping what it tightened.
    fn secure(&self, dir: &Path, home: bool) -> Result<()> {
        let tightened = match home {
            true => trust::secure_home(dir)?,
            false => trust::secure_dir(dir)?,
        };
        if let Some(t) = tightened {
            self.notices
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(t);
        }
        Ok(())
    }

    /// Checks the home and `sessions/`, and (when given) a session's
    /// directory and its `blobs/`, before they are used: each that exists must
    /// be a real directory of this user that no one else may write
    /// ([`Error::UnsafeStore`]); one that others may read is made private.
    pub(crate) fn check_session_dirs(&self, session_dir: Option<&SessionDir>) -> Result<()> {
        self.secure(&self.home, true)?;
        self.secure(&self.sessions_dir(), false)?;
        if let Some(dir) = session_dir {
            self.secure(dir.path(), false)?;
            self.secure(&dir.blobs_path(), false)?;
        }
        Ok(())
    }

    /// The trust check of a store directory `dir` of the home (the
    /// summary's), making it private if others may read it.
    pub(crate) fn secure_store_dir(&self, dir: &Path) -> Result<()> {
        self.secure(dir, false)
    }

    /// [`Store::check_session_dirs`] for the home and `locks/`, before a
    /// per-file lock is taken: once per store handle (and its clones) once
    /// they pass.
    pub(crate) fn check_locks_dir(&self) -> Result<()> {
        if self.locks_checked.get().is_some() {
            return Ok(());
        }
        self.secure(&self.home, true)?;
        let locks = self.locks.path();
        self.secure(locks, false)?;
        if locks.is_dir() {
            let _ = self.locks_checked.set(());
        }
        Ok(())
    }

    /// [`Error::InsideStore`] when the file at the absolute real path `file`
    /// is in the store home (or is the home): a workspace that holds the
    /// store must not have its store changed as one of its files.
    pub(crate) fn refuse_inside(&self, file: &Path) -> Result<()> {
        let home = match self.real_home.get() {
            Some(home) => home.clone(),
            None => match std::fs::canonicalize(&self.home) {
                // Found once it exists: a writer asks for every change.
                Ok(home) => self.real_home.get_or_init(|| home).clone(),
                Err(_) => trust::real_path(&self.home),
            },
        };
        if file.starts_with(&home) {
            return Err(Error::InsideStore {
                path: file.to_owned(),
                home,
            });
        }
        Ok(())
    }
}

/// The locks of the workspace files and directories that sessions change,
/// taken in a holder's name (a session, as [`crate::Session`] says who it is).
impl Store {
    /// Takes the lock of the workspace file at the absolute real path
    /// `file` (shared by every session), waiting at most the file lock
    /// timeout: then [`Error::FileBusy`], naming whoever holds it.
    pub(crate) fn lock_file(&self, file: &Path, holder: &str) -> Result<LockGuard> {
        let gate = Arc::new(self.take_gate(file, Mode::Shared, holder)?);
        let path = self.locks.file_lock_path(file);
        Ok(self
            .take_lock(&path, file, Mode::Exclusive, holder)?
            .under(gate))
    }

    /// Takes the locks of `files` (absolute real paths), in the order of
    /// their lock names so that no two callers can deadlock; past
    /// [`MOST_FILE_LOCKS`] files, the gate of every file lock exclusively
    /// instead, so the descriptors held never grow with the files.
    pub(crate) fn lock_files(
        &self,
        files: &BTreeSet<PathBuf>,
        holder: &str,
    ) -> Result<Vec<LockGuard>> {
        let Some(first) = files.first() else {
            return Ok(Vec::new());
        };
        if files.len() > MOST_FILE_LOCKS {
            let holder = format!("{holder}, holding {} files", files.len());
            return Ok(vec![self.take_gate(first, Mode::Exclusive, &holder)?]);
        }
        let gate = Arc::new(self.take_gate(first, Mode::Shared, holder)?);
        self.locks
            .sorted(files)
            .into_iter()
            .map(|(path, file)| {
                let lock = self.take_lock(&path, file, Mode::Exclusive, holder)?;
                Ok(lock.under(Arc::clone(&gate)))
            })
            .collect()
    }

    /// The gate of every file lock ([`LockDir::gate_path`]), in `mode`, for
    /// a caller that wants the lock of `file` (named if it waits too long).
    fn take_gate(&self, file: &Path, mode: Mode, holder: &str) -> Result<LockGuard> {
        self.take_lock(&self.locks.gate_path(), file, mode, holder)
    }

    /// Takes, shared, the lock of the directory that holds `rel` in
    /// `workspace` (see [`LockDir::dir_lock_path`]), for a writer about to
    /// make new contents there; `None` for a file at the root, which is never
    /// removed.
    pub(crate) fn lock_parent_dir(
        &self,
        workspace: &Workspace,
        rel: &RelPath,
        holder: &str,
    ) -> Result<Option<LockGuard>> {
        let Some(dir) = rel.parent() else {
            return Ok(None);
        };
        let dir = dir.under(workspace.root());
        let path = self.locks.dir_lock_path(&dir);
        self.take_lock(&path, &dir, Mode::Shared, holder).map(Some)
    }

    /// The lock of the workspace file at the absolute real path `file` if no
    /// one holds it now: what settling a dead writer's change needs (its
    /// caller holds a session's lock, so never waits for a file's).
    pub(crate) fn try_lock_file(&self, file: &Path) -> Option<LockGuard> {
        let gate = lock::try_acquire_as(&self.locks.gate_path(), Mode::Shared)
            .ok()
            .flatten()?;
        let lock = lock::try_acquire(&self.locks.file_lock_path(file))
            .ok()
            .flatten()?;
        Some(lock.under(Arc::new(gate)))
    }

    /// The exclusive lock of workspace directory `dir` if no writer holds it
    /// now: what removing the directory needs.
    pub(crate) fn try_lock_dir(&self, dir: &Path) -> Option<LockGuard> {
        lock::try_acquire(&self.locks.dir_lock_path(dir))
            .ok()
            .flatten()
    }

    /// Removes the directories `dirs` of `workspace` (outermost first) that
    /// are empty and that no writer is using.
    pub(crate) fn remove_unused_dirs(
        &self,
        workspace: &Workspace,
        dirs: &[RelPath],
    ) -> Vec<RelPath> {
        workspace.remove_empty_dirs(dirs, |d| self.try_lock_dir(&d.under(workspace.root())))
    }

    /// Takes the lock at `path` (in `<home>/locks/`), of the workspace file or
    /// directory `of`, for `holder`, waiting at most the file lock timeout.
    fn take_lock(&self, path: &Path, of: &Path, mode: Mode, holder: &str) -> Result<LockGuard> {
        let locks = path.parent().expect("lock paths have a parent");
        self.check_locks_dir()?;
        crate::sys::create_store_dir_all(locks).map_err(Error::io("create directory", locks))?;
        lock::acquire(path, mode, self.options.file_lock_timeout, Some(holder)).map_err(|e| match e
        {
            LockError::TimedOut { waited, holder } => Error::FileBusy {
                path: of.to_owned(),
                holder,
                waited,
            },
            LockError::Io(e) => trust::store_io("lock", path)(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_home_is_made_absolute_at_once() {
        let store = Store::new("rel/store");
        assert!(store.home().is_absolute(), "{}", store.home().display());
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(store.home(), cwd.join("rel/store"));
        assert!(store.session("s").unwrap().dir().is_absolute());
    }
}
