//! A scan bracket watched while its command runs: where the platform has a
//! watcher (`sys::DirWatch`: inotify on Linux), the beginning watches every
//! directory it lists, and the commit looks again only where something
//! happened, instead of walking the whole workspace a second time.
//!
//! The watch only narrows where the commit looks; what changed is still
//! decided by comparing stats with the record, as after a walk. So a watch
//! may report more than changed (harmless), and whenever it may have missed
//! something the commit walks everything: events lost, the workspace's root
//! itself gone, an ignore file written (what is in scope changes), the
//! bracket committed by another process (nothing watched there). Files the
//! walk cannot watch (tracked files git lists in ignored directories) and
//! those whose stat could not vouch for them (racy) are looked at always.
//!
//! What no watcher sees is not seen: a write through a hard link from a
//! directory outside the workspace, a write through a shared memory map, a
//! change made by another machine on a network file system.

use std::collections::BTreeSet;

use crate::sys::{DirWatch, WatchEvent};

use super::record::{Body, Header};

/// What a bracket begun in this process keeps for its commit: the watch and
/// the record it wrote (so the commit need not read it back).
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) watch: DirWatch,
    pub(crate) header: Header,
    pub(crate) body: Body,
}

/// Where the events say something happened.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Touched {
    /// Directories an entry of which was written, changed, made, removed or
    /// moved: each is listed again, one level.
    pub(crate) dirs: BTreeSet<String>,
    /// Directories made, removed, moved or replaced: everything under each
    /// is looked at, the record's and the workspace's.
    pub(crate) trees: BTreeSet<String>,
}

/// The ignore files: writing one changes what is in scope everywhere below.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

impl Touched {
    /// Where `events` say something happened; `None` when they cannot say
    /// (see the module doc): the commit walks everything.
    pub(crate) fn from_events(events: Vec<WatchEvent>) -> Option<Touched> {
        let mut t = Touched::default();
        for ev in events {
            match ev {
                WatchEvent::Lost => return None,
                WatchEvent::DirGone { dir } if dir.is_empty() => return None,
                WatchEvent::DirGone { dir } => {
                    t.dirs.insert(parent(&dir).to_owned());
                    t.trees.insert(dir);
                }
                WatchEvent::Entry {
                    dir,
                    name,
                    is_dir,
                    came_or_went,
                } => {
                    // A name that is not UTF-8 is out of scope (the walk
                    // skips it), unless it is a directory: what moved into
                    // or out of it is then not known.
                    let Some(name) = name.to_str() else {
                        if is_dir {
                            return None;
                        }
                        continue;
                    };
                    if IGNORE_FILES.contains(&name) {
                        return None;
                    }
                    let path = join(&dir, name);
                    if is_dir && came_or_went {
                        t.trees.insert(path);
                    }
                    t.dirs.insert(dir);
                }
            }
        }
        Some(t)
    }

    /// True when the commit looks at `path` again: it is in a directory
    /// listed again, or under a tree.
    pub(crate) fn covers(&self, path: &str) -> bool {
        self.dirs.contains(parent(path)) || self.in_tree(path)
    }

    /// True when `path` is a tree or under one.
    pub(crate) fn in_tree(&self, path: &str) -> bool {
        self.trees.iter().any(|t| {
            path.strip_prefix(t.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    /// The trees to walk, outermost only (one inside another is walked with
    /// it).
    pub(crate) fn outer_trees(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for t in &self.trees {
            let inside = out
                .iter()
                .any(|o| t.strip_prefix(o).is_some_and(|rest| rest.starts_with('/')));
            if !inside {
                out.push(t);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dir: &str, name: &str, is_dir: bool, came_or_went: bool) -> WatchEvent {
        WatchEvent::Entry {
            dir: dir.into(),
            name: name.into(),
            is_dir,
            came_or_went,
        }
    }

    #[test]
    fn events_name_the_directories_to_list_and_the_trees_to_walk() {
        let t = Touched::from_events(vec![
            entry("src", "a.rs", false, false),
            entry("", "new", true, true),
            entry("new/deep", "x", false, true),
            entry("src", "sub", true, false),
            WatchEvent::DirGone {
                dir: "old/gone".into(),
            },
        ])
        .unwrap();
        assert_eq!(
            t.dirs.iter().collect::<Vec<_>>(),
            ["", "new/deep", "old", "src"]
        );
        assert_eq!(t.trees.iter().collect::<Vec<_>>(), ["new", "old/gone"]);
        assert!(t.covers("src/a.rs") && t.covers("src/b.rs") && t.covers("src/sub"));
        assert!(
            !t.covers("src/sub/c.rs"),
            "a mode change lists its parent only"
        );
        assert!(t.covers("new/deep/y/z") && t.covers("old/gone/f") && t.covers("top"));
        assert!(!t.covers("newer/x") && !t.covers("lib/a.rs"));
        assert_eq!(t.outer_trees(), ["new", "old/gone"]);
    }

    #[test]
    fn events_that_cannot_say_where_send_the_commit_walking() {
        for ev in [
            WatchEvent::Lost,
            WatchEvent::DirGone { dir: String::new() },
            entry("src", ".gitignore", false, false),
            entry("", ".ignore", false, true),
        ] {
            assert_eq!(
                Touched::from_events(vec![entry("a", "b", false, false), ev.clone()]),
                None,
                "{ev:?}"
            );
        }
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"\xff").to_owned();
        let dir = WatchEvent::Entry {
            dir: "a".into(),
            name: bad.clone(),
            is_dir: true,
            came_or_went: true,
        };
        assert_eq!(Touched::from_events(vec![dir]), None);
        let file = WatchEvent::Entry {
            dir: "a".into(),
            name: bad,
            is_dir: false,
            came_or_went: true,
        };
        assert!(Touched::from_events(vec![file]).is_some_and(|t| t.dirs.is_empty()));
    }
}
