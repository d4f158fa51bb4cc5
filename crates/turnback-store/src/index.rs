//! The on-disk format of a session: `index.json` (see `docs/FORMAT.md`).
//!
//! This module owns parsing and validating the index and nothing else: a file
//! that does not parse, or parses into something unsafe (a blob name that is not
//! a hash, a path that climbs out), is an error that leaves the file untouched.
//! It never writes an empty index over one it could not read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::durable::{self, Durability};
use crate::error::{Error, Result};
use crate::relpath::RelPath;

/// The format version this build writes and the newest it reads. Format 1 had
/// no turns, no revert history and no read marks; format 2 had no journal
/// (`journal.jsonl`); format 3 no record of evicted entries (`evicted`);
/// format 4 no directory states ([`FileState::dir`]) and only raw blobs
/// (format 5's may be compressed, `packed.rs`); format 5 no blob stored as a
/// difference from another (format 6's may be, `delta.rs`). Each is read as
/// a format 6 index without them, and the first change rewrites the snapshot
/// as format 6, so that an older build that cannot see the journal (or the
/// gap eviction left, a directory a scan recorded, a compressed backup, or
/// one stored as a difference) refuses the session instead of misreading it.
pub const FORMAT_VERSION: u64 = 6;

/// A file's state on one side of a change: its contents (by hash), size and mode,
/// or its absence; or (format 5, only in entries a scan found) a directory and
/// its mode.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FileState {
    /// Whether the file existed.
    pub exists: bool,
    /// SHA-256 of the contents in lower-case hex; `None` when absent.
    pub sha256: Option<String>,
    /// Size in bytes (0 when absent).
    pub size: u64,
    /// Permission bits (for example `0o644`); `None` when absent.
    pub mode: Option<u32>,
    /// The owner's user id when the file was backed up, so that a restore can
    /// give the file back to its owner (and never keep a setuid bit on a file
    /// whose owner it could not keep). `None` when absent, for states that
    /// are not backups, and in indexes written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// The owner's group id when backed up; as [`FileState::uid`], and
    /// setgid is kept only on a file that kept its group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
    /// A directory (with `exists`, no `sha256`, size 0, its permission bits
    /// as `mode` where known): what a scan records for a directory a command
    /// made or removed, or a file it replaced by one or the reverse.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dir: bool,
}

impl FileState {
    /// The state of a file that does not exist.
    pub fn absent() -> Self {
        FileState {
            exists: false,
            sha256: None,
            size: 0,
            mode: None,
            uid: None,
            gid: None,
            dir: false,
        }
    }

    /// The state of a directory with permission bits `mode` (`None`:
    /// unknown, and a directory made again gets the default ones).
    pub(crate) fn directory(mode: Option<u32>) -> Self {
        FileState {
            exists: true,
            sha256: None,
            size: 0,
            mode,
            uid: None,
            gid: None,
            dir: true,
        }
    }

    /// True for a directory's state.
    pub fn is_dir(&self) -> bool {
        self.exists && self.dir
    }

    pub(crate) fn present(sha256: String, size: u64, mode: u32) -> Self {
        FileState {
            exists: true,
            sha256: Some(sha256),
            size,
            mode: Some(mode),
            uid: None,
            gid: None,
            dir: false,
        }
    }

    /// The state with the file's owner recorded (what a backup records).
    pub(crate) fn with_owner(self, uid: u32, gid: u32) -> Self {
        FileState {
            uid: Some(uid),
            gid: Some(gid),
            ..self
        }
    }

    /// The recorded owner, when both ids are.
    pub(crate) fn owner(&self) -> Option<(u32, u32)> {
        self.uid.zip(self.gid)
    }

    /// True when both describe the same contents (or both absence), whatever
    /// their modes.
    pub fn same_contents(&self, other: &FileState) -> bool {
        self.exists == other.exists
            && self.dir == other.dir
            && self.size == other.size
            && self.sha256 == other.sha256
    }

