//! The workspace capability: the only code that reads or changes a user's files.
//!
//! Everything goes through a `cap_std::fs::Dir` opened on the workspace root and
//! reaches a file by a relative path from it. It never uses an ambient path into
//! the workspace except to open the root itself (whose identity, device and inode,
//! is then checked against the recorded one).
//!
//! Two walks, for two moments:
//! - at checkpoint time a path is *resolved*: symbolic links that stay inside the
//!   workspace are followed (the entry records the real file), links that lead out
//!   are refused;
//! - at write and restore time a path is *walked without following*: any component
//!   that is a symbolic link now is refused, so a directory swapped for a link since
//!   the checkpoint cannot redirect a write or a delete, even inside the workspace.
//!
//! One job per part: `root` is the capability itself (opening the root,
//! resolving and walking paths, opening a file), `paths` which files a path
//! the caller gives may name, `parent` a file's directory
//! reached without following links (and deleting there), `contents` new
//! contents written beside a file and moved over it.

mod contents;
mod parent;
mod paths;
mod root;

pub(crate) use contents::NewContents;
pub(crate) use parent::Parent;
pub(crate) use paths::candidate_files;
pub(crate) use root::OpenFile;
pub use root::Workspace;
