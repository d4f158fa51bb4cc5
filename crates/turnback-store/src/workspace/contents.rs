//! New contents for a workspace file: written beside it (unnamed where the
//! filesystem allows), synced, and moved over it in one rename (or copied
//! over it in place, for a file with hard links).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{OpenOptions, OpenOptionsExt};

use crate::error::{Error, Result};
use crate::hash::{self, CopyError};
use crate::sys;

use super::parent::{Failed, Parent};
use crate::relpath::new_temp_name;

/// New contents for a workspace file, written beside it and moved over it in
/// one rename. Unnamed (`O_TMPFILE`) until [`NewContents::link`], where the
/// filesystem allows; a named temporary left by a failure is deleted on drop.
pub(crate) struct NewContents<'p> {
    parent: &'p Parent,
    file: File,
    /// The owners to give the file, best first ([`NewContents::keep_owner`]).
    owners: Vec<(u32, u32)>,
    /// The mode [`NewContents::seal`] was asked for, for a copy in place.
    mode: Option<u32>,
    /// The name it has or will have in the directory.
    temp: String,
    linked: bool,
    replaced: bool,
}

impl<'p> NewContents<'p> {
    /// Creates the temporary with permission bits `mode` (new files pass
    /// `0o666` and the umask applies).
    pub(crate) fn create(parent: &'p Parent, mode: u32) -> Result<Self> {
        Self::create_named(parent, mode, new_temp_name())
    }

    /// As [`NewContents::create`], with the temporary name chosen (and
    /// recorded) by the caller.
    pub(crate) fn create_named(parent: &'p Parent, mode: u32, temp: String) -> Result<Self> {
        Self::create_named_then(parent, mode, temp, || Ok(()))
    }

    /// As [`NewContents::create_named`], calling `before_naming` first where
    /// the filesystem cannot make an unnamed temporary and the name is made at
    /// once: a revert writes the name down there, so that a crash cannot leave
    /// a temporary nobody knows of.
    pub(crate) fn create_named_then(
        parent: &'p Parent,
        mode: u32,
        temp: String,
        before_naming: impl FnOnce() -> Result<()>,
    ) -> Result<Self> {
        let err = Error::io("create a temporary beside", &parent.display);
        if let Some(file) = sys::open_tmpfile(&parent.dir, mode)
            .map_err(Error::io("create a temporary beside", &parent.display))?
        {
            return Ok(NewContents {
                parent,
                file,
                owners: Vec::new(),
                mode: None,
                temp,
                linked: false,
                replaced: false,
            });
        }
        before_naming()?;
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create_new(true).mode(mode);
        let file = parent.dir.open_with(&temp, &opts).map_err(err)?.into_std();
        Ok(NewContents {
            parent,
            file,
            owners: Vec::new(),
            mode: None,
            temp,
            linked: true,
            replaced: false,
        })
    }

    /// The name the contents have, or will have once linked.
    pub(crate) fn temp_name(&self) -> &str {
        &self.temp
    }

    /// Streams `reader` in; returns the SHA-256 and size of what was written.
    pub(crate) fn fill(&mut self, reader: &mut dyn Read, source: &Path) -> Result<(String, u64)> {
        let mut writer = sys::EarlyWriteback::new(&mut self.file);
        let filled = hash::copy_hashing(reader, Some(&mut writer)).map_err(|e| match e {
            CopyError::Read(e) => Error::io("read", source)(e),
            CopyError::Write(e) => Error::io("write a temporary beside", &self.parent.display)(e),
        })?;
        // Zero blocks were skipped (holes kept): the length covers a last one.
        writer
            .finish()
            .map_err(Error::io("write a temporary beside", &self.parent.display))?;
        crate::crash::point("ws-tmp-written");
        Ok(filled)
    }

    /// The owners (user id, group id) the file should have, best first: the
    /// first is the owner it is meant to have (its recorded one), the others
    /// fallbacks for the group. [`NewContents::seal`] gives it the first it
    /// may, and keeps setuid or setgid only if it got the first's user or
    /// group. Without any (a new file, an owner not recorded) the file is the
    /// process's and keeps neither bit.
    pub(crate) fn keep_owner(&mut self, owners: Vec<(u32, u32)>) {
        self.owners = owners;
    }

    /// Sets the owner (see [`NewContents::keep_owner`]) and the mode (when
    /// given), and makes the contents durable; returns the mode the file has.
    pub(crate) fn seal(&mut self, mode: Option<u32>) -> Result<u32> {
        self.mode = mode;
        let display = &self.parent.display;
        sys::set_owner_and_mode(&self.file, &self.owners, mode).map_err(Error::io(
            "set the owner and mode of a temporary beside",
            display,
        ))?;
        self.file
            .sync_all()
            .map_err(Error::io("sync a temporary beside", display))?;
        crate::crash::point("ws-tmp-synced");
        sys::file_mode(&self.file).map_err(Error::io("inspect a temporary beside", display))
    }

    /// Gives unnamed contents their temporary name.
    pub(crate) fn link(&mut self) -> Result<()> {
        if !self.linked {
            sys::link_tmpfile(&self.file, &self.parent.dir, &self.temp)
                .map_err(Error::io("name a temporary beside", &self.parent.display))?;
            self.linked = true;
            crate::crash::point("ws-tmp-linked");
        }
        Ok(())
    }