    /// True when both describe the same file: the same contents and the same
    /// permission bits (where both are known; an index written before modes
    /// were recorded has none). This is what "as it was" means to a revert: a
    /// `chmod +x` alone is a change that an undo takes back, and that a revert
    /// would destroy.
    pub fn same_state(&self, other: &FileState) -> bool {
        self.same_contents(other)
            && match (self.mode, other.mode) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// The workspace root an entry was made in: its real path and its identity
/// (device, inode), checked again before any restore.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkspaceRoot {
    /// The canonical path of the root.
    pub path: PathBuf,
    /// The root directory's device number.
    pub dev: u64,
    /// The root directory's inode number.
    pub ino: u64,
}

/// A write-through change between "entry recorded" and "file replaced": its
/// process may have died in between, and the next process to take the session's
/// lock settles it (see `docs/FORMAT.md`, recovery).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The temporary name the new contents are linked under in the file's
    /// directory before the rename; the only name recovery may delete.
    pub temp: Option<String>,
}

/// One backup of one file, taken just before one change.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The entry's number in its session: increasing, never reused.
    pub seq: u64,
    /// The id of the message or tool call that made the change.
    pub message_id: String,
    /// The workspace the file is in.
    pub workspace: WorkspaceRoot,
    /// The file's real path relative to the workspace root, `/`-separated.
    pub path: String,
    /// Counts this session's recorded changes to the file: 1, 2, ...
    pub version: u32,
    /// When the checkpoint was taken.
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    /// The file before the change; its contents are the blob named by `sha256`.
    pub before: FileState,
    /// The file as the change left it; `None` while the change is not committed.
    pub after: Option<FileState>,
    /// Directories (relative to the root, outermost first) that did not exist at
    /// the checkpoint; undoing the change removes them again if they are empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    /// Set while a write-through change may be half done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<InFlight>,
    /// The user turn the change belongs to (0: before any turn began).
    #[serde(default)]
    pub turn: u32,
    /// Entries of one step (a rename's two sides) share a group, named by the
    /// first entry's `seq`; undo and revert take a group whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u64>,
    /// Set when a scan bracket found the change (`Session::commit_scan`)
    /// rather than a write the store was told of.
    /// (Boxed: most entries have none, and an entry is moved around a lot.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<Box<ScanMark>>,
}

/// What an entry a scan found says of its scan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ScanMark {
    /// The scan's id.
    pub id: String,
    /// The command line that ran inside the bracket, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Other sessions whose scan brackets were open on the same workspace when
    /// this change happened: the change may be theirs, so an undo refuses it
    /// ([`crate::ConflictReason::Shared`]) unless forced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_with: Vec<String>,
    /// Files the same scan found changed but could not back up (over the
    /// size limit, symbolic links, contents gone): an undo of the scan
    /// cannot restore them, and says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_undoable: Vec<String>,
}

/// A user turn: what the agent was asked, when, and where in its conversation.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// 1, 2, ... in the order begun; never reused.
    pub number: u32,
    /// The prompt that opened the turn (a picker's label).
    pub prompt: String,
    /// When the turn began.
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    /// Where the turn starts in the agent's conversation, so that a resumed
    /// agent can rewind its conversation as well as its files.
    pub conversation_index: Option<u64>,
}

/// An undo, revert or rewind, kept so that `redo` can put back what it took.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RevertRecord {
    /// Increasing within the session.
    pub id: u64,
    /// "undo", "revert", "rewind", "rewind-turn" or "rollback" (a forced
    /// rollback over changes recorded since its checkpoint).
    pub kind: String,
    /// When it was done.
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    /// The entries it took away (redo puts them back).
    pub entries: Vec<Entry>,
    /// The turns it took away (a rewind to a turn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<Turn>,
    /// Each file it restored.
    pub files: Vec<RevertedFile>,
    /// Directories it removed (made by the changes it reverted, and left empty),
    /// outermost first; redo makes them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_dirs: Vec<RemovedDir>,
}

/// A directory a revert removed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RemovedDir {
    /// The workspace it was in.
    pub workspace: WorkspaceRoot,
    /// Its path relative to the root.
    pub path: String,
}

/// One file an undo, revert or rewind restored.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RevertedFile {
    /// The workspace the file is in.
    pub workspace: WorkspaceRoot,
    /// The file's path relative to the root.
    pub path: String,
    /// The file as the revert found it (its contents are a blob); `None` when
    /// that is not known, and redo then leaves the file alone.
    pub overwritten: Option<FileState>,
    /// What the revert restored it to.
    pub restored: FileState,
}

