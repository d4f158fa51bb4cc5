//! The change tracker: an index being changed under the exclusive lock, which
//! remembers what each change touched so that its journal line lists exactly
//! that.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::PathBuf;

use super::line::{Counters, Op};
use super::state::{State, position, put_keyed};
use super::summary::Delta;
use crate::evicted::{Evicted, Gone};
use crate::index::{Entry, FileState, ReadMark, RevertRecord, Turn};

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
    /// Entries evicted by this change, oldest first.
    gone: Vec<Gone>,
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
            gone: Vec::new(),
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

    /// Evicts the entries `seqs` (that exist): removes them and remembers
    /// them in the record of the gap.
    pub(crate) fn evict(&mut self, seqs: &[u64]) {
        for &seq in seqs {
            if let Some(e) = self.state.entry(seq) {
                self.gone.push(Gone {
                    seq,
                    message_id: e.message_id.clone(),
                    turn: e.turn,
                    workspace: e.workspace.path.clone(),
                    path: e.path.clone(),
                    time: e.time,
                });
            }
        }
        self.remove_entries(seqs);
    }

    /// The entries this change added (none was there before it), by seq.
    pub(crate) fn added_entries(&self) -> Vec<u64> {
        self.entries
            .iter()
            .filter(|(seq, old)| old.is_none() && self.state.entry(**seq).is_some())
            .map(|(seq, _)| *seq)
            .collect()
    }

    /// Drops the revert record `id` (redo can no longer put it back).
    pub(crate) fn remove_record(&mut self, id: u64) {
        let history = &mut self.state.index.history;
        if let Some(i) = history.iter().position(|r| r.id == id) {
            let r = history.remove(i);
            self.records.entry(r.id).or_insert(Some(r));
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

    /// What changed, as journal ops (empty when nothing changed) and as the
    /// entries and records before and after (for the summary), with the
    /// lookups brought up to date.
    pub(super) fn finish(self) -> (Vec<Op>, Delta) {
        let mut ops = Vec::new();
        let mut delta = Delta::default();
        let state = self.state;
        if !self.gone.is_empty() {
            for g in &self.gone {
                Evicted::add(&mut state.index.evicted, g);
            }
            ops.push(Op::Evict(self.gone));
        }
        for (seq, old) in self.entries {
            let new = state.entry(seq).cloned();
            if old == new {
                continue;
            }
            if let Some(old) = &old {
                state.forget(old);
            }
            delta.entries.push((old.clone(), new.clone()));
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
        for (id, old) in &self.records {
            let new = position(history, *id, |r| r.id).map(|i| history[i].clone());
            if *old != new {
                delta.records.push((old.clone(), new));
            }
        }
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
        (ops, delta)
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
