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

/// The first line of a marker written since version 3: then one
/// [`MarkedFile`] a line, a later line of a file standing for it.
const HEADER_V3: &[u8] = br#"{"version":3}"#;

/// Writes the marker durably, before the revert touches any file: every
/// file the revert will touch, one a line after the header.
pub(crate) fn write(dir: &SessionDir, files: &[MarkedFile]) -> Result<()> {
    let mut bytes = HEADER_V3.to_vec();
    bytes.push(b'\n');
    lines(files, &mut bytes);
    durable::replace(
        &dir.marker_path(),
        &dir.marker_temp_path(),
        &bytes,
        Durability::Full,
    )
}

/// Adds `files` (their states now known) to the marker, durably: appended,
/// so a revert of 100,000 files writes each once more, not the whole list
/// again for every chunk. A crash part way leaves a torn last line, which
/// [`read`] skips: that chunk's files were not yet touched.
pub(crate) fn append(dir: &SessionDir, files: &[MarkedFile]) -> Result<()> {
    use std::io::Write;
    let path = dir.marker_path();
    let mut bytes = Vec::new();
    lines(files, &mut bytes);
    let mut f = crate::trust::open(crate::sys::store_file_options().append(true), &path)
        .map_err(crate::trust::store_io("open", &path))?;
    f.write_all(&bytes)
        .map_err(crate::error::Error::io("append to", &path))?;
    f.sync_data()
        .map_err(crate::error::Error::io("sync", &path))
}

fn lines(files: &[MarkedFile], out: &mut Vec<u8>) {
    for f in files {
        serde_json::to_writer(&mut *out, f).expect("a marked file always serializes");
        out.push(b'\n');
    }
}

/// The files of a version 3 marker: a later line of a file stands for its
/// earlier ones; a line that does not parse (torn by a crash) and what
/// follows it are skipped.
fn read_v3(body: &[u8]) -> Vec<MarkedFile> {
    let mut files: Vec<MarkedFile> = Vec::new();
    let mut at: std::collections::HashMap<(std::path::PathBuf, String), usize> =
        std::collections::HashMap::new();
    for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(f) = serde_json::from_slice::<MarkedFile>(line) else {
            break;
        };
        let key = (f.workspace.path.clone(), f.path.clone());
        match at.get(&key) {
            Some(&i) => files[i] = f,
            None => {
                at.insert(key, files.len());
                files.push(f);
            }
        }
    }
    files
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
    if let Some(body) = bytes
        .strip_prefix(HEADER_V3)
        .and_then(|b| b.strip_prefix(b"\n"))
    {
        return Some(read_v3(body));
    }
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
    fn an_appended_line_stands_for_the_file_and_a_torn_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let sd = SessionDir::new(dir.path(), "s");
        std::fs::create_dir_all(sd.path()).unwrap();
        let file = |path: &str, overwritten: Option<FileState>| MarkedFile {
            workspace: WorkspaceRoot {
                path: "/w".into(),
                dev: 1,
                ino: 2,
            },
            path: path.into(),
            temp: ".t".into(),
            target: FileState::absent(),
            overwritten,
            done_when: DoneWhen::EntriesGone(vec![1]),
        };
        write(&sd, &[file("a", None), file("b", None)]).unwrap();
        let held = FileState::present("ab".repeat(32), 3, 0o644);
        append(&sd, &[file("b", Some(held.clone()))]).unwrap();
        let read_back = read(&sd).unwrap();
        assert_eq!(read_back.len(), 2);
        assert_eq!(read_back[0].overwritten, None);
        assert_eq!(read_back[1].overwritten, Some(held.clone()));
        // A crash in the middle of the next append.
        let mut torn = serde_json::to_vec(&file("a", Some(held))).unwrap();
        torn.truncate(torn.len() / 2);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(sd.marker_path())
            .unwrap();
        std::io::Write::write_all(&mut f, &torn).unwrap();
        let read_back = read(&sd).unwrap();
        assert_eq!(read_back[0].overwritten, None, "the torn line was read");
        assert!(read_back[1].overwritten.is_some());
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
