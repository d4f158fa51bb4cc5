//! A scan bracket's record, `sessions/<id>/scans/<scan>.jsonl`: what every
//! file in scope was when the bracket began, and where its contents are. One
//! JSON header line, then every file, in a binary body since format 3 (a
//! JSON line each before: tens of thousands of them took most of the time
//! a beginning spent writing, and four times the bytes). Written durably (through a temporary,
//! synced) before the command runs, so a bracket begun in one process can be
//! committed or rolled back in another, or after a crash; removed when the
//! bracket ends.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::durable::{self, Durability};
use crate::error::{Error, Result};
use crate::index::WorkspaceRoot;
use crate::layout::SessionDir;

use super::bytes::{Reader, is_hex, put};
use super::walk::Stat;

/// The format of a scan record this build writes (and the newest it reads).
/// Format 1 listed the directories by name only (their modes unknown);
/// formats 1 and 2 wrote each file as a JSON line.
pub(crate) const FORMAT: u64 = 3;

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
    /// Not copied into the baseline, for this reason (it was full, or the
    /// beginning ran out of time): not backed up (a change is reported).
    NotCopied(String),
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
    /// The files whose path is not UTF-8 (its bytes in hex) and their
    /// stat: a change of one is reported, not recorded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) unnamed: BTreeMap<String, super::walk::Stat>,
    /// The process that ends the bracket: while it lives, a prune keeps
    /// the session (a record without it counts as live for a day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<Owner>,
}

/// A process, told from a later one given the same pid by its start time
/// (where the system says).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<u64>,
}

impl Owner {
    pub(crate) fn of(pid: u32) -> Owner {
        Owner {
            pid,
            start: crate::sys::process_start(pid),
        }
    }

    /// True while the process runs (and is the same one).
    pub(crate) fn alive(&self) -> bool {
        crate::sys::process_exists(self.pid)
            && match (self.start, crate::sys::process_start(self.pid)) {
                (Some(then), Some(now)) => then == now,
                _ => true,
            }
    }
}

impl Header {
    /// True while the bracket may still be ended by a live process.
    pub(crate) fn in_use(&self) -> bool {
        match &self.owner {
            Some(o) => o.alive(),
            None => {
                let age = OffsetDateTime::now_utc() - self.began;
                age < time::Duration::days(1)
            }
        }
    }
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

/// Writes a record (`header`, then the files in `body`) durably into the
/// session's `scans/`.
pub(crate) fn save(dir: &SessionDir, header: &Header, body: &Body) -> Result<()> {
    let scans = dir.scans_path();
    crate::sys::create_store_dir_all(&scans).map_err(Error::io("create directory", &scans))?;
    let mut bytes = serde_json::to_vec(header).expect("serializes");
    bytes.push(b'\n');
    bytes.extend_from_slice(&body.0);
    let (path, temp) = dir.scan_paths(&header.id);
    durable::replace(&path, &temp, &bytes, Durability::Full)
}

/// A record's files as written since format 3: per file, its path, its
/// stat, whether it is racy and its source, each number little-endian, each
/// string after its length. Read a file at a time, in place: a bracket
/// begun in this process keeps it for its commit (one allocation, where a
/// file each would be tens of thousands to make and to free).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Body(Vec<u8>);

/// The kinds of [`Source`], as a body writes them.
const GIT: u8 = 0;
const BASELINE: u8 = 1;
const LINK: u8 = 2;
const TOO_BIG: u8 = 3;
const NOT_COPIED: u8 = 4;

/// One file of a [`Body`], borrowed from it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeenRef<'a> {
    pub(crate) path: &'a str,
    pub(crate) stat: Stat,
    pub(crate) racy: bool,
    kind: u8,
    value: &'a str,
}

impl SeenRef<'_> {
    pub(crate) fn to_seen(self) -> Seen {
        let value = self.value.to_owned();
        let source = match self.kind {
            GIT => Source::Git(value),
            BASELINE => Source::Baseline(value),
            LINK => Source::Link(value),
            NOT_COPIED => Source::NotCopied(value),
            _ => Source::TooBig,
        };
        Seen {
            path: self.path.to_owned(),
            stat: self.stat,
            source,
            racy: self.racy,
        }
    }
}

