//! Which entries undo, revert and rewind take: the newest step (a rename's
//! two sides together), the newest change to a file, everything since a
//! message.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::index::{Entry, Index, RevertRecord};
use crate::session::Session;
use crate::workspace::{Workspace, candidate_files};

use super::report::{RevertOptions, RevertReport};
use super::run::{Kind, revert_entries};

/// The newest entry's step: it, and the other entries of its group.
fn with_group(idx: &Index, newest: &Entry) -> Vec<u64> {
    match newest.group {
        Some(g) => idx
            .entries
            .iter()
            .filter(|e| e.group == Some(g))
            .map(|e| e.seq)
            .collect(),
        None => vec![newest.seq],
    }
}

impl Session {
    /// Reverts the session's newest step: its newest entry (with the other side
    /// of a rename). With no entry left but some evicted by the caps,
    /// [`Error::Evicted`] names the files of the newest step evicted.
    pub fn undo(&self, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        let left = Mutex::new(Vec::new());
        let r = revert_entries(self, opts, Kind::named("undo"), &|idx| {
            if let Some(e) = idx.entries.last() {
                return Ok(with_group(idx, e));
            }
            let newest = idx.evicted.as_ref().map(|g| {
                let files = g.files.iter().filter(|f| f.seq == g.through_seq);
                files.map(|f| f.absolute_path()).collect::<Vec<_>>()
            });
            match newest {
                Some(files) if !files.is_empty() => past_gap(&id, idx, vec![], files, opts, &left),
                _ => Err(Error::NothingToUndo {
                    session: id.clone(),
                }),
            }
        });
        with_gap(r, left)
    }

    /// Reverts the newest entry for `path` in `workspace` (with the other side
    /// of a rename).
    pub fn revert(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        opts: RevertOptions,
    ) -> Result<RevertReport> {
        let path = path.as_ref();
        let candidates = candidate_files(workspace, path)?;
        let id = self.id().to_owned();
        let left = Mutex::new(Vec::new());
        let r = revert_entries(self, opts, Kind::named("revert"), &|idx| {
            let newest = idx
                .entries
                .iter()
                .rev()
                .find(|e| candidates.contains(&e.absolute_path()));
            if let Some(e) = newest {
                return Ok(with_group(idx, e));
            }
            // Its changes were all evicted: it cannot be put back.
            let gone: Vec<PathBuf> = idx
                .evicted
                .iter()
                .flat_map(|g| &g.files)
                .map(|f| f.absolute_path())
                .filter(|f| candidates.contains(f))
                .collect();
            match gone.is_empty() {
                false => past_gap(&id, idx, vec![], gone, opts, &left),
                true => Err(Error::NoChangeToFile {
                    session: id.clone(),
                    path: path.to_owned(),
                }),
            }
        });
        with_gap(r, left)
    }

    /// Reverts every entry from the first one of `message_id` to the newest,
    /// newest first: every file goes back to how it was before that message.
    /// A message whose oldest entries the caps evicted reaches past the gap:
    /// [`Error::Evicted`] names the files it cannot put back as they were
    /// before it (with `force`, the others are).
    pub fn rewind(&self, message_id: &str, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        let left = Mutex::new(Vec::new());
        let r = revert_entries(self, opts, Kind::named("rewind"), &|idx| {
            let kept = idx.entries.iter().find(|e| e.message_id == message_id);
            let gap = idx.evicted.as_ref();
            let evicted = gap.and_then(|g| g.message(message_id));
            let first = match (kept, evicted) {
                (_, Some(m)) => m.seq,
                (Some(e), None) => e.seq,
                (None, None) => {
                    return Err(Error::MessageNotFound {
                        session: id.clone(),
                        message_id: message_id.to_owned(),
                    });
                }
            };
            let gone = gap.map(|g| g.files_since_seq(first)).unwrap_or_default();
            let gone = gone.iter().map(|f| f.absolute_path()).collect();
            past_gap(&id, idx, from_seq(idx, first), gone, opts, &left)
        });
        with_gap(r, left)
    }

    /// The undos, reverts and rewinds that `redo` can still put back, oldest first.
    pub fn history(&self) -> Result<Vec<RevertRecord>> {
        self.view(|s| s.history.clone())
    }
}

/// A revert whose selection `seqs` would reach past what the caps evicted
/// for the files `gone`: refused ([`Error::Evicted`]) unless forced; forced,
/// the selection without those files, which `left` keeps for the report.
pub(crate) fn past_gap(
    session: &str,
    idx: &Index,
    seqs: Vec<u64>,
    gone: Vec<PathBuf>,
    opts: RevertOptions,
    left: &Mutex<Vec<PathBuf>>,
) -> Result<Vec<u64>> {
    if gone.is_empty() {
        return Ok(seqs);
    }
    if !opts.force {
        return Err(Error::Evicted {
            session: session.to_owned(),
            files: gone,
        });
    }
    let keep = seqs
        .into_iter()
        .filter(|&s| {
            idx.entry(s)
                .is_some_and(|e| !gone.contains(&e.absolute_path()))
        })
        .collect();
    *left.lock().unwrap_or_else(|p| p.into_inner()) = gone;
    Ok(keep)
}

/// The report of a revert, with the files [`past_gap`] left out.
pub(crate) fn with_gap(
    report: Result<RevertReport>,
    left: Mutex<Vec<PathBuf>>,
) -> Result<RevertReport> {
    let mut report = report?;
    report.evicted = left.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(report)
}

/// Every entry from `first` on.
pub(crate) fn from_seq(idx: &Index, first: u64) -> Vec<u64> {
    idx.entries
        .iter()
        .filter(|e| e.seq >= first)
        .map(|e| e.seq)
        .collect()
}
