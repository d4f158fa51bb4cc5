//! The journal's files: reading `index.json` and replaying `journal.jsonl`
//! strictly, appending a line, folding the journal into a new snapshot, and the
//! per-handle cache that reads only what other processes appended.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::line::{Line, Op};
use super::state::State;
use super::summary::{Delta, Summary};
use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{FORMAT_VERSION, Index};
use crate::trust;

/// The files of a session's index, as `layout.rs` names them.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    /// The snapshot, `index.json`.
    pub(crate) index: PathBuf,
    /// The temporary the snapshot is replaced through.
    pub(crate) index_temp: PathBuf,
    /// The journal, `journal.jsonl`.
    pub(crate) journal: PathBuf,
    /// The summary's (`summary.rs`).
    pub(crate) summary: super::summary::Paths,
}

/// Below this many journal bytes the snapshot is never rewritten: folding a
/// small journal in would cost more than replaying it.
const COMPACT_AT_LEAST: u64 = 64 * 1024;

/// How much of what it read a cache keeps to recognise the journal by.
const TAIL_BYTES: usize = 64;

/// What identifies a file's version without reading it: device, inode,
/// length and modification time ([`crate::sys::FileVersion`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId(pub(super) crate::sys::FileVersion);

impl FileId {
    pub(super) fn of(meta: &std::fs::Metadata) -> FileId {
        FileId(crate::sys::version_of(meta))
    }

    /// Device and inode: which file it is, whatever it holds.
    fn file(&self) -> (u64, u64) {
        (self.0.0, self.0.1)
    }

    pub(super) fn len(&self) -> u64 {
        self.0.2
    }
}

pub(super) fn stat(path: &Path) -> Result<Option<std::fs::Metadata>> {
    // Not following a link: a store file never is one, and opening it refuses
    // one (`trust.rs`).
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", path)(e)),
    }
}

/// A session's index as this process last read it, and where on disk that was.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) state: State,
    /// The snapshot read (`None`: there was none, an empty session).
    pub(super) snapshot: Option<FileId>,
    /// The journal as last seen (its length may include a torn line).
    pub(super) journal: Option<FileId>,
    /// Bytes of the journal read: the end of its last whole line.
    pub(super) offset: u64,
    /// The newest record applied (the snapshot's `journal` when none).
    pub(super) last_n: u64,
    /// The journal's last bytes before `offset`, as read.
    pub(super) tail: Vec<u8>,
    /// The summary of `state` (always, for a partial state; else once a
    /// change needed it).
    pub(super) summary: Option<Summary>,
}

