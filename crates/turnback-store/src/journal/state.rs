//! The index as replayed: the snapshot with every journal line applied, and
//! the lookups a change needs in less than a scan of it.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::line::Op;
use crate::index::{Entry, Index, ReadMark};
use crate::index_check;

/// An index with the lookups a change needs in less than a scan of it.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(super) index: Index,
    /// Entries per absolute file path (an entry's `version` is one more).
    versions: HashMap<PathBuf, u32>,
    /// Position in `index.reads` per file.
    reads: HashMap<PathBuf, usize>,
    /// Entries in flight, by seq.
    in_flight: std::collections::BTreeSet<u64>,
    /// For a state made from the summary (`summary.rs`), which holds only the
    /// open entries: each file's number of entries as the summary counted
    /// them (`versions` then holds only the files changed since).
    counts: Option<Arc<Vec<u8>>>,
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
            counts: None,
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

    /// A state made from a summary: `index` holds the open entries, the
    /// counters and the turn under way, and `counts` every file's number of
    /// entries. Only a change that adds entries, or finishes or drops open
    /// ones, may use it (`Need::Live`).
    pub(super) fn of_summary(index: Index, counts: Arc<Vec<u8>>) -> State {
        let in_flight = index
            .entries
            .iter()
            .filter(|e| e.in_flight.is_some())
            .map(|e| e.seq)
            .collect();
        State {
            index,
            versions: HashMap::new(),
            reads: HashMap::new(),
            in_flight,
            counts: Some(counts),
        }
    }

    /// True for a state made from a summary, which holds only the entries in
    /// flight or not committed (and no history or read marks): what it says
    /// of any other entry is not the index's.
    pub(crate) fn is_partial(&self) -> bool {
        self.counts.is_some()
    }

    /// Every file's number of entries (`None` for a partial state).
    pub(super) fn file_counts(&self) -> Option<impl Iterator<Item = (&PathBuf, u32)>> {
        if self.is_partial() {
            return None;
        }
        Some(self.versions.iter().map(|(f, n)| (f, *n)))
    }

    /// The index as the snapshot stores it.
    #[cfg(test)]
    pub(crate) fn index(&self) -> &Index {
        &self.index
    }

    pub(crate) fn into_index(self) -> Index {
        self.index
    }

    /// How many entries the session has for the file at absolute path `file`.
    pub(crate) fn entries_for(&self, file: &Path) -> u32 {
        match (self.versions.get(file), &self.counts) {
            (Some(&n), _) => n,
            (None, Some(table)) => super::table::count(table, file),
            (None, None) => 0,
        }
    }

    /// `file`'s number of entries, to change.
    fn count_mut(&mut self, file: PathBuf) -> &mut u32 {
        let counts = &self.counts;
        self.versions.entry(file).or_insert_with_key(|f| {
            counts
                .as_ref()
                .map_or(0, |table| super::table::count(table, f))
        })
    }

    /// What the session last saw of `file`.
    pub(crate) fn read_mark(&self, file: &Path) -> Option<&ReadMark> {
        self.reads.get(file).map(|&i| &self.index.reads[i])
    }

    /// The entries in flight, oldest first.
    pub(crate) fn in_flight(&self) -> Vec<u64> {
        self.in_flight.iter().copied().collect()
    }

    pub(super) fn note(&mut self, e: &Entry) {
        *self.count_mut(e.absolute_path()) += 1;
        if e.in_flight.is_some() {
            self.in_flight.insert(e.seq);
        }
    }

    pub(super) fn forget(&mut self, e: &Entry) {
        let file = e.absolute_path();
        let n = self.count_mut(file.clone());
        *n = n.saturating_sub(1);
        let gone = *n == 0;
        // A partial state keeps the 0: the summary's table still counts it.
        if gone && !self.is_partial() {
            self.versions.remove(&file);
        }
        self.in_flight.remove(&e.seq);
    }

    pub(super) fn put_entry(&mut self, entry: Entry) {
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

    pub(super) fn drop_entry(&mut self, seq: u64) -> bool {
        match position(&self.index.entries, seq, |e| e.seq) {
            Some(i) => {
                let old = self.index.entries.remove(i);
                self.forget(&old);
                true
            }
            None => false,
        }
    }

    pub(super) fn put_read(&mut self, mark: ReadMark) {
        match self.reads.get(&mark.file) {
            Some(&i) => self.index.reads[i] = mark,
            None => {
                self.reads.insert(mark.file.clone(), self.index.reads.len());
                self.index.reads.push(mark);
            }
        }
    }

    /// Drops the entries `seqs` (a run of one line's ops) in one pass:
    /// dropping them one by one from the sorted list moves the rest each
    /// time, quadratic for an undo of a shell command's 100,000 files.
    fn drop_entries(&mut self, seqs: Vec<u64>) -> std::result::Result<(), String> {
        if let [seq] = seqs[..] {
            return match self.drop_entry(seq) {
                true => Ok(()),
                false => Err(format!("drops entry {seq}, which does not exist")),
            };
        }
        let mut wanted: HashSet<u64> = HashSet::with_capacity(seqs.len());
        for &seq in &seqs {
            if !wanted.insert(seq) || position(&self.index.entries, seq, |e| e.seq).is_none() {
                return Err(format!("drops entry {seq}, which does not exist"));
            }
        }
        let entries = std::mem::take(&mut self.index.entries);
        let (gone, kept): (Vec<Entry>, Vec<Entry>) =
            entries.into_iter().partition(|e| wanted.contains(&e.seq));
        self.index.entries = kept;
        for old in &gone {
            self.forget(old);
        }
        Ok(())
    }

    /// Puts the entries of a run of one line's ops, each as
    /// [`State::put_entry`] would, but new ones inserted among the others
    /// by one sort rather than one move of the list each (a redo of a shell
    /// command puts back 100,000).
    fn put_entries(&mut self, run: Vec<Entry>) {
        let tail = self.index.entries.last().map(|e| e.seq);
        let in_order = run.windows(2).all(|w| w[0].seq < w[1].seq)
            && run.first().is_none_or(|e| tail.is_none_or(|t| t < e.seq));
        if run.len() < 8 || in_order {
            for entry in run {
                self.put_entry(entry);
            }
            return;
        }
        let mut new = Vec::new();
        for entry in run {
            match position(&self.index.entries, entry.seq, |e| e.seq) {
                Some(at) => {
                    let old = std::mem::replace(&mut self.index.entries[at], entry.clone());
                    self.forget(&old);
                    self.note(&entry);
                }
                None => new.push(entry),
            }
        }
        // A later op of the run for the same seq wins, as one by one.
        new.reverse();
        new.sort_by_key(|e| e.seq);
        new.dedup_by_key(|e| e.seq);
        for entry in &new {
            self.note(entry);
        }
        self.index.entries.extend(new);
        self.index.entries.sort_by_key(|e| e.seq);
    }

    /// Applies one journal line's ops; `Err` names what did not fit.
    pub(super) fn apply(&mut self, ops: Vec<Op>) -> std::result::Result<(), String> {
        let mut recorded = Vec::new();
        let mut ops = ops.into_iter().peekable();
        while let Some(op) = ops.next() {
            match op {
                Op::Entry(entry) => {
                    index_check::check_entry(&entry)?;
                    let mut run = vec![entry];
                    while let Some(Op::Entry(_)) = ops.peek() {
                        let Some(Op::Entry(e)) = ops.next() else {
                            unreachable!("peeked")
                        };
                        index_check::check_entry(&e)?;
                        run.push(e);
                    }
                    self.put_entries(run);
                }
                Op::DropEntry(seq) => {
                    let mut seqs = vec![seq];
                    while let Some(&Op::DropEntry(s)) = ops.peek() {
                        seqs.push(s);
                        ops.next();
                    }
                    self.drop_entries(seqs)?;
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
                    index_check::check_record(&record)?;
                    recorded.extend(record.entries.iter().map(|e| e.seq));
                    put_keyed(&mut self.index.history, record, |r| r.id);
                }
                Op::DropRecord(id) => {
                    drop_keyed(&mut self.index.history, id, |r| r.id)
                        .ok_or_else(|| format!("drops revert {id}, which does not exist"))?;
                }
                Op::Read(mark) => {
                    index_check::check_read(&mark)?;
                    self.put_read(mark);
                }
                Op::Evict(gone) => {
                    for g in &gone {
                        g.check()?;
                        crate::evicted::Evicted::add(&mut self.index.evicted, g);
                    }
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

pub(super) fn position<T, K: Ord>(items: &[T], key: K, key_of: impl Fn(&T) -> K) -> Option<usize> {
    let at = items.partition_point(|x| key_of(x) < key);
    (at < items.len() && key_of(&items[at]) == key).then_some(at)
}

pub(super) fn put_keyed<T, K: Ord>(items: &mut Vec<T>, item: T, key_of: impl Fn(&T) -> K) {
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
