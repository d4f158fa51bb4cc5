//! Backups by clone (a reflink, `FICLONE`) where the filesystem can make them
//! (XFS, btrfs). The store does not say whether it cloned or copied, and both
//! give the same bytes, so these tests ask the filesystem: `FIEMAP` lists a
//! file's extents with their place on the disk and whether another file
//! shares them (`FIEMAP_EXTENT_SHARED`), and the mount's free space tells a
//! 64 MiB copy from a clone. They run the real binary with the store home and
//! the workspace on the directory `TURNBACK_REFLINK_DIR` names (`.ci/run`
//! mounts an XFS image there where it can; the bench reads the same variable).
//! Without it they say they skipped ([`util::skip`]); with it, a backup that
//! is a copy fails each of them.
//!
//! A write renames the new contents over the file, so the old inode (the one
//! the backup was cloned from) would be gone and its blocks the backup's
//! alone; each test keeps that inode open across the command, so that the
//! blocks stay shared and a copy would cost the space of a copy.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::util::{self, Env, Rng, sha256_hex, this_test};

// ---------------------------------------------------------------------------
// FIEMAP (linux/fiemap.h): the test's own platform code, through rustix's
// ioctl (rustix has no FIEMAP wrapper).

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct FiemapHeader {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
}

const EXTENTS_PER_CALL: usize = 32;

/// `struct fiemap` with room for [`EXTENTS_PER_CALL`] extents after it.
#[repr(C)]
struct Fiemap {
    header: FiemapHeader,
    extents: [FiemapExtent; EXTENTS_PER_CALL],
}

/// `FS_IOC_FIEMAP`, `_IOWR('f', 11, struct fiemap)`: the size in the opcode is
/// the header's; the extents follow it.
const FS_IOC_FIEMAP: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read_write::<FiemapHeader>(b'f', 11);
const FIEMAP_FLAG_SYNC: u32 = 0x1;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

/// One extent of a file: where it is in the file and on the disk, its
/// length, and whether another file shares its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extent {
    logical: u64,
    physical: u64,
    length: u64,
    shared: bool,
}

/// The extents of `file` (its dirty pages written first), neighbours that
/// continue each other on the disk merged, so that two files that share
/// their blocks list the same extents however the filesystem split them.
fn extents(file: &File) -> Vec<Extent> {
    let mut raw: Vec<Extent> = Vec::new();
    let mut start = 0u64;
    loop {
        let mut map = Fiemap {
            header: FiemapHeader {
                start,
                length: u64::MAX - start,
                flags: FIEMAP_FLAG_SYNC,
                mapped_extents: 0,
                extent_count: EXTENTS_PER_CALL as u32,
                reserved: 0,
            },
            extents: [FiemapExtent::default(); EXTENTS_PER_CALL],
        };
        // SAFETY: FS_IOC_FIEMAP reads the header and writes at most
        // `extent_count` extents after it, for which `map` has room.
        unsafe {
            rustix::ioctl::ioctl(
                file,
                rustix::ioctl::Updater::<FS_IOC_FIEMAP, Fiemap>::new(&mut map),
            )
        }
        .expect("FIEMAP");
        let got = &map.extents[..map.header.mapped_extents as usize];
        raw.extend(got.iter().map(|e| Extent {
            logical: e.logical,
            physical: e.physical,
            length: e.length,
            shared: e.flags & FIEMAP_EXTENT_SHARED != 0,
        }));
        match got.last() {
            Some(last) if last.flags & FIEMAP_EXTENT_LAST == 0 => {
                start = last.logical + last.length;
            }
            _ => break,
        }
    }
    let mut merged: Vec<Extent> = Vec::new();
    for e in raw {
        match merged.last_mut() {
            Some(m)
                if m.logical + m.length == e.logical
                    && m.physical + m.length == e.physical
                    && m.shared == e.shared =>
            {
                m.length += e.length;
            }
            _ => merged.push(e),
        }
    }
    merged
}

/// Where a file's bytes are on the disk: (offset in the file, on the disk,
/// length) of each extent.
fn placement(extents: &[Extent]) -> Vec<(u64, u64, u64)> {
    extents
        .iter()
        .map(|e| (e.logical, e.physical, e.length))
        .collect()
}