impl Body {
    /// Appends `f`.
    pub(crate) fn push(&mut self, f: &Seen) {
        let (kind, value) = match &f.source {
            Source::Git(oid) => (GIT, oid.as_str()),
            Source::Baseline(sha) => (BASELINE, sha.as_str()),
            Source::Link(target) => (LINK, target.as_str()),
            Source::TooBig => (TOO_BIG, ""),
            Source::NotCopied(why) => (NOT_COPIED, why.as_str()),
        };
        self.push_parts(&f.path, &f.stat, f.racy, kind, value);
    }

    /// Appends the file at `path` whose contents are git's object `oid`.
    pub(crate) fn push_git(&mut self, path: &str, stat: &Stat, oid: &str) {
        push_git(&mut self.0, path, stat, oid);
    }

    /// A body of the files written by [`push_git`] into `bytes`.
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Body {
        Body(bytes)
    }

    fn push_parts(&mut self, path: &str, stat: &Stat, racy: bool, kind: u8, value: &str) {
        push_parts(&mut self.0, path, stat, racy, kind, value);
    }

    /// Every file, in the order written; an `Err` (why) where the bytes are
    /// not a file of this format, and nothing after it.
    pub(crate) fn files(&self) -> impl Iterator<Item = std::result::Result<SeenRef<'_>, String>> {
        let mut r = Reader(&self.0);
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed || r.is_empty() {
                return None;
            }
            let one = one(&mut r).unwrap_or_else(|| Err("a file cut short".into()));
            failed = one.is_err();
            Some(one)
        })
    }

    /// Every file, owned, each object name checked (the body was read from
    /// disk: a body this process wrote is only read in place).
    pub(crate) fn to_files(&self) -> std::result::Result<Vec<Seen>, String> {
        self.files()
            .map(|f| {
                let f = f?;
                if (f.kind == GIT || f.kind == BASELINE) && !is_hex(f.value) {
                    return Err(format!("an object name {:?} that is not hex", f.value));
                }
                Ok(f.to_seen())
            })
            .collect()
    }
}

/// Writes, as a body holds it, the file at `path` whose contents are git's
/// object `oid`, without making a [`Seen`] of it (most files of a beginning
/// are, and a walker's thread writes them as it finds them).
pub(crate) fn push_git(out: &mut Vec<u8>, path: &str, stat: &Stat, oid: &str) {
    push_parts(out, path, stat, false, GIT, oid);
}

fn push_parts(out: &mut Vec<u8>, path: &str, stat: &Stat, racy: bool, kind: u8, value: &str) {
    put(out, path.as_bytes());
    out.extend_from_slice(&stat.mode.to_le_bytes());
    let numbers = [stat.size as i64]
        .into_iter()
        .chain(stat.times)
        .chain([stat.ino as i64]);
    for v in numbers {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&[u8::from(racy), kind]);
    put(out, value.as_bytes());
}

fn one<'a>(r: &mut Reader<'a>) -> Option<std::result::Result<SeenRef<'a>, String>> {
    let path = r.text()?;
    let mode = r.u32()?;
    let mut n = [0i64; 6];
    for v in &mut n {
        *v = r.i64()?;
    }
    let flags = r.take(2)?;
    let (racy, kind) = (flags[0] == 1, flags[1]);
    let value = r.text()?;
    if kind > NOT_COPIED {
        return Some(Err(format!("a source of kind {kind}")));
    }
    let stat = Stat {
        mode,
        size: n[0] as u64,
        times: [n[1], n[2], n[3], n[4]],
        ino: n[5] as u64,
    };
    Some(Ok(SeenRef {
        path,
        stat,
        racy,
        kind,
        value,
    }))
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
    let mut reader = BufReader::new(file);
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .map_err(Error::io("read", &path))?;
    if first.is_empty() {
        return Err(corrupt(&path, "empty"));
    }
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
    if whole && header.format >= 3 {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(Error::io("read", &path))?;
        files = Body(bytes).to_files().map_err(|why| corrupt(&path, why))?;
    } else if whole {
        for line in reader.lines() {
            let line = line.map_err(Error::io("read", &path))?;
            let seen: Seen = serde_json::from_str(&line).map_err(|e| corrupt(&path, e))?;
            files.push(seen);
        }
    }
    if let Some(f) = files
        .iter()
        .find(|f| !crate::relpath::is_relative_path(&f.path))
    {
        return Err(corrupt(&path, format!("an unsafe path {:?}", f.path)));
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
