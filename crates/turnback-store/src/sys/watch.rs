//! Watching directories for what happens to their entries while a command
//! runs (Linux: inotify), so that a scan's commit looks only where something
//! happened. Elsewhere there is no watcher (`DirWatch::new` gives `None`)
//! and the commit walks the whole workspace, as it does without one.
//!
//! What inotify does not see, a watch cannot report: a write through a hard
//! link in a directory that is not watched, a write through a shared memory
//! map, a change made by another machine on a network file system. The
//! scan's module doc says what the commit does about it.

use std::path::Path;

/// What happened to an entry of a watched directory, or to the watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchEvent {
    /// Something happened to entry `name` of the directory watched as `dir`
    /// (the key it was added with): written, its attributes changed,
    /// created, deleted or moved in or out. `is_dir`: the entry is (or was)
    /// a directory; `came_or_went`: it was created, deleted or moved.
    Entry {
        dir: String,
        name: std::ffi::OsString,
        is_dir: bool,
        came_or_went: bool,
    },
    /// The directory watched as `dir` itself was deleted or moved.
    DirGone { dir: String },
    /// Events were lost (the kernel's queue overflowed, or a file system
    /// went away): nothing can be said about what changed.
    Lost,
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::io;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    use crate::sys::watch::WatchEvent;

    /// An inotify instance and the directories it watches, by watch
    /// descriptor.
    pub(crate) struct DirWatch {
        fd: OwnedFd,
        dirs: HashMap<i32, String>,
    }

    impl std::fmt::Debug for DirWatch {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "DirWatch({} directories)", self.dirs.len())
        }
    }

    impl DirWatch {
        pub(crate) fn new() -> io::Result<Option<DirWatch>> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
            Ok(Some(DirWatch {
                fd,
                dirs: HashMap::new(),
            }))
        }

        /// Watches the directory at `path` (never through a link), its
        /// events reported under `key`.
        pub(crate) fn add(&mut self, path: &Path, key: &str) -> io::Result<()> {
            let what = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MODIFY
                | WatchFlags::ATTRIB
                | WatchFlags::CLOSE_WRITE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF
                | WatchFlags::ONLYDIR
                | WatchFlags::DONT_FOLLOW;
            let wd = inotify::add_watch(&self.fd, path, what)?;
            self.dirs.insert(wd, key.to_owned());
            Ok(())
        }

        /// Closes the watch on a thread of its own: the kernel waits out a
        /// grace period before it lets go of the watches, milliseconds the
        /// caller need not spend.
        pub(crate) fn close_elsewhere(self) {
            let _ = std::thread::Builder::new()
                .name("turnback-unwatch".into())
                .spawn(move || drop(self));
        }

        /// Every event queued since the watches were added.
        pub(crate) fn drain(&mut self) -> io::Result<Vec<WatchEvent>> {
            let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 << 10];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            let mut out = Vec::new();
            loop {
                let ev = match reader.next() {
                    Ok(ev) => ev,
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                };
                let flags = ev.events();
                if flags.intersects(ReadFlags::QUEUE_OVERFLOW | ReadFlags::UNMOUNT) {
                    out.push(WatchEvent::Lost);
                    continue;
                }
                let Some(dir) = self.dirs.get(&ev.wd()) else {
                    // A watch the kernel dropped (IGNORED came first).
                    continue;
                };
                match ev.file_name() {
                    Some(name) => {
                        use std::os::unix::ffi::OsStrExt;
                        let name = std::ffi::OsStr::from_bytes(name.to_bytes()).to_owned();
                        out.push(WatchEvent::Entry {
                            dir: dir.clone(),
                            name,
                            is_dir: flags.contains(ReadFlags::ISDIR),
                            came_or_went: flags.intersects(
                                ReadFlags::CREATE
                                    | ReadFlags::DELETE
                                    | ReadFlags::MOVED_FROM
                                    | ReadFlags::MOVED_TO,
                            ),
                        });
                    }
                    None if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) => {
                        out.push(WatchEvent::DirGone { dir: dir.clone() });
                    }
                    // The directory's own attributes: its parent reports
                    // them by name too.
                    None => {}
                }
            }
            Ok(out)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::path::Path;

    use crate::sys::watch::WatchEvent;

    /// No watcher on this platform: [`DirWatch::new`] gives `None`.
    #[derive(Debug)]
    pub(crate) enum DirWatch {}

    impl DirWatch {
        pub(crate) fn new() -> io::Result<Option<DirWatch>> {
            Ok(None)
        }

        pub(crate) fn add(&mut self, _path: &Path, _key: &str) -> io::Result<()> {
            match *self {}
        }

        pub(crate) fn drain(&mut self) -> io::Result<Vec<WatchEvent>> {
            match *self {}
        }

        pub(crate) fn close_elsewhere(self) {
            match self {}
        }
    }
}

pub(crate) use imp::DirWatch;

/// Adds a watch, for callers that give up watching on any error.
pub(crate) fn try_add(watch: &mut Option<DirWatch>, path: &Path, key: &str) {
    if let Some(w) = watch
        && w.add(path, key).is_err()
    {
        *watch = None;
    }
}
