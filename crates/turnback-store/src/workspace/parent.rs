//! A file's directory in the workspace, reached without following links:
//! what is at the file's name, and deleting it (or a temporary) there.

use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use crate::error::{Error, Result};
use crate::relpath::RelPath;
use crate::sys;

/// A change to a workspace file that failed, and whether it is visible anyway.
pub(crate) struct Failed {
    pub(crate) error: Error,
    /// True when the file was changed and only making that durable failed.
    pub(crate) visible: bool,
}

impl Failed {
    pub(super) fn untouched(error: Error) -> Failed {
        Failed {
            error,
            visible: false,
        }
    }

    pub(super) fn visible(error: Error) -> Failed {
        Failed {
            error,
            visible: true,
        }
    }
}

/// What is at a file's name right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetKind {
    Absent,
    Regular,
}

impl TargetKind {
    pub(crate) fn exists(self) -> bool {
        self == TargetKind::Regular
    }
}

/// The directory holding a file, reached without following links.
pub(crate) struct Parent {
    pub(crate) dir: Dir,
    pub(crate) name: String,
    pub(crate) rel: RelPath,
    pub(crate) display: PathBuf,
    /// Directories created on the way, outermost first.
    pub(crate) created: Vec<RelPath>,
}

impl Parent {
    /// What the name holds now; a symbolic link or anything but a regular file is
    /// refused (a write would replace it, a read would follow it).
    pub(crate) fn target_kind(&self, root: &Path) -> Result<TargetKind> {
        match self.dir.symlink_metadata(&self.name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(TargetKind::Absent),
            Err(e) => Err(Error::io("inspect", &self.display)(e)),
            Ok(md) if md.is_symlink() => Err(Error::UnsafePath {
                path: self.rel.to_string(),
                workspace: root.to_owned(),
                component: self.rel.to_string(),
                what: "a symbolic link",
            }),
            Ok(md) if md.is_file() => Ok(TargetKind::Regular),
            Ok(md) => Err(Error::NotRegularFile {
                path: self.display.clone(),
                kind: sys::kind_of(&md),
            }),
        }
    }

    /// How many names the regular file at the name has now (0: none there).
    pub(crate) fn target_links(&self) -> u64 {
        match self.dir.symlink_metadata(&self.name) {
            Ok(md) if md.is_file() => sys::links(&md),
            _ => 0,
        }
    }

    /// The owner (user and group id) of the regular file at the name now, if
    /// there is one.
    pub(crate) fn target_owner(&self) -> Option<(u32, u32)> {
        let md = self.dir.symlink_metadata(&self.name).ok()?;
        md.is_file().then(|| sys::owner(&md))
    }

    /// Deletes the file (not following a link), then makes that durable.
    pub(crate) fn remove_target(&self) -> Result<()> {
        self.remove_target_reporting().map_err(|f| f.error)
    }

    /// [`Parent::remove_target`], saying on failure whether the file was gone
    /// already (only the directory sync failed).
    pub(crate) fn remove_target_reporting(&self) -> Result<(), Failed> {
        match self.dir.remove_file(&self.name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Failed::untouched(Error::io("delete", &self.display)(e))),
        }
        crate::crash::point("ws-removed");
        sys::fsync_dir(&self.dir)
            .map_err(|e| Failed::visible(Error::io("sync directory of", &self.display)(e)))?;
        crate::crash::point("ws-removed-synced");
        Ok(())
    }

    /// Moves the file to the name of `to` (in the same workspace), replacing
    /// what is there, in one `rename`, then makes that durable (both
    /// directories synced). On failure, says whether the file was moved
    /// already (only a sync failed).
    pub(crate) fn move_target_to(&self, to: &Parent) -> Result<(), Failed> {
        self.dir
            .rename(&self.name, &to.dir, &to.name)
            .map_err(|e| Failed::untouched(Error::io("move", &self.display)(e)))?;
        sys::fsync_dir(&to.dir)
            .and_then(|()| sys::fsync_dir(&self.dir))
            .map_err(|e| Failed::visible(Error::io("sync directory of", &to.display)(e)))
    }

    /// The permission bits of the directory at the name, if a directory is
    /// there (a symbolic link is not followed: it is no directory).
    pub(crate) fn dir_target(&self) -> Result<Option<u32>> {
        match self.dir.symlink_metadata(&self.name) {
            Ok(md) if md.is_dir() => Ok(Some(sys::mode_bits(&md))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("inspect", &self.display)(e)),
        }
    }

    /// Removes the directory at the name if it is empty, durably; `false`
    /// when it is not empty (it stays). Nothing there is fine.
    pub(crate) fn remove_dir_target(&self) -> Result<bool> {
        match self.dir.remove_dir(&self.name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => return Ok(false),
            Err(e) => return Err(Error::io("remove directory", &self.display)(e)),
        }
        crate::crash::point("ws-rmdir");
        sys::fsync_dir(&self.dir).map_err(Error::io("sync directory of", &self.display))?;
        Ok(true)
    }

    /// Makes the directory at the name (keeping one that is there), durably,
    /// with permission bits `mode` where given; anything else at the name
    /// (a file, a link) is an error.
    pub(crate) fn make_dir_target(&self, root: &Path, mode: Option<u32>) -> Result<()> {
        match self.dir.create_dir(&self.name) {
            Ok(()) => {
                crate::crash::point("ws-mkdir");
                sys::fsync_dir(&self.dir).map_err(Error::io("sync directory of", &self.display))?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io("create directory", &self.display)(e)),
        }
        if self.dir_target()?.is_none() {
            return Err(Error::UnsafePath {
                path: self.rel.to_string(),
                workspace: root.to_owned(),
                component: self.rel.to_string(),
                what: "not a directory",
            });
        }
        if let Some(mode) = mode {
            sys::set_dir_mode(&self.dir, &self.name, mode)
                .map_err(Error::io("set the mode of", &self.display))?;
        }
        Ok(())
    }

    /// Deletes a temporary this store made in this directory, if it is there.
    pub(crate) fn remove_temp(&self, temp: &str) {
        if self.dir.remove_file(temp).is_ok() {
            let _ = sys::fsync_dir(&self.dir);
        }
    }
}
