//! File locks (`flock` through `fs4`) with a bounded wait.
//!
//! A lock is held on a file that is never replaced or deleted (a session's `lock`,
//! or `<home>/locks/<hash>`): a lock on a file that is later renamed over
//! protects nothing. Each acquisition opens the file anew, so two threads of one
//! process exclude each other just as two processes do (a `flock` belongs to an
//! open file description). The kernel drops a lock when its holder dies, so
//! there are no stale locks to break.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::TryLockError;
use sha2::{Digest, Sha256};

use crate::hash::to_hex;

/// The store's `locks/` directory, which holds the lock of every workspace
/// file and directory any session changes: one lock per real file, shared by
/// all sessions, named by the file's absolute real path.
#[derive(Debug, Clone)]
pub(crate) struct LockDir(PathBuf);

impl LockDir {
    /// The lock directory at `path` (`<home>/locks`).
    pub(crate) fn new(path: PathBuf) -> LockDir {
        LockDir(path)
    }

    /// The directory itself.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The lock that serializes checkpoints of one real file across sessions,
    /// named by the file's absolute real path, so that one file reached from two
    /// nested workspaces has one lock.
    pub(crate) fn file_lock_path(&self, file: &Path) -> PathBuf {
        let mut h = Sha256::new();
        h.update(file.as_os_str().as_encoded_bytes());
        self.0.join(to_hex(&h.finalize()))
    }

    /// The lock of a workspace directory, named by its absolute real path
    /// (with a `/` after it, so never a file's lock). Every writer that makes
    /// new contents in the directory holds it shared, from before it walks
    /// there until its file is in place; a revert removes an empty directory
    /// only holding it exclusively (tried, never waited for). An unnamed
    /// temporary does not make a directory non-empty, so without this a
    /// revert could remove the directory a writer is about to name its file
    /// in.
    pub(crate) fn dir_lock_path(&self, dir: &Path) -> PathBuf {
        let mut h = Sha256::new();
        h.update(dir.as_os_str().as_encoded_bytes());
        h.update(b"/");
        self.0.join(to_hex(&h.finalize()))
    }

    /// The gate of every file lock: whoever takes a file's lock holds it
    /// shared; whoever must hold more than [`MOST_FILE_LOCKS`] files at
    /// once (a shell command that changed thousands) holds it exclusively
    /// instead of each file's lock, so the descriptors a caller holds never
    /// grow with its files (a macOS shell allows 256).
    pub(crate) fn gate_path(&self) -> PathBuf {
        self.0.join("gate")
    }

    /// `files` in the order of their lock names: taken in that order, no
    /// two callers can deadlock.
    pub(crate) fn sorted<'a>(&self, files: &'a BTreeSet<PathBuf>) -> Vec<(PathBuf, &'a Path)> {
        let mut by_lock: Vec<_> = files
            .iter()
            .map(|file| (self.file_lock_path(file), file.as_path()))
            .collect();
        by_lock.sort();
        by_lock
    }
}

/// The most file locks one caller holds at once: past it, it holds the gate
/// ([`LockDir::gate_path`]) exclusively instead. Each held lock is an open
/// descriptor, and a macOS shell's limit is 256.
pub(crate) const MOST_FILE_LOCKS: usize = 32;

/// A held lock; dropping it releases the lock (and then the gate it was
/// taken under, once no other lock shares it).
#[derive(Debug)]
pub(crate) struct LockGuard {
    file: File,
    gate: Option<std::sync::Arc<LockGuard>>,
}

/// How a lock request ended when it did not get the lock.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Someone else held it for the whole wait. `holder` is what they wrote into the
    /// lock file, when anything.
    TimedOut {
        waited: Duration,
        holder: Option<String>,
    },
    Io(io::Error),
}

