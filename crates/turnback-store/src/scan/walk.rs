//! Which files a scan looks at, and how each is now: the workspace as git
//! sees it, listed by the `ignore` crate (`.gitignore`, `.ignore`,
//! `.git/info/exclude`, the global excludes), never entering `.git`, the
//! store home, a submodule or a turnback temporary. It lists names and
//! `lstat`s them; it never opens a file (contents are read through the
//! workspace capability, `workspace/`) and never follows a link.

use std::collections::{BTreeMap, HashSet};

use foldhash::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::relpath::is_temp_name;
use crate::sys;

/// What tells one version of a file from another without reading it
/// (`sys::scan_stat`): type and permission bits, size, modification and
/// change times, inode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `st_mode`: the file type and the permission bits.
    pub(crate) mode: u32,
    pub(crate) size: u64,
    /// mtime (seconds, nanoseconds), ctime (seconds, nanoseconds).
    pub(crate) times: [i64; 4],
    pub(crate) ino: u64,
}

const S_IFMT: u32 = 0o170_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFDIR: u32 = 0o040_000;

impl Stat {
    pub(crate) fn of(md: &std::fs::Metadata) -> Stat {
        Stat::from_parts(sys::scan_stat(md))
    }

    fn from_parts((mode, size, times, ino): (u32, u64, [i64; 4], u64)) -> Stat {
        Stat {
            mode,
            size,
            times,
            ino,
        }
    }

    fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub(crate) fn is_file(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }

    pub(crate) fn is_link(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }

    /// The permission bits, as a [`crate::FileState`] records them.
    pub(crate) fn perms(&self) -> u32 {
        self.mode & 0o7777
    }

    /// True when the change time is at or after `t` (seconds, nanoseconds):
    /// the file may have changed again within the same clock tick, so its
    /// stat cannot vouch for its contents.
    pub(crate) fn racy(&self, t: [i64; 2]) -> bool {
        [self.times[2], self.times[3]] >= t || [self.times[0], self.times[1]] >= t
    }
}

/// The workspace as a scan found it: each file and symbolic link (by its
/// `/`-separated path) and each directory, with its permission bits. Files
/// are hashed, not ordered: tens of thousands are looked up one by one.
#[derive(Default, Debug)]
pub(crate) struct Found {
    pub(crate) files: HashMap<String, Stat>,
    pub(crate) dirs: BTreeMap<String, u32>,
    /// The files and links whose relative path is not UTF-8, by its bytes
    /// in hex: no entry can record them yet, so a change of one is
    /// reported rather than hidden.
    pub(crate) unnamed: BTreeMap<String, Stat>,
    /// What a [`Take`] took instead of listing it in `files`: the bytes it
    /// wrote, and how many files.
    pub(crate) taken: (Vec<u8>, usize),
}

/// Given to a walk: looks at a file (its relative path and stat) on the
/// walker's thread and may take it, writing what it wants to keep of it to
/// the buffer; a file taken is not listed.
pub(crate) type Take<'a> = dyn Fn(&str, &Stat, &mut Vec<u8>) -> bool + Sync + 'a;

/// Lists `root`, skipping `skip` (the store home, submodules: absolute
/// paths) and what the ignore files exclude; `also` are paths (tracked
/// files git knows) to look at even if an ignore file names them.
pub(crate) fn walk(root: &Path, skip: &HashSet<PathBuf>, also: &[String]) -> Result<Found> {
    let mut found = list(root, skip)?;
    add_also(root, &mut found, also);
    Ok(found)
}

/// [`walk`] without `also`: what the walk itself finds.
pub(crate) fn list(root: &Path, skip: &HashSet<PathBuf>) -> Result<Found> {
    let mut found = Found::default();
    list_into(root, &[root], None, skip, &mut None, &mut found)?;
    Ok(found)
}

/// [`list_watched`] where `take` looks at each file first (see [`Take`]).
pub(crate) fn list_watched_taking(
    root: &Path,
    skip: &HashSet<PathBuf>,
    watch: &mut Option<sys::DirWatch>,
    take: &Take<'_>,
) -> Result<Found> {
    let mut found = Found::default();
    sys::try_watch(watch, root, "");
    walk_into(root, &[root], None, skip, watch, Some(take), &mut found)?;
    Ok(found)
}

