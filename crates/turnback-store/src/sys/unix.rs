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
/// workspace) durable. A symbolic link there is not followed.
pub(crate) fn fsync_dir_path(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC).bits() as i32)
        .open(path)?
        .sync_all()
}

/// A writer into an empty file that keeps holes, and asks the kernel to start
/// writing back every [`EarlyWriteback::CHUNK`] bytes as soon as they are in.
///
/// Holes: a block of [`EarlyWriteback::BLOCK`] bytes at an aligned offset that
/// is all zeros is skipped (the file reads zeros there anyway) instead of
/// written, so a sparse file is not backed up and restored dense; the check
/// stops at the first non-zero byte, so ordinary data costs next to nothing.
/// [`EarlyWriteback::finish`] sets the length, which keeps a trailing hole.
///
/// Writeback: so that the fsync at the end finds most of a large file on its
/// way to the disk already (the disk works while the copy and the hashing go
/// on). Linux starts that writeback for `POSIX_FADV_DONTNEED` on dirty pages
/// (and drops the pages once clean: a backup or a file just written is not read
/// back soon).
pub(crate) struct EarlyWriteback<'a> {
    file: &'a mut File,
    /// Bytes passed through, written or skipped: the offset of the next byte.
    written: u64,
    /// The end of the last bytes really written.
    end: u64,
    started: u64,
}

impl<'a> EarlyWriteback<'a> {
    const CHUNK: u64 = 8 * 1024 * 1024;
    /// The unit of a hole: the page and the usual filesystem block.
    const BLOCK: usize = 4096;

    /// A writer into `file`, which must be empty (a skipped block must read
    /// as zeros); writes go to offsets from 0, whatever its cursor.
    pub(crate) fn new(file: &'a mut File) -> Self {
        EarlyWriteback {
            file,
            written: 0,
            end: 0,
            started: 0,
        }
    }

    /// Sets the file's length to every byte passed through: a skipped block at
    /// the end is a hole the file must still cover.
    pub(crate) fn finish(self) -> io::Result<()> {
        if self.end < self.written {
            self.file.set_len(self.written)?;
        }
        Ok(())
    }

    fn write_at(&mut self, data: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(data, self.written)?;
        self.written += data.len() as u64;
        self.end = self.written;
        Ok(())
    }
}

/// True when `block` holds only zeros; stops at the first one that is not.
fn all_zero(block: &[u8]) -> bool {
    let mut words = block.chunks_exact(16);
    words.all(|w| u128::from_ne_bytes(w.try_into().expect("16 bytes")) == 0)
        && words.remainder().iter().all(|&b| b == 0)
}

impl io::Write for EarlyWriteback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let block = Self::BLOCK;
        let mut rest = buf;
        while !rest.is_empty() {
            let offset = (self.written % block as u64) as usize;
            if offset != 0 || rest.len() < block {
                // Part of a block: up to the next boundary, written as it is.
                let n = (block - offset).min(rest.len());
                self.write_at(&rest[..n])?;
                rest = &rest[n..];
            } else if all_zero(&rest[..block]) {
                self.written += block as u64;
                rest = &rest[block..];
            } else {
                // A run of whole blocks with data, in one write.
                let mut run = block;
                while run + block <= rest.len() && !all_zero(&rest[run..run + block]) {
                    run += block;
                }
                self.write_at(&rest[..run])?;
                rest = &rest[run..];
            }
        }
        if self.written - self.started >= Self::CHUNK {
            let len = std::num::NonZeroU64::new(self.written - self.started);
            // Advice only: a filesystem that ignores it loses nothing.
            let _ =
                rustix::fs::fadvise(&*self.file, self.started, len, rustix::fs::Advice::DontNeed);
            self.started = self.written;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
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

/// True when the open `file` is the file at `path` now (same device and
/// inode; the path's last component is not followed): false once the file was
/// renamed away or replaced, or the path is gone.
pub(crate) fn is_at(file: &File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Writes all of `bytes` into `file` at `offset`, leaving the file position
/// and the rest of the file as they are.
pub(crate) fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

/// This process's effective uid: whose store and workspaces it trusts.
pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// How many descriptors this process may have open (the soft limit), if it
/// says: a macOS shell's default is 256.
pub(crate) fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Owner, and permission bits, of a file's metadata.
pub(crate) fn owner_and_mode(md: &std::fs::Metadata) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    (md.uid(), md.mode() & 0o7777)
}

/// The mode a store directory is created with: private, since backups hold
/// whatever the user's files held (the umask can only take bits away).
pub(crate) const STORE_DIR_MODE: u32 = 0o700;

/// The mode a store file is created with: private.
pub(crate) const STORE_FILE_MODE: u32 = 0o600;

/// Sets the permission bits of the file or directory at `path` (which the
/// caller has just seen, with `lstat`, not to be a symbolic link).
pub(crate) fn set_path_mode(path: &std::path::Path, mode: u32) -> io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Options to open a store file with: never through a symbolic link at the
/// last component (`O_NOFOLLOW`; the directories above are checked
/// separately), not inherited by children, created with [`STORE_FILE_MODE`].
pub(crate) fn store_file_options() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut opts = std::fs::OpenOptions::new();
    opts.custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC).bits() as i32)
        .mode(STORE_FILE_MODE);
    opts
}