impl From<io::Error> for LockError {
    fn from(e: io::Error) -> Self {
        LockError::Io(e)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Shared,
    Exclusive,
}

/// Opens (or creates, private) the lock file at `path`, never through a
/// symbolic link: a link planted there would have the holder note written
/// into its target (`trust.rs`).
fn open(path: &Path) -> io::Result<File> {
    let mut opts = crate::sys::store_file_options();
    opts.read(true).write(true).create(true).truncate(false);
    crate::trust::open(&opts, path)
}

fn try_take(file: &File, mode: Mode) -> io::Result<bool> {
    let r = match mode {
        Mode::Shared => fs4::FileExt::try_lock_shared(file),
        Mode::Exclusive => fs4::FileExt::try_lock(file),
    };
    match r {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// Takes the lock at `path`, waiting at most `timeout`. For an exclusive lock,
/// `holder` is written into the file so that a waiter that gives up can say who
/// held it.
pub(crate) fn acquire(
    path: &Path,
    mode: Mode,
    timeout: Duration,
    holder: Option<&str>,
) -> Result<LockGuard, LockError> {
    let file = open(path)?;
    let file = if try_take(&file, mode)? {
        file
    } else {
        wait_for(file, mode, timeout).map_err(|e| match e {
            LockError::TimedOut { waited, .. } => LockError::TimedOut {
                waited,
                holder: read_holder(path),
            },
            other => other,
        })?
    };
    if let (Mode::Exclusive, Some(holder)) = (mode, holder) {
        // Best effort: the note only improves a "busy" message.
        let _ = crate::sys::write_at(&file, &holder_note(holder), 0);
    }
    Ok(LockGuard { file, gate: None })
}

/// How many bytes a holder note takes in a lock file, always.
const HOLDER_WIDTH: usize = 256;

/// `holder`, cut or padded with spaces to [`HOLDER_WIDTH`]: written over the
/// last note in place, it replaces all of it without ever truncating the file.
/// (On ext4, truncating a file that has data and writing it again makes the
/// kernel flush it at close: milliseconds for every lock taken.)
fn holder_note(holder: &str) -> Vec<u8> {
    let mut end = holder.len().min(HOLDER_WIDTH);
    while !holder.is_char_boundary(end) {
        end -= 1;
    }
    let mut note = holder.as_bytes()[..end].to_vec();
    note.resize(HOLDER_WIDTH, b' ');
    note
}

/// Waits for a contended lock with a blocking `flock` on a helper thread, so the
/// waiter wakes the moment the lock is released (polling would add latency and
/// starve waiters under contention). If the wait times out the thread is left
/// blocked; when it does get the lock, it finds no one waiting and drops it.
fn wait_for(file: File, mode: Mode, timeout: Duration) -> Result<File, LockError> {
    let start = Instant::now();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("turnback-lock-wait".into())
        .spawn(move || {
            let r = match mode {
                Mode::Shared => fs4::FileExt::lock_shared(&file),
                Mode::Exclusive => fs4::FileExt::lock(&file),
            };
            // If the waiter gave up, the send fails and `file` is dropped here,
            // which releases the lock at once.
            let _ = tx.send(r.map(|()| file));
        })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(file)) => Ok(file),
        Ok(Err(e)) => Err(LockError::Io(e)),
        Err(_) => Err(LockError::TimedOut {
            waited: start.elapsed(),
            holder: None,
        }),
    }
}

/// Takes the exclusive lock at `path` only if it is free right now.
pub(crate) fn try_acquire(path: &Path) -> io::Result<Option<LockGuard>> {
    try_acquire_as(path, Mode::Exclusive)
}

/// Takes the lock at `path` in `mode` only if that is possible right now.
pub(crate) fn try_acquire_as(path: &Path, mode: Mode) -> io::Result<Option<LockGuard>> {
    let file = open(path)?;
    Ok(try_take(&file, mode)?.then_some(LockGuard { file, gate: None }))
}

impl LockGuard {
    /// This lock, held under `gate` (shared between the locks of one
    /// caller): the gate is released only after the last of them.
    pub(crate) fn under(mut self, gate: std::sync::Arc<LockGuard>) -> LockGuard {
        self.gate = Some(gate);
        self
    }

