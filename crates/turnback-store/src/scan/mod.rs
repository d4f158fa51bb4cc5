//! The scan bracket: what a command changes, found by comparing the workspace
//! before and after it, recorded as entries that undo, revert, rewind and
//! redo take back like any write (`Session::begin_scan`, `commit_scan`,
//! `rollback_scan`). It may begin in one process and end in another.
//!
//! One job per part: `walk` which files are in scope and their stat, `git`
//! what git's index already holds (clean files need no copy), `git_index`
//! its entries held compactly, `git_cache` what it said last while the
//! index is unchanged, `baseline` the
//! workspace's own backups shared by its sessions, `record` the bracket's
//! durable record, `begin` taking it, `changes` comparing the workspace with
//! it (`dirs` its directories, `links` the symbolic links it does not
//! record), `end` committing or rolling back,
//! `unscoped` what an ignore file's change brought into scope, `unnamed`
//! the files whose name is not UTF-8, `refuse` what a
//! rollback checks before it touches anything, `report`
//! what a scan reports, and `watch` where a bracket watched while its
//! command ran looks again.

mod baseline;
mod begin;
mod bytes;
mod changes;
mod dirs;
mod end;
mod git;
mod git_cache;
mod git_index;
mod links;
#[cfg(test)]
mod nested_tests;
mod record;
#[cfg(test)]
mod record_tests;
mod refuse;
mod report;
#[cfg(test)]
mod tests;
mod unnamed;
mod unscoped;
mod walk;
mod watch;
#[cfg(all(test, target_os = "linux"))]
mod watch_tests;

pub use baseline::BaselineUsage;
pub(crate) use baseline::{prune as prune_baselines, workspaces_of};

/// True when a bracket of the session at `dir` is open and its process
/// still runs (or, for a record that names none, it began within a day).
pub(crate) fn open_in_use(dir: &crate::layout::SessionDir) -> bool {
    record::list(dir).iter().any(|id| {
        record::load(dir, id, false)
            .ok()
            .flatten()
            .is_some_and(|r| r.header.in_use())
    })
}
pub use begin::{DEFAULT_COPY_BUDGET, DEFAULT_SIZE_LIMIT, OpenScan, ScanOptions, WatchedScan};
pub use report::{PathKind, ScanChange, ScanChangeKind, ScanReport, Unrecorded};
