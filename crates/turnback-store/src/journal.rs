//! A session's index on disk: `index.json` (a snapshot) plus `journal.jsonl`
//! (every change since, one line each), so that a change costs one appended
//! line instead of a rewrite of the whole index (see `docs/FORMAT.md`).
//!
//! This module owns reading the pair (strictly: anything but a torn last line is
//! an error that leaves both files untouched), appending to it, folding the
//! journal back into the snapshot once it has grown as large, and a per-handle
//! cache that a process keeps between lock acquisitions and brings up to date by
//! reading only the lines other processes appended since.
//!
//! Call everything here under the session's lock: shared to read, exclusive to
//! append or compact.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Deref;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::{self, Entry, FORMAT_VERSION, FileState, INDEX_FILE, Index, ReadMark};
use crate::index::{RevertRecord, Turn};
use crate::trust;

/// The file name of a session's journal.
pub(crate) const JOURNAL_FILE: &str = "journal.jsonl";

/// Below this many journal bytes the snapshot is never rewritten: folding a
/// small journal in would cost more than replaying it.
const COMPACT_AT_LEAST: u64 = 64 * 1024;

/// How much of what it read a cache keeps to recognise the journal by.
const TAIL_BYTES: usize = 64;

/// One change to the index, as a journal line lists it: `{"<op>": value}`
/// (serde's external tagging, which parses without buffering). Each names what
/// it replaces by key, so order within a line does not matter.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Op {
    /// Adds the entry, or replaces the one with its `seq`.
    Entry(Entry),
    /// Removes the entry with this `seq`.
    DropEntry(u64),
    /// Clears this entry's in-flight mark: its change is on disk (the common
    /// last line of a write, kept short).
    Landed(u64),
    /// Adds the turn, or replaces the one with its number.
    Turn(Turn),
    /// Removes the turn with this number.
    DropTurn(u32),
    /// Adds the revert record, or replaces the one with its id.
    Record(RevertRecord),
    /// Removes the revert record with this id.
    DropRecord(u64),
    /// Sets the read mark of the mark's file.
    Read(ReadMark),
    /// The counters after the change.
    Counters(Counters),
}

/// The index's counters, as a journal line sets them.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Counters {
    next_seq: u64,
    next_turn: u32,
    next_record: u64,
}

/// One journal line: record `n` (the snapshot's `journal` + 1, + 2, ...) and
/// what one locked change did.
#[derive(Serialize, Deserialize, Debug)]
struct Line {
    n: u64,
    ops: Vec<Op>,
}

/// An index with the lookups a change needs in less than a scan of it.
#[derive(Debug, Clone)]
pub(crate) struct State {
    index: Index,
    /// Entries per absolute file path (an entry's `version` is one more).
    versions: HashMap<PathBuf, u32>,
    /// Position in `index.reads` per file.
    reads: HashMap<PathBuf, usize>,
    /// Entries in flight, by seq.
    in_flight: std::collections::BTreeSet<u64>,
}

impl Deref for State {
    type Target = Index;
    fn deref(&self) -> &Index {
        &self.index
    }
}

impl State {
    pub(crate) fn new(index: Index) -> State {
        let mut s = State {
            index,
            versions: HashMap::new(),
            reads: HashMap::new(),
            in_flight: std::collections::BTreeSet::new(),
        };
        let entries = std::mem::take(&mut s.index.entries);
        for e in &entries {
            s.note(e);
        }
        s.index.entries = entries;
        for (i, m) in s.index.reads.iter().enumerate() {
            s.reads.insert(m.file.clone(), i);
        }
        s
    }

    /// The index as the snapshot stores it.
    pub(crate) fn index(&self) -> &Index {
        &self.index
    }

    pub(crate) fn into_index(self) -> Index {
        self.index
    }

    /// How many entries the session has for the file at absolute path `file`.
    pub(crate) fn entries_for(&self, file: &Path) -> u32 {
        self.versions.get(file).copied().unwrap_or(0)
    }