/// Lists `root`, as [`list`] does, and watches each directory it lists: the
/// root before the walk begins, every other one when the walk decides to
/// enter it, before it is read, so that no change to what is in it falls
/// between the listing and the watch. `watch` becomes `None`
/// if a watch cannot be added (a limit reached): the commit then walks.
pub(crate) fn list_watched(
    root: &Path,
    skip: &HashSet<PathBuf>,
    watch: &mut Option<sys::DirWatch>,
) -> Result<Found> {
    let mut found = Found::default();
    sys::try_watch(watch, root, "");
    list_into(root, &[root], None, skip, watch, &mut found)?;
    Ok(found)
}

/// Adds to `found` what lies under each of `starts` (directories in
/// `root`, themselves not included) down to `depth` levels (`None`: all),
/// as [`list`] finds it (the ignore files of their parents apply); `watch`,
/// if any, watches each directory listed.
///
/// A whole walk runs on every core (two threads halve it on a warm cache,
/// where the lstats are most of the time); a listing one level deep runs on
/// one. Each directory is watched when the walker decides to enter it,
/// before it is read (the filter sees it first).
pub(crate) fn list_into(
    root: &Path,
    starts: &[&Path],
    depth: Option<usize>,
    skip: &HashSet<PathBuf>,
    watch: &mut Option<sys::DirWatch>,
    found: &mut Found,
) -> Result<()> {
    walk_into(root, starts, depth, skip, watch, None, found)
}

fn walk_into(
    root: &Path,
    starts: &[&Path],
    depth: Option<usize>,
    skip: &HashSet<PathBuf>,
    watch: &mut Option<sys::DirWatch>,
    take: Option<&Take<'_>>,
    found: &mut Found,
) -> Result<()> {
    // The walker follows a link given as its start: a directory under the
    // root is listed only if it and each directory above it is one.
    let starts: Vec<&Path> = starts
        .iter()
        .copied()
        .filter(|start| {
            *start == root
                || !start.strip_prefix(root).is_ok_and(|rel| {
                    let rel = rel.to_string_lossy();
                    through_a_link(root, &format!("{rel}/x"))
                })
        })
        .collect();
    let Some((first, rest)) = starts.split_first() else {
        return Ok(());
    };
    let threads = match depth {
        Some(_) => 1,
        None => std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
    };
    let skip_in = skip.clone();
    let shared_watch = Arc::new(Mutex::new(watch.take()));
    let filter_watch = Arc::clone(&shared_watch);
    let filter_root = root.to_owned();
    let mut builder = ignore::WalkBuilder::new(first);
    for start in rest {
        builder.add(start);
    }
    builder
        .max_depth(depth)
        .threads(threads)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        // A workspace outside git still means its .gitignore.
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            let name = e.file_name();
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            // Only directories are skipped: no hashing of every file's path.
            let keep = name != ".git"
                && !name.to_str().is_some_and(is_temp_name)
                && !(is_dir && skip_in.contains(e.path()));
            if keep && is_dir {
                let mut w = filter_watch.lock().unwrap_or_else(|p| p.into_inner());
                if w.is_some()
                    && let Some(rel) = rel_of(&filter_root, e.path())
                {
                    sys::try_watch(&mut w, e.path(), &rel);
                }
            }
            keep
        });
    let walker = builder.build_parallel();
    // The builder holds the filter, and with it the watch, until it goes.
    drop(builder);
    let parts = Mutex::new(Vec::new());
    walker.visit(&mut Collect {
        root,
        take,
        parts: &parts,
    });
    *watch = Arc::try_unwrap(shared_watch)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .flatten();
    let parts = parts.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut error = None;
    for part in parts {
        let Part {
            files,
            unnamed,
            dirs,
            taken,
            error: e,
        } = part;
        found.files.extend(files);
        found.unnamed.extend(unnamed);
        found.dirs.extend(dirs);
        found.taken.0.extend_from_slice(&taken.0);
        found.taken.1 += taken.1;
        error = error.or(e);
    }
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What one walker thread found, merged when the walk is over.
#[derive(Default)]
struct Part {
    files: Vec<(String, Stat)>,
    unnamed: Vec<(String, Stat)>,
    dirs: Vec<(String, u32)>,
    taken: (Vec<u8>, usize),
    error: Option<Error>,
}