impl Loaded {
    /// Reads the snapshot and replays the journal, strictly.
    pub(crate) fn read(files: &Files, session: &str) -> Result<Loaded> {
        let (path, jpath) = (&files.index, &files.journal);
        let corrupt = |path: &Path, reason: String| Error::CorruptIndex {
            session: session.to_owned(),
            path: path.to_owned(),
            reason,
        };
        let (index, snapshot) = match trust::open_read(path) {
            Ok(mut f) => {
                let meta = f.metadata().map_err(Error::io("read", &path))?;
                let mut bytes = Vec::with_capacity(meta.len() as usize);
                f.read_to_end(&mut bytes)
                    .map_err(Error::io("read", &path))?;
                let index = Index::parse(&bytes, session, path)?;
                (index, Some(FileId::of(&meta)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Index::empty(session), None),
            Err(e) => return Err(trust::store_io("read", &path)(e)),
        };
        let mut loaded = Loaded {
            last_n: index.journal,
            state: State::new(index),
            snapshot,
            journal: None,
            offset: 0,
            tail: Vec::new(),
            summary: None,
        };
        let Some(mut f) = open_journal(jpath)? else {
            return Ok(loaded);
        };
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        loaded.journal = Some(FileId::of(&meta));
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(Error::io("read", &jpath))?;
        let replayed = loaded.replay(&bytes, true);
        replayed.map_err(|why| corrupt(jpath, why))?;
        if loaded.snapshot.is_none() && loaded.last_n > 0 {
            return Err(corrupt(
                path,
                "missing, but the journal has records (restore it from a backup)".into(),
            ));
        }
        Ok(loaded)
    }

    /// Applies the whole lines of `bytes` (the journal from `self.offset`).
    /// Lines already in the snapshot are skipped; a last line that is torn (no
    /// newline, or not JSON) is left for the next writer to cut off.
    fn replay(&mut self, bytes: &[u8], from_snapshot: bool) -> std::result::Result<(), String> {
        let mut at = 0;
        let result = self.replay_lines(bytes, from_snapshot, &mut at);
        self.remember_tail(&bytes[..at]);
        result
    }

    fn replay_lines(
        &mut self,
        bytes: &[u8],
        from_snapshot: bool,
        at: &mut usize,
    ) -> std::result::Result<(), String> {
        while *at < bytes.len() {
            let Some(len) = bytes[*at..].iter().position(|&b| b == b'\n') else {
                return Ok(()); // torn: never acknowledged
            };
            let text = &bytes[*at..*at + len];
            let last = *at + len + 1 == bytes.len();
            let line: Line = match serde_json::from_slice(text) {
                Ok(l) => l,
                Err(_) if last => return Ok(()),
                Err(e) => {
                    return Err(format!("line at byte {} is damaged ({e})", self.offset));
                }
            };
            if from_snapshot && self.last_n == self.state.index.journal && line.n <= self.last_n {
                // Folded into the snapshot by a compaction that died before it
                // emptied the journal.
            } else if line.n != self.last_n + 1 {
                return Err(format!(
                    "record {} follows record {}: records are missing",
                    line.n, self.last_n
                ));
            } else {
                self.state
                    .apply(line.ops)
                    .map_err(|why| format!("record {}: {why}", line.n))?;
                self.last_n = line.n;
            }
            *at += len + 1;
            self.offset += (len + 1) as u64;
        }
        Ok(())
    }

    /// Keeps the last bytes read, to tell at the next catch-up that the
    /// journal still holds them where they were (and was not rewritten).
    fn remember_tail(&mut self, consumed: &[u8]) {
        self.tail.extend_from_slice(consumed);
        let extra = self.tail.len().saturating_sub(TAIL_BYTES);
        self.tail.drain(..extra);
    }

    /// Brings the cache up to what is on disk, reading only what other
    /// processes appended when nothing else changed; anything unexpected means
    /// a full read.
    pub(crate) fn refresh(cache: &mut Option<Loaded>, files: &Files, session: &str) -> Result<()> {
        if let Some(loaded) = cache.as_mut()
            && loaded.catch_up(files)?
        {
            return Ok(());
        }
        *cache = None;
        *cache = Some(Loaded::read(files, session)?);
        Ok(())
    }

    /// `Ok(false)`: the cache cannot be brought up to date by reading the tail.
    pub(super) fn catch_up(&mut self, files: &Files) -> Result<bool> {
        if self.state.is_partial() {
            return Ok(false);
        }
        let snapshot = stat(&files.index)?.map(|m| FileId::of(&m));
        if snapshot != self.snapshot {
            return Ok(false);
        }
        let jpath = &files.journal;
        let Some(mut f) = open_journal(jpath)? else {
            return Ok(self.journal.is_none());
        };
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        let id = FileId::of(&meta);
        if self.journal == Some(id) {
            return Ok(true);
        }
        // Lines another process appended: a summary made before them is not
        // theirs.
        self.summary = None;
        let same_file = self.journal.is_none_or(|old| old.file() == id.file());
        // Not longer, yet touched: rewritten in place, so read it all again.
        if !same_file || id.len() <= self.offset {
            return Ok(false);
        }
        self.journal = Some(id);
        let start = self.offset - self.tail.len() as u64;
        f.seek(SeekFrom::Start(start))
            .map_err(Error::io("read", &jpath))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(Error::io("read", &jpath))?;
        if !bytes.starts_with(&self.tail) {
            return Ok(false);
        }
        let new = &bytes[self.tail.len()..];
        Ok(self.replay(new, false).is_ok())
    }

    /// Appends one line for `ops` (under the exclusive lock, after
    /// [`Loaded::refresh`]); with [`Durability::Full`] it is on disk when this
    /// returns. A snapshot older than this format, or none, is written first
    /// (with the change in it), so that an older build never reads a snapshot
    /// without seeing that a journal goes with it. Then the summary is
    /// written, brought up to date by `delta`. On an error the caller must
    /// drop the cache: memory is ahead of the disk.
    pub(crate) fn append(
        &mut self,
        files: &Files,
        ops: Vec<Op>,
        delta: &Delta,
        durability: Durability,
    ) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        self.note_change(delta);
        if self.snapshot.is_none() || self.state.index.format < FORMAT_VERSION {
            // (Never a partial state: a summary is only of a format 5 snapshot.)
            self.last_n += 1;
            return self.compact(files);
        }
        let jpath = &files.journal;
        let n = self.last_n + 1;
        let mut line = serde_json::to_vec(&Line { n, ops }).expect("ops always serialize");
        line.push(b'\n');
        // A journal this line creates gets its name synced below: a later
        // line's fdatasync makes that line durable only once the file's name
        // is (strict POSIX: an fsync of a file does not sync its directory
        // entry). Found by tests/powerloss.rs: two writes in a row, the
        // first creating the journal with a line that may be lost, the
        // second's synced line then lost with the whole file after a power
        // cut, its file replaced all the same.
        let created = std::fs::symlink_metadata(jpath)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        let mut f = trust::open(
            crate::sys::store_file_options().create(true).append(true),
            jpath,
        )
        .map_err(trust::store_io("open", &jpath))?;
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        if meta.len() > self.offset {
            // A torn line of a writer that died: never acknowledged, and in
            // the way of this one.
            f.set_len(self.offset)
                .map_err(Error::io("truncate", &jpath))?;
        }
        let written = f.write_all(&line).map_err(Error::io("write", &jpath));
        if let Err(e) = written {
            // A full disk: cut off what part of the line got in.
            let _ = f.set_len(self.offset);
            return Err(e);
        }
        crate::crash::point("journal-written");
        if durability == Durability::Full {
            f.sync_data().map_err(Error::io("sync", &jpath))?;
            crate::crash::point("journal-synced");
        }
        if created {
            let dir = jpath
                .parent()
                .expect("the journal is in the session's directory");
            crate::sys::fsync_dir_path(dir).map_err(Error::io("sync directory", dir))?;
        }
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        self.journal = Some(FileId::of(&meta));
        self.offset += line.len() as u64;
        self.remember_tail(&line);
        self.last_n = n;
        let snapshot_len = self.snapshot.map_or(0, |s| s.len());
        if self.offset > COMPACT_AT_LEAST.max(snapshot_len) {
            return self.compact(files);
        }
        self.save_summary(files);
        Ok(())
    }

    /// [`Loaded::compact`] when the journal holds anything, or the snapshot is
    /// of an older format.
    pub(crate) fn compact_if_needed(&mut self, files: &Files) -> Result<()> {
        let old_format = self.state.index.format < FORMAT_VERSION;
        if self.snapshot.is_some() && (self.offset > 0 || old_format) {
            self.compact(files)?;
        }
        Ok(())
    }

    /// Folds the journal into a new snapshot and empties it. The snapshot
    /// records the last line it holds, so a crash before the journal is emptied
    /// leaves lines that every reader skips.
    pub(super) fn compact(&mut self, files: &Files) -> Result<()> {
        if self.state.is_partial() {
            // The snapshot is the whole index: read it whole (the lines this
            // cache appended are in the journal), once per snapshot's worth
            // of journal.
            let summary = self.summary.take();
            *self = Loaded::read(files, &self.state.index.session)?;
            self.summary = summary;
        }
        self.state.index.format = FORMAT_VERSION;
        self.state.index.journal = self.last_n;
        let path = &files.index;
        self.state
            .index
            .save(path, &files.index_temp, Durability::Full)?;
        let meta = stat(path)?.ok_or_else(|| {
            Error::io("read", path)(std::io::Error::from(std::io::ErrorKind::NotFound))
        })?;
        self.snapshot = Some(FileId::of(&meta));
        let jpath = &files.journal;
        if let Some(f) = open_journal_rw(jpath)? {
            f.set_len(0).map_err(Error::io("truncate", &jpath))?;
            f.sync_all().map_err(Error::io("sync", &jpath))?;
            let meta = f.metadata().map_err(Error::io("read", &jpath))?;
            self.journal = Some(FileId::of(&meta));
        }
        self.offset = 0;
        self.tail.clear();
        self.save_summary(files);
        Ok(())
    }
}

pub(super) fn open_journal(path: &Path) -> Result<Option<File>> {
    match trust::open_read(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(trust::store_io("open", path)(e)),
    }
}

fn open_journal_rw(path: &Path) -> Result<Option<File>> {
    match trust::open(crate::sys::store_file_options().write(true), path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(trust::store_io("open", path)(e)),
    }
}

/// Replays `bytes` as a journal on an empty snapshot: the index it builds, or
/// `None` where the reader refuses them (for the fuzz target).
pub(crate) fn replay_on_empty(bytes: &[u8]) -> Option<Index> {
    let mut loaded = Loaded {
        state: State::new(Index::empty("fuzz")),
        snapshot: None,
        journal: None,
        offset: 0,
        last_n: 0,
        tail: Vec::new(),
        summary: None,
    };
    loaded.replay(bytes, true).ok()?;
    Some(loaded.state.into_index())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Entry;
    use crate::journal::change;
    use crate::layout::SessionDir;

    /// The index files of a session whose directory is `dir`.
    fn at(dir: &tempfile::TempDir) -> Files {
        SessionDir::at(dir.path().to_owned(), "s")
            .index_files()
            .clone()
    }

    fn entry(seq: u64, path: &str) -> Entry {
        crate::index::tests::entry_at(seq, path)
    }

    fn add(cache: &mut Option<Loaded>, files: &Files, path: &str) -> u64 {
        change(cache, files, "s", Durability::Full, |t| {
            let seq = t.take_seq();
            t.insert_entry(entry(seq, path));
            Ok(seq)
        })
        .unwrap()
    }

    /// A session in a temporary directory with one entry per path, the first
    /// in the snapshot and the rest in the journal; and its handle's cache.
    fn session_of(paths: &[&str]) -> (tempfile::TempDir, Option<Loaded>) {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = None;
        for p in paths {
            add(&mut cache, &at(&dir), p);
        }
        (dir, cache)
    }

    #[test]
    fn changes_append_lines_that_a_fresh_reader_replays() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = None;
        add(&mut cache, &at(&dir), "a"); // first change: writes the snapshot
        add(&mut cache, &at(&dir), "b");
        add(&mut cache, &at(&dir), "a");
        let journal = std::fs::read_to_string(at(&dir).journal).unwrap();
        assert_eq!(journal.lines().count(), 2, "{journal}");
        let fresh = Loaded::read(&at(&dir), "s").unwrap();
        assert_eq!(fresh.state.index(), cache.as_ref().unwrap().state.index());
        assert_eq!(fresh.state.entries_for(Path::new("/w/a")), 2);
        change(&mut cache, &at(&dir), "s", Durability::Full, |t| {
            t.remove_entries(&[1]);
            Ok(())
        })
        .unwrap();
        let fresh = Loaded::read(&at(&dir), "s").unwrap();
        let seqs: Vec<u64> = fresh.state.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
        assert_eq!(fresh.state.entries_for(Path::new("/w/a")), 1);
    }

