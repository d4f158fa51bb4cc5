//! The revert marker, `reverting.json`: what a revert in progress writes down
//! before it touches any file, so that the next holder of the session's lock
//! can undo what a revert that died part way did.
//!
//! A revert (undo, revert, rewind, redo, a forced rollback) backs up what each
//! file it will touch holds now, then writes the marker durably, then restores
//! the files one by one, then records the revert in the index, and only then
//! removes the marker. A marker that the next lock holder finds therefore
//! belongs to a revert whose process died. For each file it lists, that holder
//! asks the index whether the revert's change was recorded (its entries gone,
//! or for a redo its record gone): if it was, the file stays as the revert
//! left it; if not, a file found at the revert's target is put back to what the
//! revert found, from the backup taken before it was touched. A revert is thus
//! all or nothing across its files, and the index always says what the files
//! hold: a revert run again after the crash starts from the beginning, and its
//! redo puts back every file.
//!
//! This module is the marker's format: writing it, reading it (either
//! version), removing it. Settling a dead revert's marker is `recovery.rs`'s,
//! which never puts back a file that is not exactly as the dead revert left
//! it (someone changed it since: it stays), and never waits for a file's lock
//! while the caller holds the session's (it only tries; a file whose lock is
//! busy keeps the marker for the next time).

use serde::{Deserialize, Serialize};

use crate::durable::{self, Durability};
use crate::error::Result;
use crate::index::{FileState, Index, WorkspaceRoot};
use crate::layout::SessionDir;

/// The marker as written since format 3 kept what each file held.
#[derive(Serialize, Deserialize)]
pub(crate) struct Marker {
    /// 2; a marker without it is the older list of temporaries.
    pub(crate) version: u32,
    pub(crate) files: Vec<MarkedFile>,
}

/// One file a revert in progress will touch.
#[derive(Serialize, Deserialize, Clone)]
pub(crate) struct MarkedFile {
    pub(crate) workspace: WorkspaceRoot,
    /// The file, relative to the root.
    pub(crate) path: String,
    /// The temporary's name in the file's directory: the revert's own new
    /// contents, or recovery's when it puts the file back.
    pub(crate) temp: String,
    /// What the revert restores the file to.
    pub(crate) target: FileState,
    /// What the file held before the revert touched it, backed up; `None`
    /// when it was not kept (the rollback of a change never committed, which
    /// overwrites only the caller's own half-made write): then recovery leaves
    /// the file as it is.
    pub(crate) overwritten: Option<FileState>,
    /// How the index tells that the revert's change was recorded.
    pub(crate) done_when: DoneWhen,
}

/// The sign in the index that a revert was recorded.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DoneWhen {
    /// An undo, revert, rewind or rollback: these entries are gone.
    EntriesGone(Vec<u64>),
    /// A redo: this revert record is gone from the history.
    RecordGone(u64),
}

impl DoneWhen {
    pub(crate) fn holds(&self, idx: &Index) -> bool {
        match self {
            DoneWhen::EntriesGone(seqs) => seqs.iter().all(|&s| idx.entry(s).is_none()),
            DoneWhen::RecordGone(id) => !idx.history.iter().any(|r| r.id == *id),
        }
    }
}

/// The older marker (before recovery put files back): temporaries only.
#[derive(Deserialize)]
struct MarkedTemp {
    workspace: WorkspaceRoot,
    path: String,
    temp: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OnDisk {
    Files(Marker),
    Temps(Vec<MarkedTemp>),
}

/// Writes the marker durably, before the revert touches any file.
pub(crate) fn write(dir: &SessionDir, files: Vec<MarkedFile>) -> Result<()> {
    let marker = Marker { version: 2, files };
    let bytes = serde_json::to_vec(&marker).expect("a marker always serializes");
    durable::replace(
        &dir.marker_path(),
        &dir.marker_temp_path(),
        &bytes,
        Durability::Full,
    )
}

/// True when a marker is there: a revert died, or one is under way.
pub(crate) fn exists(dir: &SessionDir) -> bool {
    std::fs::symlink_metadata(dir.marker_path()).is_ok()
}

/// Removes the marker once the revert's change of the index is recorded.
pub(crate) fn remove(dir: &SessionDir) {
    let _ = std::fs::remove_file(dir.marker_path());
}

/// The files the marker lists, if there is one that could be read (`None`:
/// none, or one that is not this user's own file, or a symbolic link). A
/// marker that does not parse lists nothing.
pub(crate) fn read(dir: &SessionDir) -> Option<Vec<MarkedFile>> {
    let path = dir.marker_path();
    // Never through a symbolic link, and only the user's own file.
    let Ok(bytes) = crate::trust::open_read(&path).and_then(|mut f| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut bytes).map(|_| bytes)
    }) else {
        return None;
    };
    Some(match serde_json::from_slice::<OnDisk>(&bytes) {
        Ok(OnDisk::Files(m)) => m.files,
        Ok(OnDisk::Temps(temps)) => temps
            .into_iter()
            .map(|t| MarkedFile {
                workspace: t.workspace,
                path: t.path,
                temp: t.temp,
                target: FileState::absent(),
                overwritten: None,
                done_when: DoneWhen::EntriesGone(Vec::new()),
            })
            .collect(),
        // Written whole by a durable replace, so never torn; a marker that
        // does not parse was not written by turnback, and names nothing this
        // module may delete.
        Err(_) => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_older_marker_still_parses_as_a_list_of_temporaries() {
        let old = br#"[{"workspace":{"path":"/w","dev":1,"ino":2},"path":"a/b","temp":".turnback-0123456789abcdef.tmp"}]"#;
        match serde_json::from_slice::<OnDisk>(old).unwrap() {
            OnDisk::Temps(t) => assert_eq!(t[0].temp, ".turnback-0123456789abcdef.tmp"),
            OnDisk::Files(_) => panic!("read as the new marker"),
        }
    }

    #[test]
    fn done_when_reads_the_index() {
        let mut idx = Index::empty("s");
        assert!(DoneWhen::EntriesGone(vec![3]).holds(&idx));
        assert!(DoneWhen::RecordGone(1).holds(&idx));
        idx.history.push(crate::index::RevertRecord {
            id: 1,
            kind: "undo".into(),
            time: time::OffsetDateTime::now_utc(),
            entries: Vec::new(),
            turns: Vec::new(),
            files: Vec::new(),
            removed_dirs: Vec::new(),
        });
        assert!(!DoneWhen::RecordGone(1).holds(&idx));
    }
}
