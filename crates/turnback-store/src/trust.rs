//! The store's trust boundary: what the store checks before it believes what
//! is in its home.
//!
//! Whoever can write in the store can make a revert write any contents into a
//! workspace, aim it at another directory, or (with a symbolic link where a
//! store file should be) make the store write through the link. So every
//! directory an operation uses (the home, `sessions/`, a session's directory
//! and its `blobs/`, `locks/`) must be a real directory, owned by this
//! process's effective user and writable by nobody else; every store file is
//! opened without following a symbolic link and refused when another user
//! owns it. A check costs one `lstat` per directory, made
//! when a session is opened or created and (once per store handle) before the
//! per-file locks are used; a file's check is an `fstat` of what was opened.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, UnsafeReason};
use crate::sys;

/// A store file that another user owns, as the `io::Error` that
/// [`open`] returns for it ([`store_io`] turns it into
/// [`Error::UnsafeStore`]).
#[derive(Debug)]
struct ForeignFile {
    uid: u32,
    euid: u32,
}

impl std::fmt::Display for ForeignFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "owned by uid {}, not by uid {}", self.uid, self.euid)
    }
}

impl std::error::Error for ForeignFile {}

/// Opens the store file at `path` with `opts` (from
/// [`sys::store_file_options`]: no symbolic link is followed) and refuses it
/// when another user owns it.
pub(crate) fn open(opts: &std::fs::OpenOptions, path: &Path) -> io::Result<File> {
    let file = opts.open(path)?;
    let (uid, _) = sys::owner_and_mode(&file.metadata()?);
    let euid = sys::euid();
    if uid != euid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            ForeignFile { uid, euid },
        ));
    }
    Ok(file)
}

/// Opens the existing store file at `path` to read it.
pub(crate) fn open_read(path: &Path) -> io::Result<File> {
    open(sys::store_file_options().read(true), path)
}

/// [`Error::io`] for an operation on a store file: a symbolic link that
/// `O_NOFOLLOW` refused, or a file [`open`] refused for its owner, is
/// [`Error::UnsafeStore`] instead.
pub(crate) fn store_io(
    op: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> Error {
    let path = path.into();
    move |e| {
        if sys::is_symlink_refusal(&e) {
            return Error::UnsafeStore {
                path,
                reason: UnsafeReason::SymbolicLink,
            };
        }
        if let Some(f) = e.get_ref().and_then(|r| r.downcast_ref::<ForeignFile>()) {
            return Error::UnsafeStore {
                path,
                reason: UnsafeReason::OwnedBy {
                    uid: f.uid,
                    euid: f.euid,
                },
            };
        }
        Error::io(op, path)(e)
    }
}

/// Checks the store directory at `path`, if there is one: it must not be a
/// symbolic link, must be this user's and writable by no one else. Anything
/// else that is not a directory is left to the operation, whose I/O error
/// names it.
pub(crate) fn check_dir(path: &Path) -> Result<()> {
    let md = match std::fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("inspect", path)(e)),
    };
    let refuse = |reason| {
        Err(Error::UnsafeStore {
            path: path.to_owned(),
            reason,
        })
    };
    if md.file_type().is_symlink() {
        return refuse(UnsafeReason::SymbolicLink);
    }
    if !md.is_dir() {
        return Ok(());
    }
    let (uid, mode) = sys::owner_and_mode(&md);
    let euid = sys::euid();
    if uid != euid {
        return refuse(UnsafeReason::OwnedBy { uid, euid });
    }
    if mode & 0o022 != 0 {
        return refuse(UnsafeReason::WritableByOthers { mode });
    }
    Ok(())
}

/// Checks the store home itself. Its ancestors may be symbolic links (a
/// home under `/tmp` where `/tmp` is one); the home may not.
pub(crate) fn check_home(home: &Path) -> Result<()> {
    check_dir(&real_path(home))
}

/// `path` with every symbolic link above its last component resolved, as far
/// as it exists (the rest is appended as given). The last component is not
/// followed: it is what a caller then looks at with `lstat`.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            match std::fs::canonicalize(parent) {
                Ok(real) => real.join(name),
                Err(_) => real_path(parent).join(name),
            }
        }
        _ => std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()),
    }
}

/// Checks a recorded workspace root before anything is restored in it: it
/// must be this user's, unless this process runs as root (which may restore
/// in any user's directory it was asked to).
pub(crate) fn check_workspace_owner(root: &Path, uid: u32) -> Result<()> {
    let euid = sys::euid();
    if euid == 0 || uid == euid {
        return Ok(());
    }
    Err(Error::UnsafeStore {
        path: root.to_owned(),
        reason: UnsafeReason::ForeignWorkspace { uid, euid },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_directory_others_may_write_or_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        check_dir(&d).unwrap();
        check_dir(&dir.path().join("missing")).unwrap();
        for mode in [0o720, 0o702, 0o777] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
            let Err(Error::UnsafeStore { path, reason }) = check_dir(&d) else {
                panic!("mode {mode:o} accepted");
            };
            assert_eq!(path, d);
            assert_eq!(reason, UnsafeReason::WritableByOthers { mode });
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(matches!(
            check_dir(&link),
            Err(Error::UnsafeStore {
                reason: UnsafeReason::SymbolicLink,
                ..
            })
        ));
        // Reached through a link above it, the home is fine; the home being
        // the link is not.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir(d.join("home")).unwrap();
        std::fs::set_permissions(d.join("home"), std::fs::Permissions::from_mode(0o700)).unwrap();
        check_home(&link.join("home")).unwrap();
        assert!(check_home(&link).is_err());
    }

    #[test]
    fn a_store_file_is_opened_without_following_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut opts = sys::store_file_options();
        opts.read(true).write(true).create(true).truncate(false);
        let e = open(&opts, &link).unwrap_err();
        assert!(matches!(
            store_io("open", &link)(e),
            Error::UnsafeStore {
                reason: UnsafeReason::SymbolicLink,
                ..
            }
        ));
    }

    #[test]
    fn a_workspace_of_another_user_is_refused_unless_running_as_root() {
        let euid = sys::euid();
        check_workspace_owner(Path::new("/w"), euid).unwrap();
        let other = euid.wrapping_add(1234);
        let r = check_workspace_owner(Path::new("/w"), other);
        if euid == 0 {
            r.unwrap();
            eprintln!("running as root: a workspace of another user is allowed by design");
        } else {
            assert!(matches!(
                r,
                Err(Error::UnsafeStore {
                    reason: UnsafeReason::ForeignWorkspace { .. },
                    ..
                })
            ));
        }
    }
}