    #[test]
    fn a_change_that_changes_nothing_writes_nothing() {
        let (dir, mut cache) = session_of(&["a", "b"]);
        let before = std::fs::read(at(&dir).journal).unwrap();
        change(&mut cache, &at(&dir), "s", Durability::Full, |t| {
            t.entry_mut(2).unwrap().message_id = "m".into();
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(at(&dir).journal).unwrap(), before);
    }

    #[test]
    fn another_handle_sees_appended_lines_and_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let (mut one, mut two) = (None, None);
        add(&mut one, &at(&dir), "a");
        add(&mut two, &at(&dir), "b");
        add(&mut one, &at(&dir), "c");
        Loaded::refresh(&mut two, &at(&dir), "s").unwrap();
        assert_eq!(two.as_ref().unwrap().state.entries.len(), 3);
        // A compaction by one: two must notice the snapshot changed.
        one.as_mut().unwrap().compact(&at(&dir)).unwrap();
        add(&mut one, &at(&dir), "d");
        Loaded::refresh(&mut two, &at(&dir), "s").unwrap();
        assert_eq!(
            two.as_ref().unwrap().state.index(),
            one.as_ref().unwrap().state.index()
        );
        assert_eq!(two.as_ref().unwrap().state.entries.len(), 4);
    }

