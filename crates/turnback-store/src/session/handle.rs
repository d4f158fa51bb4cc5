//! The session handle: its identity, its cache of the index, its hold on the
//! session (`live`), and the read-modify-write of the index under the
//! session's lock that every change goes through.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::blobs::Blobs;
use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::journal::{self, Loaded, Need, State, Tracked};
use crate::layout::SessionDir;
use crate::lock::{self, LockError, LockGuard, Mode};
use crate::session_id;
use crate::store::Store;

/// One session of a store. Cheap to clone (clones share one cache of the
/// index and one hold on the session). While the session's directory exists,
/// a handle holds one open file: a shared lock on `live`, which tells
/// [`Store::prune`] that the session is in use.
#[derive(Debug, Clone)]
pub struct Session {
    pub(super) store: Store,
    pub(super) dir: SessionDir,
    pub(super) blobs: Blobs,
    /// The index as this process last read it under the lock; brought up to
    /// date (usually by reading a few journal lines) at every acquisition.
    cache: Arc<Mutex<Option<Loaded>>>,
    /// The shared lock on `<dir>/live`, taken at open if the directory exists,
    /// else when the first change makes it; released when the last clone goes.
    live: Arc<Mutex<Option<LockGuard>>>,
    /// The directory restores are confined to ([`Session::confine_to`]).
    scope: Option<PathBuf>,
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
    pub(crate) fn open(store: Store, dir: SessionDir) -> Result<Session> {
        store.check_session_dirs(Some(&dir))?;
        let blobs = dir
            .blobs()
            .compressing(store.settings().compress_backups.value);
        let session = Session {
            store,
            dir,
            blobs,
            cache: Arc::new(Mutex::new(None)),
            live: Arc::new(Mutex::new(None)),
            scope: None,
        };
        session.hold_live(false)?;
        // Settle what a dead writer or revert left half done, so that a session
        // that opens leaves no stray temporary in a workspace.
        if crate::marker::exists(&session.dir)
            || session.view_live(|s| !s.in_flight().is_empty())?
        {
            session.mutate(Durability::Full, |_| Ok(()))?;
        }
        Ok(session)
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.dir.id()
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
                    session: self.id().to_owned(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The session's directory in the store.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The session's directory, with the names of what is in it.
    pub(crate) fn session_dir(&self) -> &SessionDir {
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

    /// Entry `seq` as on disk now: [`Error::NoSuchEntry`] unless it is in
    /// effect (it was undone or rolled back, or never existed).
    pub fn entry(&self, seq: u64) -> Result<Entry> {
        // An open entry is in the summary; any other needs the whole index.
        let (found, partial) = self.view_live(|s| (s.entry(seq).cloned(), s.is_partial()))?;
        match found {
            Some(e) => Ok(e),
            None if partial => self.view(|s| self.entry_in(s, seq).cloned())?,
            None => Err(Error::NoSuchEntry {
                session: self.id().to_owned(),
                seq,
            }),
        }
    }

    /// The entries not committed yet (checkpoints still open), oldest first:
    /// read from the session's summary where it can be, so that the cost
    /// does not grow with the session.
    pub fn open_entries(&self) -> Result<Vec<Entry>> {
        self.view_live(|s| {
            s.entries
                .iter()
                .filter(|e| !e.is_committed())
                .cloned()
                .collect()
        })
    }

    /// Entry `seq` if it is in effect and not committed.
    pub(crate) fn open_entry(&self, seq: u64) -> Result<Option<Entry>> {
        self.view_live(|s| s.entry(seq).filter(|e| !e.is_committed()).cloned())
    }

    /// Entry `seq` of `idx` (this session's index, as the caller read it):
    /// [`Error::NoSuchEntry`] unless it is in effect.
    pub(crate) fn entry_in<'i>(&self, idx: &'i Index, seq: u64) -> Result<&'i Entry> {
        idx.entry(seq).ok_or_else(|| Error::NoSuchEntry {
            session: self.id().to_owned(),
            seq,
        })
    }

    /// [`Session::entry_in`], refusing an entry already committed
    /// ([`Error::AlreadyCommitted`]): what commit and rollback by number act
    /// on.
    pub(crate) fn uncommitted_in<'i>(&self, idx: &'i Index, seq: u64) -> Result<&'i Entry> {
        let e = self.entry_in(idx, seq)?;
        if e.is_committed() {
            return Err(Error::AlreadyCommitted {
                session: self.id().to_owned(),
                seq,
            });
        }
        Ok(e)
    }

    /// What the session's caps evicted, if anything (`log` shows the gap).
    pub fn evicted(&self) -> Result<Option<crate::evicted::Evicted>> {
        self.view(|s| s.evicted.clone())
    }

    /// Bytes of the distinct backups the session's index needs (what the
    /// `max_bytes` cap counts).
    pub fn stored_bytes(&self) -> Result<u64> {
        self.view(|s| crate::caps::stored_bytes(s))
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
        if !self.dir.exists() {
            return Ok(());
        }
        let _g = self.lock_session(Mode::Exclusive)?;
        let mut cache = self.cache();
        Loaded::refresh(&mut cache, self.dir.index_files(), self.id())?;
        let compacted = cache
            .as_mut()
            .expect("refreshed")
            .compact_if_needed(self.dir.index_files());
        if compacted.is_err() {
            *cache = None;
        }
        compacted
    }

    /// Runs `f` on the index as on disk now, read under a shared lock (from the
    /// cache, brought up to date).
    pub(crate) fn view<T>(&self, f: impl FnOnce(&State) -> T) -> Result<T> {
        if !self.dir.exists() {
            return Ok(f(&State::new(Index::empty(self.id()))));
        }
        let _g = self.lock_session(Mode::Shared)?;
        let mut cache = self.cache();
        Loaded::refresh(&mut cache, self.dir.index_files(), self.id())?;
        Ok(f(&cache.as_ref().expect("refreshed").state))
    }

    /// [`Session::view`] for a look that needs only what the session's
    /// summary holds (the entries in flight or not committed, the counters):
    /// `f` may be given a partial state ([`State::is_partial`]).
    pub(crate) fn view_live<T>(&self, f: impl FnOnce(&State) -> T) -> Result<T> {
        if !self.dir.exists() {
            return Ok(f(&State::new(Index::empty(self.id()))));
        }
        let _g = self.lock_session(Mode::Shared)?;
        let mut cache = self.cache();
        Loaded::refresh_live(&mut cache, self.dir.index_files(), self.id())?;
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

    /// Creates the session's directory with its first change, durably, and
    /// holds it (see [`Session::hold_live`]).
    pub(crate) fn ensure_dir(&self) -> Result<()> {
        self.hold_live(true)
    }

    fn make_dir(&self) -> Result<()> {
        self.store.check_session_dirs(None)?;
        crate::sys::create_store_dir_all(self.dir.path())
            .map_err(Error::io("create session directory", self.dir.path()))?;
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
        let path = self.dir.live_path();
        let timeout = self.store.options().session_lock_timeout;
        for _ in 0..8 {
            if !self.dir.exists() {
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
                        session: self.id().to_owned(),
                        waited,
                    });
                }
                Err(LockError::Io(e)) => return Err(crate::trust::store_io("lock", &path)(e)),
            }
        }
        Err(Error::SessionBusy {
            session: self.id().to_owned(),
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
        self.mutate_with(durability, held, Need::Whole, f, then)
    }

    /// [`Session::mutate`] for a change that needs only what `need` says:
    /// `f` may be given a partial state ([`State::is_partial`]).
    pub(crate) fn mutate_live<T>(
        &self,
        durability: Durability,
        need: Need,
        f: impl FnOnce(&mut Tracked) -> Result<T>,
    ) -> Result<T> {
        self.mutate_with(durability, None, need, f, || {})
    }

    /// [`Session::mutate_live`] for a change of one open entry, which `f`
    /// looks up by number: on a partial state an entry `f` does not find
    /// ([`Error::NoSuchEntry`]) may be one committed, so then `f` runs again
    /// on the whole index, for the error it gives there.
    pub(crate) fn mutate_entry<T>(
        &self,
        durability: Durability,
        f: impl Fn(&mut Tracked) -> Result<T>,
    ) -> Result<T> {
        let mut missed = false;
        let out = self.mutate_live(durability, Need::OPEN_ONLY, |idx| {
            let out = f(idx);
            missed = idx.is_partial() && matches!(out, Err(Error::NoSuchEntry { .. }));
            out
        });
        match missed {
            true => self.mutate(durability, f),
            false => out,
        }
    }

    /// Read-modify-write of the index under the exclusive lock (see
    /// [`Session::mutate`]), for a caller holding the file locks of `held`,
    /// with `f` given what `need` says: a partial state from the summary when
    /// `need` is [`Need::Live`], no dead revert is to be settled (that is
    /// checked against the whole index) and the change cannot take the
    /// session past a cap (evicting needs the whole index).
    pub(crate) fn mutate_with<T>(
        &self,
        durability: Durability,
        held: Option<&BTreeSet<PathBuf>>,
        need: Need,
        f: impl FnOnce(&mut Tracked) -> Result<T>,
        then: impl FnOnce(),
    ) -> Result<T> {
        self.ensure_dir()?;
        let _g = self.lock_session(Mode::Exclusive)?;
        let mut cache = self.cache();
        let files = self.dir.index_files();
        let caps = crate::caps::Caps::of(self.store.settings());
        let live = match need {
            Need::Live { adds, bytes } if !crate::marker::exists(&self.dir) => Some((adds, bytes)),
            _ => None,
        };
        match live {
            Some(_) => Loaded::refresh_live(&mut cache, files, self.id())?,
            None => Loaded::refresh(&mut cache, files, self.id())?,
        }
        // Within the caps by the summary's totals: the caps need not look at
        // the index (nor can they, on a partial state). Settling below only
        // takes entries away.
        let within = live.is_some_and(|(adds, bytes)| {
            let loaded = cache.as_ref().expect("refreshed");
            loaded.within_caps(adds, bytes, caps.max_entries, caps.max_bytes)
        });
        if !within && cache.as_ref().is_some_and(|l| l.state.is_partial()) {
            Loaded::refresh(&mut cache, files, self.id())?;
        }
        // Settling is its own change, durable on its own: what it found is true
        // of the files whatever `f` then does. A dead revert is settled first:
        // it held the locks of its files, so no in-flight write is among them.
        journal::change_again(&mut cache, files, self.id(), Durability::Full, |idx| {
            crate::recovery::settle_revert(&self.store, &self.dir, &self.holder(), idx, held);
            crate::recovery::settle_in_flight(&self.store, idx, held);
            Ok(())
        })?;
        let mut eviction = crate::caps::Eviction::default();
        let out = journal::change_again(&mut cache, files, self.id(), durability, |idx| {
            let out = f(idx)?;
            // In the same index update: a change past a cap evicts the oldest
            // (one the summary says stays within them cannot pass one).
            match within {
                true => debug_assert!(idx.added_entries().len() <= live.map_or(0, |l| l.0)),
                false => eviction = crate::caps::enforce(idx, caps),
            }
            Ok(out)
        })?;
        if eviction != crate::caps::Eviction::default() {
            // Still under the lock: the backups only the evicted entries
            // named go now (but one a writer may be about to name).
            let state = &cache.as_ref().expect("changed").state;
            let referenced = crate::caps::referenced(state);
            let older_than = std::time::SystemTime::now() - crate::caps::BLOB_GRACE;
            self.blobs.collect_garbage(&referenced, older_than, false);
        }
        then();
        Ok(out)
    }
}