/// A file an agent read in this session, as it was then (the stale-read guard).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ReadMark {
    /// The file's absolute real path.
    pub file: PathBuf,
    /// Its contents when read (or last written through this session).
    pub state: FileState,
}

impl RevertedFile {
    /// The file's absolute path (root joined with the relative path).
    pub(crate) fn absolute_path(&self) -> PathBuf {
        self.workspace.path.join(&self.path)
    }
}

impl Entry {
    /// The file's absolute path (root joined with the relative path).
    pub fn absolute_path(&self) -> PathBuf {
        self.workspace.path.join(&self.path)
    }

    /// True when the entry was committed: its "after" is known.
    pub fn is_committed(&self) -> bool {
        self.after.is_some()
    }

    /// The file's path relative to the root, as the store walks it (the
    /// index checked it when it read it).
    pub(crate) fn rel_path(&self) -> RelPath {
        RelPath::checked(&self.path)
    }
}

/// A session's index as stored: the snapshot `index.json` (with the journal's
/// lines replayed on it, in memory).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Index {
    pub(crate) format: u64,
    pub(crate) session: String,
    /// The number of the last journal line this snapshot holds (0: none).
    #[serde(default)]
    pub(crate) journal: u64,
    pub(crate) next_seq: u64,
    pub(crate) entries: Vec<Entry>,
    #[serde(default)]
    pub(crate) turns: Vec<Turn>,
    #[serde(default = "one")]
    pub(crate) next_turn: u32,
    #[serde(default)]
    pub(crate) history: Vec<RevertRecord>,
    #[serde(default = "one")]
    pub(crate) next_record: u64,
    #[serde(default)]
    pub(crate) reads: Vec<ReadMark>,
    /// What the caps evicted (format 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) evicted: Option<crate::evicted::Evicted>,
}

fn one<T: From<u8>>() -> T {
    T::from(1)
}

#[derive(Deserialize)]
struct Header {
    format: u64,
}

impl Index {
    pub(crate) fn empty(session: &str) -> Self {
        Index {
            format: FORMAT_VERSION,
            session: session.to_owned(),
            journal: 0,
            next_seq: 1,
            entries: Vec::new(),
            turns: Vec::new(),
            next_turn: 1,
            history: Vec::new(),
            next_record: 1,
            reads: Vec::new(),
            evicted: None,
        }
    }

    /// The number of the turn under way (0 before any).
    pub(crate) fn current_turn(&self) -> u32 {
        self.turns.last().map_or(0, |t| t.number)
    }

    pub(crate) fn parse(bytes: &[u8], session: &str, path: &Path) -> Result<Index> {
        let corrupt = |reason: String| Error::CorruptIndex {
            session: session.to_owned(),
            path: path.to_owned(),
            reason,
        };
        let header: Header = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        if header.format > FORMAT_VERSION {
            return Err(Error::NewerFormat {
                session: session.to_owned(),
                path: path.to_owned(),
                found: header.format,
                supported: FORMAT_VERSION,
            });
        }
        if header.format == 0 {
            return Err(corrupt("format version 0 does not exist".into()));
        }
        let index: Index = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        index.validate().map_err(corrupt)?;
        Ok(index)
    }

    /// The entry numbered `seq` (entries are kept in `seq` order).
    pub(crate) fn entry(&self, seq: u64) -> Option<&Entry> {
        let i = self.entries.binary_search_by_key(&seq, |e| e.seq).ok()?;
        Some(&self.entries[i])
    }

    /// Replaces the index at `path` (through the temporary `temp`, fsync,
    /// rename, and with [`Durability::Full`] a directory fsync). Call only
    /// under the session lock.
    pub(crate) fn save(&self, path: &Path, temp: &Path, durability: Durability) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("an index always serializes");
        bytes.push(b'\n');
        durable::replace(path, temp, &bytes, durability)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The index files of a session whose directory is `dir`.
    fn at(dir: &tempfile::TempDir) -> crate::journal::Files {
        let dir = crate::layout::SessionDir::at(dir.path().to_owned(), "s");
        dir.index_files().clone()
    }

    fn entry(seq: u64) -> Entry {
        entry_at(seq, "src/a.rs")
    }