/// Makes each walker thread's visitor.
struct Collect<'a> {
    root: &'a Path,
    take: Option<&'a Take<'a>>,
    parts: &'a Mutex<Vec<Part>>,
}

impl<'s, 'a: 's> ignore::ParallelVisitorBuilder<'s> for Collect<'a> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visit {
            root: self.root,
            take: self.take,
            parts: self.parts,
            part: Part::default(),
            parent: Parent::default(),
        })
    }
}

/// One walker thread's visitor: its own findings, handed in when it ends.
struct Visit<'a> {
    root: &'a Path,
    take: Option<&'a Take<'a>>,
    parts: &'a Mutex<Vec<Part>>,
    part: Part,
    parent: Parent,
}

impl Drop for Visit<'_> {
    fn drop(&mut self) {
        let part = std::mem::take(&mut self.part);
        self.parts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(part);
    }
}

impl ignore::ParallelVisitor for Visit<'_> {
    fn visit(
        &mut self,
        entry: std::result::Result<ignore::DirEntry, ignore::Error>,
    ) -> ignore::WalkState {
        let entry = match entry {
            Ok(e) => e,
            // A directory vanishing under the walk is a change the commit
            // sees; anything else stops the scan.
            Err(e)
                if e.io_error()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
            {
                return ignore::WalkState::Continue;
            }
            Err(e) => {
                self.part.error = Some(Error::ScanFailed {
                    path: self.root.to_owned(),
                    reason: e.to_string(),
                });
                return ignore::WalkState::Quit;
            }
        };
        if entry.depth() == 0 {
            // A start itself: gone, or not a directory, it has nothing in it.
            if !entry.file_type().is_some_and(|t| t.is_dir()) {
                return ignore::WalkState::Skip;
            }
            return ignore::WalkState::Continue;
        }
        // An lstat (links are not followed), by name in its directory.
        let Some(st) = self.parent.stat(entry.path()) else {
            return ignore::WalkState::Continue;
        };
        let Some(rel) = rel_str(self.root, entry.path()) else {
            if (st.is_file() || st.is_link())
                && let Ok(rel) = entry.path().strip_prefix(self.root)
            {
                use std::os::unix::ffi::OsStrExt;
                let hex = crate::hash::to_hex(rel.as_os_str().as_bytes());
                self.part.unnamed.push((hex, st));
            }
            return ignore::WalkState::Continue;
        };
        if let Some(take) = self.take
            && !st.is_dir()
            && take(&rel, &st, &mut self.part.taken.0)
        {
            self.part.taken.1 += 1;
            return ignore::WalkState::Continue;
        }
        let rel = rel.into_owned();
        if st.is_dir() {
            self.part.dirs.push((rel, st.perms()));
        } else if st.is_file() || st.is_link() {
            self.part.files.push((rel, st));
        }
        ignore::WalkState::Continue
    }
}

/// The directory of the last entry a thread stat'ed, kept open: a thread
/// takes a directory's entries mostly one after another, so each is
/// stat'ed by its name in its directory instead of by a path the kernel
/// walks from the root again.
#[derive(Default)]
struct Parent {
    open: Option<(PathBuf, std::os::fd::OwnedFd)>,
}

impl Parent {
    /// The entry at `path`, as an lstat gives it; `None` when it is gone.
    fn stat(&mut self, path: &Path) -> Option<Stat> {
        use std::os::unix::ffi::OsStrExt;
        // Split by bytes: the walker joins each name to its directory's
        // path, and `Path`'s own comparison goes component by component.
        let bytes = path.as_os_str().as_bytes();
        let at = memchr::memrchr(b'/', bytes).filter(|at| *at + 1 < bytes.len())?;
        let parent = std::ffi::OsStr::from_bytes(&bytes[..at.max(1)]);
        let name = std::ffi::OsStr::from_bytes(&bytes[at + 1..]);
        let parent = Path::new(parent);
        let same = |p: &PathBuf| p.as_os_str().as_bytes() == parent.as_os_str().as_bytes();
        if self.open.as_ref().is_none_or(|(p, _)| !same(p)) {
            match sys::open_scan_dir(parent) {
                Ok(fd) => self.open = Some((parent.to_owned(), fd)),
                // Gone, or no longer a directory: the path tells.
                Err(_) => {
                    self.open = None;
                    let md = std::fs::symlink_metadata(path).ok()?;
                    return Some(Stat::of(&md));
                }
            }
        }
        let (_, dir) = self.open.as_ref().expect("opened");
        sys::scan_stat_at(dir, name).ok().map(Stat::from_parts)
    }
}

