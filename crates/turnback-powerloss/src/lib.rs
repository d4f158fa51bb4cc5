//! A filesystem for tests that forgets, at a power cut, whatever was never
//! made durable (issue 35): the crash tests kill processes, and the kernel
//! still writes out what they wrote; this one drops it, as a laptop losing
//! power does.
//!
//! [`PowerLoss::mount`] loads a backing directory (the disk) into memory and
//! serves it over FUSE. Reads see every change; a change becomes durable by
//! the strict POSIX rules: a file's bytes and attributes at an
//! `fsync`/`fdatasync` of that file, a directory's creates, renames,
//! unlinks, links and mkdirs at an `fsync` of that directory (its pending
//! operations applied in order; a rename inside one directory is atomic).
//! [`PowerLoss::cut_at_sync`] cuts the power when the Nth sync from the
//! mount returns, [`PowerLoss::cut`] at once: from then on every request
//! fails with EIO and nothing changes. [`PowerLoss::unmount`] writes what
//! the disk holds back into the backing directory: after a cut the durable
//! state (in [`CutMode::Random`], with a random subset of the unsynced
//! changes applied in a random order, a file's new bytes possibly in part);
//! without one everything, as a clean shutdown syncs.
//! [`PowerLoss::power_cycle`] does the same and boots from it again on the
//! same mount: what a reboot would find, on the same device.
//!
//! Not for the `turnback` binary: only its tests use this crate.

mod fs;
mod model;

pub use model::CutMode;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use model::State;

/// A mounted power-loss filesystem. Dropping it without [`unmount`]
/// unmounts without writing the backing directory back.
///
/// [`unmount`]: PowerLoss::unmount
pub struct PowerLoss {
    session: Option<fuser::BackgroundSession>,
    state: Arc<Mutex<State>>,
    backing: PathBuf,
}

impl std::fmt::Debug for PowerLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PowerLoss")
            .field("backing", &self.backing)
            .finish_non_exhaustive()
    }
}

/// Why FUSE cannot be used here, if it cannot: no `/dev/fuse`, or not root
/// and no `fusermount3` (Debian's `fuse3`) on the PATH.
pub fn unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_err()
    {
        return Some("/dev/fuse cannot be opened".into());
    }
    // /proc/self belongs to the effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|md| {
        use std::os::unix::fs::MetadataExt;
        md.uid() == 0
    });
    let fusermount = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").exists()))
        .unwrap_or(false);
    if !root && !fusermount {
        return Some("not root and no fusermount3 (Debian's fuse3) on the PATH".into());
    }
    None
}

impl PowerLoss {
    /// Loads `backing` and mounts it at `mountpoint` (an empty directory).
    pub fn mount(backing: &Path, mountpoint: &Path) -> io::Result<PowerLoss> {
        let state = Arc::new(Mutex::new(State::load(backing, model::ROOT + 1)?));
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("turnback-powerloss".into()),
            fuser::MountOption::DefaultPermissions,
        ];
        let session = fuser::spawn_mount(fs::PowerLossFs::new(state.clone()), mountpoint, &config)?;
        Ok(PowerLoss {
            session: Some(session),
            state,
            backing: backing.to_path_buf(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The fsync and fdatasync calls (of files and of directories) served
    /// since the mount.
    pub fn syncs(&self) -> u64 {
        self.state().syncs
    }

    /// Cuts the power when the `n`th sync since the mount has been made
    /// durable (that sync returns success; the next request fails).
    pub fn cut_at_sync(&self, n: u64) {
        let mut state = self.state();
        state.cut_at = Some(n);
        if state.syncs >= n {
            state.dead = true;
        }
    }

    /// Cuts the power now.
    pub fn cut(&self) {
        self.state().dead = true;
    }

    /// Whether the power is cut.
    pub fn is_cut(&self) -> bool {
        self.state().dead
    }

    /// How a cut treats what was never synced (strict unless set).
    pub fn set_mode(&self, mode: CutMode) {
        self.state().mode = mode;
    }

    /// Makes everything durable, as `sync(1)` does.
    pub fn sync_all(&self) {
        self.state().sync_all();
    }

    /// Writes what the disk holds into the backing directory (as
    /// [`PowerLoss::unmount`] does) and boots from it again on the same
    /// mount: the device number stays, as a disk's does across a reboot (the
    /// store tells a replaced workspace by its device and inode). Run it
    /// with no process using the mount.
    pub fn power_cycle(&self) -> io::Result<()> {
        let mut state = self.state();
        state.store(&self.backing)?;
        state.reload(&self.backing)
    }

    /// Boots from the backing directory as it is now (a test replaced it:
    /// another disk put in while the power was off); what was in memory is
    /// dropped.
    pub fn reload(&self) -> io::Result<()> {
        self.state().reload(&self.backing)
    }

    /// Unmounts, then writes what the disk holds into the backing directory.
    pub fn unmount(mut self) -> io::Result<()> {
        if let Some(session) = self.session.take() {
            session.umount_and_join()?;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.store(&self.backing)
    }
}
