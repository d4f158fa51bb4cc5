//! Recording a revert for redo: the entries it took out of the index, what
//! each file held before (backed up), and the directories it removed.

use time::OffsetDateTime;

use crate::index::{Entry, FileState, RemovedDir, RevertRecord, RevertedFile, WorkspaceRoot};
use crate::journal::Tracked;
use crate::relpath::RelPath;
use crate::session::Session;
use crate::workspace::Workspace;

use super::plan::FilePlan;
use super::report::FileStatus;

/// Takes the entries of the restored files out of the index and records what
/// was done for redo (a revert record of kind `name`), with the directories
/// the reverted changes made, now removed when empty.
pub(super) fn record_revert(
    session: &Session,
    idx: &mut Tracked,
    name: &'static str,
    restored: &[(&FilePlan, Option<FileState>)],
    turns: Vec<crate::index::Turn>,
) {
    let taken: Vec<u64> = restored.iter().flat_map(|(p, _)| p.seqs.clone()).collect();
    let entries: Vec<Entry> = idx
        .entries
        .iter()
        .filter(|e| taken.contains(&e.seq))
        .cloned()
        .collect();
    idx.remove_entries(&taken);
    let restored_plans: Vec<&FilePlan> = restored.iter().map(|(p, _)| *p).collect();
    let removed_dirs = remove_created_dirs(session, &restored_plans);
    if entries.is_empty() && turns.is_empty() {
        return;
    }
    // A file found already restored was overwritten with nothing: the revert
    // found it at its target, and redo leaves it there.
    let files = restored
        .iter()
        .map(|(p, found)| RevertedFile {
            workspace: p.root.clone(),
            path: p.rel.to_string(),
            overwritten: match p.status {
                FileStatus::AlreadyReverted => Some(p.target.clone()),
                _ => found.clone(),
            },
            restored: p.target.clone(),
        })
        .collect();
    idx.push_record(RevertRecord {
        id: 0, // numbered by the index
        kind: name.to_owned(),
        time: OffsetDateTime::now_utc(),
        entries,
        turns,
        files,
        removed_dirs,
    });
}

/// Removes the directories that the reverted changes created, once every file
/// is restored and deepest first (one file's directory may hold another's);
/// returns those removed, for redo to make again.
pub(super) fn remove_created_dirs(session: &Session, restored: &[&FilePlan]) -> Vec<RemovedDir> {
    let mut removed = Vec::new();
    let mut by_root: Vec<(&WorkspaceRoot, Vec<&RelPath>)> = Vec::new();
    for p in restored.iter().filter(|p| !p.target.exists) {
        match by_root.iter_mut().find(|(r, _)| *r == &p.root) {
            Some((_, dirs)) => dirs.extend(&p.created_dirs),
            None => by_root.push((&p.root, p.created_dirs.iter().collect())),
        }
    }
    for (root, mut dirs) in by_root {
        let Ok(ws) = Workspace::reopen(root) else {
            continue;
        };
        // Outermost first, as remove_empty_dirs expects (it works from the end).
        dirs.sort_by_key(|d| (d.depth(), d.as_str()));
        dirs.dedup();
        let gone = session
            .store()
            .remove_unused_dirs(&ws, &dirs.into_iter().cloned().collect::<Vec<_>>());
        removed.extend(gone.into_iter().map(|path| RemovedDir {
            workspace: root.clone(),
            path: path.into(),
        }));
    }
    removed
}