/// Adds to `found` each of `also` (paths under `root`) that the walk left
/// out (an ignore file names it) and that is a file or a link now.
pub(crate) fn add_also(root: &Path, found: &mut Found, also: &[String]) {
    for p in also {
        if found.files.contains_key(p) || through_a_link(root, p) {
            continue;
        }
        if let Ok(md) = std::fs::symlink_metadata(root.join(p)) {
            let st = Stat::of(&md);
            if st.is_file() || st.is_link() {
                found.files.insert(p.clone(), st);
            }
        }
    }
}

/// Drops from `found` what lies in one of `dirs` (relative paths), and the
/// directories themselves: a listing made before the submodules were known.
pub(crate) fn drop_under(found: &mut Found, dirs: &[String]) {
    if dirs.is_empty() {
        return;
    }
    let inside = |p: &str| {
        dirs.iter().any(|d| {
            p.strip_prefix(d.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    };
    found.files.retain(|p, _| !inside(p));
    found.dirs.retain(|p, _| !inside(p));
}

/// True when a directory on the way to `rel` (under `root`) is not one: a
/// symbolic link (never followed out of the workspace) or nothing.
fn through_a_link(root: &Path, rel: &str) -> bool {
    let mut at = root.to_owned();
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    parts.into_iter().any(|part| {
        at.push(part);
        !std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    })
}

/// [`rel_of`] without a copy where it can: the walker's paths are the
/// root's, a `/`, and the rest.
fn rel_str<'a>(root: &Path, path: &'a Path) -> Option<std::borrow::Cow<'a, str>> {
    use std::os::unix::ffi::OsStrExt;
    let prefix = root.as_os_str().as_bytes();
    let rest = path
        .as_os_str()
        .as_bytes()
        .strip_prefix(prefix)
        .and_then(|r| {
            if prefix.ends_with(b"/") {
                Some(r)
            } else {
                r.strip_prefix(b"/")
            }
        })
        .filter(|r| !r.is_empty() && !r.ends_with(b"/"));
    match rest.map(std::str::from_utf8) {
        // A name a directory lists has no `/`, and is never `.` or `..`.
        Some(Ok(rel)) => Some(rel.into()),
        Some(Err(_)) => None,
        _ => rel_of(root, path).map(Into::into),
    }
}

/// `path` under `root` as a `/`-separated relative path (`None`: not UTF-8).
fn rel_of(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::with_capacity(rel.as_os_str().len());
    for c in rel.components() {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(c.as_os_str().to_str()?);
    }
    Some(out)
}

/// The file system's clock now, as it stamps files (a coarse clock: a tick
/// of some milliseconds): the modification time of `probe`, written now.
pub(crate) fn fs_now(probe: &Path) -> Result<[i64; 2]> {
    std::fs::write(probe, b"").map_err(Error::io("write", probe))?;
    let md = std::fs::symlink_metadata(probe).map_err(Error::io("inspect", probe))?;
    let st = Stat::of(&md);
    Ok([st.times[0], st.times[1]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_honours_ignore_files_and_never_enters_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join(".git/objects/x"), "o").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join(".ignore"), "secret\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/t"), "t").unwrap();
        std::fs::write(root.join("a.log"), "l").unwrap();
        std::fs::write(root.join("secret"), "s").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        std::fs::write(root.join("kept.log"), "k").unwrap();
        let found = walk(root, &HashSet::new(), &["kept.log".into()]).unwrap();
        let mut files: Vec<&str> = found.files.keys().map(String::as_str).collect();
        files.sort();
        assert_eq!(files, [".gitignore", ".ignore", "kept.log", "src/a.rs"]);
        assert_eq!(found.dirs.keys().collect::<Vec<_>>(), ["src"]);
    }
}
