//! Unix specifics: directory fsync, unnamed temporary files (`O_TMPFILE`),
//! file identity and permission bits.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;

use cap_std::fs::{Dir, Metadata, MetadataExt};
use rustix::fs::{AtFlags, Mode, OFlags};

/// Flags for opening a workspace file to read it: never block on a FIFO or a
/// device that has no writer.
pub(crate) fn nonblocking_read_flags() -> i32 {
    OFlags::NONBLOCK.bits() as i32
}

/// Makes the entries of `dir` durable. A cap-std `Dir` may be an `O_PATH`
/// descriptor, which cannot be fsynced, so a readable one is opened beside it.
pub(crate) fn fsync_dir(dir: &Dir) -> io::Result<()> {
    let fd = rustix::fs::openat(
        dir.as_fd(),
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fsync(&fd)?;
    Ok(())
}

/// Makes the entries of the directory at `path` (in the store, never the
/// workspace) durable.
pub(crate) fn fsync_dir_path(path: &std::path::Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Makes the empty `dst` share the blocks of `src` (`FICLONE`, a reflink) where
/// the filesystem can (XFS, btrfs); an error means it cannot: copy instead.
#[cfg(target_os = "linux")]
pub(crate) fn clone_file(dst: &File, src: &File) -> io::Result<()> {
    Ok(rustix::fs::ioctl_ficlone(dst, src)?)
}

/// No clones here: always copy.
#[cfg(not(target_os = "linux"))]
pub(crate) fn clone_file(_dst: &File, _src: &File) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// An unnamed file in `dir` (`O_TMPFILE`): it has no name until
/// [`link_tmpfile`] gives it one, so a crash while it is written leaves nothing.
/// `Ok(None)` when the filesystem cannot make one.
pub(crate) fn open_tmpfile(dir: &Dir, mode: u32) -> io::Result<Option<File>> {
    match rustix::fs::openat(
        dir.as_fd(),
        ".",
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(e)
            if e == rustix::io::Errno::OPNOTSUPP
                || e == rustix::io::Errno::ISDIR
                || e == rustix::io::Errno::INVAL
                || e == rustix::io::Errno::NOENT =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Gives an `O_TMPFILE` file the name `name` in `dir`. Linking through
/// `/proc/self/fd` needs no privilege, unlike `AT_EMPTY_PATH`.
pub(crate) fn link_tmpfile(file: &File, dir: &Dir, name: &str) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(
        rustix::fs::CWD,
        proc_path.as_str(),
        dir.as_fd(),
        name,
        AtFlags::SYMLINK_FOLLOW,
    )?;
    Ok(())
}

/// Device and inode: what makes a directory the same directory.
pub(crate) fn identity(md: &Metadata) -> (u64, u64) {
    (md.dev(), md.ino())
}

/// The permission bits of an open file.
pub(crate) fn file_mode(file: &File) -> io::Result<u32> {
    Ok(file.metadata()?.permissions().mode() & 0o7777)
}

/// Sets the permission bits of an open file.
pub(crate) fn set_file_mode(file: &File, mode: u32) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// What a non-regular file is, in words for an error.
pub(crate) fn kind_of(md: &Metadata) -> &'static str {
    use cap_std::fs::FileTypeExt;
    let t = md.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symbolic link"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "special file"
    }
}
