//! Where everything is in a store home, and the ways to read a session's
//! index: every name of the store's directories and files is spelled here
//! and nowhere else.
//!
//! ```text
//! <home>/sessions/<id>/lock                the session's lock (never replaced)
//! <home>/sessions/<id>/live                locked shared by every open handle
//! <home>/sessions/<id>/index.json          the index's snapshot (via index.json.tmp)
//! <home>/sessions/<id>/journal.jsonl       every change since the snapshot
//! <home>/sessions/<id>/index.summary       what a write needs of them (via index.summary.tmp)
//! <home>/sessions/<id>/index.summary.table its files' numbers of entries (appended; via .tmp)
//! <home>/sessions/<id>/reverting.json      a revert under way (via reverting.json.tmp)
//! <home>/sessions/<id>/blobs/<sha256>      the backups (`blobs.rs` names what is inside)
//! <home>/sessions/.pruned-<id>-<random>    a session prune is deleting
//! <home>/locks/<sha256>                    a workspace file's or directory's lock
//! <home>/locks/<sha256>.mark               a file being written between two processes (`mark.rs`)
//! <home>/prune.lock                        held by the one prune that runs at a time
//! <home>/pruned-at                         its modification time: when a prune last ran by itself
//! <home>/sessions/<id>/scans/<scan>.jsonl  an open scan bracket (`scan/record.rs`)
//! <home>/baselines/<key>/baseline.jsonl    a workspace's scan baseline (`scan/baseline.rs`)
//! <home>/baselines/<key>/{lock, blobs/}    its lock and its backups
//! <home>/baselines/.pruned-<key>-<random>  a baseline prune is deleting
//! <home>/summary/<id>.jsonl                a session's summary record (`summary/`)
//! <home>/summary/.tmp-<pid>-<hex>          one being written
//! ```
//!
//! An index is read in one of four ways, each for one kind of caller (a
//! handle's own cache, brought up to date under the lock of each of its
//! operations, is `journal/`'s): [`SessionDir::load`] by a caller holding the
//! session's lock, [`SessionDir::read_index`] under a shared lock taken for
//! the read, [`SessionDir::read_index_for_hint`] by a caller that may hold a
//! session's lock and must wait for none, and [`SessionDir::is_readable`],
//! prune's look without a lock, which it decides again under the locks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::blobs::Blobs;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::journal::{self, Files};
use crate::lock::{self, LockError, LockGuard, Mode};
use crate::trust;

/// The directory of a home that holds the sessions.
pub(crate) const SESSIONS_DIR: &str = "sessions";

/// The directory of a home that holds the locks of workspace files and
/// directories (`lock.rs`, `LockDir`).
pub(crate) const LOCKS_DIR: &str = "locks";

/// The name prefix of a session directory that prune renamed away to delete.
pub(crate) const PRUNED_PREFIX: &str = ".pruned-";

/// The lock one prune at a time holds (`auto_prune.rs`). Never replaced.
pub(crate) const PRUNE_LOCK: &str = "prune.lock";

/// The file whose modification time says when the store last pruned by
/// itself (`auto_prune.rs`).
pub(crate) const PRUNE_STAMP: &str = "pruned-at";

/// The session's lock: shared to read the index, exclusive to change it.
/// Never replaced or deleted while the session exists.
const LOCK_FILE: &str = "lock";

/// The file in a session's directory that every handle using the directory
/// holds a shared lock on, and prune an exclusive one while it removes the
/// session: a session some live process has open is never removed. Never
/// replaced or deleted while the session exists.
const LIVE_FILE: &str = "live";

/// The index's snapshot (`index.rs` is its format).
const INDEX_FILE: &str = "index.json";

/// The changes since the snapshot, one line each (`journal/`).
const JOURNAL_FILE: &str = "journal.jsonl";

/// What a write needs of the index, a cache of it (`journal/summary.rs`).
const SUMMARY_FILE: &str = "index.summary";

/// The summary's table: each file's number of entries (`journal/table.rs`).
const SUMMARY_TABLE: &str = "index.summary.table";

/// The marker of a revert under way (`marker.rs`).
const MARKER_FILE: &str = "reverting.json";

/// The session's backups (`blobs.rs`).
const BLOBS_DIR: &str = "blobs";

/// The session's open scan brackets (`scan/record.rs`).
const SCANS_DIR: &str = "scans";

/// The directory of a home that holds the workspaces' scan baselines.
const BASELINES_DIR: &str = "baselines";

/// The directory of a home that holds the sessions' summary records.
const SUMMARY_DIR: &str = "summary";

/// How a summary record's name ends (after the session id).
const SUMMARY_SUFFIX: &str = ".jsonl";

