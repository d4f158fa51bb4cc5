//! Undo, revert, rewind, redo and rollback: plan, check, back up, then restore.
//!
//! Every revert is planned in full before anything is touched: the entries are
//! grouped by file, each file's state now (contents and mode) is compared with
//! what the session left (the newest entry's "after"), and a single file that
//! changed since (or was never committed) refuses the whole revert unless
//! `force` is given. Then what each file to touch holds is backed up (for redo,
//! and for recovery), the revert is written down (`marker.rs`), and only then
//! are files restored, newest first, each through the workspace capability:
//! from a backup verified against its hash into a temporary that replaces the
//! file in one rename, or by deleting a file the session created. The index
//! records the revert last, and the marker goes after it.
//!
//! A revert is all or nothing across its files: one whose process dies part
//! way is undone by the next holder of the session's lock (`marker.rs`), so the
//! index always says what the files hold, and a revert run again afterwards
//! starts from the beginning.
//!
//! One job per part: `report` is what a revert reports, `plan` the plan per
//! file and its safety check, `backups` checking the backups a revert needs
//! and keeping what a file holds, `apply` restoring the files (chunks,
//! prepare, replace), `record` recording a revert for redo, `run` the retry
//! loop and the core every revert shares, `select` which entries undo,
//! revert and rewind take, and `rollback` and `redo` those two.

mod apply;
mod backups;
mod plan;
mod record;
mod redo;
mod report;
mod rollback;
mod run;
mod select;

pub(crate) use plan::left_in;
pub use redo::REDO_OVERWRITE_MESSAGE;
pub use report::{FileRevert, FileStatus, RevertAction, RevertOptions, RevertReport};
pub(crate) use rollback::rollback;
pub(crate) use run::{Kind, revert_entries};
pub(crate) use select::{past_gap, with_gap};