/// Opening sessions is the session's business: the store itself never needs
/// a session (`Store` is below `Session` in the module map).
impl Store {
    /// Opens the session `id`, new or existing. A new session is created on disk
    /// with its first change, so a call that fails leaves no empty session.
    pub fn session(&self, id: &str) -> Result<Session> {
        session_id::validate(id)?;
        Session::open(self.clone(), self.session_dir(id))
    }

    /// Opens the existing session `id`: [`Error::SessionNotFound`] if there is none.
    pub fn open_session(&self, id: &str) -> Result<Session> {
        session_id::validate(id)?;
        let dir = self.session_dir(id);
        if !dir.exists() {
            return Err(Error::SessionNotFound {
                session: id.to_owned(),
                home: self.home().to_owned(),
            });
        }
        Session::open(self.clone(), dir)
    }

    /// Starts a new session with a generated id, sortable by time.
    pub fn new_session(&self) -> Result<Session> {
        self.session(&session_id::generate())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::workspace::Workspace;

    pub(crate) fn setup() -> (tempfile::TempDir, tempfile::TempDir, Session, Workspace) {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let session = Store::new(home.path()).session("s1").unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        (home, wsdir, session, ws)
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
    fn an_entry_by_number_is_one_in_effect() {
        let (_h, _d, s, ws) = setup();
        let e = s.write(&ws, "a", &b"1"[..], "m").unwrap();
        assert_eq!(s.entry(e.seq).unwrap(), e);
        s.undo(crate::RevertOptions::default()).unwrap();
        for seq in [e.seq, 99] {
            match s.entry(seq) {
                Err(Error::NoSuchEntry { seq: n, .. }) => assert_eq!(n, seq),
                other => panic!("entry {seq}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_new_handle_numbers_versions_on_and_still_evicts_at_the_cap() {
        use crate::settings::{Setting, Settings, Source};
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        let settings = Settings {
            max_entries: Setting {
                value: 3,
                source: Source::Default,
            },
            ..Settings::default()
        };
        // A new handle for each change, as every `turnback write` is a new
        // process: all but the first work on the summary.
        let session = || {
            let store = Store::new(home.path()).with_settings(settings.clone());
            store.session("s").unwrap()
        };
        for (file, contents) in [("a", "1"), ("b", "1"), ("a", "2")] {
            session()
                .write(&ws, file, contents.as_bytes(), "m")
                .unwrap();
        }
        let s = session();
        let cp = s.checkpoint(&ws, "b", "m").unwrap();
        std::fs::write(wsdir.path().join("b"), "2").unwrap();
        cp.commit().unwrap();
        let versions: Vec<(u64, u32)> = session()
            .entries()
            .unwrap()
            .iter()
            .map(|e| (e.seq, e.version))
            .collect();
        assert_eq!(versions, [(2, 1), (3, 2), (4, 2)], "the oldest went");
        crate::journal::summary_agrees(s.session_dir().index_files(), "s").unwrap();
    }

    #[test]
    fn a_session_handle_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Session>();
        check::<Workspace>();
    }
}