/// True when `e` is what opening a symbolic link with `O_NOFOLLOW` gives.
pub(crate) fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// Creates the store directory `path` and any missing parents, with
/// [`STORE_DIR_MODE`].
pub(crate) fn create_store_dir_all(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(STORE_DIR_MODE)
        .create(path)
}

/// Device, inode, size and modification time (seconds, nanoseconds): what
/// tells one version of a store file from another without reading it.
pub(crate) type FileVersion = (u64, u64, u64, i64, i64);

/// The [`FileVersion`] of a file's metadata.
pub(crate) fn version_of(md: &std::fs::Metadata) -> FileVersion {
    use std::os::unix::fs::MetadataExt;
    (md.dev(), md.ino(), md.len(), md.mtime(), md.mtime_nsec())
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

/// The permission bits in a workspace entry's metadata (a directory's).
pub(crate) fn mode_bits(md: &Metadata) -> u32 {
    md.mode() & 0o7777
}

/// Sets the permission bits of the directory `name` of `dir`, never through
/// a symbolic link (it is opened with `O_NOFOLLOW | O_DIRECTORY`, then
/// `fchmod`ed).
pub(crate) fn set_dir_mode(dir: &Dir, name: &str, mode: u32) -> io::Result<()> {
    let fd = rustix::fs::openat(
        dir.as_fd(),
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode as rustix::fs::RawMode))?;
    Ok(())
}

/// The owner (user id, group id) of an open file.
pub(crate) fn file_owner(file: &File) -> io::Result<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let md = file.metadata()?;
    Ok((md.uid(), md.gid()))
}

/// How many names (hard links) the file of `md` has.
pub(crate) fn links(md: &Metadata) -> u64 {
    md.nlink()
}

/// The owner (user id, group id) in a file's metadata.
pub(crate) fn owner(md: &Metadata) -> (u32, u32) {
    (md.uid(), md.gid())
}

/// Gives `file` the owner `wanted[0]` where the process may, else keeps what
/// it can, then sets `mode` without a setuid bit unless the file has that
/// owner, and without setgid unless it has that group. Root may set any owner;
/// another user only a group it belongs to: so after `wanted[0]` (user and
/// group) each wanted group is tried alone, and a refusal (`EPERM`, `EINVAL`
/// for an id with no mapping) leaves the process's. With nothing wanted (the
/// owner is not known) neither bit is kept: a file must never become setuid
/// to someone other than whoever made it so.
///
/// The owner goes first: a `chown` clears setuid and setgid, the mode then
/// sets what is kept.
pub(crate) fn set_owner_and_mode(
    file: &File,
    wanted: &[(u32, u32)],
    mode: Option<u32>,
) -> io::Result<()> {
    use rustix::fs::{Gid, Uid};
    use rustix::io::Errno;
    // -1 means "leave as is" to chown: never an id to ask for.
    let valid = |id: u32| id != u32::MAX;
    if let Some(&(uid, gid)) = wanted.first()
        && file_owner(file)? != (uid, gid)
    {
        let both = (valid(uid) && valid(gid)).then_some((Some(uid), gid));
        let groups = wanted
            .iter()
            .filter(|w| valid(w.1))
            .map(|&(_, g)| (None, g));
        for (u, g) in both.into_iter().chain(groups) {
            match rustix::fs::fchown(file, u.map(Uid::from_raw), Some(Gid::from_raw(g))) {
                Ok(()) => break,
                Err(e) if e == Errno::PERM || e == Errno::INVAL => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    if let Some(mut mode) = mode {
        let (uid, gid) = file_owner(file)?;
        let (want_uid, want_gid) = match wanted.first() {
            Some(&(u, g)) => (Some(u), Some(g)),
            None => (None, None),
        };
        if want_uid != Some(uid) {
            mode &= !0o4000;
        }
        if want_gid != Some(gid) {
            mode &= !0o2000;
        }
        set_file_mode(file, mode)?;
    }
    Ok(())
}

/// What a scan compares to tell whether a file changed without reading it:
/// permission bits with the file type (`st_mode`), size, modification and
/// status-change times (seconds, nanoseconds) and inode. The change time
/// cannot be set by a user, so a rewrite that restores the mtime still shows.
pub(crate) fn scan_stat(md: &std::fs::Metadata) -> (u32, u64, [i64; 4], u64) {
    use std::os::unix::fs::MetadataExt;
    (
        md.mode(),
        md.len(),
        [md.mtime(), md.mtime_nsec(), md.ctime(), md.ctime_nsec()],
        md.ino(),
    )
}

/// A directory a scan lists, opened to look at its entries by name alone
/// (`O_PATH` where there is one: nothing is read through it).
pub(crate) fn open_scan_dir(path: &std::path::Path) -> io::Result<std::os::fd::OwnedFd> {
    #[cfg(target_os = "linux")]
    let how = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let how = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::open(path, how, Mode::empty())?)
}

/// [`scan_stat`] of the entry `name` of the directory `dir`, not following
/// a link: one name looked up, where a whole path walks every component.
pub(crate) fn scan_stat_at(
    dir: &impl AsFd,
    name: &std::ffi::OsStr,
) -> io::Result<(u32, u64, [i64; 4], u64)> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    // The field types differ between platforms; every value fits.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    Ok((
        st.st_mode as u32,
        st.st_size as u64,
        [
            st.st_mtime as i64,
            st.st_mtime_nsec as i64,
            st.st_ctime as i64,
            st.st_ctime_nsec as i64,
        ],
        st.st_ino as u64,
    ))
}

