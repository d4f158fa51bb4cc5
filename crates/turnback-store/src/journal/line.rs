//! The journal's line format: one line per locked change, `{"n": N, "ops": [...]}`.

use serde::{Deserialize, Serialize};

use crate::index::{Entry, ReadMark, RevertRecord, Turn};

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
    /// Entries the caps evicted, added to the record of the gap (their
    /// removal is each one's `drop_entry`).
    Evict(Vec<crate::evicted::Gone>),
}

/// The index's counters, as a journal line sets them.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Counters {
    pub(super) next_seq: u64,
    pub(super) next_turn: u32,
    pub(super) next_record: u64,
}

/// One journal line: record `n` (the snapshot's `journal` + 1, + 2, ...) and
/// what one locked change did.
#[derive(Serialize, Deserialize, Debug)]
pub(super) struct Line {
    pub(super) n: u64,
    pub(super) ops: Vec<Op>,
}