/// Bytes free to an unprivileged user on the filesystem of `path`, once
/// everything written is on the disk.
fn free_bytes(path: &Path) -> u64 {
    rustix::fs::sync();
    let st = rustix::fs::statvfs(path).expect("statvfs");
    st.f_bavail * st.f_frsize
}

// ---------------------------------------------------------------------------
// Helpers

const SESSION: &str = "clones";

/// What a test of this module holds on the mount: its home and workspace
/// (`env`), a directory for inputs, and the mount to itself (the tests of
/// this module take turns: one measures the mount's free space).
struct OnTheMount {
    env: Env,
    inputs: tempfile::TempDir,
    _alone: std::sync::MutexGuard<'static, ()>,
}

/// An `Env` whose home and workspace are on `TURNBACK_REFLINK_DIR`, which
/// must be on a filesystem that clones; `None` (after saying so) without it.
fn reflink_env(test: &str) -> Option<OnTheMount> {
    static MOUNT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let Some(base) = util::reflink_dir() else {
        util::skip(
            test,
            "TURNBACK_REFLINK_DIR is not set: backups by clone not tested",
        );
        return None;
    };
    let env = Env {
        home: tempfile::tempdir_in(&base).unwrap(),
        ws: tempfile::tempdir_in(&base).unwrap(),
    };
    let inputs = tempfile::tempdir_in(&base).unwrap();
    // The filesystem must clone, or these tests would prove nothing.
    let a = inputs.path().join("probe-a");
    std::fs::write(&a, b"probe").unwrap();
    let b = File::create(inputs.path().join("probe-b")).unwrap();
    if let Err(e) = rustix::fs::ioctl_ficlone(&b, File::open(&a).unwrap()) {
        panic!(
            "TURNBACK_REFLINK_DIR={} is on a filesystem that cannot clone ({e}): \
             unset it, or mount one that can (mkfs.xfs -m reflink=1)",
            base.display()
        );
    }
    let alone = MOUNT.lock().unwrap_or_else(|p| p.into_inner());
    Some(OnTheMount {
        env,
        inputs,
        _alone: alone,
    })
}

/// `len` pseudo-random bytes from `seed`.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes `bytes` to `path` durably (so that its blocks are allocated).
fn put(path: &Path, bytes: &[u8]) {
    let f = File::create(path).unwrap();
    f.write_all_at(bytes, 0).unwrap();
    f.sync_all().unwrap();
}

