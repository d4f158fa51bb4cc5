//! A scan bracket's record, `sessions/<id>/scans/<scan>.jsonl`: what every
//! file in scope was when the bracket began, and where its contents are. One
//! header line, then a line per file. Written durably (through a temporary,
//! synced) before the command runs, so a bracket begun in one process can be
//! committed or rolled back in another, or after a crash; removed when the
//! bracket ends.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::durable::{self, Durability};
use crate::error::{Error, Result};
use crate::index::WorkspaceRoot;
use crate::layout::SessionDir;

use super::walk::Stat;

/// The format of a scan record this build writes (and the newest it reads).
/// Format 1 listed the directories by name only (their modes unknown).
pub(crate) const FORMAT: u64 = 2;

/// Where a file's contents at the bracket's beginning are.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Source {
    /// In git, as this object (a clean tracked file): copied into the
    /// session's blobs when the commit finds the file changed.
    Git(String),
    /// In the workspace's baseline blobs, by SHA-256.
    Baseline(String),
    /// A symbolic link and its target: not backed up (a change is reported).
    Link(String),
    /// Over the size limit: not backed up (a change is reported).
    TooBig,
}

/// One file as the bracket began.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) stat: Stat,
    pub(crate) source: Source,
    /// Its stat was taken in the clock tick of the beginning (or later): a
    /// change in that tick would not show, so the commit compares contents.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) racy: bool,
}

/// The header of a scan record.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) format: u64,
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) message_id: String,
    #[serde(default)]
    pub(crate) command: Option<String>,
    pub(crate) workspace: WorkspaceRoot,
    #[serde(with = "time::serde::rfc3339")]
    pub(crate) began: OffsetDateTime,
    /// The file system's clock when the walk began (seconds, nanoseconds).
    pub(crate) clock: [i64; 2],
    pub(crate) limit: u64,
    /// The directories in scope, with their permission bits (`None` in a
    /// format 1 record, which listed names only).
    #[serde(deserialize_with = "dirs_of_either_format")]
    pub(crate) dirs: BTreeMap<String, Option<u32>>,
    /// Directories left out of scope besides ignored ones (submodules):
    /// the commit leaves them out too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) skipped: Vec<String>,
}

/// The header's `dirs`: a map of path to mode (format 2) or a list of
/// paths (format 1).
fn dirs_of_either_format<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, Option<u32>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Dirs {
        Modes(BTreeMap<String, Option<u32>>),
        Names(BTreeSet<String>),
    }
    Ok(match Dirs::deserialize(d)? {
        Dirs::Modes(m) => m,
        Dirs::Names(n) => n.into_iter().map(|p| (p, None)).collect(),
    })
}

/// A whole scan record.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub(crate) header: Header,
    pub(crate) files: Vec<Seen>,
}

impl Record {
    pub(crate) fn new(header: Header, files: Vec<Seen>) -> Record {
        Record { header, files }
    }

    /// Writes the record durably into the session's `scans/`.
    pub(crate) fn save(&self, dir: &SessionDir) -> Result<()> {
        let scans = dir.scans_path();
        crate::sys::create_store_dir_all(&scans).map_err(Error::io("create directory", &scans))?;
        let mut bytes = serde_json::to_vec(&self.header).expect("serializes");
        bytes.push(b'\n');
        for f in &self.files {
            serde_json::to_writer(&mut bytes, f).expect("serializes");
            bytes.push(b'\n');
        }
        let (path, temp) = dir.scan_paths(&self.header.id);
        durable::replace(&path, &temp, &bytes, Durability::Full)
    }
}

fn corrupt(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::ScanFailed {
        path: path.to_owned(),
        reason: format!("damaged scan record: {why}"),
    }
}

/// Reads the header, and with `whole` every file, of scan `id`; `None` when
/// the session has no such open scan.
pub(crate) fn load(dir: &SessionDir, id: &str, whole: bool) -> Result<Option<Record>> {
    let (path, _) = dir.scan_paths(id);
    let file = match crate::trust::open_read(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::trust::store_io("open", &path)(e)),
    };
    let mut lines = BufReader::new(file).lines();
    let first = lines
        .next()
        .ok_or_else(|| corrupt(&path, "empty"))?
        .map_err(Error::io("read", &path))?;
    let header: Header = serde_json::from_str(&first).map_err(|e| corrupt(&path, e))?;
    if !(1..=FORMAT).contains(&header.format) || header.id != id {
        return Err(corrupt(&path, "not a scan record of this format and id"));
    }
    if !header.workspace.path.is_absolute() {
        return Err(corrupt(&path, "a relative workspace"));
    }
    if let Some(d) = header
        .dirs
        .keys()
        .find(|d| !crate::relpath::is_relative_path(d))
    {
        return Err(corrupt(&path, format!("an unsafe directory {d:?}")));
    }
    let mut files = Vec::new();
    if whole {
        for line in lines {
            let line = line.map_err(Error::io("read", &path))?;
            let seen: Seen = serde_json::from_str(&line).map_err(|e| corrupt(&path, e))?;
            if !crate::relpath::is_relative_path(&seen.path) {
                return Err(corrupt(&path, format!("an unsafe path {:?}", seen.path)));
            }
            files.push(seen);
        }
    }
    Ok(Some(Record { header, files }))
}

/// The ids of the session's open scans, oldest first (by name: ids sort by
/// time).
pub(crate) fn list(dir: &SessionDir) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir.scans_path()) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = rd
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

/// Closes scan `id`: its record goes. Not synced: a record a power cut
/// brings back is only closed again, since a commit or rollback that finds
/// entries of its scan recorded records nothing more.
pub(crate) fn remove(dir: &SessionDir, id: &str) -> Result<()> {
    let (path, _) = dir.scan_paths(id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", &path)(e)),
    }
}

/// A new scan id: the time and a random part, so ids sort by time.
pub(crate) fn new_id() -> String {
    let now = OffsetDateTime::now_utc().unix_timestamp_nanos();
    format!(
        "scan-{:x}-{:04x}",
        now / 1_000_000,
        crate::session_id::random_u64() & 0xffff
    )
}