    /// What the session last saw of `file`.
    pub(crate) fn read_mark(&self, file: &Path) -> Option<&ReadMark> {
        self.reads.get(file).map(|&i| &self.index.reads[i])
    }

    /// The entries in flight, oldest first.
    pub(crate) fn in_flight(&self) -> Vec<u64> {
        self.in_flight.iter().copied().collect()
    }

    fn note(&mut self, e: &Entry) {
        *self.versions.entry(e.absolute_path()).or_default() += 1;
        if e.in_flight.is_some() {
            self.in_flight.insert(e.seq);
        }
    }

    fn forget(&mut self, e: &Entry) {
        let file = e.absolute_path();
        if let Some(n) = self.versions.get_mut(&file) {
            *n -= 1;
            if *n == 0 {
                self.versions.remove(&file);
            }
        }
        self.in_flight.remove(&e.seq);
    }

    fn put_entry(&mut self, entry: Entry) {
        let entries = &mut self.index.entries;
        let at = entries.partition_point(|e| e.seq < entry.seq);
        if entries.get(at).is_some_and(|e| e.seq == entry.seq) {
            let old = std::mem::replace(&mut entries[at], entry.clone());
            self.forget(&old);
        } else {
            entries.insert(at, entry.clone());
        }
        self.note(&entry);
    }

    fn drop_entry(&mut self, seq: u64) -> bool {
        match position(&self.index.entries, seq, |e| e.seq) {
            Some(i) => {
                let old = self.index.entries.remove(i);
                self.forget(&old);
                true
            }
            None => false,
        }
    }

    fn put_read(&mut self, mark: ReadMark) {
        match self.reads.get(&mark.file) {
            Some(&i) => self.index.reads[i] = mark,
            None => {
                self.reads.insert(mark.file.clone(), self.index.reads.len());
                self.index.reads.push(mark);
            }
        }
    }

    /// Applies one journal line's ops; `Err` names what did not fit.
    fn apply(&mut self, ops: Vec<Op>) -> std::result::Result<(), String> {
        let mut recorded = Vec::new();
        for op in ops {
            match op {
                Op::Entry(entry) => {
                    index::check_entry(&entry)?;
                    self.put_entry(entry);
                }
                Op::DropEntry(seq) => {
                    if !self.drop_entry(seq) {
                        return Err(format!("drops entry {seq}, which does not exist"));
                    }
                }
                Op::Landed(seq) => {
                    let mut entry = self
                        .entry(seq)
                        .ok_or_else(|| format!("lands entry {seq}, which does not exist"))?
                        .clone();
                    entry.in_flight = None;
                    self.put_entry(entry);
                }
                Op::Turn(turn) => put_keyed(&mut self.index.turns, turn, |t| t.number),
                Op::DropTurn(number) => {
                    drop_keyed(&mut self.index.turns, number, |t| t.number)
                        .ok_or_else(|| format!("drops turn {number}, which does not exist"))?;
                }
                Op::Record(record) => {
                    index::check_record(&record)?;
                    recorded.extend(record.entries.iter().map(|e| e.seq));
                    put_keyed(&mut self.index.history, record, |r| r.id);
                }
                Op::DropRecord(id) => {
                    drop_keyed(&mut self.index.history, id, |r| r.id)
                        .ok_or_else(|| format!("drops revert {id}, which does not exist"))?;
                }
                Op::Read(mark) => {
                    index::check_read(&mark)?;
                    self.put_read(mark);
                }
                Op::Counters(c) => {
                    let idx = &self.index;
                    if c.next_seq < idx.next_seq
                        || c.next_turn < idx.next_turn
                        || c.next_record < idx.next_record
                    {
                        return Err("a counter goes back".into());
                    }
                    self.index.next_seq = c.next_seq;
                    self.index.next_turn = c.next_turn;
                    self.index.next_record = c.next_record;
                }
            }
        }
        let newest = self.index.entries.last().map(|e| e.seq);
        match newest.into_iter().chain(recorded).max() {
            Some(seq) if seq >= self.index.next_seq => Err(format!(
                "entry {seq} is not below next_seq {}",
                self.index.next_seq
            )),
            _ => Ok(()),
        }
    }
}