/// `turnback ARGS` in the session, standard input from `stdin` (a file) or
/// empty; must succeed.
fn turnback(env: &Env, args: &[&str], stdin: Option<&Path>) -> Output {
    let mut c = env.cmd(Some(SESSION));
    c.args(args)
        .stdin(match stdin {
            Some(p) => Stdio::from(File::open(p).unwrap()),
            None => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "turnback {args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The blob holding `bytes` in the session.
fn blob_of(env: &Env, bytes: &[u8]) -> PathBuf {
    env.home
        .path()
        .join("sessions")
        .join(SESSION)
        .join("blobs")
        .join(sha256_hex(bytes))
}

/// The backup `blob` of the file `source` is a clone of it: it lies in the
/// same blocks of the disk, every one of them shared. A copy has blocks of
/// its own (and none shared).
fn assert_clone_of(blob: &Path, source: &File, what: &str) {
    let blob_extents = extents(&File::open(blob).unwrap());
    let source_extents = extents(source);
    assert!(
        !source_extents.is_empty(),
        "{what}: the file has no extents"
    );
    assert_eq!(
        placement(&blob_extents),
        placement(&source_extents),
        "{what}: the backup is not in the file's blocks: a copy, not a clone"
    );
    assert!(
        blob_extents.iter().chain(&source_extents).all(|e| e.shared),
        "{what}: blocks not shared: {blob_extents:?} / {source_extents:?}"
    );
}

// ---------------------------------------------------------------------------
// The tests

/// `turnback write` over a 4 MiB file: the backup of the old contents is a
/// clone of the old file (same blocks, shared). Then the old inode is changed
/// in place, as an editor that writes in place would: the backup keeps the
/// old bytes (the filesystem copies on write), and `undo` restores them.
#[test]
fn a_write_backs_the_old_file_up_as_a_clone_of_it() {
    let Some(OnTheMount {
        env,
        inputs,
        _alone,
    }) = reflink_env(this_test!())
    else {
        return;
    };
    let old = pattern(1, 4 * 1024 * 1024);
    put(&env.path("f.bin"), &old);
    let held = OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.path("f.bin"))
        .unwrap();
    assert!(
        extents(&held).iter().all(|e| !e.shared),
        "a new file shares no block"
    );
    let new_path = inputs.path().join("new");
    std::fs::write(&new_path, b"new contents\n").unwrap();

    turnback(
        &env,
        &["write", "f.bin", "--message", "m1"],
        Some(&new_path),
    );
    assert_eq!(util::read(env.path("f.bin")), b"new contents\n");
    let blob = blob_of(&env, &old);
    assert_clone_of(&blob, &held, "the backup of a write");

    held.write_all_at(b"changed in place", 0).unwrap();
    held.sync_all().unwrap();
    assert_eq!(
        sha256_hex(&util::read(&blob)),
        sha256_hex(&old),
        "the backup changed with the file it was cloned from"
    );
    turnback(&env, &["undo"], None);
    assert!(util::read(env.path("f.bin")) == old, "undo");
}

/// `turnback undo` of a write of 4 MiB over 4 MiB backs up what it
/// overwrites (for `redo`) as a clone of it; `redo` then puts it back byte
/// for byte.
#[test]
fn an_undo_backs_up_what_it_overwrites_as_a_clone() {
    let Some(OnTheMount {
        env,
        inputs,
        _alone,
    }) = reflink_env(this_test!())
    else {
        return;
    };
    let v1 = pattern(2, 4 * 1024 * 1024);
    let v2 = pattern(3, 4 * 1024 * 1024);
    put(&env.path("f.bin"), &v1);
    let v2_path = inputs.path().join("v2");
    put(&v2_path, &v2);
    turnback(&env, &["write", "f.bin", "--message", "m1"], Some(&v2_path));
    let held = File::open(env.path("f.bin")).unwrap();

    turnback(&env, &["undo"], None);
    assert!(util::read(env.path("f.bin")) == v1, "undo");
    let history = env
        .store()
        .open_session(SESSION)
        .unwrap()
        .history()
        .unwrap();
    let overwritten = history[0].files[0].overwritten.as_ref().expect("recorded");
    assert_eq!(
        overwritten.sha256.as_deref(),
        Some(sha256_hex(&v2).as_str())
    );
    assert_clone_of(&blob_of(&env, &v2), &held, "the backup an undo makes");

    turnback(&env, &["redo"], None);
    assert!(util::read(env.path("f.bin")) == v2, "redo");
}

/// A 64 MiB file backed up by `turnback write` costs the mount next to
/// nothing: a copy would take 64 MiB of it (the old inode is held open, so
/// its blocks stay allocated whatever the backup is). FIEMAP agrees.
#[test]
fn a_64_mib_backup_takes_no_64_mib_of_the_disk() {
    const SIZE: usize = 64 * 1024 * 1024;
    let Some(OnTheMount {
        env,
        inputs,
        _alone,
    }) = reflink_env(this_test!())
    else {
        return;
    };
    let old = pattern(4, SIZE);
    put(&env.path("big.bin"), &old);
    let held = File::open(env.path("big.bin")).unwrap();
    let new_path = inputs.path().join("new");
    std::fs::write(&new_path, b"small now\n").unwrap();

    let free_before = free_bytes(env.ws.path());
    turnback(
        &env,
        &["write", "big.bin", "--message", "m1"],
        Some(&new_path),
    );
    let free_after = free_bytes(env.ws.path());
    let used = free_before.saturating_sub(free_after);
    eprintln!("a 64 MiB backup used {} KiB of the mount", used / 1024);
    assert!(
        used < SIZE as u64 / 8,
        "backing up 64 MiB took {} MiB of the mount: a copy, not a clone",
        used / (1024 * 1024)
    );
    let blob = blob_of(&env, &old);
    assert_eq!(std::fs::metadata(&blob).unwrap().len(), SIZE as u64);
    assert_clone_of(&blob, &held, "the backup of a 64 MiB file");
    drop(held);
    turnback(&env, &["undo"], None);
    assert!(util::read(env.path("big.bin")) == old, "undo");
}
