//! A change of the index: the tracker run on a handle's cache brought up to
//! date, and the line of what it changed appended; and a one-off read.

use crate::durable::Durability;
use crate::error::Result;
use crate::index::Index;

use super::file::{Files, Loaded};
use super::tracked::Tracked;

/// What a change needs of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// All of it: any change may be made.
    Whole,
    /// Only what the summary holds (`summary.rs`): the change adds at most
    /// `adds` entries whose backups name at most `bytes` (as the summary
    /// counts them), and otherwise only finishes or drops entries in flight
    /// or not committed, or sets read marks. It is given a partial state when
    /// the summary matches the files and the caps would evict nothing.
    Live { adds: usize, bytes: u64 },
}

impl Need {
    /// [`Need::Live`] for a change that adds no entry.
    pub(crate) const OPEN_ONLY: Need = Need::Live { adds: 0, bytes: 0 };
}

/// Reads a session's whole index (for a one-off look, not a change).
pub(crate) fn load(files: &Files, session: &str) -> Result<Index> {
    Ok(Loaded::read(files, session)?.state.into_index())
}

/// Runs `f` on the cached state brought up to date, and appends what it
/// changed. The caller holds the exclusive lock.
#[cfg(test)]
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
    let (ops, delta) = tracked.finish();
    if out.is_err() && !ops.is_empty() {
        // The closure changed memory and then failed: forget the change.
        *cache = None;
        return out;
    }
    let out = out?;
    if let Err(e) = loaded.append(files, ops, &delta, durability) {
        *cache = None;
        return Err(e);
    }
    Ok(out)
}
