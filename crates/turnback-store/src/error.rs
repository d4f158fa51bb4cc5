//! The one error type of the store.
//!
//! Every variant names what it concerns (a file, a session, a workspace) and the
//! cause, so that a caller can print `error.to_string()` as it is. A refusal
//! ([`Error::Refused`]) is the only kind that means "nothing was touched because a
//! file changed since"; [`Error::is_refusal`] tells it apart for exit codes.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::conflict::{ChangedBy, Conflict, ConflictReason};
pub use crate::unsafe_reason::UnsafeReason;
use crate::unsafe_reason::unsafe_store;

/// The result type of every fallible operation of the store.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No store home could be found: checkpoints are off.
    #[error(
        "checkpoints are off: no place for the store (TURNBACK_HOME is unset and the user has no state, data or home directory)"
    )]
    NoHome,

    /// A session id that is not 1 to 128 of `A-Z a-z 0-9 . _ -`, or starts with `.`.
    #[error("invalid session id {id:?}: {reason}")]
    InvalidSessionId {
        /// The id as given.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The session does not exist in this home.
    #[error("session {session:?} not found in {}", home.display())]
    SessionNotFound {
        /// The session id.
        session: String,
        /// The store home that was searched.
        home: PathBuf,
    },

    /// `index.json` cannot be parsed. It is left on disk exactly as it was.
    #[error(
        "session {session:?}: index {} is corrupt ({reason}); it was left untouched and no backup was deleted",
        path.display()
    )]
    CorruptIndex {
        /// The session id.
        session: String,
        /// The index file.
        path: PathBuf,
        /// The parser's complaint.
        reason: String,
    },

    /// `index.json` was written by a newer turnback. It is left on disk as it was.
    #[error(
        "session {session:?}: index {} has format {found}, newer than the {supported} this turnback reads; it was left untouched",
        path.display()
    )]
    NewerFormat {
        /// The session id.
        session: String,
        /// The index file.
        path: PathBuf,
        /// The format version found.
        found: u64,
        /// The newest format version this build reads.
        supported: u64,
    },

    /// An I/O operation failed; `op` says which and `path` on what.
    #[error("could not {op} {}: {source}", path.display())]
    Io {
        /// What was being done, as a verb phrase ("read", "create directory").
        op: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// The path (or a symbolic link on it) leads outside the workspace.
    #[error(
        "{}: outside the workspace {}{}",
        path.display(),
        workspace.display(),
        via_link.as_ref().map(|l| format!(" (through the symbolic link {})", l.display())).unwrap_or_default()
    )]
    OutsideWorkspace {
        /// The path as given.
        path: PathBuf,
        /// The workspace root.
        workspace: PathBuf,
        /// The symbolic link that leads out, when one does.
        via_link: Option<PathBuf>,
    },

    /// There is no file to remove at that path.
    #[error("{} does not exist; there is nothing to remove", path.display())]
    FileNotFound {
        /// The path concerned.
        path: PathBuf,
    },

    /// The path names something other than a regular file.
    #[error("{}: not a regular file (it is a {kind}); turnback only backs up regular files", path.display())]
    NotRegularFile {
        /// The path concerned.
        path: PathBuf,
        /// What it is instead: "directory", "fifo", "socket", "device", "symbolic link".
        kind: &'static str,
    },

    /// A file name that is not valid UTF-8 (the index stores paths as text).
    #[error("{}: the path is not valid UTF-8; turnback cannot record it", path.display())]
    NonUtf8Path {
        /// The path concerned.
        path: PathBuf,
    },

    /// At restore time a component of the path is a symbolic link (or not a directory).
    #[error(
        "{path} in {}: {component} is {what} now; refusing to write through it",
        workspace.display()
    )]
    UnsafePath {
        /// The file's path relative to the workspace.
        path: String,
        /// The workspace root.
        workspace: PathBuf,
        /// The offending component (relative to the workspace).
        component: String,
        /// "a symbolic link" or "not a directory".
        what: &'static str,
    },

    /// The recorded workspace root is gone or is another directory now.
    #[error("workspace {} has moved or been replaced since the change was recorded ({reason})", workspace.display())]
    WorkspaceMoved {
        /// The recorded workspace root.
        workspace: PathBuf,
        /// What was found instead.
        reason: String,
    },

    /// Another checkpoint holds the file's lock and did not let go in time.
    #[error(
        "{} is busy: {} is writing it (waited {:.1}s)",
        path.display(),
        holder.as_deref().unwrap_or("another process"),
        waited.as_secs_f64()
    )]
    FileBusy {
        /// The file.
        path: PathBuf,
        /// Who holds the lock, as it wrote itself into the lock file.
        holder: Option<String>,
        /// How long this call waited.
        waited: Duration,
    },

    /// Another process holds the session's lock and did not let go in time.
    #[error("session {session:?} is busy: another process holds its lock (waited {:.1}s)", waited.as_secs_f64())]
    SessionBusy {
        /// The session id.
        session: String,
        /// How long this call waited.
        waited: Duration,
    },

    /// A revert was refused: files are no longer as this session left them.
    /// Nothing was touched.
    #[error(
        "session {session:?}: refused, nothing was touched: {}",
        Conflicts(conflicts)
    )]
    Refused {
        /// The session whose change was to be reverted.
        session: String,
        /// Each file that stopped the revert, and why.
        conflicts: Vec<Conflict>,
    },

    /// The session has no entry left to undo.
    #[error("session {session:?} has nothing to undo")]
    NothingToUndo {
        /// The session id.
        session: String,
    },

    /// No undo, revert or rewind of the session is left to redo.
    #[error("session {session:?} has nothing to redo")]
    NothingToRedo {
        /// The session id.
        session: String,
    },

    /// No turn with this number was begun in the session.
    #[error("session {session:?} has no turn {turn}")]
    TurnNotFound {
        /// The session id.
        session: String,
        /// The turn number asked for.
        turn: u32,
    },

    /// The session never changed this file (or every change was undone).
    #[error("session {session:?} has no change to {} to revert", path.display())]
    NoChangeToFile {
        /// The session id.
        session: String,
        /// The file.
        path: PathBuf,
    },

    /// No entry of the session carries this message id.
    #[error("session {session:?} has no change made by message {message_id:?}")]
    MessageNotFound {
        /// The session id.
        session: String,
        /// The message id asked for.
        message_id: String,
    },

    /// A backup that an entry names is not in the store.
    #[error(
        "session {session:?}: the backup of {path} ({hash}) is missing from the store; the file was not touched"
    )]
    BlobMissing {
        /// The session id.
        session: String,
        /// The file the backup is of.
        path: String,
        /// The backup's SHA-256.
        hash: String,
    },

    /// A backup's contents no longer match its hash. The damaged blob is moved
    /// aside (never deleted), so that the next backup of the same bytes writes
    /// it whole again.
    #[error(
        "session {session:?}: the backup of {path} is corrupt (named {hash}, contents hash to {actual}{}); the file was not touched",
        moved_to.as_ref().map(|p| format!("; kept aside as {}", p.display())).unwrap_or_default()
    )]
    BlobCorrupt {
        /// The session id.
        session: String,
        /// The file the backup is of.
        path: String,
        /// The hash the backup is named by.
        hash: String,
        /// What its contents hash to now.
        actual: String,
        /// Where the damaged blob was moved aside to, if it could be.
        moved_to: Option<Box<Path>>,
    },

    /// The session has no entry with this sequence number (it was undone,
    /// rolled back, or never existed).
    #[error(
        "session {session:?} has no entry {seq} (it was undone or rolled back, or never existed)"
    )]
    NoSuchEntry {
        /// The session id.
        session: String,
        /// The entry's sequence number.
        seq: u64,
    },

    /// The stale-read guard: the agent never read this existing file.
    #[error("session {session:?} never read {}; read it before overwriting it", path.display())]
    NotRead {
        /// The session id.
        session: String,
        /// The file.
        path: PathBuf,
    },

    /// The stale-read guard: the file changed since the agent read it.
    #[error("{} changed since session {session:?} read it; read it again before overwriting it", path.display())]
    ChangedSinceRead {
        /// The session id.
        session: String,
        /// The file.
        path: PathBuf,
    },

    /// `commit` or `rollback` of an entry that was already committed.
    #[error(
        "session {session:?}: entry {seq} is already committed; use undo or revert to take it back"
    )]
    AlreadyCommitted {
        /// The session id.
        session: String,
        /// The entry's sequence number.
        seq: u64,
    },

    /// The new contents of a write are not what the caller said to expect
    /// ([`crate::Expected`]): most likely a producer that died half way, whose
    /// end of input looked like any other. Nothing was written, and no entry or
    /// backup was made.
    #[error(
        "the new contents of {} are {actual_size} bytes with SHA-256 {actual_sha256}, not the {} expected; nothing was written",
        path.display(),
        describe_expected(*expected_size, expected_sha256.as_deref())
    )]
    ContentsMismatch {
        /// The file that was to be written.
        path: PathBuf,
        /// The size the caller expected, if it said.
        expected_size: Option<u64>,
        /// The SHA-256 (lower-case hex) the caller expected, if it said.
        expected_sha256: Option<String>,
        /// The size of what arrived.
        actual_size: u64,
        /// The SHA-256 of what arrived.
        actual_sha256: String,
    },

    /// The store home, or a directory or file in it that the operation uses,
    /// is not safe to use: someone else could have planted or changed what is
    /// there. Nothing was touched.
    #[error("{}", unsafe_store(path, reason))]
    UnsafeStore {
        /// The directory or file that is not safe (for
        /// [`UnsafeReason::ForeignWorkspace`], the workspace root).
        path: PathBuf,
        /// Why.
        reason: UnsafeReason,
    },

    /// A restore would write in a workspace unrelated to the directory the
    /// session was confined to ([`crate::Session::confine_to`]). Nothing was
    /// touched.
    #[error(
        "session {session:?}: refused, nothing was touched: its change is in {}, not in {} or a directory in or around it",
        workspace.display(),
        scope.display()
    )]
    OutsideScope {
        /// The workspace root of the change.
        workspace: PathBuf,
        /// The directory the session was confined to.
        scope: PathBuf,
        /// The session id.
        session: String,
    },

    /// An undo, revert or rewind would go back past entries the session's
    /// caps evicted: these files cannot be put back as they were at the point
    /// asked for. Nothing was touched (with `force`, the other files are
    /// restored and these listed).
    #[error(
        "session {session:?}: refused, nothing was touched: the session's caps evicted the changes it would need for {}; --force restores the other files and leaves these",
        files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    Evicted {
        /// The session id.
        session: String,
        /// The files (absolute paths) it cannot restore.
        files: Vec<PathBuf>,
    },

    /// The config file does not parse or holds a wrong key. Nothing was done.
    #[error(transparent)]
    BadConfig(crate::config_error::ConfigFileError),

    /// A setting's environment variable holds a wrong value. Nothing was done.
    #[error(transparent)]
    BadSetting(crate::config_error::SettingError),

    /// No open scan bracket of that id in the session (`Session::commit_scan`,
    /// `Session::rollback_scan`).
    #[error(
        "session {session:?} has no open scan {id:?}: it was committed or rolled back, or never begun"
    )]
    NoSuchScan {
        /// The session asked.
        session: String,
        /// The scan id asked for.
        id: String,
    },
    /// A scan could not be made or read: `git` failed or is missing in a
    /// repository, a scan record or a baseline is damaged. Nothing was changed.
    #[error("scan of {}: {reason}", path.display())]
    ScanFailed {
        /// The workspace, or the damaged file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The path is inside the store home (the store lives in the workspace):
    /// turnback does not change its own files as a workspace file, which
    /// would lose the change and damage the store. Nothing was touched.
    #[error(
        "{}: inside the store home {}; turnback does not change its own store",
        path.display(),
        home.display()
    )]
    InsideStore {
        /// The file's real path.
        path: PathBuf,
        /// The store home (its real path).
        home: PathBuf,
    },
}

