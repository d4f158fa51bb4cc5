//! The store home: where sessions live (`layout.rs` names what is where),
//! how they are found, and the per-file locks shared by every session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::home;
use crate::index::{Entry, Index};
use crate::layout::{LOCKS_DIR, SESSIONS_DIR, SessionDir};
use crate::lock::{self, LockDir, LockError, LockGuard, Mode};
use crate::relpath::RelPath;
use crate::session_id;
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
    /// Set once the home and `locks/` passed their check (`trust.rs`): a
    /// writer takes a file lock for every change, and the check need not
    /// cost that often.
    locks_checked: Arc<OnceLock<()>>,
    /// The directories made private so far, for [`Store::take_notices`].
    notices: Arc<Mutex<Vec<Tightened>>>,
    /// The home's real path, once it exists (`refuse_inside`).
    real_home: Arc<OnceLock<PathBuf>>,
}

/// One session as [`Store::sessions`] lists it.
#[derive(Debug, Clone)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// The workspace roots its entries (in effect or undone) are in.
    pub workspaces: Vec<PathBuf>,
    /// How many entries it holds (in effect; undone ones are not counted).
    pub entries: usize,
    /// When its newest entry, or its newest undo, revert or rewind not yet
    /// redone, was made.
    pub last_change: Option<OffsetDateTime>,
    /// Bytes of backups it keeps.
    pub bytes: u64,
    /// Why its index could not be read, if it could not (the session is listed
    /// anyway, and nothing of it is changed): the error itself, so that a
    /// caller can tell a busy session from a damaged one and render it as it
    /// renders any error.
    pub problem: Option<Arc<Error>>,
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

    /// The ids of every session in the home, sorted.
    pub fn session_ids(&self) -> Result<Vec<String>> {
        self.check_session_dirs(None)?;
        let dir = self.sessions_dir();
        let read = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("list sessions in", &dir)(e)),
        };
        let mut ids: Vec<String> = read
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|id| session_id::validate(id).is_ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Every session of the home with its workspaces, size and last change,
    /// newest change last (those without one first; ties in id order).
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let mut out = Vec::new();
        for id in self.session_ids()? {
            let bytes = self.session_dir(&id).blob_bytes();
            let summary = match self.read_index(&id) {
                Ok(idx) => {
                    // Undone entries count for where a session works and when it
                    // last did something: a person may still want to redo them.
                    let recorded = idx.history.iter().flat_map(|r| &r.entries);
                    let mut workspaces: Vec<PathBuf> = Vec::new();
                    for e in idx.entries.iter().chain(recorded) {
                        if !workspaces.contains(&e.workspace.path) {
                            workspaces.push(e.workspace.path.clone());
                        }
                    }
                    let changes = idx.entries.iter().map(|e| e.time);
                    let reverts = idx.history.iter().map(|r| r.time);
                    SessionSummary {
                        id,
                        workspaces,
                        entries: idx.entries.len(),
                        last_change: changes.chain(reverts).max(),
                        bytes,
                        problem: None,
                    }
                }
                Err(e) => SessionSummary {
                    id,
                    workspaces: Vec::new(),
                    entries: 0,
                    last_change: None,
                    bytes,
                    problem: Some(Arc::new(e)),
                },
            };
            out.push(summary);
        }
        out.sort_by(|a, b| a.last_change.cmp(&b.last_change).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The session that changed `path` (in `workspace`) last, across every session
    /// of the home: what `turnback revert FILE` uses when no session is named.
    /// Sessions whose index cannot be read are skipped.
    pub fn latest_session_for(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
    ) -> Result<Option<String>> {
        let path = path.as_ref();
        let candidates = crate::workspace::candidate_files(workspace, path)?;
        let newest = self.newest_entry_where(None, |e| candidates.contains(&e.absolute_path()))?;
        Ok(newest.map(|(id, _)| id))
    }

    /// The session a person working in `dir` most likely means: the one whose
    /// newest change to a file under `dir` (an entry in effect, or one an
    /// undo, revert or rewind took back, which redo can put back) is the
    /// newest of all, by its time or that revert's. A session whose workspace
    /// merely contains `dir` (a parent directory) but changed nothing under it
    /// is not one. What `turnback undo`, `rewind`, `log` and `diff` use when no
    /// session is named. Sessions whose index cannot be read are skipped.
    pub fn latest_session_under(&self, dir: impl AsRef<Path>) -> Result<Option<String>> {
        let dir = dir.as_ref();
        self.newest_session_by(|idx| {
            let in_effect = idx
                .entries
                .iter()
                .filter(|e| e.absolute_path().starts_with(dir))
                .map(|e| e.time);
            let taken_back = idx
                .history
                .iter()
                .filter(|r| touches_under(r, dir))
                .map(|r| r.time);
            in_effect.chain(taken_back).max()
        })
    }

    /// The session whose newest undo, revert or rewind of a file under `dir`
    /// is the newest of all (by the record's time): what `turnback redo` takes
    /// back when no session is named. Sessions whose index cannot be read are
    /// skipped.
    pub fn latest_redo_session_under(&self, dir: impl AsRef<Path>) -> Result<Option<String>> {
        let dir = dir.as_ref();
        self.newest_session_by(|idx| {
            idx.history
                .iter()
                .filter(|r| touches_under(r, dir))
                .map(|r| r.time)
                .max()
        })
    }

    /// The session for which `when` gives the newest time (ties: the larger
    /// id), among those it gives one for.
    fn newest_session_by(
        &self,
        when: impl Fn(&Index) -> Option<OffsetDateTime>,
    ) -> Result<Option<String>> {
        let mut best: Option<(OffsetDateTime, String)> = None;
        for id in self.session_ids()? {
            let Ok(idx) = self.read_index(&id) else {
                continue;
            };
            if let Some(t) = when(&idx)
                && best.as_ref().is_none_or(|(b, _)| t >= *b)
            {
                best = Some((t, id));
            }
        }
        Ok(best.map(|(_, id)| id))
    }

    /// The newest entry in effect, across every session of the home, that
    /// `wanted` accepts, with its session's id. Sessions whose index cannot be
    /// read are skipped. A caller that holds the lock of session `holding`
    /// (a revert naming who changed a file) says so: that session is read
    /// without taking its lock again, which would wait for itself, and no
    /// other session's lock is waited for, since its holder may be waiting for
    /// the caller's in the same way; a busy one is read without its lock (the
    /// answer is only a hint in an error message).
    pub(crate) fn newest_entry_where(
        &self,
        holding: Option<&str>,
        wanted: impl Fn(&Entry) -> bool,
    ) -> Result<Option<(String, Entry)>> {
        let mut best: Option<(String, Entry)> = None;
        for id in self.session_ids()? {
            let idx = match holding {
                None => self.read_index(&id),
                Some(holding) => self
                    .session_dir(&id)
                    .read_index_for_hint(holding == id.as_str()),
            };
            let Ok(idx) = idx else {
                continue;
            };
            for e in idx.entries.into_iter().filter(|e| wanted(e)) {
                if best
                    .as_ref()
                    .is_none_or(|(_, b)| (e.time, e.seq) > (b.time, b.seq))
                {
                    best = Some((id.clone(), e));
                }
            }
        }
        Ok(best)
    }

    /// Session `id`'s whole index, read under its shared lock
    /// ([`SessionDir::read_index`]).
    fn read_index(&self, id: &str) -> Result<Index> {
        self.session_dir(id)
            .read_index(self.options.session_lock_timeout)
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
        let path = self.locks.file_lock_path(file);
        self.take_lock(&path, file, Mode::Exclusive, holder)
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
        lock::try_acquire(&self.locks.file_lock_path(file))
            .ok()
            .flatten()
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

/// True when the revert `r` took back or restored a file under `dir`.
fn touches_under(r: &crate::index::RevertRecord, dir: &Path) -> bool {
    r.files
        .iter()
        .map(crate::index::RevertedFile::absolute_path)
        .chain(r.entries.iter().map(Entry::absolute_path))
        .any(|f| f.starts_with(dir))
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

    #[test]
    fn listing_waits_for_a_session_in_the_middle_of_a_change() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path()).with_options(Options {
            session_lock_timeout: Duration::from_millis(50),
            ..Options::default()
        });
        let s = store.session("s").unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        s.write(&ws, "f", &b"x"[..], "m").unwrap();
        // Another process in the middle of a change holds the lock: the
        // listing does not read the session's files meanwhile.
        let path = s.dir().join("lock");
        let held = crate::lock::acquire(&path, crate::lock::Mode::Exclusive, Duration::ZERO, None)
            .unwrap();
        let listed = store.sessions().unwrap();
        let problem = listed[0].problem.as_deref();
        assert!(
            matches!(problem, Some(Error::SessionBusy { .. })),
            "{problem:?}"
        );
        assert_eq!(store.latest_session_for(&ws, "f").unwrap(), None);
        drop(held);
        assert_eq!(store.sessions().unwrap()[0].entries, 1);
        assert_eq!(
            store.latest_session_for(&ws, "f").unwrap().as_deref(),
            Some("s")
        );
    }

    #[test]
    fn a_refusal_names_a_change_of_the_reverting_session_itself() {
        // The revert holds its own session's lock while it asks which change
        // made the file what it is: its own session must be read then too,
        // without waiting for the lock it holds.
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path()).with_options(Options {
            session_lock_timeout: Duration::from_millis(200),
            ..Options::default()
        });
        let s = store.session("s").unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        let plain = crate::RevertOptions::default();
        s.write(&ws, "f", &b"one"[..], "m1").unwrap();
        s.undo(plain).unwrap();
        s.write(&ws, "f", &b"three"[..], "m3").unwrap();
        let Err(Error::Refused { conflicts, .. }) = s.redo(plain) else {
            panic!("the redo was not refused");
        };
        let reason = &conflicts[0].reason;
        let crate::ConflictReason::ChangedSince { by: Some(by) } = reason else {
            panic!("no changer named: {reason:?}");
        };
        assert_eq!((by.session.as_str(), by.message_id.as_str()), ("s", "m3"));
    }

    #[test]
    fn a_refusal_does_not_wait_for_another_sessions_lock_to_name_it() {
        // Two agents reverting at once each hold their own session's lock while
        // they name who changed a file; waiting for each other's would stall
        // both until the timeout. The other session is read without its lock.
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path()).with_options(Options {
            session_lock_timeout: Duration::from_millis(500),
            ..Options::default()
        });
        let (a, b) = (store.session("a").unwrap(), store.session("b").unwrap());
        let ws = Workspace::open(wsdir.path()).unwrap();
        let plain = crate::RevertOptions::default();
        b.write(&ws, "f", &b"one"[..], "m1").unwrap();
        b.undo(plain).unwrap();
        a.write(&ws, "f", &b"two"[..], "m2").unwrap();
        let path = a.dir().join("lock");
        let _held = crate::lock::acquire(&path, crate::lock::Mode::Exclusive, Duration::ZERO, None)
            .unwrap();
        let Err(Error::Refused { conflicts, .. }) = b.redo(plain) else {
            panic!("the redo was not refused");
        };
        let reason = &conflicts[0].reason;
        let crate::ConflictReason::ChangedSince { by: Some(by) } = reason else {
            panic!("no changer named: {reason:?}");
        };
        assert_eq!((by.session.as_str(), by.message_id.as_str()), ("a", "m2"));
    }
}
