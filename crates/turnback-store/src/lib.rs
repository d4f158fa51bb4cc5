//! # turnback-store
//!
//! A safety net under every file an AI coding agent edits. Before the agent's
//! write tool changes a file, the store backs the file up into a per-session store;
//! afterwards the change can be undone ([`Session::undo`]), a file reverted
//! ([`Session::revert`]) or a whole stretch of the conversation rewound
//! ([`Session::rewind`]), from the agent's own process or from any other.
//!
//! ```
//! use turnback_store::{RevertOptions, Store, Workspace};
//!
//! # fn main() -> turnback_store::Result<()> {
//! # let home = tempfile::tempdir().unwrap();
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
//! let store = Store::new(home.path());          // or Store::open_default()
//! let session = store.session("agent-42")?;      // the agent's conversation id
//! let workspace = Workspace::open(dir.path())?;  // the directory it works in
//!
//! // The agent's write tool: backed up, replaced atomically, recorded.
//! session.write(&workspace, "notes.txt", &b"hello, world\n"[..], "tool-call-1")?;
//! session.remove(&workspace, "notes.txt", "tool-call-2")?;
//!
//! // The person changes their mind: everything since tool-call-1 goes back.
//! let report = session.rewind("tool-call-1", RevertOptions::default())?;
//! assert_eq!(report.files.len(), 1);
//! assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "hello\n");
//! # Ok(())
//! # }
//! ```
//!
//! ## What a shell command changes: the scan bracket
//!
//! A command the store is not told the files of (`sed -i`, a formatter,
//! `git checkout -- file`) is bracketed instead: [`Session::begin_scan`]
//! before it, [`Session::commit_scan`] after it (or [`Session::rollback_scan`]
//! to put everything back), from the same process or another (the id is all
//! that passes between them; [`Session::open_scans`] lists those a dead
//! process left open). What changed is recorded as one step of entries, which
//! undo, revert, rewind and redo take back like any write.
//!
//! ```
//! use turnback_store::{RevertOptions, Store, Workspace};
//!
//! # fn main() -> turnback_store::Result<()> {
//! # let home = tempfile::tempdir().unwrap();
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::write(dir.path().join("a.txt"), "before\n").unwrap();
//! let session = Store::new(home.path()).session("agent-42")?;
//! let workspace = Workspace::open(dir.path())?;
//! // PreToolUse of a shell tool:
//! let id = session.begin_scan(&workspace, "tool-call-3", Some("sed -i s/before/after/ a.txt"))?;
//! std::fs::write(dir.path().join("a.txt"), "after\n").unwrap(); // the command
//! // PostToolUse (any process): what changed, recorded.
//! let report = session.commit_scan(&id)?;
//! assert_eq!(report.changes.len(), 1);
//! session.undo(RevertOptions::default())?;
//! assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "before\n");
//! # Ok(())
//! # }
//! ```
//!
//! ## Guarantees
//!
//! - **Many processes, one session.** Every change to a session's index happens
//!   under a `flock` on the session's `lock` file, on the index as on disk under
//!   that lock (a handle reads only what other processes appended since it last
//!   looked). Several agents (or an agent and a person at another shell) can
//!   share a session or a workspace at once.
//! - **Cost independent of the session's size.** A change appends one line to
//!   the session's journal instead of rewriting its `index.json`, which the
//!   journal is folded into now and then ([`Session::compact`]).
//! - **Two writers, one file.** A per-file lock, shared by all sessions, is held
//!   from checkpoint to commit, so each entry's "after" is its own writer's.
//!   Waiting for it is bounded ([`Options::file_lock_timeout`]) and ends in
//!   [`Error::FileBusy`] naming the holder.
//! - **Crash safety.** A backup is durable (fsync, rename, directory fsync) before
//!   the change touches the workspace; a journal line is synced before its change
//!   goes on, and a torn last line is ignored; the user's file is
//!   replaced by a rename of a synced temporary, so it always holds one whole
//!   version. (A file with hard links is instead copied over in place from the
//!   synced temporary, keeping its links; a crash during that copy can leave it
//!   torn, and its entry and durable backup stay for a forced undo.) A change
//!   whose process died half way is settled by the next process.
//! - **Confinement.** Workspace files are reached only through a `cap-std`
//!   capability on the workspace root. At restore time the root must be the same
//!   directory (device and inode) and no component of the path may be a symbolic
//!   link, so a directory swapped for a link cannot redirect a write or a delete.
//! - **Nothing is lost on bad input.** A corrupt index, a newer format, a missing
//!   or damaged backup, a path outside the workspace: each is an [`Error`] naming
//!   the file, the session and the cause, and nothing is overwritten or deleted.
//! - **Bounded memory.** Files are streamed (hashed while copied), never read whole.
//!
//! ## Refusals
//!
//! Before any revert the store checks that each file is still as the session left
//! it. A file that changed since (an editor, a formatter, another agent) refuses
//! the revert with [`Error::Refused`], naming the file and, where the store knows,
//! the session and message that changed it. Nothing is touched. `force` in
//! [`RevertOptions`] overrides; `dry_run` only reports ([`RevertReport`]).
//!
//! ## Security caveats
//!
//! Whoever can write in the store home can make a revert write any contents
//! into a workspace, so the store refuses a home it cannot trust
//! ([`Error::UnsafeStore`]): every store directory an operation uses must be a
//! real directory (not a symbolic link) of the effective user that no one else
//! may write, store files are opened without following symbolic links and
//! must be the user's, and a session's recorded workspace must be the user's
//! (unless running as root). A handle confined with [`Session::confine_to`]
//! also refuses to restore in a workspace unrelated to a given directory
//! ([`Error::OutsideScope`]); the command line confines every session to the
//! command's workspace. The store is private: directories 0700, files 0600,
//! and an existing store that others could read is made so when it is used
//! ([`Store::take_notices`] says which directories). Files are compared by
//! contents and permission bits: a `chmod` alone is a change, which a revert
//! takes back and which refuses a revert that would destroy it.
//!
//! The on-disk format is described in `docs/FORMAT.md`, the modules in
//! `docs/ARCHITECTURE.md`.