/// The target of the symbolic link at `path`, as bytes.
pub(crate) fn link_target_bytes(path: &std::path::Path) -> io::Result<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    Ok(std::fs::read_link(path)?.as_os_str().as_bytes().to_vec())
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

/// True while process `pid` exists (it may be another user's: `EPERM` still
/// says it is there). A zombie counts as there until it is reaped.
pub(crate) fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`,
/// field 22), so that a pid the kernel reused for another process is not
/// taken for the one a mark names. `None` where it cannot be read.
#[cfg(target_os = "linux")]
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: the fields after it start after the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Portable fallback: the start time is unknown, and a pid is believed.
#[cfg(not(target_os = "linux"))]
pub(crate) fn process_start(_pid: u32) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    #[test]
    fn early_writeback_passes_every_byte_through_across_chunks() {
        let mut file = tempfile::tempfile().unwrap();
        let chunk = EarlyWriteback::CHUNK as usize;
        let data: Vec<u8> = (0..2 * chunk + 12345).map(|i| (i % 239) as u8).collect();
        let mut w = EarlyWriteback::new(&mut file);
        for piece in data.chunks(256 * 1024 + 7) {
            w.write_all(piece).unwrap();
        }
        assert!(
            w.started >= 2 * EarlyWriteback::CHUNK && w.started <= w.written,
            "writeback was asked for up to byte {} of {}",
            w.started,
            w.written
        );
        file.sync_all().unwrap();
        file.rewind().unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).unwrap();
        assert!(back == data, "the bytes changed on the way");
    }

    #[test]
    fn setuid_and_setgid_stay_only_with_the_owner_they_were_meant_for() {
        let file = tempfile::tempfile().unwrap();
        let me = file_owner(&file).unwrap();
        set_owner_and_mode(&file, &[me], Some(0o6755)).unwrap();
        assert_eq!(file_mode(&file).unwrap(), 0o6755, "its own owner: kept");
        set_owner_and_mode(&file, &[], Some(0o6755)).unwrap();
        assert_eq!(file_mode(&file).unwrap(), 0o755, "no owner known: dropped");
        // Another group than the file's: setgid goes unless it could be had.
        let other = (me.0, me.1.wrapping_add(4321));
        set_owner_and_mode(&file, &[other], Some(0o6755)).unwrap();
        let got = file_owner(&file).unwrap();
        let want = if got == other { 0o6755 } else { 0o4755 };
        assert_eq!(file_mode(&file).unwrap(), want, "{got:?}");
    }

    #[test]
    fn zero_blocks_become_holes_and_every_byte_reads_back() {
        use std::os::unix::fs::MetadataExt;
        let block = EarlyWriteback::BLOCK;
        // Zeros that fill aligned blocks (skipped), zeros that do not (written),
        // data, and a trailing run of zero blocks (a hole the length covers).
        let mut data = vec![0u8; 64 * block];
        data[3 * block + 17] = 1;
        data[10 * block..12 * block].fill(7);
        data[20 * block - 1] = 9;
        data[30 * block..30 * block + 5].copy_from_slice(b"hello");
        for piece in [1, 1000, block, block + 3, 256 * 1024] {
            let mut file = tempfile::tempfile().unwrap();
            let mut w = EarlyWriteback::new(&mut file);
            for chunk in data.chunks(piece) {
                w.write_all(chunk).unwrap();
            }
            w.finish().unwrap();
            assert_eq!(file.metadata().unwrap().len(), data.len() as u64);
            let mut back = Vec::new();
            file.rewind().unwrap();
            file.read_to_end(&mut back).unwrap();
            assert!(back == data, "pieces of {piece}: the bytes changed");
            if piece >= block && piece % block == 0 {
                let allocated = file.metadata().unwrap().blocks() * 512;
                assert!(
                    allocated <= 16 * block as u64,
                    "pieces of {piece}: {allocated} bytes allocated"
                );
            }
        }
    }
}
