//! The "being written" mark: a checkpoint and its commit made by different
//! processes (an agent's hook runs once before its tool and once after).
//!
//! A [`crate::Checkpoint`] holds the file's lock from checkpoint to commit, so
//! no other session can slip a change in between. A hook process cannot: it
//! exits right after the checkpoint, and the lock goes with it. So the
//! checkpoint leaves a mark beside the file's lock (`locks/<sha256>.mark`,
//! written under that lock): which session, which entry, and which process
//! makes the write (the agent, not the short-lived hook). Until the commit or
//! the settling of that entry removes the mark, a checkpoint of the same file
//! by *another* session waits for it (bounded, then [`Error::FileBusy`] naming
//! the writer). A mark is stale, and ignored, once its process is gone (or the
//! pid now names another process, told by its start time on Linux), or once
//! its entry is no longer open.
//!
//! What "after" sees: the file as it is when the commit runs. Another
//! session's checkpointed write cannot land in between (it waits for the
//! mark), but a write that does not go through turnback (an editor, a shell
//! command of any session, a formatter on save) can, and is then part of this
//! entry's "after"; an undo of the entry refuses nothing on its account and
//! takes it back too. A revert does not wait for a mark: the entry is not
//! committed, so reverting it needs `force`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::Entry;
use crate::relpath::RelPath;
use crate::session::{Draft, Session};
use crate::workspace::Workspace;

/// The suffix of a mark's file name, after its file's lock name.
const MARK_SUFFIX: &str = "mark";

/// How often a checkpoint waiting for another session's mark looks again.
const POLL: Duration = Duration::from_millis(20);

/// A file marked as being written: what `locks/<sha256>.mark` holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The session whose checkpoint is open.
    pub session: String,
    /// Its open entry.
    pub seq: u64,
    /// The process that makes the write (an agent's pid).
    pub pid: u32,
    /// When that process started (Linux: clock ticks since boot), to tell it
    /// from a later process given the same pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
    /// Which part of the agent makes the write (a subagent's id), for a
    /// caller that settles one part's open checkpoints and not another's
    /// still running beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// What settling an open checkpoint did ([`Session::settle_marked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// The file changed: the entry was committed, as it is now.
    Committed(Entry),
    /// The file did not change: the entry was dropped.
    Dropped(Entry),
}

impl Mark {
    /// A mark for entry `seq` of `session`, written by process `pid`.
    fn new(session: &str, seq: u64, pid: u32, context: Option<&str>) -> Mark {
        Mark {
            session: session.to_owned(),
            seq,
            pid,
            pid_start: crate::sys::process_start(pid),
            context: context.map(str::to_owned),
        }
    }

    /// True while its process runs (the same process: same start time where
    /// both are known).
    fn process_alive(&self) -> bool {
        if !crate::sys::process_exists(self.pid) {
            return false;
        }
        match (self.pid_start, crate::sys::process_start(self.pid)) {
            (Some(then), Some(now)) => then == now,
            _ => true,
        }
    }
}

impl Session {
    /// The mark of the file at the absolute real path `file`, if any (stale
    /// or not).
    pub fn mark_of(&self, file: &Path) -> Option<Mark> {
        read_mark(&self.mark_path(file))
    }

    fn mark_path(&self, file: &Path) -> PathBuf {
        mark_path(self.store(), file)
    }

    /// True when `m`, another session's mark, still holds: its process runs
    /// and its entry is still open.
    fn mark_holds(&self, m: &Mark) -> bool {
        if m.session == self.id() || !m.process_alive() {
            return false;
        }
        match self.store().open_session(&m.session) {
            Ok(s) => s.open_entry(m.seq).is_ok_and(|e| e.is_some()),
            // Its session is gone, or unreadable: nothing to wait for.
            Err(_) => false,
        }
    }