    #[test]
    fn a_torn_last_line_is_ignored_then_cut_off() {
        let (dir, _cache) = session_of(&["a", "b"]);
        let jpath = at(&dir).journal;
        let whole = std::fs::read(&jpath).unwrap();
        for torn in [&b"{\"n\":3,\"ops\":[{\"op\""[..], b"\0\0\0\0", b"garbage\n"] {
            let mut bytes = whole.clone();
            bytes.extend_from_slice(torn);
            std::fs::write(&jpath, &bytes).unwrap();
            let read = Loaded::read(&at(&dir), "s").unwrap();
            assert_eq!(read.state.entries.len(), 2);
            // The next writer cuts the torn bytes off and appends after line 2.
            let mut fresh = None;
            add(&mut fresh, &at(&dir), "c");
            let read = Loaded::read(&at(&dir), "s").unwrap();
            assert_eq!(read.state.entries.len(), 3);
            std::fs::write(&jpath, &whole).unwrap();
        }
    }

    #[test]
    fn damage_before_the_last_line_is_an_error_and_nothing_is_touched() {
        let (dir, _cache) = session_of(&["a", "b", "c"]);
        let jpath = at(&dir).journal;
        let text = std::fs::read_to_string(&jpath).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let counters_back =
            r#"{"n":4,"ops":[{"counters":{"next_seq":1,"next_turn":1,"next_record":1}}]}"#;
        let damaged = [
            format!("{}\n{}\n{counters_back}\n", lines[0], lines[1]),
            format!("{{\"n\":2,\"ops\":[}}\n{}\n", lines[1]),
            format!("{}\n", lines[1]), // record 2 missing
            format!(
                "{}\n",
                lines[0].replace("\"path\":\"b\"", "\"path\":\"../x\"")
            ),
        ];
        for bad in damaged {
            std::fs::write(&jpath, &bad).unwrap();
            let err = Loaded::read(&at(&dir), "s").unwrap_err();
            assert!(matches!(err, Error::CorruptIndex { .. }), "{err}");
            let mut fresh = None;
            let refused = change(&mut fresh, &at(&dir), "s", Durability::Full, |_| Ok(()));
            assert!(
                matches!(refused, Err(Error::CorruptIndex { .. })),
                "{refused:?}"
            );
            assert_eq!(std::fs::read_to_string(&jpath).unwrap(), bad);
        }
    }

