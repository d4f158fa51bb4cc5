//! A session's index on disk: `index.json` (a snapshot) plus `journal.jsonl`
//! (every change since, one line each), so that a change costs one appended
//! line instead of a rewrite of the whole index (see `docs/FORMAT.md`).
//!
//! This module owns reading the pair (strictly: anything but a torn last line is
//! an error that leaves both files untouched), appending to it, folding the
//! journal back into the snapshot once it has grown as large, and a per-handle
//! cache that a process keeps between lock acquisitions and brings up to date by
//! reading only the lines other processes appended since.
//!
//! Call everything here under the session's lock: shared to read, exclusive to
//! append or compact.
//!
//! One job per part: `line` is the line format, `state` the index as replayed
//! (with its lookups), `tracked` the change tracker that turns a change into
//! the ops of one line, and `file` the files themselves (reading them
//! strictly, appending, compacting, and the cache).

mod file;
mod line;
mod state;
mod tracked;

use crate::durable::Durability;
use crate::error::Result;
use crate::index::Index;

pub(crate) use file::{Files, Loaded, replay_on_empty};
pub(crate) use state::State;
pub(crate) use tracked::Tracked;

/// Reads a session's whole index (for a one-off look, not a change).
pub(crate) fn load(files: &Files, session: &str) -> Result<Index> {
    Ok(Loaded::read(files, session)?.state.into_index())
}

/// Runs `f` on the cached state brought up to date, and appends what it
/// changed. The caller holds the exclusive lock.
pub(crate) fn change<T>(
    cache: &mut Option<Loaded>,
    files: &Files,
    session: &str,
    durability: Durability,
    f: impl FnOnce(&mut Tracked) -> Result<T>,
) -> Result<T> {
    Loaded::refresh(cache, files, session)?;
    change_again(cache, files, session, durability, f)
}

/// [`change`] for a caller that has brought the cache up to date under the
/// lock it still holds (a second change in one acquisition): no second look
/// at the files.
pub(crate) fn change_again<T>(
    cache: &mut Option<Loaded>,
    files: &Files,
    session: &str,
    durability: Durability,
    f: impl FnOnce(&mut Tracked) -> Result<T>,
) -> Result<T> {
    if cache.is_none() {
        Loaded::refresh(cache, files, session)?;
    }
    let loaded = cache.as_mut().expect("refreshed");
    let mut tracked = Tracked::new(&mut loaded.state);
    let out = f(&mut tracked);
    let ops = tracked.finish();
    if out.is_err() && !ops.is_empty() {
        // The closure changed memory and then failed: forget the change.
        *cache = None;
        return out;
    }
    let out = out?;
    if let Err(e) = loaded.append(files, ops, durability) {
        *cache = None;
        return Err(e);
    }
    Ok(out)
}