#![warn(missing_docs)]

mod auto_prune;
mod blame;
mod blobs;
mod caps;
mod checkpoint;
mod config_error;
mod conflict;
mod crash;
mod delta;
mod diff;
mod durable;
mod error;
mod evicted;
mod guard;
mod hash;
mod home;
mod index;
mod index_check;
mod journal;
mod layout;
mod listing;
mod lock;
mod mark;
mod marker;
mod packed;
mod recovery;
mod relpath;
mod restore;
mod retention;
mod revert;
mod scan;
mod session;
mod session_id;
mod settings;
mod steps;
mod store;
mod summary;
mod sys;
#[cfg(test)]
mod test_rng;
mod trust;
mod turns;
mod unsafe_reason;
mod workspace;

#[doc(hidden)]
pub mod fuzz_support;

pub use auto_prune::AUTO_PRUNE_INTERVAL;
pub use blame::{Blame, NoBlame, Origin};
pub use checkpoint::Checkpoint;
pub use config_error::{ConfigFileError, SettingError};
#[doc(hidden)]
pub use crash::CRASH_POINTS;
pub use diff::{DiffBody, FileDiff, MAX_DIFF_BYTES};
pub use error::{ChangedBy, Conflict, ConflictReason, Error, ErrorKind, Result, UnsafeReason};
pub use evicted::{Evicted, EvictedFile, EvictedMessage};
pub use home::{HOME_ENV, default_home};
pub use index::{
    Entry, FORMAT_VERSION, FileState, InFlight, ReadMark, RemovedDir, RevertRecord, RevertedFile,
    ScanMark, Turn, WorkspaceRoot,
};
pub use listing::{ChoiceReason, ChosenSession, SessionChoice, SessionSummary};
pub use mark::{Mark, Settled};
pub use retention::{PruneReport, PrunedSession, Retention, SpareReason, SparedSession};
pub use revert::{
    FileRevert, FileStatus, REDO_OVERWRITE_MESSAGE, RevertAction, RevertOptions, RevertReport,
};
pub use scan::{
    BaselineUsage, DEFAULT_COPY_BUDGET, DEFAULT_SIZE_LIMIT, OpenScan, PathKind, ScanChange,
    ScanChangeKind, ScanOptions, ScanReport, Unrecorded, WatchedScan,
};
pub use session::{Expected, Session, TrackedFile};
pub use session_id::{generate as generate_session_id, validate as validate_session_id};
pub use settings::{KEYS as SETTING_KEYS, Setting, Settings, Source as SettingSource, parse_size};
pub use store::{Options, Store};
pub use trust::Tightened;
pub use turns::TurnSummary;
pub use workspace::Workspace;
