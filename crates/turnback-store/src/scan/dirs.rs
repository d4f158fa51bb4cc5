//! The directories a command made, removed or `chmod`ed: the directories a
//! scan's record lists compared with those the workspace has now. A file the
//! command replaced by a directory (or the reverse) is one of these too; the
//! commit records it as one change of that path, from one kind to the other.
//!
//! It only compares names and `lstat`s a directory the walk no longer lists
//! (an ignore file may name it now); it never opens anything.

use std::collections::BTreeMap;
use std::path::Path;

use crate::index::FileState;

use super::record::Header;
use super::walk::Found;

/// The directories that changed, by path.
#[derive(Default, Debug)]
pub(crate) struct DirChanges {
    /// Made by the command: their permission bits now.
    pub(crate) made: BTreeMap<String, u32>,
    /// Removed by the command: their permission bits when the scan began
    /// (`None`: a format 1 record, which did not say).
    pub(crate) removed: BTreeMap<String, Option<u32>>,
    /// There before and now with other permission bits: (before, now). A
    /// format 1 record, which did not say, has none.
    pub(crate) moded: BTreeMap<String, (u32, u32)>,
}

impl DirChanges {
    /// The directory at `path` as the scan began, if it was one (and the
    /// command removed it).
    pub(crate) fn before(&self, path: &str) -> Option<FileState> {
        self.removed.get(path).map(|m| FileState::directory(*m))
    }

    /// The directory at `path` now, if the command made it.
    pub(crate) fn after(&self, path: &str) -> Option<FileState> {
        self.made.get(path).map(|m| FileState::directory(Some(*m)))
    }
}

/// Compares the record's directories with the workspace's now (`now`, the
/// walk at the commit; `root`, the workspace); of the record's, only those
/// `looked_at` (where the commit looked again: all after a whole walk).
pub(crate) fn compare(
    record: &Header,
    now: &Found,
    root: &Path,
    looked_at: impl Fn(&str) -> bool,
) -> DirChanges {
    let before = &record.dirs;
    let made = now
        .dirs
        .iter()
        .filter(|(d, _)| !before.contains_key(d.as_str()))
        .map(|(d, m)| (d.clone(), *m))
        .collect();
    let removed = before
        .iter()
        .filter(|(d, _)| looked_at(d) && !now.dirs.contains_key(d.as_str()))
        // Not listed, but maybe only ignored now: gone only if no directory
        // is there (an lstat: a link to one is not one).
        .filter(|(d, _)| !std::fs::symlink_metadata(root.join(d)).is_ok_and(|m| m.is_dir()))
        .map(|(d, m)| (d.clone(), *m))
        .collect();
    let moded = now
        .dirs
        .iter()
        .filter_map(|(d, now)| match before.get(d.as_str()) {
            Some(Some(was)) if was != now => Some((d.clone(), (*was, *now))),
            _ => None,
        })
        .collect();
    DirChanges {
        made,
        removed,
        moded,
    }
}