    /// Renames the contents over the file and makes the rename durable.
    pub(crate) fn replace_target(self) -> Result<()> {
        self.replace_target_reporting().map_err(|f| f.error)
    }

    /// [`NewContents::replace_target`], saying on failure whether the file was
    /// replaced already (only the directory sync failed).
    ///
    /// A file with more than one name (hard links) is not replaced but written
    /// in place, so that every name sees the change ([`NewContents::overwrite_target`]).
    pub(crate) fn replace_target_reporting(mut self) -> Result<(), Failed> {
        if self.parent.target_links() > 1 && self.overwrite_target()? {
            return Ok(());
        }
        self.link().map_err(Failed::untouched)?;
        let p = self.parent;
        p.dir
            .rename(&self.temp, &p.dir, &p.name)
            .map_err(|e| Failed::untouched(Error::io("replace", &p.display)(e)))?;
        self.replaced = true;
        crate::crash::point("ws-renamed");
        sys::fsync_dir(&p.dir)
            .map_err(|e| Failed::visible(Error::io("sync directory of", &p.display)(e)))?;
        crate::crash::point("ws-dir-synced");
        Ok(())
    }
}

impl NewContents<'_> {
    /// Copies the contents over the file in place, keeping its inode (and so
    /// every hard link to it): truncate, copy, sync. Weaker than the rename: a
    /// crash or an error during the copy leaves the file torn, neither before
    /// nor after (recovery then keeps the entry, and its backup is durable, so
    /// a forced undo restores it). The contents were synced into the temporary
    /// first, so bad input has been refused before the file is touched.
    /// `Ok(false)`: the file may not be opened for writing (read-only to this
    /// user, or a program running from it): replace it by rename instead.
    fn overwrite_target(&mut self) -> Result<bool, Failed> {
        use std::io::{Seek, Write};
        let p = self.parent;
        let display = &p.display;
        let mut opts = OpenOptions::new();
        opts.write(true)
            .follow(FollowSymlinks::No)
            .custom_flags(sys::nonblocking_read_flags());
        let mut target = match p.dir.open_with(&p.name, &opts) {
            Ok(f) => f.into_std(),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ExecutableFileBusy
                ) =>
            {
                return Ok(false);
            }
            Err(e) => return Err(Failed::untouched(Error::io("open", display)(e))),
        };
        let md = target
            .metadata()
            .map_err(|e| Failed::untouched(Error::io("inspect", display)(e)))?;
        if !md.is_file() {
            return Err(Failed::untouched(Error::NotRegularFile {
                path: display.clone(),
                kind: "special file",
            }));
        }
        self.file
            .rewind()
            .map_err(|e| Failed::untouched(Error::io("read a temporary beside", display)(e)))?;
        let torn = |op| move |e| Failed::visible(Error::io(op, display)(e));
        target.set_len(0).map_err(torn("truncate"))?;
        let mut writer = sys::EarlyWriteback::new(&mut target);
        let mut buf = vec![0u8; hash::BUF_SIZE];
        loop {
            let n = match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(torn("read a temporary beside")(e)),
            };
            writer.write_all(&buf[..n]).map_err(torn("write"))?;
        }
        writer.finish().map_err(torn("write"))?;
        // The inode keeps its owner and mode, unless a restore asks for others
        // (as for a temporary); a user who may write but not chmod the file
        // leaves them as the kernel made them.
        let mode_now = sys::file_mode(&target).map_err(torn("inspect"))?;
        let owner_now = sys::file_owner(&target).map_err(torn("inspect"))?;
        if self.mode.is_some_and(|m| m != mode_now)
            || self.owners.first().is_some_and(|o| *o != owner_now)
        {
            match sys::set_owner_and_mode(&target, &self.owners, self.mode) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
                Err(e) => return Err(torn("set the mode of")(e)),
            }
        }
        target.sync_all().map_err(torn("sync"))?;
        Ok(true)
    }
}

impl Drop for NewContents<'_> {
    fn drop(&mut self) {
        if self.linked && !self.replaced {
            self.parent.remove_temp(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::root::tests::{rel, ws};

    #[test]
    fn new_contents_replace_atomically_and_leave_no_temporary() {
        let (dir, ws) = ws();
        let parent = ws.parent_of(&rel("a/b/f.txt"), true).unwrap().unwrap();
        assert_eq!(parent.created, vec![rel("a"), rel("a/b")]);
        let mut nc = NewContents::create(&parent, 0o666).unwrap();
        let (_, n) = nc.fill(&mut &b"hello"[..], Path::new("stdin")).unwrap();
        assert_eq!(n, 5);
        nc.seal(Some(0o755)).unwrap();
        nc.replace_target().unwrap();
        let p = dir.path().join("a/b/f.txt");
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("a/b")).unwrap().count(),
            1
        );
    }

    #[test]
    fn dropped_contents_leave_nothing() {
        let (dir, ws) = ws();
        let parent = ws.parent_of(&rel("f.txt"), true).unwrap().unwrap();
        let mut nc = NewContents::create(&parent, 0o666).unwrap();
        nc.fill(&mut &b"half"[..], Path::new("x")).unwrap();
        nc.link().unwrap();
        drop(nc);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
