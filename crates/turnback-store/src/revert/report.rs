//! What a revert reports: per file, what it restores, and whether the file
//! was still as the session left it; and the options a revert takes.

use std::path::PathBuf;

use crate::error::ConflictReason;
use crate::index::FileState;

/// How a revert may proceed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevertOptions {
    /// Restore files even when they changed since the session wrote them, or the
    /// change was never committed. What they held is backed up first.
    pub force: bool,
    /// Only plan: report what would happen, touch nothing.
    pub dry_run: bool,
}

/// What a revert did, or with `dry_run` would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertReport {
    /// The session whose entries were reverted.
    pub session: String,
    /// False for a dry run: nothing was touched.
    pub applied: bool,
    /// One item per file, newest change first.
    pub files: Vec<FileRevert>,
    /// With `force`: the files it left as they are because the session's caps
    /// evicted the changes it would need for them (absolute paths).
    pub evicted: Vec<PathBuf>,
}

/// The revert of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRevert {
    /// The workspace root.
    pub workspace: PathBuf,
    /// The file's path relative to it.
    pub path: String,
    /// The entries reverted for this file, newest first.
    pub seqs: Vec<u64>,
    /// What the file is restored to.
    pub action: RevertAction,
    /// The state the file is restored to (its contents are a backup).
    pub target: FileState,
    /// Whether the file was still as the session left it.
    pub status: FileStatus,
}

/// What a revert does to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertAction {
    /// The file is written back with these contents.
    Write {
        /// Size of the restored contents.
        size: u64,
    },
    /// The file did not exist before: it is deleted (a directory, when
    /// empty).
    Delete,
    /// A directory was there before (a scan recorded it): it is made again,
    /// with its mode.
    Directory,
    /// A directory to delete (one a scan found made) that holds something
    /// the revert does not take away (an ignored file, say): it is emptied
    /// of what the reverted changes made, and stays.
    KeepDirectory {
        /// The first thing found in it that stays, relative to the workspace.
        holding: String,
    },
}

/// A file's state now, compared with what the session left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// Still as the session left it: safe to restore.
    Safe,
    /// Already back in its "before" state (contents and mode): nothing to do.
    AlreadyReverted,
    /// Not as the session left it, for the reason given: changed since (its
    /// contents or its mode, by someone named where the store knows), or a
    /// change never committed. It stops a revert that is not forced, with
    /// the same reason in the [`crate::Conflict`] of the refusal.
    Conflict(ConflictReason),
}

impl FileStatus {
    /// True when this status stops a revert that is not forced.
    pub fn is_conflict(&self) -> bool {
        self.conflict().is_some()
    }

    /// Why this status stops a revert that is not forced, if it does.
    pub fn conflict(&self) -> Option<&ConflictReason> {
        match self {
            FileStatus::Conflict(reason) => Some(reason),
            FileStatus::Safe | FileStatus::AlreadyReverted => None,
        }
    }
}