fn position<T, K: Ord>(items: &[T], key: K, key_of: impl Fn(&T) -> K) -> Option<usize> {
    let at = items.partition_point(|x| key_of(x) < key);
    (at < items.len() && key_of(&items[at]) == key).then_some(at)
}

fn put_keyed<T, K: Ord>(items: &mut Vec<T>, item: T, key_of: impl Fn(&T) -> K) {
    let key = key_of(&item);
    let at = items.partition_point(|x| key_of(x) < key);
    if at < items.len() && key_of(&items[at]) == key {
        items[at] = item;
    } else {
        items.insert(at, item);
    }
}

fn drop_keyed<T, K: Ord>(items: &mut Vec<T>, key: K, key_of: impl Fn(&T) -> K) -> Option<T> {
    position(items, key, &key_of).map(|i| items.remove(i))
}

/// An index being changed under the exclusive lock: it reads like the index
/// and changes only through methods that remember what they touched, so that
/// the journal line lists exactly that (and nothing is written when nothing
/// changed), at a cost that does not grow with the index.
pub(crate) struct Tracked<'a> {
    state: &'a mut State,
    entries: BTreeMap<u64, Option<Entry>>,
    turns: BTreeMap<u32, Option<Turn>>,
    records: BTreeMap<u64, Option<RevertRecord>>,
    reads: BTreeMap<PathBuf, Option<FileState>>,
    counters: (u64, u32, u64),
}

impl Deref for Tracked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.state
    }
}

impl<'a> Tracked<'a> {
    pub(crate) fn new(state: &'a mut State) -> Tracked<'a> {
        let counters = (
            state.index.next_seq,
            state.index.next_turn,
            state.index.next_record,
        );
        Tracked {
            state,
            entries: BTreeMap::new(),
            turns: BTreeMap::new(),
            records: BTreeMap::new(),
            reads: BTreeMap::new(),
            counters,
        }
    }

    fn touch_entry(&mut self, seq: u64) {
        if !self.entries.contains_key(&seq) {
            let old = self.state.entry(seq).cloned();
            self.entries.insert(seq, old);
        }
    }

    /// The entry `seq`, to change.
    pub(crate) fn entry_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        let i = position(&self.state.index.entries, seq, |e| e.seq)?;
        self.touch_entry(seq);
        Some(&mut self.state.index.entries[i])
    }

    /// Adds an entry (in seq order) and takes its number.
    pub(crate) fn insert_entry(&mut self, entry: Entry) {
        self.touch_entry(entry.seq);
        let entries = &mut self.state.index.entries;
        let at = entries.partition_point(|e| e.seq < entry.seq);
        entries.insert(at, entry);
    }

    /// Removes the entries `seqs` that exist.
    pub(crate) fn remove_entries(&mut self, seqs: &[u64]) {
        for &seq in seqs {
            if let Some(i) = position(&self.state.index.entries, seq, |e| e.seq) {
                self.touch_entry(seq);
                self.state.index.entries.remove(i);
            }
        }
    }

    /// The next entry number, taken.
    pub(crate) fn take_seq(&mut self) -> u64 {
        let n = self.state.index.next_seq;
        self.state.index.next_seq += 1;
        n
    }

    /// Begins turn `next_turn`.
    pub(crate) fn push_turn(&mut self, mut turn: Turn) -> u32 {
        turn.number = self.state.index.next_turn;
        self.state.index.next_turn += 1;
        self.insert_turns(vec![turn.clone()]);
        turn.number
    }

    /// Puts back turns taken away (by number order).
    pub(crate) fn insert_turns(&mut self, turns: Vec<Turn>) {
        for t in turns {
            if !self.turns.contains_key(&t.number) {
                let old = position(&self.state.index.turns, t.number, |t| t.number)
                    .map(|i| self.state.index.turns[i].clone());
                self.turns.insert(t.number, old);
            }
            put_keyed(&mut self.state.index.turns, t, |t| t.number);
        }
    }

