//! One session's summary record: what the lookups across sessions need of
//! its index (where it worked, how much, when, and per file its newest
//! change and its newest undo), computed from the index and stamped with the
//! versions of the files it was computed from (`docs/FORMAT.md`, "The
//! summary").
//!
//! This part owns the record's format and building one from an index; it
//! never decides whether a record is still true (`fresh.rs` does, by its
//! stamp) and never writes a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::filter::{PathFilter, key_of};
use crate::index::{Entry, Index};
use crate::layout::IndexStamp;

/// The format of a record this build writes; a record of another is read
/// as missing (and written again).
pub(crate) const RECORD_FORMAT: u32 = 1;

/// The newest entry in effect of a file, a root or a session: what
/// `latest_session_for` compares across sessions (by time, then `seq`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Newest {
    #[serde(with = "time::serde::rfc3339")]
    pub(crate) time: OffsetDateTime,
    pub(crate) seq: u64,
}

/// A workspace root the session's entries or revert records are in, with
/// the newest of each over its files.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct RootSummary {
    pub(crate) path: PathBuf,
    /// The newest entry in effect of a file under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) entry: Option<Newest>,
    /// The newest undo, revert or rewind that took back or restored a file
    /// under it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub(crate) taken: Option<OffsetDateTime>,
}

/// A record's first line: everything but the files.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) format: u32,
    pub(crate) session: String,
    /// The versions of `index.json` and `journal.jsonl` it was computed from.
    pub(crate) stamp: IndexStamp,
    /// Entries in effect.
    pub(crate) entries: usize,
    /// The newest entry's time, or its newest revert record's.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub(crate) last_change: Option<OffsetDateTime>,
    /// The roots of its entries in effect, then of the entries its revert
    /// records took, in order of first appearance (what `sessions` lists).
    pub(crate) workspaces: Vec<PathBuf>,
    /// Every root a file of the record is under, with its newest changes.
    pub(crate) roots: Vec<RootSummary>,
    /// The files and their directories below their roots ([`PathFilter`]).
    pub(crate) filter: String,
    /// How many file lines follow.
    pub(crate) files: usize,
}

/// One file of a record (a line after the header).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileLine {
    /// The file's absolute path (its root joined with its relative path).
    pub(crate) file: PathBuf,
    /// Its newest entry in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) entry: Option<Newest>,
    /// The newest revert record that took back or restored it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub(crate) taken: Option<OffsetDateTime>,
}

/// A whole record: its header and its files, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) header: Header,
    pub(crate) files: Vec<FileLine>,
    /// The header's filter, as made.
    pub(crate) filter: PathFilter,
}

impl Record {
    /// The record of session `session`'s index `idx`, read from the files
    /// whose versions are `stamp`.
    pub(crate) fn of(session: &str, idx: &Index, stamp: IndexStamp) -> Record {
        let mut workspaces: Vec<PathBuf> = Vec::new();
        let recorded = idx.history.iter().flat_map(|r| &r.entries);
        for e in idx.entries.iter().chain(recorded) {
            if !workspaces.contains(&e.workspace.path) {
                workspaces.push(e.workspace.path.clone());
            }
        }
        let changes = idx.entries.iter().map(|e| e.time);
        let reverts = idx.history.iter().map(|r| r.time);
        let last_change = changes.chain(reverts).max();
        // file -> (its root, the line)
        let mut files: BTreeMap<PathBuf, (PathBuf, FileLine)> = BTreeMap::new();
        note_entries(&mut files, &idx.entries);
        for r in &idx.history {
            let touched = r
                .files
                .iter()
                .map(|f| (&f.workspace.path, f.absolute_path()))
                .chain(
                    r.entries
                        .iter()
                        .map(|e| (&e.workspace.path, e.absolute_path())),
                );
            for (root, file) in touched {
                let (_, l) = slot(&mut files, root, &file);
                l.taken = l.taken.max(Some(r.time));
            }
        }
        let mut roots: Vec<RootSummary> = Vec::new();
        let mut keys: Vec<PathBuf> = Vec::new();
        for (root, l) in files.values() {
            let at = match roots.iter().position(|r| &r.path == root) {
                Some(at) => at,
                None => {
                    roots.push(RootSummary {
                        path: root.clone(),
                        entry: None,
                        taken: None,
                    });
                    roots.len() - 1
                }
            };
            roots[at].entry = roots[at].entry.max(l.entry);
            roots[at].taken = roots[at].taken.max(l.taken);
            // The file, and each directory between it and its root.
            for a in l.file.ancestors() {
                if a == root.as_path() || !a.starts_with(root) {
                    break;
                }
                keys.push(a.to_owned());
            }
        }
        keys.sort();
        keys.dedup();
        let filter = PathFilter::of(keys.iter().map(PathBuf::as_path));
        let files: Vec<FileLine> = files.into_values().map(|(_, l)| l).collect();
        Record {
            header: Header {
                format: RECORD_FORMAT,
                session: session.to_owned(),
                stamp,
                entries: idx.entries.len(),
                last_change,
                workspaces,
                roots,
                filter: filter.to_hex(),
                files: files.len(),
            },
            files,
            filter,
        }
    }

    /// The record as its file holds it: the header's line, then one line
    /// per file.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(&self.header).expect("a header always serializes");
        out.push(b'\n');
        for l in &self.files {
            serde_json::to_writer(&mut out, l).expect("a file line always serializes");
            out.push(b'\n');
        }
        out
    }
}

/// The line of `file` (under `root`), made if it is not there yet.
fn slot<'a>(
    files: &'a mut BTreeMap<PathBuf, (PathBuf, FileLine)>,
    root: &Path,
    file: &Path,
) -> &'a mut (PathBuf, FileLine) {
    let key = key_of(file);
    files.entry(key.clone()).or_insert_with(|| {
        let line = FileLine {
            file: key,
            entry: None,
            taken: None,
        };
        (key_of(root), line)
    })
}

/// Each entry in effect noted as its file's newest where it is.
fn note_entries(files: &mut BTreeMap<PathBuf, (PathBuf, FileLine)>, entries: &[Entry]) {
    for e in entries {
        let (_, l) = slot(files, &e.workspace.path, &e.absolute_path());
        let newest = Newest {
            time: e.time,
            seq: e.seq,
        };
        l.entry = l.entry.max(Some(newest));
    }
}

impl Header {
    /// The header's filter; `None` when the record is damaged.
    pub(crate) fn path_filter(&self) -> Option<PathFilter> {
        PathFilter::from_hex(&self.filter)
    }
}

/// Parses a record's file lines (`bytes` after the header's line): `None`
/// unless there are exactly `count`, each whole.
pub(crate) fn parse_files(bytes: &[u8], count: usize) -> Option<Vec<FileLine>> {
    let mut out = Vec::with_capacity(count);
    for line in bytes.split(|&b| b == b'\n') {
        if line.is_empty() {
            continue;
        }
        out.push(serde_json::from_slice::<FileLine>(line).ok()?);
    }
    (out.len() == count && bytes.last().is_none_or(|&b| b == b'\n')).then_some(out)
}