    /// Takes a checkpoint of `path` for a write that process `writer_pid`
    /// (the part of it named `context`, if any) will make, and a later
    /// process will commit ([`Session::commit_marked`]) or settle
    /// ([`Session::settle_marked`]): backs the file up (or records its
    /// absence) and marks the file as being written. Waits, bounded by
    /// the file lock timeout, for another session's mark on the file to go
    /// ([`Error::FileBusy`] naming it if it does not).
    pub fn checkpoint_marked(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        message_id: &str,
        writer_pid: u32,
        context: Option<&str>,
    ) -> Result<Entry> {
        let rel = workspace.resolve_rel(path)?;
        let file = rel.under(workspace.root());
        self.store().refuse_inside(&file)?;
        let mark_path = self.mark_path(&file);
        let start = Instant::now();
        let timeout = self.store().options().file_lock_timeout;
        loop {
            let lock = self.lock_file(workspace, &rel)?;
            match read_mark(&mark_path) {
                Some(m) if self.mark_holds(&m) => {
                    // Let go of the lock: the mark's owner needs it to commit.
                    drop(lock);
                    let waited = start.elapsed();
                    if waited >= timeout {
                        return Err(Error::FileBusy {
                            path: file,
                            holder: Some(format!(
                                "session {:?} (pid {}), between its checkpoint and its commit",
                                m.session, m.pid
                            )),
                            waited,
                        });
                    }
                    std::thread::sleep(POLL);
                    continue;
                }
                _ => {}
            }
            let entry = self.checkpoint_entry(workspace, &rel, message_id)?;
            let mark = Mark::new(self.id(), entry.seq, writer_pid, context);
            write_mark(&mark_path, &mark)
                .map_err(Error::io("write the being-written mark", &mark_path))?;
            drop(lock);
            return Ok(entry);
        }
    }

    /// [`Session::checkpoint`]'s entry, under the file lock the caller holds.
    fn checkpoint_entry(
        &self,
        workspace: &Workspace,
        rel: &RelPath,
        message_id: &str,
    ) -> Result<Entry> {
        let before = self.back_up_checked(workspace, rel)?;
        let draft = Draft {
            rel: rel.clone(),
            before,
            after: None,
            created_dirs: workspace.missing_dirs(rel),
            in_flight: None,
        };
        Ok(self.record(workspace, message_id, vec![draft])?.remove(0))
    }

    /// Commits entry `seq` taken by [`Session::checkpoint_marked`]: records
    /// the file as it is now and removes the mark.
    pub fn commit_marked(&self, seq: u64) -> Result<Entry> {
        let entry = self.entry(seq)?;
        let ws = Workspace::reopen(&entry.workspace)?;
        let rel = entry.rel_path();
        let _lock = self.lock_file(&ws, &rel)?;
        let done = self.commit_locked(&ws, &rel, seq);
        self.unmark(&rel.under(ws.root()), seq);
        done
    }

    /// Settles entry `seq`, a checkpoint whose write may or may not have
    /// happened (the tool failed, was denied or interrupted, or its "after"
    /// never came): dropped if the file is as it was at the checkpoint,
    /// committed as it is now if not. The mark goes either way.
    pub fn settle_marked(&self, seq: u64) -> Result<Settled> {
        let entry = self.entry(seq)?;
        let ws = Workspace::reopen(&entry.workspace)?;
        let rel = entry.rel_path();
        let file = rel.under(ws.root());
        let _lock = self.lock_file(&ws, &rel)?;
        let now = ws.current_state(&rel)?;
        let done = if now.same_state(&entry.before) {
            self.mutate_entry(Durability::Full, |idx| {
                self.uncommitted_in(idx, seq)?;
                idx.remove_entries(&[seq]);
                Ok(())
            })
            .map(|()| Settled::Dropped(entry))
        } else {
            self.commit_locked(&ws, &rel, seq).map(Settled::Committed)
        };
        self.unmark(&file, seq);
        done
    }