/// How the name of a summary record being written begins: a record is
/// written by any reader under the session's shared lock, so two may write
/// one at once, each through a temporary of its own.
const SUMMARY_TEMP_PREFIX: &str = ".tmp-";

/// The names in a home's summary directory (`summary/`).
#[derive(Debug, Clone)]
pub(crate) struct SummaryPaths {
    pub(crate) dir: PathBuf,
}

impl SummaryPaths {
    /// The summary directory of the home `home`.
    pub(crate) fn new(home: &Path) -> SummaryPaths {
        SummaryPaths {
            dir: home.join(SUMMARY_DIR),
        }
    }

    /// Session `id`'s record.
    pub(crate) fn record(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}{SUMMARY_SUFFIX}"))
    }

    /// A fresh temporary for a record, named by this process and `random`.
    pub(crate) fn temp(&self, random: u64) -> PathBuf {
        let pid = std::process::id();
        self.dir
            .join(format!("{SUMMARY_TEMP_PREFIX}{pid}-{random:016x}"))
    }

    /// The session id a record's file name `name` is of, if it is one.
    pub(crate) fn id_of(name: &str) -> Option<&str> {
        name.strip_suffix(SUMMARY_SUFFIX)
            .filter(|id| crate::session_id::validate(id).is_ok())
    }

    /// The process that was writing the temporary named `name`, if it is one.
    pub(crate) fn temp_writer(name: &str) -> Option<u32> {
        let rest = name.strip_prefix(SUMMARY_TEMP_PREFIX)?;
        rest.split('-').next()?.parse().ok()
    }
}

/// The versions of a session's `index.json` and `journal.jsonl` (`None`:
/// the file is not there), as a summary record is stamped with them: the
/// same test of "unchanged" as a handle's cache of the index makes
/// (`journal/file.rs`). Every change replaces the snapshot (a new inode) or
/// appends to, cuts or empties the journal (a new length, a new time).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndexStamp {
    pub(crate) index: Option<crate::sys::FileVersion>,
    pub(crate) journal: Option<crate::sys::FileVersion>,
}

/// The names inside one workspace's baseline directory (`scan/baseline.rs`):
/// the directory, its lock, its listing and its temporary, its backups.
pub(crate) struct BaselinePaths {
    pub(crate) dir: PathBuf,
    pub(crate) lock: PathBuf,
    pub(crate) file: PathBuf,
    pub(crate) temp: PathBuf,
    pub(crate) blobs: PathBuf,
    /// The cached listing of the workspace's git index.
    pub(crate) git_index: PathBuf,
}

impl BaselinePaths {
    /// The directory of `home` that holds every workspace's baseline.
    pub(crate) fn all(home: &Path) -> PathBuf {
        home.join(BASELINES_DIR)
    }

    /// The baseline `key` of the home `home`.
    pub(crate) fn new(home: &Path, key: &str) -> BaselinePaths {
        let dir = Self::all(home).join(key);
        let file = dir.join("baseline.jsonl");
        BaselinePaths {
            lock: dir.join(LOCK_FILE),
            temp: temp_of(&file),
            blobs: dir.join(BLOBS_DIR),
            git_index: dir.join("git-index"),
            file,
            dir,
        }
    }
}

/// The temporary a store file is replaced through (`durable.rs`): a fixed
/// name, safe only under the lock that serializes the file's writers.
fn temp_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().expect("a store file").to_owned();
    name.push(".tmp");
    path.with_file_name(name)
}

/// One session's directory in a store home.
#[derive(Debug, Clone)]
pub(crate) struct SessionDir {
    id: String,
    path: PathBuf,
    files: Files,
}

impl SessionDir {
    /// Session `id`'s directory in the sessions directory `sessions`.
    pub(crate) fn new(sessions: &Path, id: &str) -> SessionDir {
        SessionDir::at(sessions.join(id), id)
    }

    /// The session `id` whose directory is `path`.
    pub(crate) fn at(path: PathBuf, id: &str) -> SessionDir {
        let index = path.join(INDEX_FILE);
        let files = Files {
            index_temp: temp_of(&index),
            index,
            journal: path.join(JOURNAL_FILE),
            summary: journal::SummaryPaths {
                head: path.join(SUMMARY_FILE),
                head_temp: temp_of(&path.join(SUMMARY_FILE)),
                table: path.join(SUMMARY_TABLE),
                table_temp: temp_of(&path.join(SUMMARY_TABLE)),
            },
        };
        SessionDir {
            id: id.to_owned(),
            path,
            files,
        }
    }

    /// The session id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// True when the directory exists (a session is made on disk with its
    /// first change).
    pub(crate) fn exists(&self) -> bool {
        self.path.is_dir()
    }

    /// The index's files: the snapshot, its temporary, the journal.
    pub(crate) fn index_files(&self) -> &Files {
        &self.files
    }

