//! Checkpoints `turnback serve` holds between requests. The library's
//! [`Checkpoint`] borrows its session and workspace and holds the file's lock
//! while it lives; each one here lives on a thread of its own that owns both,
//! until the client's `commit` or `rollback` (or the end of the server, which
//! drops it: the lock is released and the entry stays uncommitted, as when a
//! process that took a checkpoint exits).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use turnback_store::{Checkpoint, Entry, Error, RevertReport, Session, Workspace};

/// What the client asks of a held checkpoint.
enum Op {
    Commit(Sender<Result<Entry, Error>>),
    Rollback(Sender<Result<(), Error>>),
    Preview(Sender<Result<RevertReport, Error>>),
}

/// One held checkpoint: the channel to its thread.
struct Holder {
    ops: Sender<Op>,
    thread: JoinHandle<()>,
}

impl Holder {
    /// Ends the thread: the checkpoint, if still held, is dropped.
    fn release(self) {
        drop(self.ops);
        let _ = self.thread.join();
    }
}

/// The checkpoints the server holds, by session id and entry number.
#[derive(Default)]
pub(crate) struct Held(Mutex<HashMap<(String, u64), Holder>>);

/// The error of a holder thread that ended without an answer (it panicked).
fn gone(session: &str, seq: u64) -> Error {
    Error::Io {
        op: "hold the checkpoint",
        path: PathBuf::from(format!("session {session:?}, entry {seq}")),
        source: std::io::Error::other("the thread holding it ended"),
    }
}

impl Held {
    /// Takes a checkpoint of `path` in `session` and holds it; returns its
    /// entry number.
    pub(crate) fn take(
        &self,
        session: Session,
        ws: Workspace,
        path: PathBuf,
        message: String,
    ) -> Result<u64, Error> {
        let id = session.id().to_owned();
        let (ready_tx, ready) = channel();
        let (ops, rx) = channel::<Op>();
        let thread = std::thread::spawn(move || {
            let cp: Checkpoint<'_> = match session.checkpoint(&ws, &path, &message) {
                Ok(cp) => cp,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(cp.seq()));
            while let Ok(op) = rx.recv() {
                match op {
                    Op::Preview(reply) => {
                        let _ = reply.send(cp.rollback_preview());
                    }
                    Op::Commit(reply) => {
                        let _ = reply.send(cp.commit());
                        return;
                    }
                    Op::Rollback(reply) => {
                        let _ = reply.send(cp.rollback());
                        return;
                    }
                }
            }
            // The server ends: `cp` is dropped, its lock released.
        });
        match ready.recv() {
            Ok(Ok(seq)) => {
                self.lock().insert((id, seq), Holder { ops, thread });
                Ok(seq)
            }
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(gone(&id, 0))
            }
        }
    }

    /// True when the server holds checkpoint `seq` of `session`.
    pub(crate) fn holds(&self, session: &str, seq: u64) -> bool {
        self.lock().contains_key(&(session.to_owned(), seq))
    }

    /// Commits a held checkpoint; `None` if the server does not hold it.
    pub(crate) fn commit(&self, session: &str, seq: u64) -> Option<Result<Entry, Error>> {
        let holder = self.lock().remove(&(session.to_owned(), seq))?;
        let (tx, rx) = channel();
        let _ = holder.ops.send(Op::Commit(tx));
        let done = rx.recv().unwrap_or_else(|_| Err(gone(session, seq)));
        holder.release();
        Some(done)
    }

    /// Rolls a held checkpoint back; `None` if the server does not hold it.
    pub(crate) fn rollback(&self, session: &str, seq: u64) -> Option<Result<(), Error>> {
        let holder = self.lock().remove(&(session.to_owned(), seq))?;
        let (tx, rx) = channel();
        let _ = holder.ops.send(Op::Rollback(tx));
        let done = rx.recv().unwrap_or_else(|_| Err(gone(session, seq)));
        holder.release();
        Some(done)
    }

    /// The preview of a held checkpoint's rollback; it stays held.
    pub(crate) fn preview(&self, session: &str, seq: u64) -> Option<Result<RevertReport, Error>> {
        let map = self.lock();
        let holder = map.get(&(session.to_owned(), seq))?;
        let (tx, rx) = channel();
        let _ = holder.ops.send(Op::Preview(tx));
        drop(map);
        Some(rx.recv().unwrap_or_else(|_| Err(gone(session, seq))))
    }

    /// Drops a held checkpoint (its lock released, its entry uncommitted),
    /// for a rollback by number that must take the lock itself.
    pub(crate) fn release(&self, session: &str, seq: u64) {
        if let Some(h) = self.lock().remove(&(session.to_owned(), seq)) {
            h.release();
        }
    }

    /// Drops every held checkpoint, at the end of the server.
    pub(crate) fn release_all(&self) {
        let all: Vec<Holder> = self.lock().drain().map(|(_, h)| h).collect();
        for h in all {
            h.release();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u64), Holder>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
