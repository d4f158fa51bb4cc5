//! Which entries undo, revert and rewind take: the newest step (a rename's
//! two sides together), the newest change to a file, everything since a
//! message.

use std::path::Path;

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
    /// of a rename).
    pub fn undo(&self, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        revert_entries(self, opts, Kind::named("undo"), &move |idx| {
            idx.entries
                .last()
                .map(|e| with_group(idx, e))
                .ok_or_else(|| Error::NothingToUndo {
                    session: id.clone(),
                })
        })
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
        revert_entries(self, opts, Kind::named("revert"), &move |idx| {
            idx.entries
                .iter()
                .rev()
                .find(|e| candidates.contains(&e.absolute_path()))
                .map(|e| with_group(idx, e))
                .ok_or_else(|| Error::NoChangeToFile {
                    session: id.clone(),
                    path: path.to_owned(),
                })
        })
    }

    /// Reverts every entry from the first one of `message_id` to the newest,
    /// newest first: every file goes back to how it was before that message.
    pub fn rewind(&self, message_id: &str, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        revert_entries(self, opts, Kind::named("rewind"), &move |idx| {
            let first = idx
                .entries
                .iter()
                .find(|e| e.message_id == message_id)
                .ok_or_else(|| Error::MessageNotFound {
                    session: id.clone(),
                    message_id: message_id.to_owned(),
                })?;
            Ok(from_seq(idx, first.seq))
        })
    }

    /// The undos, reverts and rewinds that `redo` can still put back, oldest first.
    pub fn history(&self) -> Result<Vec<RevertRecord>> {
        self.view(|s| s.history.clone())
    }
}

/// Every entry from `first` on.
pub(crate) fn from_seq(idx: &Index, first: u64) -> Vec<u64> {
    idx.entries
        .iter()
        .filter(|e| e.seq >= first)
        .map(|e| e.seq)
        .collect()
}