    /// A committed entry of `path` in workspace `/w` (for tests here and in
    /// `journal/`).
    pub(crate) fn entry_at(seq: u64, path: &str) -> Entry {
        Entry {
            seq,
            message_id: "m".into(),
            workspace: WorkspaceRoot {
                path: "/w".into(),
                dev: 1,
                ino: 2,
            },
            path: path.into(),
            version: 1,
            time: OffsetDateTime::UNIX_EPOCH,
            before: FileState::present("a".repeat(64), 3, 0o644),
            after: Some(FileState::absent()),
            created_dirs: vec![],
            in_flight: None,
            turn: 0,
            group: None,
            scan: None,
        }
    }

    fn index_with(entries: Vec<Entry>) -> Index {
        Index {
            next_seq: entries.last().map_or(1, |e| e.seq + 1),
            entries,
            ..Index::empty("s")
        }
    }

    #[test]
    fn round_trips_through_disk() {
        let dir = tempfile::tempdir().unwrap();
        let idx = index_with(vec![entry(1), entry(2)]);
        let files = at(&dir);
        idx.save(&files.index, &files.index_temp, Durability::Full)
            .unwrap();
        assert_eq!(crate::journal::load(&files, "s").unwrap(), idx);
    }

    #[test]
    fn a_missing_index_is_an_empty_session() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            crate::journal::load(&at(&dir), "s")
                .unwrap()
                .entries
                .is_empty()
        );
    }

    #[test]
    fn garbage_is_corrupt_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = at(&dir).index;
        for bad in [&b"{\"format\":1,"[..], b"", b"[]", b"\xff\xfe"] {
            std::fs::write(&path, bad).unwrap();
            let err = crate::journal::load(&at(&dir), "s").unwrap_err();
            assert!(matches!(err, Error::CorruptIndex { .. }), "{err}");
            assert_eq!(std::fs::read(&path).unwrap(), bad);
        }
    }

    #[test]
    fn a_newer_format_is_refused_by_name() {
        let err = Index::parse(
            br#"{"format": 99, "anything": "else"}"#,
            "s",
            Path::new("i"),
        )
        .unwrap_err();
        assert!(matches!(err, Error::NewerFormat { found: 99, .. }), "{err}");
    }

    #[test]
    fn unsafe_contents_are_corrupt() {
        let mut climbing = entry(1);
        climbing.path = "../etc/passwd".into();
        let mut not_a_hash = entry(1);
        not_a_hash.before.sha256 = Some("../../x".into());
        let mut bad_temp = entry(1);
        bad_temp.in_flight = Some(InFlight {
            temp: Some("../victim".into()),
        });
        let mut bad_dir = entry(1);
        bad_dir.created_dirs = vec!["/abs".into()];
        for e in [climbing, not_a_hash, bad_temp, bad_dir] {
            let bytes = serde_json::to_vec(&index_with(vec![e])).unwrap();
            let err = Index::parse(&bytes, "s", Path::new("i")).unwrap_err();
            assert!(matches!(err, Error::CorruptIndex { .. }), "{err}");
        }
        let bytes = serde_json::to_vec(&index_with(vec![entry(2), entry(1)])).unwrap();
        let err = Index::parse(&bytes, "s", Path::new("i")).unwrap_err();
        assert!(
            matches!(err, Error::CorruptIndex { .. }),
            "entries out of order: {err}"
        );
    }

    #[test]
    fn a_state_without_an_owner_still_parses_and_one_with_it_round_trips() {
        let old: FileState =
            serde_json::from_str(r#"{"exists": true, "sha256": null, "size": 3, "mode": 420}"#)
                .unwrap();
        assert_eq!((old.uid, old.gid), (None, None));
        assert!(!serde_json::to_string(&old).unwrap().contains("uid"));
        let owned = FileState::present("a".repeat(64), 3, 0o4755).with_owner(1234, 99);
        let text = serde_json::to_string(&owned).unwrap();
        assert!(text.contains(r#""uid":1234,"gid":99"#), "{text}");
        assert_eq!(serde_json::from_str::<FileState>(&text).unwrap(), owned);
        assert_eq!(owned.owner(), Some((1234, 99)));
    }
}