    /// Removes the mark of `file` if it is this session's for `seq` (another
    /// session may have marked the file since a stale mark of ours).
    fn unmark(&self, file: &Path, seq: u64) {
        let path = self.mark_path(file);
        if read_mark(&path).is_some_and(|m| m.session == self.id() && m.seq == seq) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The mark at `path`; `None` if there is none or it cannot be read (a torn
/// mark is no mark: the worst is a wait not made).
/// Where the being-written mark of the file at the absolute real path
/// `file` lives: beside its lock.
fn mark_path(store: &crate::Store, file: &Path) -> PathBuf {
    store
        .locks()
        .file_lock_path(file)
        .with_extension(MARK_SUFFIX)
}

/// True when entry `e` of session `session` is a checkpoint whose writer,
/// named by its mark, still runs: between an agent's PreToolUse and
/// PostToolUse, its backup must outlive any prune.
pub(crate) fn being_written(store: &crate::Store, session: &str, e: &crate::index::Entry) -> bool {
    if e.is_committed() {
        return false;
    }
    read_mark(&mark_path(store, &e.absolute_path()))
        .is_some_and(|m| m.session == session && m.seq == e.seq && m.process_alive())
}

fn read_mark(path: &Path) -> Option<Mark> {
    let mut f = crate::sys::store_file_options()
        .read(true)
        .open(path)
        .ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut f, 4096), &mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes `mark` at `path` through a temporary renamed over it, so a reader
/// sees a whole mark or the one before. Not synced: a mark lost in a crash
/// only loses a wait, and its entry stays open for the next event to settle.
fn write_mark(path: &Path, mark: &Mark) -> std::io::Result<()> {
    let temp = path.with_extension(format!("{MARK_SUFFIX}.{}.tmp", std::process::id()));
    let mut f = crate::sys::store_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)?;
    std::io::Write::write_all(
        &mut f,
        &serde_json::to_vec(mark).map_err(std::io::Error::other)?,
    )?;
    drop(f);
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Store, Workspace) {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path());
        let ws = Workspace::open(dir.path()).unwrap();
        (home, dir, store, ws)
    }

    #[test]
    fn commit_removes_the_mark_and_records_after() {
        let (_h, dir, store, ws) = setup();
        std::fs::write(dir.path().join("a"), "old").unwrap();
        let s = store.session("s").unwrap();
        let e = s
            .checkpoint_marked(&ws, "a", "m", std::process::id(), None)
            .unwrap();
        let file = ws.root().join("a");
        assert_eq!(s.mark_of(&file).unwrap().seq, e.seq);
        std::fs::write(dir.path().join("a"), "new!").unwrap();
        let other = store.open_session("s").unwrap();
        let c = other.commit_marked(e.seq).unwrap();
        assert_eq!(c.after.unwrap().size, 4);
        assert!(s.mark_of(&file).is_none());
    }

    #[test]
    fn settling_drops_an_unchanged_file_and_commits_a_changed_one() {
        let (_h, dir, store, ws) = setup();
        std::fs::write(dir.path().join("a"), "old").unwrap();
        let s = store.session("s").unwrap();
        let a = s.checkpoint_marked(&ws, "a", "m1", 1, None).unwrap();
        let b = s.checkpoint_marked(&ws, "b", "m2", 1, None).unwrap();
        std::fs::write(dir.path().join("b"), "made").unwrap();
        assert!(matches!(
            s.settle_marked(a.seq).unwrap(),
            Settled::Dropped(_)
        ));
        assert!(matches!(
            s.settle_marked(b.seq).unwrap(),
            Settled::Committed(_)
        ));
        let left: Vec<_> = s.entries().unwrap().into_iter().map(|e| e.path).collect();
        assert_eq!(left, ["b"]);
        assert!(s.mark_of(&ws.root().join("a")).is_none());
    }

    #[test]
    fn another_sessions_live_mark_is_waited_for_and_a_dead_ones_is_not() {
        let (_h, dir, store, ws) = setup();
        let store = store.with_options(crate::Options {
            file_lock_timeout: Duration::from_millis(300),
            ..Default::default()
        });
        std::fs::write(dir.path().join("a"), "old").unwrap();
        let a = store.session("a").unwrap();
        let b = store.session("b").unwrap();
        // This process is alive: b waits, then gives up naming a.
        let open = a
            .checkpoint_marked(&ws, "a", "m", std::process::id(), None)
            .unwrap();
        let e = b.checkpoint_marked(&ws, "a", "m", 1, None).unwrap_err();
        assert!(e.to_string().contains("session \"a\""), "{e}");
        // Once a commits, b goes ahead.
        a.commit_marked(open.seq).unwrap();
        let e = b.checkpoint_marked(&ws, "a", "m", 1, None).unwrap();
        // A mark whose process is gone does not hold.
        let dead = dead_pid();
        let c = store.session("c").unwrap();
        b.settle_marked(e.seq).unwrap();
        c.checkpoint_marked(&ws, "a", "m", dead, None).unwrap();
        a.checkpoint_marked(&ws, "a", "m", 1, None).unwrap();
    }

    /// A pid no process has now: a child's, reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }
}