    #[test]
    fn lines_a_dead_compaction_left_are_skipped() {
        let (dir, mut cache) = session_of(&["a", "b", "c"]);
        let jpath = at(&dir).journal;
        let journal = std::fs::read(&jpath).unwrap();
        // Compaction wrote the snapshot and died before emptying the journal.
        cache.as_mut().unwrap().compact(&at(&dir)).unwrap();
        std::fs::write(&jpath, &journal).unwrap();
        let read = Loaded::read(&at(&dir), "s").unwrap();
        assert_eq!(read.state.entries.len(), 3);
        let mut fresh = None;
        add(&mut fresh, &at(&dir), "d");
        let read = Loaded::read(&at(&dir), "s").unwrap();
        assert_eq!(read.state.entries.len(), 4);
    }

    #[test]
    fn the_fuzz_seed_replays_to_a_whole_session() {
        let seed = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/journal/v3_session.jsonl");
        let idx = replay_on_empty(&std::fs::read(seed).unwrap()).expect("accepted");
        assert_eq!(idx.entries.len(), 2);
        assert_eq!((idx.turns.len(), idx.history.len()), (2, 1));
    }

    #[test]
    fn a_journal_without_its_snapshot_is_refused() {
        let (dir, _cache) = session_of(&["a", "b"]);
        std::fs::remove_file(at(&dir).index).unwrap();
        let err = Loaded::read(&at(&dir), "s").unwrap_err();
        assert!(err.to_string().contains("journal"), "{err}");
    }
}