    /// The file every open handle holds a shared lock on.
    pub(crate) fn live_path(&self) -> PathBuf {
        self.path.join(LIVE_FILE)
    }

    /// The marker of a revert under way.
    pub(crate) fn marker_path(&self) -> PathBuf {
        self.path.join(MARKER_FILE)
    }

    /// The temporary the marker is written through.
    pub(crate) fn marker_temp_path(&self) -> PathBuf {
        temp_of(&self.marker_path())
    }

    /// The directory of the session's open scan brackets.
    pub(crate) fn scans_path(&self) -> PathBuf {
        self.path.join(SCANS_DIR)
    }

    /// A scan record of the session and the temporary it is written through.
    pub(crate) fn scan_paths(&self, scan: &str) -> (PathBuf, PathBuf) {
        let file = self.scans_path().join(format!("{scan}.jsonl"));
        let temp = temp_of(&file);
        (file, temp)
    }

    /// The directory of the session's backups.
    pub(crate) fn blobs_path(&self) -> PathBuf {
        self.path.join(BLOBS_DIR)
    }

    /// The session's backups.
    pub(crate) fn blobs(&self) -> Blobs {
        Blobs::new(self.blobs_path())
    }

    /// Bytes of the files in `blobs/`: what the session's backups take.
    pub(crate) fn blob_bytes(&self) -> u64 {
        std::fs::read_dir(self.blobs_path())
            .map(|r| {
                r.filter_map(|e| e.ok())
                    .filter_map(|e| e.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    fn lock_path(&self) -> PathBuf {
        self.path.join(LOCK_FILE)
    }

    /// Takes the session's lock, waiting at most `timeout`: then
    /// [`Error::SessionBusy`].
    pub(crate) fn lock(&self, mode: Mode, timeout: Duration) -> Result<LockGuard> {
        let path = self.lock_path();
        lock::acquire(&path, mode, timeout, None).map_err(|e| match e {
            LockError::TimedOut { waited, .. } => Error::SessionBusy {
                session: self.id.clone(),
                waited,
            },
            LockError::Io(e) => trust::store_io("lock", &path)(e),
        })
    }

    /// The session's lock in `mode` if it is free right now.
    pub(crate) fn try_lock(&self, mode: Mode) -> Option<LockGuard> {
        lock::try_acquire_as(&self.lock_path(), mode).ok().flatten()
    }

    /// The exclusive lock on `live` if no handle holds it now: what removing
    /// the session needs.
    pub(crate) fn try_lock_live(&self) -> Option<LockGuard> {
        lock::try_acquire(&self.live_path()).ok().flatten()
    }

    /// The session's whole index, for a caller that holds the session's lock
    /// (or, like prune deciding what to look at again, knows that a change
    /// may be under way).
    pub(crate) fn load(&self) -> Result<Index> {
        journal::load(&self.files, &self.id)
    }

    /// The session's whole index, read under its shared lock (waiting at most
    /// `timeout`): another process may be in the middle of a change, or of
    /// folding its journal into a new `index.json`, and a read between the
    /// two files could miss entries. The directory must pass the trust check.
    pub(crate) fn read_index(&self, timeout: Duration) -> Result<Index> {
        trust::check_dir(&self.path)?;
        let _guard = self.lock(Mode::Shared, timeout)?;
        self.load()
    }

    /// The session's whole index, for a hint (who changed a file) asked by a
    /// caller that may hold a session's lock: the caller's own session
    /// (`own`) is read without taking its lock again, which would wait for
    /// itself, and another's is not waited for, since its holder may be
    /// waiting for the caller's in the same way; a busy one is read without
    /// its lock. The directory must pass the trust check.
    pub(crate) fn read_index_for_hint(&self, own: bool) -> Result<Index> {
        trust::check_dir(&self.path)?;
        let _guard = match own {
            true => None,
            false => self.try_lock(Mode::Shared),
        };
        self.load()
    }

    /// The versions of the index's files now: call it under the session's
    /// lock, for a stamp that goes with what [`SessionDir::load`] reads.
    pub(crate) fn index_stamp(&self) -> Result<IndexStamp> {
        let version = |path: &Path| match std::fs::symlink_metadata(path) {
            Ok(m) => Ok(Some(crate::sys::version_of(&m))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", path)(e)),
        };
        Ok(IndexStamp {
            index: version(&self.files.index)?,
            journal: version(&self.files.journal)?,
        })
    }

    /// True when the directory passes the trust check and the index reads,
    /// looked at without the lock (prune decides again under it).
    pub(crate) fn is_readable(&self) -> bool {
        trust::check_dir(&self.path).is_ok() && self.load().is_ok()
    }
}
