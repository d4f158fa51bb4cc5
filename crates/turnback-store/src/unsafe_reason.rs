//! Why a part of the store (or a workspace a session names) is not safe to
//! use: the reason of [`crate::Error::UnsafeStore`], and its message.

use std::fmt;

/// Why a part of the store is not safe to use ([`Error::UnsafeStore`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnsafeReason {
    /// It is a symbolic link (a store directory or file never is).
    SymbolicLink,
    /// It belongs to another user.
    OwnedBy {
        /// Its owner.
        uid: u32,
        /// This process's effective uid.
        euid: u32,
    },
    /// Its group or others may write in it.
    WritableByOthers {
        /// Its permission bits.
        mode: u32,
    },
    /// A session names it as its workspace, but it belongs to another user.
    ForeignWorkspace {
        /// The workspace root's owner.
        uid: u32,
        /// This process's effective uid.
        euid: u32,
    },
}

impl fmt::Display for UnsafeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsafeReason::SymbolicLink => f.write_str("it is a symbolic link"),
            UnsafeReason::OwnedBy { uid, euid } => {
                write!(f, "it is owned by uid {uid}, not by you (uid {euid})")
            }
            UnsafeReason::WritableByOthers { mode } => {
                write!(f, "it is writable by its group or others (mode {mode:o})")
            }
            UnsafeReason::ForeignWorkspace { uid, euid } => {
                write!(f, "it is owned by uid {uid}, not by you (uid {euid})")
            }
        }
    }
}

/// The message of [`crate::Error::UnsafeStore`].
pub(crate) fn unsafe_store(path: &std::path::Path, reason: &UnsafeReason) -> String {
    match reason {
        UnsafeReason::ForeignWorkspace { .. } => format!(
            "a session in the store names {} as its workspace, which is not safe to use: {reason}; nothing was touched",
            path.display()
        ),
        _ => format!(
            "the store at {} is not safe to use: {reason}; nothing was touched",
            path.display()
        ),
    }
}
