//! A session: one agent conversation's entries, and every operation that adds
//! to them (checkpoint, write-through, remove-through).
//!
//! Every change to the index happens under the session's exclusive lock, on the
//! index as on disk under that lock: another process may have changed it, so the
//! handle's cached copy is brought up to date (`journal/`) at every
//! acquisition, never trusted across them. A handle opens the lock file anew
//! for every operation, so it is `Send + Sync` and threads exclude each other
//! exactly as processes do. The one file it keeps open is `live`, locked
//! shared while the handle lives, which keeps prune away (`retention.rs`).
//!
//! One job per part: `handle` is the handle and its cache of the index (and
//! the read-modify-write every change goes through), `write` the write-through
//! protocol that write, remove and rename share, `remove` and `rename` those
//! two changes, and `locks` the locks a session's operations take and what
//! their failures mean.

mod handle;
mod locks;
mod remove;
mod rename;
mod write;

pub use handle::{Session, TrackedFile};
pub(crate) use write::Draft;
pub use write::Expected;
