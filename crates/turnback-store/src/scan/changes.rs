//! Comparing the workspace with a scan's record: which files may have
//! changed, by stat alone (a racy stat always counts); its directories are
//! `dirs.rs`'s. Contents are compared later, under the files' locks. The
//! workspace is walked whole, or only where a watch saw something happen
//! (`watch.rs`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::record::{Body, Header, Record, Seen};
use super::walk::{self, Found, Stat};
use super::watch::Touched;

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
    let out = candidates(record.files.iter(), &now);
    Ok((now, out))
}

/// [`compare`] where a watch saw something happen (`touched`): the
/// directories it names listed again, the trees walked, and the files the
/// record has there, or that a watch could not cover, or that are racy,
/// looked at. The workspace now, where it was looked at, and the candidates.
pub(crate) fn compare_touched(
    header: &Header,
    body: &Body,
    touched: &Touched,
    skip: &HashSet<PathBuf>,
) -> Result<(Found, Vec<Candidate>)> {
    let root: &Path = &header.workspace.path;
    let mut now = Found::default();
    let dirs: Vec<PathBuf> = touched.dirs.iter().map(|d| root.join(d)).collect();
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    walk::list_into(root, &dirs, Some(1), skip, &mut None, &mut now)?;
    // Only a directory its parent's listing found (not ignored, not a link)
    // is walked.
    let trees: Vec<PathBuf> = touched
        .outer_trees()
        .into_iter()
        .filter(|t| now.dirs.contains_key(*t))
        .map(|t| root.join(t))
        .collect();
    let trees: Vec<&Path> = trees.iter().map(PathBuf::as_path).collect();
    walk::list_into(root, &trees, None, skip, &mut None, &mut now)?;
    // A file outside every watched directory: git tracks it in an ignored
    // one. A body lists a directory's files mostly one after another, so
    // each directory is looked up once in a row.
    let watched: foldhash::HashSet<&str> = header.dirs.keys().map(String::as_str).collect();
    let mut last: Option<(&str, bool)> = None;
    let mut looked_at: Vec<Seen> = Vec::new();
    for f in body.files() {
        let f = f.map_err(|why| Error::ScanFailed {
            path: root.to_owned(),
            reason: format!("damaged scan record: {why}"),
        })?;
        let parent = f.path.rsplit_once('/').map_or("", |(d, _)| d);
        let in_dir = match last {
            Some((p, verdict)) if p == parent => verdict,
            _ => {
                let unwatched = !parent.is_empty() && !watched.contains(parent);
                let verdict = unwatched || touched.dirs.contains(parent);
                last = Some((parent, verdict));
                verdict
            }
        };
        if f.racy || in_dir || touched.in_tree(f.path) {
            looked_at.push(f.to_seen());
        }
    }
    // What the record saw there is looked at even if the listing left it out
    // (an ignore file names it, or it is outside what was listed).
    let also: Vec<String> = looked_at.iter().map(|f| f.path.clone()).collect();
    walk::add_also(root, &mut now, &also);
    let out = candidates(looked_at.iter(), &now);
    Ok((now, out))
}

/// The candidates among `before` (the record's files looked at) and `now`
/// (the workspace where it was looked at), in path order.
fn candidates<'a>(before: impl Iterator<Item = &'a Seen>, now: &Found) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for before in before {
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
    out
}