/// Declares [`ErrorKind`], its [`ErrorKind::ALL`] and [`Error::kind`] from one
/// list of names, so that the three cannot disagree: a name left out of the
/// list leaves `Error::kind` without an arm for its variant (the match is
/// exhaustive inside this crate), which does not compile.
macro_rules! error_kinds {
    ($($name:ident),* $(,)?) => {
        /// Which variant of [`Error`] an error is, without its fields: one
        /// fieldless variant per variant of `Error`.
        ///
        /// Unlike `Error` this enum is exhaustive, so that a caller that maps
        /// every kind to something (the command line's table of exit codes,
        /// hints and JSON names) fails to compile when a new kind is added,
        /// instead of falling into a catch-all arm.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $(
                #[doc = concat!("[`Error::", stringify!($name), "`]")]
                $name,
            )*
        }

        impl ErrorKind {
            /// Every kind, in the order `Error` declares its variants.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$name),*];
        }

        impl Error {
            /// Which kind of error this is.
            pub fn kind(&self) -> ErrorKind {
                match self {
                    $(Error::$name { .. } => ErrorKind::$name,)*
                }
            }
        }
    };
}

error_kinds!(
    NoHome,
    InvalidSessionId,
    SessionNotFound,
    CorruptIndex,
    NewerFormat,
    Io,
    OutsideWorkspace,
    FileNotFound,
    NotRegularFile,
    NonUtf8Path,
    UnsafePath,
    WorkspaceMoved,
    FileBusy,
    SessionBusy,
    Refused,
    NothingToUndo,
    NothingToRedo,
    TurnNotFound,
    NoChangeToFile,
    MessageNotFound,
    BlobMissing,
    BlobCorrupt,
    NoSuchEntry,
    NotRead,
    ChangedSinceRead,
    AlreadyCommitted,
    ContentsMismatch,
    UnsafeStore,
    OutsideScope,
    Evicted,
    BadConfig,
    BadSetting,
    NoSuchScan,
    ScanFailed,
    InsideStore,
);

