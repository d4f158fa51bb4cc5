//! The capability on the workspace root: opening it (and checking it is
//! still the directory recorded), resolving a path at checkpoint time,
//! walking to a file's directory without following links, opening a file.

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

use crate::error::{Error, Result};
use crate::hash;
use crate::index::{FileState, WorkspaceRoot};
use crate::relpath::RelPath;
use crate::sys;

use super::parent::Parent;

/// How many symbolic links one path may pass through (as Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// A workspace root, opened as a capability.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    dir: Dir,
    dev: u64,
    ino: u64,
}

impl Workspace {
    /// Opens the workspace whose root is `path` (made absolute and canonical).
    pub fn open(path: impl AsRef<Path>) -> Result<Workspace> {
        let path = path.as_ref();
        let root = std::fs::canonicalize(path).map_err(Error::io("open workspace", path))?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())
            .map_err(Error::io("open workspace", &root))?;
        let md = dir
            .dir_metadata()
            .map_err(Error::io("inspect workspace", &root))?;
        let (dev, ino) = sys::identity(&md);
        Ok(Workspace {
            root,
            dir,
            dev,
            ino,
        })
    }

    /// Opens a recorded workspace root again, refusing it unless it is still the
    /// same directory (device and inode) that was recorded.
    pub(crate) fn reopen(recorded: &WorkspaceRoot) -> Result<Workspace> {
        let moved = |reason: String| Error::WorkspaceMoved {
            workspace: recorded.path.clone(),
            reason,
        };
        let dir = Dir::open_ambient_dir(&recorded.path, ambient_authority())
            .map_err(|e| moved(format!("it cannot be opened: {e}")))?;
        let md = dir
            .dir_metadata()
            .map_err(Error::io("inspect workspace", &recorded.path))?;
        let (dev, ino) = sys::identity(&md);
        if (dev, ino) != (recorded.dev, recorded.ino) {
            return Err(moved("another directory is at that path now".into()));
        }
        // A session that names another user's directory is not this user's
        // to restore in.
        crate::trust::check_workspace_owner(&recorded.path, sys::owner(&md).0)?;
        Ok(Workspace {
            root: recorded.path.clone(),
            dir,
            dev,
            ino,
        })
    }

    /// The canonical path of the root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn identity(&self) -> WorkspaceRoot {
        WorkspaceRoot {
            path: self.root.clone(),
            dev: self.dev,
            ino: self.ino,
        }
    }

    /// Turns `path` (relative to the root, or absolute inside it) into the real
    /// file's path relative to the root, `/`-separated: symbolic links inside the
    /// workspace are followed, `..` is applied to real directories, and anything
    /// that leads outside is refused. The file itself need not exist.
    pub fn resolve(&self, path: impl AsRef<Path>) -> Result<String> {
        self.resolve_rel(path.as_ref()).map(String::from)
    }

    /// [`Workspace::resolve`], as the store keeps a path.
    pub(crate) fn resolve_rel(&self, path: impl AsRef<Path>) -> Result<RelPath> {
        let given = path.as_ref();
        let outside = |via_link: Option<PathBuf>| Error::OutsideWorkspace {
            path: given.to_owned(),
            workspace: self.root.clone(),
            via_link,
        };
        let relative = self.relative_input(given).ok_or_else(|| outside(None))?;
        let mut pending: Vec<PathBuf> = components_reversed(&relative);
        let mut resolved: Vec<String> = Vec::new();
        let mut links = 0;
        while let Some(part) = pending.pop() {
            if part.as_os_str() == ".." {
                resolved.pop().ok_or_else(|| outside(None))?;
                continue;
            }
            let name = part
                .to_str()
                .ok_or_else(|| Error::NonUtf8Path {
                    path: given.to_owned(),
                })?
                .to_owned();
            let candidate = join(&resolved, &name);
            let md = match self.dir.symlink_metadata(&candidate) {
                Ok(md) => Some(md),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) if is_not_a_directory(&e) => None,
                Err(e) => return Err(Error::io("inspect", self.root.join(&candidate))(e)),
            };
            if !md.is_some_and(|m| m.is_symlink()) {
                resolved.push(name);
                continue;
            }
            links += 1;
            let link_path = self.root.join(&candidate);
            if links > MAX_LINKS {
                return Err(Error::io("resolve", given)(io::Error::other(
                    "too many levels of symbolic links",
                )));
            }
            let target = self
                .dir
                .read_link_contents(&candidate)
                .map_err(Error::io("read symbolic link", &link_path))?;
            let target = if target.is_absolute() {
                // cap-std refuses absolute links even when they point inside; they
                // are resolved here, beneath the root, or refused.
                let inside = target
                    .strip_prefix(&self.root)
                    .map_err(|_| outside(Some(link_path.clone())))?;
                resolved.clear();
                inside.to_owned()
            } else {
                target
            };
            pending.extend(components_reversed(&target));
        }
        if resolved.is_empty() {
            return Err(Error::NotRegularFile {
                path: given.to_owned(),
                kind: "directory",
            });
        }
        // Plain names of real entries, each looked at: always a path.
        RelPath::from_names(&resolved).ok_or_else(|| outside(None))
    }

    fn relative_input(&self, given: &Path) -> Option<PathBuf> {
        if given.is_relative() {
            return Some(given.to_owned());
        }
        if let Ok(rest) = given.strip_prefix(&self.root) {
            return Some(rest.to_owned());
        }
        // The caller may know the root by another name (a symlinked ancestor such
        // as /tmp -> /private/tmp): compare the real path of the parent.
        let real_parent = std::fs::canonicalize(given.parent()?).ok()?;
        let rest = real_parent.strip_prefix(&self.root).ok()?;
        Some(rest.join(given.file_name()?))
    }

    /// Walks to the directory holding `rel` without following any symbolic link.
    /// A missing directory is created when `create_missing` (and listed in the
    /// result), else the walk ends with `None`: the file cannot exist.
    pub(crate) fn parent_of(&self, rel: &RelPath, create_missing: bool) -> Result<Option<Parent>> {
        let mut dir = self
            .dir
            .try_clone()
            .map_err(Error::io("open workspace", &self.root))?;
        let mut created = Vec::new();
        for walked in rel.ancestors() {
            let comp = walked.split_last().1;
            dir = match self.step_into(&dir, comp, &walked, rel, create_missing)? {
                Step::Opened(next) => next,
                Step::Created(next) => {
                    created.push(walked.clone());
                    next
                }
                Step::Missing => return Ok(None),
            };
        }
        Ok(Some(Parent {
            dir,
            name: rel.split_last().1.to_owned(),
            display: rel.under(&self.root),
            rel: rel.clone(),
            created,
        }))
    }

    /// Opens the directory `comp` of `dir` without following a link, creating it
    /// when it is missing and `create` is set. Another writer may create or
    /// remove it at the same moment: a directory that appears is used (and not
    /// counted as ours), one that vanishes is tried again.
    fn step_into(
        &self,
        dir: &Dir,
        comp: &str,
        walked: &RelPath,
        rel: &RelPath,
        create: bool,
    ) -> Result<Step> {
        let unsafe_path = |what| Error::UnsafePath {
            path: rel.to_string(),
            workspace: self.root.clone(),
            component: walked.to_string(),
            what,
        };
        let display = || walked.under(&self.root);
        for _ in 0..8 {
            let err = match dir.open_dir_nofollow(comp) {
                Ok(next) => return Ok(Step::Opened(next)),
                Err(e) => e,
            };
            match dir.symlink_metadata(comp) {
                Ok(md) if md.is_symlink() => return Err(unsafe_path("a symbolic link")),
                Ok(md) if !md.is_dir() => return Err(unsafe_path("not a directory")),
                // Appeared since the open: open it again.
                Ok(_) if err.kind() == io::ErrorKind::NotFound => continue,
                // There, but it could not be opened (too many open files,
                // no permission): that error, not a race.
                Ok(_) => return Err(Error::io("open directory", display())(err)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(_) => return Err(Error::io("open directory", display())(err)),
            }
            if !create {
                return Ok(Step::Missing);
            }
            match dir.create_dir(comp) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("create directory", display())(e)),
            }
            crate::crash::point("ws-mkdir");
            sys::fsync_dir(dir).map_err(Error::io("sync directory", display()))?;
            crate::crash::point("ws-mkdir-synced");
            match dir.open_dir_nofollow(comp) {
                Ok(next) => return Ok(Step::Created(next)),
                // Replaced between our mkdir and open: look again.
                Err(_) => continue,
            }
        }
        Err(Error::io("open directory", display())(io::Error::other(
            "it keeps being created and removed by someone else",
        )))
    }

    /// Opens `rel` for reading if it exists: never through a symbolic link, never
    /// blocking, and only if it is a regular file.
    pub(crate) fn open_regular(&self, rel: &RelPath) -> Result<Option<OpenFile>> {
        let Some(parent) = self.parent_of(rel, false)? else {
            return Ok(None);
        };
        if !parent.target_kind(&self.root)?.exists() {
            return Ok(None);
        }
        let mut opts = OpenOptions::new();
        opts.read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(sys::nonblocking_read_flags());
        let file = match parent.dir.open_with(&parent.name, &opts) {
            Ok(f) => f.into_std(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("open", &parent.display)(e)),
        };
        let md = file
            .metadata()
            .map_err(Error::io("inspect", &parent.display))?;
        if !md.is_file() {
            // Replaced by something else between the check and the open.
            return Err(Error::NotRegularFile {
                path: parent.display,
                kind: "special file",
            });
        }
        let mode = sys::file_mode(&file).map_err(Error::io("inspect", &parent.display))?;
        let owner = sys::file_owner(&file).map_err(Error::io("inspect", &parent.display))?;
        Ok(Some(OpenFile {
            file,
            mode,
            owner,
            display: parent.display,
        }))
    }

    /// The file's state now: hashed by streaming, or absent.
    pub(crate) fn current_state(&self, rel: &RelPath) -> Result<FileState> {
        match self.open_regular(rel)? {
            None => Ok(FileState::absent()),
            Some(mut f) => {
                let (hash, size) =
                    hash::hash_reader(&mut f.file).map_err(Error::io("read", &f.display))?;
                Ok(FileState::present(hash, size, f.mode))
            }
        }
    }

    /// [`Workspace::current_state`], where a directory is a state too (its
    /// mode; never through a link): what a revert of a scan's entries, which
    /// may make or remove directories, compares.
    pub(crate) fn state_of(&self, rel: &RelPath) -> Result<FileState> {
        match self.dir_mode(rel)? {
            Some(mode) => Ok(FileState::directory(Some(mode))),
            None => self.current_state(rel),
        }
    }

    /// The permission bits of the directory `rel`, if one is there (reached
    /// without following links).
    pub(crate) fn dir_mode(&self, rel: &RelPath) -> Result<Option<u32>> {
        match self.parent_of(rel, false)? {
            Some(parent) => parent.dir_target(),
            None => Ok(None),
        }
    }

    /// The names in the directory `rel`, reached without following links
    /// (none when it is not there); a name that is not UTF-8 comes lossily.
    pub(crate) fn dir_names(&self, rel: &RelPath) -> Result<Vec<String>> {
        let inside = rel.child("x").expect("a plain name");
        let Some(parent) = self.parent_of(&inside, false)? else {
            return Ok(Vec::new());
        };
        let display = rel.under(&self.root);
        let mut names = Vec::new();
        for e in parent.dir.entries().map_err(Error::io("list", &display))? {
            let e = e.map_err(Error::io("list", &display))?;
            names.push(e.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    /// The directories on the way to `rel` that do not exist yet, outermost
    /// first: what a write of `rel` would create.
    pub(crate) fn missing_dirs(&self, rel: &RelPath) -> Vec<RelPath> {
        let mut missing = Vec::new();
        for prefix in rel.ancestors() {
            // Only what is not there is missing; a link or anything else in the
            // way is for the walk that makes the directories to refuse.
            let absent = matches!(self.dir.symlink_metadata(prefix.as_str()), Err(e) if e.kind() == io::ErrorKind::NotFound);
            if !missing.is_empty() || absent {
                missing.push(prefix);
            }
        }
        missing
    }

    /// Removes directories this store created (innermost first) if they are
    /// empty and `claim` gives a guard for them (held while each is removed:
    /// the directory's lock, which no writer holds); a directory that is not
    /// empty, is no longer a directory, or is not claimed stays. Returns those
    /// removed, outermost first.
    pub(crate) fn remove_empty_dirs<G>(
        &self,
        dirs: &[RelPath],
        claim: impl Fn(&RelPath) -> Option<G>,
    ) -> Vec<RelPath> {
        let mut removed = Vec::new();
        for d in dirs.iter().rev() {
            let Some(_claimed) = claim(d) else {
                continue;
            };
            if let Ok(Some(parent)) = self.parent_of(d, false)
                && parent.dir.remove_dir(&parent.name).is_ok()
            {
                let _ = sys::fsync_dir(&parent.dir);
                removed.push(d.clone());
            }
        }
        removed.reverse();
        removed
    }
}

enum Step {
    Opened(Dir),
    Created(Dir),
    Missing,
}

fn components_reversed(p: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect();
    parts.reverse();
    parts
}

fn join(resolved: &[String], name: &str) -> String {
    let mut s = resolved.join("/");
    if !s.is_empty() {
        s.push('/');
    }
    s.push_str(name);
    s
}

fn is_not_a_directory(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotADirectory
}

/// An open regular file of the workspace.
pub(crate) struct OpenFile {
    pub(crate) file: File,
    pub(crate) mode: u32,
    /// User and group id.
    pub(crate) owner: (u32, u32),
    pub(crate) display: PathBuf,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `p` as a relative path.
    pub(crate) fn rel(p: &str) -> RelPath {
        RelPath::new(p).unwrap()
    }

    pub(crate) fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn resolves_plain_relative_and_absolute_paths() {
        let (dir, ws) = ws();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        assert_eq!(ws.resolve("src/lib.rs").unwrap(), "src/lib.rs");
        assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), "src/lib.rs");
        assert_eq!(
            ws.resolve(ws.root().join("src/new/x.rs")).unwrap(),
            "src/new/x.rs"
        );
    }

    #[test]
    fn refuses_paths_that_climb_out() {
        let (_dir, ws) = ws();
        for p in ["../x", "a/../../x", "/etc/passwd"] {
            assert!(
                matches!(ws.resolve(p), Err(Error::OutsideWorkspace { .. })),
                "{p}"
            );
        }
        assert!(matches!(ws.resolve("."), Err(Error::NotRegularFile { .. })));
    }

    #[test]
    fn follows_links_inside_and_refuses_links_out() {
        let (dir, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "x").unwrap();
        std::os::unix::fs::symlink("AGENTS.md", root.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink("real", root.join("linked")).unwrap();
        std::os::unix::fs::symlink(ws.root().join("real"), root.join("abs")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        assert_eq!(ws.resolve("CLAUDE.md").unwrap(), "AGENTS.md");
        assert_eq!(ws.resolve("linked/f").unwrap(), "real/f");
        assert_eq!(ws.resolve("abs/f").unwrap(), "real/f");
        match ws.resolve("out/f") {
            Err(Error::OutsideWorkspace {
                via_link: Some(l), ..
            }) => assert!(l.ends_with("out")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let (dir, ws) = ws();
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        match ws.resolve("a") {
            Err(Error::Io {
                op: "resolve",
                source,
                ..
            }) => {
                assert!(source.to_string().contains("symbolic links"), "{source}");
            }
            other => panic!("a symlink loop: {other:?}"),
        }
    }

    #[test]
    fn the_write_walk_refuses_a_symlinked_directory() {
        let (dir, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).unwrap();
        assert!(matches!(
            ws.parent_of(&rel("d/f"), true),
            Err(Error::UnsafePath { .. })
        ));
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (dir, ws) = ws();
        let fifo = dir.path().join("pipe");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        assert!(matches!(
            ws.open_regular(&rel("pipe")),
            Err(Error::NotRegularFile { kind: "fifo", .. })
        ));
    }
}
