//! The index as replayed: the snapshot with every journal line applied, and
//! the lookups a change needs in less than a scan of it.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};

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
    #[cfg(test)]
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

    pub(super) fn note(&mut self, e: &Entry) {
        *self.versions.entry(e.absolute_path()).or_default() += 1;
        if e.in_flight.is_some() {
            self.in_flight.insert(e.seq);
        }
    }

    pub(super) fn forget(&mut self, e: &Entry) {
        let file = e.absolute_path();
        if let Some(n) = self.versions.get_mut(&file) {
            *n -= 1;
            if *n == 0 {
                self.versions.remove(&file);
            }
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

    /// Applies one journal line's ops; `Err` names what did not fit.
    pub(super) fn apply(&mut self, ops: Vec<Op>) -> std::result::Result<(), String> {
        let mut recorded = Vec::new();
        for op in ops {
            match op {
                Op::Entry(entry) => {
                    index_check::check_entry(&entry)?;
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
