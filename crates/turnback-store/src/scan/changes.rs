//! Comparing the workspace with a scan's record: which files may have
//! changed, by stat alone (a racy stat always counts); its directories are
//! `dirs.rs`'s. Contents are compared later, under the files' locks.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use crate::error::Result;

use super::record::{Record, Seen};
use super::walk::{self, Found, Stat};

/// A path whose stat is not what the record says.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) path: String,
    pub(crate) before: Option<Seen>,
    pub(crate) now: Option<Stat>,
}

/// The workspace now and the candidates, in path order.
pub(crate) fn compare(record: &Record, skip: &HashSet<PathBuf>) -> Result<(Found, Vec<Candidate>)> {
    let root = &record.header.workspace.path;
    // What the record saw is looked at even if an ignore file now names it
    // (a command that edits .gitignore does not hide its own deletions).
    let also: Vec<String> = record.files.iter().map(|f| f.path.clone()).collect();
    let now = walk::walk(root, skip, &also)?;
    let mut out = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for before in &record.files {
        seen.insert(&before.path);
        let st = now.files.get(&before.path).copied();
        if st == Some(before.stat) && !before.racy {
            continue;
        }
        out.push(Candidate {
            path: before.path.clone(),
            before: Some(before.clone()),
            now: st,
        });
    }
    for (path, st) in &now.files {
        if !seen.contains(path.as_str()) {
            out.push(Candidate {
                path: path.clone(),
                before: None,
                now: Some(*st),
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((now, out))
}
