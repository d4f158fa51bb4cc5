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
//! owns it. The store is private: directories are made 0700 and files 0600,
//! and a directory of an existing store that others may read (but not
//! write) is made private, with its files, the first time it is used
//! ([`Tightened`] says so). A check costs one `lstat` per directory, made
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

/// A store directory that others could read, made private by the store (with
/// the files in it): what an older build, which used the umask, left. See
/// [`crate::Store::take_notices`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    /// The directory, now 0700.
    pub path: PathBuf,
    /// Its permission bits before.
    pub was: u32,
    /// How many files in it were made 0600.
    pub files: usize,
}

impl std::fmt::Display for Tightened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.files {
            0 => write!(f, "made {} private", self.path.display())?,
            1 => write!(f, "made {} and the file in it private", self.path.display())?,
            n => write!(
                f,
                "made {} and the {n} files in it private",
                self.path.display()
            )?,
        }
        write!(f, " (was {:o})", self.was)
    }
}

/// [`check_dir`], then, for a directory that group or others may read or
/// enter: makes it 0700, and each regular file of this user in it that others
/// may read 0600, and says so, unless the directory was empty (a home made by
/// hand for the store, which exposed nothing).
pub(crate) fn secure_dir(path: &Path) -> Result<Option<Tightened>> {
    check_dir(path)?;
    let md = match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_dir() => md,
        _ => return Ok(None),
    };
    let (_, was) = sys::owner_and_mode(&md);
    if was & 0o077 == 0 {
        return Ok(None);
    }
    // Bits are only taken away, never added.
    sys::set_path_mode(path, was & !0o077).map_err(Error::io("make private", path))?;
    let (mut files, mut entries) = (0, 0);
    let read = std::fs::read_dir(path).map_err(Error::io("list", path))?;
    for entry in read.flatten() {
        entries += 1;
        // The directory is this user's and no one else may write it, so what
        // `lstat` says of an entry holds until it is changed here.
        let Ok(md) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let (uid, mode) = sys::owner_and_mode(&md);
        if md.is_file() && uid == sys::euid() && mode & 0o077 != 0 {
            let p = entry.path();
            sys::set_path_mode(&p, mode & !0o077).map_err(Error::io("make private", &p))?;
            files += 1;
        }
    }
    Ok((entries > 0).then(|| Tightened {
        path: path.to_owned(),
        was,
        files,
    }))
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

/// [`secure_dir`] of the store home itself. Its ancestors may be symbolic
/// links (a home under `/tmp` where `/tmp` is one); the home may not.
pub(crate) fn secure_home(home: &Path) -> Result<Option<Tightened>> {
    secure_dir(&real_path(home))
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
        assert_eq!(secure_home(&link.join("home")).unwrap(), None);
        assert!(secure_home(&link).is_err());
    }

    #[test]
    fn a_directory_others_may_read_is_made_private_with_its_files_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        for (name, mode) in [("a", 0o644), ("b", 0o600), ("c", 0o604)] {
            std::fs::write(d.join(name), b"x").unwrap();
            std::fs::set_permissions(d.join(name), std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::set_permissions(d.join("sub"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("link")).unwrap();
        let t = secure_dir(&d).unwrap().expect("tightened");
        assert_eq!((t.was, t.files), (0o755, 2));
        assert_eq!(
            t.to_string(),
            format!(
                "made {} and the 2 files in it private (was 755)",
                d.display()
            )
        );
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&d), 0o700);
        for name in ["a", "b", "c"] {
            assert_eq!(mode(&d.join(name)), 0o600, "{name}");
        }
        // Not the directories in it (each is made private when it is used),
        // and never through a link.
        assert_eq!(mode(&d.join("sub")), 0o755);
        assert_eq!(mode(&outside), 0o644);
        assert_eq!(secure_dir(&d).unwrap(), None, "once");
        // An empty directory is made private without a word.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(secure_dir(&empty).unwrap(), None);
        assert_eq!(mode(&empty), 0o700);
    }

    #[test]
    fn a_store_file_is_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = sys::store_file_options();
        opts.write(true).create(true).truncate(false);
        let created = dir.path().join("new");
        drop(open(&opts, &created).unwrap());
        let mode = std::fs::metadata(&created).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let sub = dir.path().join("a/b");
        sys::create_store_dir_all(&sub).unwrap();
        for d in [dir.path().join("a"), sub] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
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