    /// Takes away the turns from `n` on and returns them.
    pub(crate) fn split_turns(&mut self, n: u32) -> Vec<Turn> {
        let turns = &mut self.state.index.turns;
        let at = turns.partition_point(|t| t.number < n);
        let taken = turns.split_off(at);
        for t in &taken {
            self.turns
                .entry(t.number)
                .or_insert_with(|| Some(t.clone()));
        }
        taken
    }

    /// Records a revert for redo, numbering it.
    pub(crate) fn push_record(&mut self, mut record: RevertRecord) {
        record.id = self.state.index.next_record;
        self.state.index.next_record += 1;
        self.records.insert(record.id, None);
        self.state.index.history.push(record);
    }

    /// Takes the newest revert record away.
    pub(crate) fn pop_record(&mut self) -> Option<RevertRecord> {
        let r = self.state.index.history.pop()?;
        self.records.entry(r.id).or_insert_with(|| Some(r.clone()));
        Some(r)
    }

    /// Records `state` as what this session last saw of `file`.
    pub(crate) fn mark_read(&mut self, file: PathBuf, state: FileState) {
        let old = self.state.read_mark(&file).map(|m| m.state.clone());
        self.reads.entry(file.clone()).or_insert(old);
        self.state.put_read(ReadMark { file, state });
    }

    /// What changed, as journal ops, with the lookups brought up to date. Empty
    /// when nothing changed.
    fn finish(self) -> Vec<Op> {
        let mut ops = Vec::new();
        let state = self.state;
        for (seq, old) in self.entries {
            let new = state.entry(seq).cloned();
            if old == new {
                continue;
            }
            if let Some(old) = &old {
                state.forget(old);
            }
            match new {
                Some(e) => {
                    state.note(&e);
                    let landed = old.is_some_and(|old| {
                        old.in_flight.is_some()
                            && Entry {
                                in_flight: None,
                                ..old
                            } == e
                    });
                    ops.push(match landed {
                        true => Op::Landed(seq),
                        false => Op::Entry(e),
                    });
                }
                None => ops.push(Op::DropEntry(seq)),
            }
        }
        keyed_ops(
            &mut ops,
            self.turns,
            &state.index.turns,
            |t| t.number,
            Op::Turn,
            Op::DropTurn,
        );
        let history = &state.index.history;
        keyed_ops(
            &mut ops,
            self.records,
            history,
            |r| r.id,
            Op::Record,
            Op::DropRecord,
        );
        for (file, old) in self.reads {
            let mark = state.read_mark(&file).expect("marks are never removed");
            if old.as_ref() != Some(&mark.state) {
                ops.push(Op::Read(mark.clone()));
            }
        }
        let idx = &state.index;
        if (idx.next_seq, idx.next_turn, idx.next_record) != self.counters {
            ops.push(Op::Counters(Counters {
                next_seq: idx.next_seq,
                next_turn: idx.next_turn,
                next_record: idx.next_record,
            }));
        }
        ops
    }
}

/// The ops for items kept sorted by key in `items`, of which `touched` holds
/// the ones a change touched, as they were before it: a put for each that is
/// new or different, a drop for each that is gone.
fn keyed_ops<T: Clone + PartialEq, K: Ord + Copy>(
    ops: &mut Vec<Op>,
    touched: BTreeMap<K, Option<T>>,
    items: &[T],
    key_of: impl Fn(&T) -> K,
    put: impl Fn(T) -> Op,
    drop: impl Fn(K) -> Op,
) {
    for (key, old) in touched {
        let new = position(items, key, &key_of).map(|i| items[i].clone());
        match (old == new, new) {
            (true, _) => {}
            (false, Some(item)) => ops.push(put(item)),
            (false, None) => ops.push(drop(key)),
        }
    }
}

/// What identifies a file's version without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

fn stat(path: &Path) -> Result<Option<std::fs::Metadata>> {
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
    snapshot: Option<FileId>,
    /// The journal as last seen (its length may include a torn line).
    journal: Option<FileId>,
    /// Bytes of the journal read: the end of its last whole line.
    offset: u64,
    /// The newest record applied (the snapshot's `journal` when none).
    last_n: u64,
    /// The journal's last bytes before `offset`, as read.
    tail: Vec<u8>,
}

