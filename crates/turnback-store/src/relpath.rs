//! A path relative to a workspace root, validated once (as jj's `RepoPath`):
//! what the index stores for a file or a directory, and what the store walks
//! to, joins to a root and names its locks by. And the names of the
//! temporaries turnback makes beside a workspace file.
//!
//! The index keeps such paths as plain strings (`Entry::path`, its format is
//! unchanged); inside the store they are [`RelPath`]s, so that the rules
//! (`/`-separated names, none empty, `.` or `..`, no NUL) are checked in one
//! place, when a path comes in, and never again by hand.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::session_id::random_u64;

/// A workspace-relative path: `/`-separated names, none empty, `.` or `..`,
/// and no NUL. It can never climb out of the root it is joined to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RelPath(String);

/// True when `p` follows the rules of a [`RelPath`]: what the index checks of
/// every path it reads.
pub(crate) fn is_relative_path(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\0')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

impl RelPath {
    /// `p` as a relative path, if it is one.
    pub(crate) fn new(p: &str) -> Option<RelPath> {
        is_relative_path(p).then(|| RelPath(p.to_owned()))
    }

    /// A path the index has read (the path of an entry, of a file a revert
    /// restored, of a directory it made or removed): the index refuses one
    /// that is not relative ([`is_relative_path`]) before anyone sees it.
    pub(crate) fn checked(p: &str) -> RelPath {
        RelPath::new(p).expect("the index checks every path it reads")
    }

    /// The path the names `names` make, in order, if they make one.
    pub(crate) fn from_names(names: &[String]) -> Option<RelPath> {
        RelPath::new(&names.join("/"))
    }

    /// `p` relative and with `.` and `..` applied lexically (without looking
    /// at the filesystem): `None` when it is absolute, climbs out, names
    /// nothing, or is not UTF-8.
    pub(crate) fn lexical(p: &Path) -> Option<RelPath> {
        let mut parts: Vec<&str> = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(n) => parts.push(n.to_str()?),
                Component::ParentDir => {
                    parts.pop()?;
                }
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        RelPath::new(&parts.join("/"))
    }

    /// The path as the index stores it.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The path under the workspace root `root`.
    pub(crate) fn under(&self, root: &Path) -> PathBuf {
        root.join(&self.0)
    }

    /// The path of `name` in this directory, if `name` is one plain name.
    pub(crate) fn child(&self, name: &str) -> Option<RelPath> {
        (!name.contains('/')).then(|| RelPath::new(&format!("{}/{name}", self.0)))?
    }

    /// The directory that holds this path (`None`: it is at the root), and
    /// its last name.
    pub(crate) fn split_last(&self) -> (Option<RelPath>, &str) {
        match self.0.rsplit_once('/') {
            Some((dir, name)) => (Some(RelPath(dir.to_owned())), name),
            None => (None, &self.0),
        }
    }

    /// The directory that holds this path, `None` at the root.
    pub(crate) fn parent(&self) -> Option<RelPath> {
        self.split_last().0
    }

    /// Each directory above this path, outermost first (`a`, `a/b` for
    /// `a/b/c`).
    pub(crate) fn ancestors(&self) -> Vec<RelPath> {
        let mut out = Vec::new();
        let mut at = self.parent();
        while let Some(dir) = at {
            at = dir.parent();
            out.push(dir);
        }
        out.reverse();
        out
    }

    /// How many directories deep it is (0 at the root).
    pub(crate) fn depth(&self) -> usize {
        self.0.matches('/').count()
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<RelPath> for String {
    fn from(p: RelPath) -> String {
        p.0
    }
}

/// The prefix of every temporary name turnback makes in a workspace.
pub(crate) const TEMP_PREFIX: &str = ".turnback-";

/// True when `name` is one turnback makes for a temporary: the only names in
/// a workspace that recovery may delete.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
        && name.ends_with(".tmp")
        && !name.contains('/')
        && name.len() < 64
}

/// A fresh name for a temporary in a workspace directory.
pub(crate) fn new_temp_name() -> String {
    format!("{TEMP_PREFIX}{:016x}.tmp", random_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_path_rules() {
        assert!(is_relative_path("a/b.txt"));
        for bad in ["", "/a", "a//b", "a/./b", "a/../b", "..", "a/"] {
            assert!(!is_relative_path(bad), "{bad:?}");
            assert_eq!(RelPath::new(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn lexical_paths() {
        let lexical = |p: &str| RelPath::lexical(Path::new(p)).map(String::from);
        assert_eq!(lexical("a/./b/../c").as_deref(), Some("a/c"));
        assert_eq!(lexical("../a"), None);
        assert_eq!(lexical("/a"), None);
        assert_eq!(lexical("."), None);
    }

    #[test]
    fn parents_names_and_children() {
        let p = RelPath::new("a/b/c.txt").unwrap();
        let (dir, name) = p.split_last();
        assert_eq!(
            (dir.as_ref().map(RelPath::as_str), name),
            (Some("a/b"), "c.txt")
        );
        let dirs: Vec<String> = p.ancestors().into_iter().map(String::from).collect();
        assert_eq!(dirs, ["a", "a/b"]);
        assert_eq!(p.depth(), 2);
        assert_eq!(RelPath::new("top").unwrap().parent(), None);
        assert_eq!(p.under(Path::new("/w")), Path::new("/w/a/b/c.txt"));
        let d = RelPath::new("d").unwrap();
        assert_eq!(d.child("x").map(String::from).as_deref(), Some("d/x"));
        assert_eq!(d.child("x/y"), None);
        assert_eq!(d.child(".."), None);
    }

    #[test]
    fn temporary_names_are_recognised() {
        let t = new_temp_name();
        assert!(is_temp_name(&t), "{t}");
        for bad in [
            "a.tmp",
            ".turnback-x",
            ".turnback-a/b.tmp",
            "../.turnback-1.tmp",
        ] {
            assert!(!is_temp_name(bad), "{bad}");
        }
    }
}