/// "12 bytes with SHA-256 ab…", or the half of it that was expected.
fn describe_expected(size: Option<u64>, sha256: Option<&str>) -> String {
    match (size, sha256) {
        (Some(n), Some(h)) => format!("{n} bytes with SHA-256 {h}"),
        (Some(n), None) => format!("{n} bytes"),
        (None, Some(h)) => format!("contents with SHA-256 {h}"),
        (None, None) => "contents".into(),
    }
}

impl Error {
    /// True when the operation was refused because a file changed since the
    /// session wrote it (or was never committed) and nothing was touched.
    pub fn is_refusal(&self) -> bool {
        matches!(self, Error::Refused { .. })
    }

    /// True for an I/O error the system gave because this user may not
    /// read (or open) the file: one such file is reported, not fatal.
    pub(crate) fn is_permission_denied(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::PermissionDenied)
    }

    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }
}

struct Conflicts<'a>(&'a [Conflict]);

impl fmt::Display for Conflicts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_the_kind_of_its_own_variant_and_all_lists_each_kind_once() {
        let errors = [
            Error::NoHome,
            Error::Io {
                op: "read",
                path: "x".into(),
                source: io::Error::other("boom"),
            },
            Error::Refused {
                session: "s".into(),
                conflicts: Vec::new(),
            },
            Error::InsideStore {
                path: "a".into(),
                home: "b".into(),
            },
        ];
        for e in &errors {
            let kind = format!("{:?}", e.kind());
            assert!(format!("{e:?}").starts_with(&kind), "{e:?} is not {kind}");
            assert!(ErrorKind::ALL.contains(&e.kind()));
        }
        let mut seen = std::collections::HashSet::new();
        assert!(ErrorKind::ALL.iter().all(|k| seen.insert(*k)));
        assert_eq!(ErrorKind::ALL.first(), Some(&ErrorKind::NoHome));
        assert_eq!(ErrorKind::ALL.last(), Some(&ErrorKind::InsideStore));
    }
}