impl Loaded {
    /// Reads the snapshot and replays the journal, strictly.
    pub(crate) fn read(dir: &Path, session: &str) -> Result<Loaded> {
        let path = dir.join(INDEX_FILE);
        let jpath = dir.join(JOURNAL_FILE);
        let corrupt = |path: &Path, reason: String| Error::CorruptIndex {
            session: session.to_owned(),
            path: path.to_owned(),
            reason,
        };
        let (index, snapshot) = match trust::open_read(&path) {
            Ok(mut f) => {
                let meta = f.metadata().map_err(Error::io("read", &path))?;
                let mut bytes = Vec::with_capacity(meta.len() as usize);
                f.read_to_end(&mut bytes)
                    .map_err(Error::io("read", &path))?;
                let index = Index::parse(&bytes, session, &path)?;
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
        };
        let Some(mut f) = open_journal(&jpath)? else {
            return Ok(loaded);
        };
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        loaded.journal = Some(FileId::of(&meta));
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(Error::io("read", &jpath))?;
        let replayed = loaded.replay(&bytes, true);
        replayed.map_err(|why| corrupt(&jpath, why))?;
        if loaded.snapshot.is_none() && loaded.last_n > 0 {
            return Err(corrupt(
                &path,
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
    pub(crate) fn refresh(cache: &mut Option<Loaded>, dir: &Path, session: &str) -> Result<()> {
        if let Some(loaded) = cache.as_mut()
            && loaded.catch_up(dir)?
        {
            return Ok(());
        }
        *cache = None;
        *cache = Some(Loaded::read(dir, session)?);
        Ok(())
    }

    /// `Ok(false)`: the cache cannot be brought up to date by reading the tail.
    fn catch_up(&mut self, dir: &Path) -> Result<bool> {
        let snapshot = stat(&dir.join(INDEX_FILE))?.map(|m| FileId::of(&m));
        if snapshot != self.snapshot {
            return Ok(false);
        }
        let jpath = dir.join(JOURNAL_FILE);
        let Some(mut f) = open_journal(&jpath)? else {
            return Ok(self.journal.is_none());
        };
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        let id = FileId::of(&meta);
        if self.journal == Some(id) {
            return Ok(true);
        }
        let same_file = self
            .journal
            .is_none_or(|old| (old.dev, old.ino) == (id.dev, id.ino));
        // Not longer, yet touched: rewritten in place, so read it all again.
        if !same_file || id.len <= self.offset {
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
    /// without seeing that a journal goes with it. On an error the caller must
    /// drop the cache: memory is ahead of the disk.
    pub(crate) fn append(
        &mut self,
        dir: &Path,
        ops: Vec<Op>,
        durability: Durability,
    ) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        if self.snapshot.is_none() || self.state.index.format < FORMAT_VERSION {
            self.last_n += 1;
            return self.compact(dir);
        }
        let jpath = dir.join(JOURNAL_FILE);
        let n = self.last_n + 1;
        let mut line = serde_json::to_vec(&Line { n, ops }).expect("ops always serialize");
        line.push(b'\n');
        let mut f = trust::open(
            crate::sys::store_file_options().create(true).append(true),
            &jpath,
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
        let meta = f.metadata().map_err(Error::io("read", &jpath))?;
        self.journal = Some(FileId::of(&meta));
        self.offset += line.len() as u64;
        self.remember_tail(&line);
        self.last_n = n;
        let snapshot_len = self.snapshot.map_or(0, |s| s.len);
        if self.offset > COMPACT_AT_LEAST.max(snapshot_len) {
            self.compact(dir)?;
        }
        Ok(())
    }

    /// [`Loaded::compact`] when the journal holds anything, or the snapshot is
    /// of an older format.
    pub(crate) fn compact_if_needed(&mut self, dir: &Path) -> Result<()> {
        let old_format = self.state.index.format < FORMAT_VERSION;
        if self.snapshot.is_some() && (self.offset > 0 || old_format) {
            self.compact(dir)?;
        }
        Ok(())
    }

    /// Folds the journal into a new snapshot and empties it. The snapshot
    /// records the last line it holds, so a crash before the journal is emptied
    /// leaves lines that every reader skips.
    fn compact(&mut self, dir: &Path) -> Result<()> {
        self.state.index.format = FORMAT_VERSION;
        self.state.index.journal = self.last_n;
        self.state.index.save(dir, Durability::Full)?;
        let path = dir.join(INDEX_FILE);
        let meta = stat(&path)?.ok_or_else(|| {
            Error::io("read", &path)(std::io::Error::from(std::io::ErrorKind::NotFound))
        })?;
        self.snapshot = Some(FileId::of(&meta));
        let jpath = dir.join(JOURNAL_FILE);
        if let Some(f) = open_journal_rw(&jpath)? {
            f.set_len(0).map_err(Error::io("truncate", &jpath))?;
            f.sync_all().map_err(Error::io("sync", &jpath))?;
            let meta = f.metadata().map_err(Error::io("read", &jpath))?;
            self.journal = Some(FileId::of(&meta));
        }
        self.offset = 0;
        self.tail.clear();
        Ok(())
    }
}

fn open_journal(path: &Path) -> Result<Option<File>> {
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
    };
    loaded.replay(bytes, true).ok()?;
    Some(loaded.state.into_index())
}

/// Reads a session's whole index (for a one-off look, not a change).
pub(crate) fn load(dir: &Path, session: &str) -> Result<Index> {
    Ok(Loaded::read(dir, session)?.state.into_index())
}

/// Runs `f` on the cached state brought up to date, and appends what it
/// changed. The caller holds the exclusive lock.
pub(crate) fn change<T>(
    cache: &mut Option<Loaded>,
    dir: &Path,
    session: &str,
    durability: Durability,
    f: impl FnOnce(&mut Tracked) -> Result<T>,
) -> Result<T> {
    Loaded::refresh(cache, dir, session)?;
    change_again(cache, dir, session, durability, f)
}

/// [`change`] for a caller that has brought the cache up to date under the
/// lock it still holds (a second change in one acquisition): no second look
/// at the files.
pub(crate) fn change_again<T>(
    cache: &mut Option<Loaded>,
    dir: &Path,
    session: &str,
    durability: Durability,
    f: impl FnOnce(&mut Tracked) -> Result<T>,
) -> Result<T> {
    if cache.is_none() {
        Loaded::refresh(cache, dir, session)?;
    }
    let loaded = cache.as_mut().expect("refreshed");
    let mut tracked = Tracked::new(&mut loaded.state);
    let out = f(&mut tracked);
    let ops = tracked.finish();
    if out.is_err() && !ops.is_empty() {
        // The closure changed memory and then failed: forget the change.
        *cache = None;
        return out;
    }
    let out = out?;
    if let Err(e) = loaded.append(dir, ops, durability) {
        *cache = None;
        return Err(e);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, path: &str) -> Entry {
        crate::index::tests::entry_at(seq, path)
    }

    fn add(cache: &mut Option<Loaded>, dir: &Path, path: &str) -> u64 {
        change(cache, dir, "s", Durability::Full, |t| {
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
            add(&mut cache, dir.path(), p);
        }
        (dir, cache)
    }

    #[test]
    fn changes_append_lines_that_a_fresh_reader_replays() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = None;
        add(&mut cache, dir.path(), "a"); // first change: writes the snapshot
        add(&mut cache, dir.path(), "b");
        add(&mut cache, dir.path(), "a");
        let journal = std::fs::read_to_string(dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(journal.lines().count(), 2, "{journal}");
        let fresh = Loaded::read(dir.path(), "s").unwrap();
        assert_eq!(fresh.state.index(), cache.as_ref().unwrap().state.index());
        assert_eq!(fresh.state.entries_for(Path::new("/w/a")), 2);
        change(&mut cache, dir.path(), "s", Durability::Full, |t| {
            t.remove_entries(&[1]);
            Ok(())
        })
        .unwrap();
        let fresh = Loaded::read(dir.path(), "s").unwrap();
        let seqs: Vec<u64> = fresh.state.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
        assert_eq!(fresh.state.entries_for(Path::new("/w/a")), 1);
    }

    #[test]
    fn a_change_that_changes_nothing_writes_nothing() {
        let (dir, mut cache) = session_of(&["a", "b"]);
        let before = std::fs::read(dir.path().join(JOURNAL_FILE)).unwrap();
        change(&mut cache, dir.path(), "s", Durability::Full, |t| {
            t.entry_mut(2).unwrap().message_id = "m".into();
            Ok(())
        })
        .unwrap();
        assert_eq!(
            std::fs::read(dir.path().join(JOURNAL_FILE)).unwrap(),
            before
        );
    }

    #[test]
    fn another_handle_sees_appended_lines_and_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let (mut one, mut two) = (None, None);
        add(&mut one, dir.path(), "a");
        add(&mut two, dir.path(), "b");
        add(&mut one, dir.path(), "c");
        Loaded::refresh(&mut two, dir.path(), "s").unwrap();
        assert_eq!(two.as_ref().unwrap().state.entries.len(), 3);
        // A compaction by one: two must notice the snapshot changed.
        one.as_mut().unwrap().compact(dir.path()).unwrap();
        add(&mut one, dir.path(), "d");
        Loaded::refresh(&mut two, dir.path(), "s").unwrap();
        assert_eq!(
            two.as_ref().unwrap().state.index(),
            one.as_ref().unwrap().state.index()
        );
        assert_eq!(two.as_ref().unwrap().state.entries.len(), 4);
    }

    #[test]
    fn a_torn_last_line_is_ignored_then_cut_off() {
        let (dir, _cache) = session_of(&["a", "b"]);
        let jpath = dir.path().join(JOURNAL_FILE);
        let whole = std::fs::read(&jpath).unwrap();
        for torn in [&b"{\"n\":3,\"ops\":[{\"op\""[..], b"\0\0\0\0", b"garbage\n"] {
            let mut bytes = whole.clone();
            bytes.extend_from_slice(torn);
            std::fs::write(&jpath, &bytes).unwrap();
            let read = Loaded::read(dir.path(), "s").unwrap();
            assert_eq!(read.state.entries.len(), 2);
            // The next writer cuts the torn bytes off and appends after line 2.
            let mut fresh = None;
            add(&mut fresh, dir.path(), "c");
            let read = Loaded::read(dir.path(), "s").unwrap();
            assert_eq!(read.state.entries.len(), 3);
            std::fs::write(&jpath, &whole).unwrap();
        }
    }

    #[test]
    fn damage_before_the_last_line_is_an_error_and_nothing_is_touched() {
        let (dir, _cache) = session_of(&["a", "b", "c"]);
        let jpath = dir.path().join(JOURNAL_FILE);
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
            let err = Loaded::read(dir.path(), "s").unwrap_err();
            assert!(matches!(err, Error::CorruptIndex { .. }), "{err}");
            let mut fresh = None;
            let refused = change(&mut fresh, dir.path(), "s", Durability::Full, |_| Ok(()));
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
        let jpath = dir.path().join(JOURNAL_FILE);
        let journal = std::fs::read(&jpath).unwrap();
        // Compaction wrote the snapshot and died before emptying the journal.
        cache.as_mut().unwrap().compact(dir.path()).unwrap();
        std::fs::write(&jpath, &journal).unwrap();
        let read = Loaded::read(dir.path(), "s").unwrap();
        assert_eq!(read.state.entries.len(), 3);
        let mut fresh = None;
        add(&mut fresh, dir.path(), "d");
        let read = Loaded::read(dir.path(), "s").unwrap();
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
        std::fs::remove_file(dir.path().join(INDEX_FILE)).unwrap();
        let err = Loaded::read(dir.path(), "s").unwrap_err();
        assert!(err.to_string().contains("journal"), "{err}");
    }
}
