//! What stops a revert: each file that did ([`Conflict`]), why
//! ([`ConflictReason`], also a file's status in a revert report), and who made
//! the change that did ([`ChangedBy`]). Plain data; `error.rs` says it in an
//! error's message.

use std::fmt;
use std::path::PathBuf;

/// One file that stopped a revert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The workspace root the file is in.
    pub workspace: PathBuf,
    /// The file's path relative to the workspace.
    pub path: String,
    /// The sequence number of the entry that was to be reverted.
    pub seq: u64,
    /// Why it stopped the revert.
    pub reason: ConflictReason,
}

/// Why a file stops a revert: in a refusal's [`Conflict`], and as the file's
/// [`crate::FileStatus::Conflict`] in a report (one concept, one type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictReason {
    /// The file is no longer as the entry's "after" says.
    ChangedSince {
        /// Who changed it, where the store knows.
        by: Option<ChangedBy>,
    },
    /// The entry was never committed: what the write left is unknown.
    NeverCommitted,
    /// A scan found the change while another session's scan was open on the
    /// same workspace: the change may be that session's work.
    Shared {
        /// The other sessions.
        with: Vec<String>,
    },
    /// A file goes back where a directory is now, and the directory holds
    /// something the reverted changes did not make: putting the file back
    /// would delete it, so the revert refuses even when forced.
    NotEmpty {
        /// What is in the way, relative to the workspace.
        found: String,
    },
}

/// A session and message that changed a file, as recorded in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedBy {
    /// The session that made the change.
    pub session: String,
    /// The message id recorded with the change.
    pub message_id: String,
    /// The entry's sequence number in that session.
    pub seq: u64,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            ConflictReason::ChangedSince { by: Some(by) } => write!(
                f,
                "{} changed since (by session {:?}, message {:?})",
                self.path, by.session, by.message_id
            ),
            ConflictReason::ChangedSince { by: None } => write!(f, "{} changed since", self.path),
            ConflictReason::NeverCommitted => {
                write!(f, "{} has a change that was never committed", self.path)
            }
            ConflictReason::Shared { with } => write!(
                f,
                "{} was changed while session(s) {} also watched it: the change may be theirs",
                self.path,
                with.join(", ")
            ),
            ConflictReason::NotEmpty { found } => write!(
                f,
                "{} is a directory now and holds {found}, which the changes reverted did not make",
                self.path
            ),
        }
    }
}
