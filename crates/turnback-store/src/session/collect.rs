//! Deleting at once, under the session's exclusive lock, the backups a change
//! left no entry naming, so that a session's blobs stay within its byte cap
//! on disk with no prune: after a change that evicted, one that found a dead
//! writer's entry (settled), or one that added entries while a dead writer's
//! temporary (or a blob a killed collection left aside) lies in `blobs/`.
//! Why no writer about to name a backup loses it: `blobs/gc.rs`.

use crate::blobs::Blobs;
use crate::durable::Durability;
use crate::journal::{Files, Loaded};
use crate::layout::SessionDir;

/// What a change did that may have left backups no entry names.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Unnamed {
    /// The caps evicted entries or revert records.
    pub(super) evicted: bool,
    /// Settling found a dead writer's entry in flight.
    pub(super) settled: bool,
    /// The change added entries.
    pub(super) added: bool,
}

/// Called under the exclusive lock of session `dir` (whose blobs are
/// `blobs`), after the change `what` describes, made with `durability`, with
/// `cache` the index as it left it. Best effort: the change is made whatever
/// happens here, and what is left is collected by the next one, or by prune.
pub(super) fn after_change(
    dir: &SessionDir,
    blobs: &Blobs,
    cache: &mut Option<Loaded>,
    files: &Files,
    durability: Durability,
    what: Unnamed,
) {
    // The deletion rests on the change that un-named them being on disk; a
    // revert's marker names backups the index does not.
    if !matches!(durability, Durability::Full) || crate::marker::exists(dir) {
        return;
    }
    let due = what.evicted || what.settled || (what.added && blobs.dead_leftovers());
    if !due {
        return;
    }
    if cache.as_ref().is_none_or(|l| l.state.is_partial())
        && Loaded::refresh(cache, files, dir.id()).is_err()
    {
        return;
    }
    let Some(loaded) = cache.as_ref() else {
        return;
    };
    let referenced = crate::caps::referenced(&loaded.state);
    let older_than = std::time::SystemTime::now() - crate::caps::BLOB_GRACE;
    blobs.collect_unnamed(&referenced, older_than);
}
