//! What a scan reports when it ends: each change it found (and its entry),
//! and each it found but does not record, and why.

use std::collections::BTreeMap;

use crate::index::{Entry, FileState};

use super::record::Header;

/// What a committed (or rolled back) scan found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanReport {
    /// The scan's id.
    pub id: String,
    /// The session.
    pub session: String,
    /// The message its entries are recorded under.
    pub message_id: String,
    /// The command line it bracketed, where known.
    pub command: Option<String>,
    /// Each change found, in path order.
    pub changes: Vec<ScanChange>,
    /// Changes found that no entry records, and why.
    pub unrecorded: Vec<Unrecorded>,
    /// True for a rollback: the changes were put back, nothing recorded.
    pub rolled_back: bool,
}

/// One file (or directory) a scan found changed, and its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanChange {
    /// The path relative to the workspace.
    pub path: String,
    /// What happened to it.
    pub kind: ScanChangeKind,
    /// True for a directory: one the command made, or removed, or that now
    /// stands where a file was ([`ScanChangeKind::Replaced`]).
    pub directory: bool,
    /// Its entry (none after a rollback).
    pub seq: Option<u64>,
    /// Other sessions whose scans saw the same change (an undo refuses).
    pub shared_with: Vec<String>,
    /// After a rollback: a directory the command made that stays, since it
    /// holds this (relative to the workspace), which the scan did not
    /// record (an ignored file, say). It is emptied of what the command made.
    pub kept: Option<String>,
}

/// What a command did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanChangeKind {
    /// New contents (and maybe a new mode).
    Modified,
    /// Only the permission bits changed.
    ModeChanged,
    /// It did not exist before.
    Created,
    /// It no longer exists (a rename is a delete and a create).
    Deleted,
    /// A file became a directory, or a directory a file
    /// ([`ScanChange::directory`] says which it is now).
    Replaced,
}

/// What a path held, on one side of a change a scan does not record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathKind {
    /// Nothing.
    Absent,
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Link {
        /// Its target, as the link holds it (lossily, if not UTF-8).
        target: String,
    },
}

/// A change a scan found but does not record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrecorded {
    /// A symbolic link was made, changed or removed, or replaced a file or
    /// directory, or was replaced by one: not undone (no entry records a
    /// link, and no revert follows one).
    Link {
        /// The path.
        path: String,
        /// What was there when the scan began.
        before: PathKind,
        /// What is there now.
        now: PathKind,
    },
    /// A file or directory that was in a directory a symbolic link has
    /// replaced: not restored (a revert never goes through a link).
    UnderLink {
        /// The path.
        path: String,
        /// The link, on the way to it.
        link: String,
    },
    /// A file over the size limit changed: it was not backed up.
    TooBig {
        /// The path.
        path: String,
        /// Its size when the scan began (or now, for a new one).
        size: u64,
    },
    /// Another session (or this one) recorded this change during the
    /// bracket: it is that session's.
    RecordedBy {
        /// The path.
        path: String,
        /// The session that recorded it.
        session: String,
    },
    /// Its contents before the command could not be had (a git object
    /// gone, a file a filter changes): not backed up.
    NoBackup {
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
}

/// What a change from `before` to `now` is.
pub(super) fn kind_of(before: &FileState, now: &FileState) -> ScanChangeKind {
    if !before.exists {
        ScanChangeKind::Created
    } else if !now.exists {
        ScanChangeKind::Deleted
    } else if before.is_dir() != now.is_dir() {
        ScanChangeKind::Replaced
    } else if now.same_contents(before) {
        ScanChangeKind::ModeChanged
    } else {
        ScanChangeKind::Modified
    }
}

/// What a rollback knows of each change it puts back, by path (its entries
/// record no "after"): what the change was, whether a directory is (or
/// was) there, and what kept a directory the command made from going.
#[derive(Default)]
pub(super) struct RolledBack {
    pub(super) changes: BTreeMap<String, (ScanChangeKind, bool)>,
    pub(super) kept: BTreeMap<String, String>,
}

/// The report of scan `h` of `session` ended with `entries` recorded (for
/// a rollback, `rolled_back` says more of each).
pub(super) fn report(
    h: &Header,
    session: &str,
    rolled_back: Option<&RolledBack>,
    entries: &[Entry],
    unrecorded: Vec<Unrecorded>,
) -> ScanReport {
    let mut changes: Vec<ScanChange> = entries
        .iter()
        .map(|e| {
            let after = e.after.clone().unwrap_or_else(FileState::absent);
            let (kind, directory) = match rolled_back {
                None => (
                    kind_of(&e.before, &after),
                    after.is_dir() || (!after.exists && e.before.is_dir()),
                ),
                Some(r) => match r.changes.get(&e.path) {
                    Some(k) => *k,
                    // A rollback that died after recording, finished: what
                    // its entries say (no "after").
                    None if !e.before.exists => (ScanChangeKind::Created, false),
                    None => (ScanChangeKind::Modified, e.before.is_dir()),
                },
            };
            ScanChange {
                path: e.path.clone(),
                kind,
                directory,
                seq: rolled_back.is_none().then_some(e.seq),
                shared_with: e
                    .scan
                    .as_ref()
                    .map(|m| m.shared_with.clone())
                    .unwrap_or_default(),
                kept: rolled_back.and_then(|r| r.kept.get(&e.path).cloned()),
            }
        })
        .collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    ScanReport {
        id: h.id.clone(),
        session: session.to_owned(),
        message_id: h.message_id.clone(),
        command: h.command.clone(),
        changes,
        unrecorded,
        rolled_back: rolled_back.is_some(),
    }
}