    /// True when the locked file is still the one at `path`: a lock taken on a
    /// file that was renamed away meanwhile (with its directory) protects
    /// nothing at `path`.
    pub(crate) fn is_at(&self, path: &Path) -> bool {
        crate::sys::is_at(&self.file, path)
    }
}

fn read_holder(path: &Path) -> Option<String> {
    let mut s = String::new();
    crate::trust::open_read(path)
        .ok()?
        .take(512)
        .read_to_string(&mut s)
        .ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock anyway; unlocking first makes
        // the release independent of any descriptor a child might share.
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_excludes_within_one_process_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let held = acquire(
            &path,
            Mode::Exclusive,
            Duration::ZERO,
            Some("session a (pid 1)"),
        )
        .unwrap();
        match acquire(&path, Mode::Exclusive, Duration::from_millis(30), None) {
            Err(LockError::TimedOut { waited, holder }) => {
                assert!(waited >= Duration::from_millis(30));
                assert_eq!(holder.as_deref(), Some("session a (pid 1)"));
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert!(try_acquire(&path).unwrap().is_none());
        drop(held);
        // The waiter that gave up left its helper thread blocked in `flock`:
        // it takes the lock the moment it is released, finds no one waiting
        // and drops it at once. So the lock is free again within moments (not
        // necessarily at once: asserting that raced with the helper).
        let free_by = Instant::now() + Duration::from_secs(5);
        while try_acquire(&path).unwrap().is_none() {
            assert!(Instant::now() < free_by, "the lock stayed taken");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_shorter_note_replaces_a_longer_one_without_truncating() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let long = format!("session {} (pid 123456)", "x".repeat(400));
        drop(acquire(&path, Mode::Exclusive, Duration::ZERO, Some(&long)).unwrap());
        let cut = read_holder(&path).unwrap();
        assert!(long.starts_with(&cut) && cut.len() <= HOLDER_WIDTH, "{cut}");
        drop(
            acquire(
                &path,
                Mode::Exclusive,
                Duration::ZERO,
                Some("session b (pid 2)"),
            )
            .unwrap(),
        );
        assert_eq!(read_holder(&path).as_deref(), Some("session b (pid 2)"));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), HOLDER_WIDTH as u64);
    }

    #[test]
    fn shared_locks_coexist_and_keep_out_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let a = acquire(&path, Mode::Shared, Duration::ZERO, None).unwrap();
        let _b = acquire(&path, Mode::Shared, Duration::ZERO, None).unwrap();
        assert!(try_acquire(&path).unwrap().is_none());
        drop(a);
    }

    /// A waiter gets the lock once it is released (not before), and then
    /// holds it as the first did: a second holder, trying or waiting,
    /// exclusive or shared, is kept out and told who has it.
    #[test]
    fn a_waiter_gets_the_lock_when_it_is_released() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let held = acquire(&path, Mode::Exclusive, Duration::ZERO, None).unwrap();
        let released = Arc::new(AtomicBool::new(false));
        let (p2, r2) = (path.clone(), Arc::clone(&released));
        let t = std::thread::spawn(move || {
            let got = acquire(
                &p2,
                Mode::Exclusive,
                Duration::from_secs(10),
                Some("waiter"),
            )
            .expect("the waiter gets the lock");
            assert!(r2.load(Ordering::SeqCst), "got the lock while it was held");
            assert!(
                try_acquire(&p2).unwrap().is_none(),
                "a second holder got in"
            );
            for (mode, what) in [(Mode::Exclusive, "exclusive"), (Mode::Shared, "shared")] {
                match acquire(&p2, mode, Duration::from_millis(30), None) {
                    Err(LockError::TimedOut { holder, .. }) => {
                        assert_eq!(holder.as_deref(), Some("waiter"));
                    }
                    other => panic!("a second holder ({what}) got {other:?}"),
                }
            }
            drop(got);
        });
        std::thread::sleep(Duration::from_millis(20));
        released.store(true, Ordering::SeqCst);
        drop(held);
        t.join().unwrap();
    }
}
