//! User turns: the boundaries of a conversation, so that an agent can rewind to
//! the start of any turn, and a resumed agent can rebuild where its turns begin
//! in its conversation.

use time::OffsetDateTime;

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::index::Turn;
use crate::revert::{self, Kind, RevertOptions, RevertReport};
use crate::session::Session;

/// A turn with what it changed, for a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    /// The turn.
    pub turn: Turn,
    /// Entries made in this turn that are still in effect.
    pub entries: usize,
    /// Distinct files those entries change.
    pub files: usize,
}

impl Session {
    /// Begins a new user turn: every change from now on belongs to it, until the
    /// next turn begins. Returns its number (1, 2, ...; entries made before any
    /// turn belong to turn 0).
    pub fn begin_turn(&self, prompt: &str, conversation_index: Option<u64>) -> Result<u32> {
        self.mutate(Durability::Full, |idx| {
            Ok(idx.push_turn(Turn {
                number: 0, // numbered by the index
                prompt: prompt.to_owned(),
                time: OffsetDateTime::now_utc(),
                conversation_index,
            }))
        })
    }

    /// The turns in effect, oldest first, with each one's prompt, time and
    /// conversation index: what a resumed agent needs to rebuild its
    /// conversation boundaries.
    pub fn turn_bounds(&self) -> Result<Vec<Turn>> {
        self.view(|s| s.turns.clone())
    }

    /// The turns in effect, oldest first, with the entries and files each changed.
    pub fn turns(&self) -> Result<Vec<TurnSummary>> {
        self.view(|idx| {
            idx.turns
                .iter()
                .map(|t| {
                    let mine: Vec<_> = idx.entries.iter().filter(|e| e.turn == t.number).collect();
                    let mut files: Vec<_> = mine.iter().map(|e| e.absolute_path()).collect();
                    files.sort();
                    files.dedup();
                    TurnSummary {
                        turn: t.clone(),
                        entries: mine.len(),
                        files: files.len(),
                    }
                })
                .collect()
        })
    }

    /// Restores every file as it was when turn `n` began: reverts every entry of
    /// turn `n` and later, newest first, checked all together before any file is
    /// touched. The turns from `n` on are taken away with them (and come back with
    /// [`Session::redo`]).
    pub fn rewind_to_turn(&self, n: u32, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        let kind = Kind {
            name: "rewind-turn",
            turns_from: Some(n),
        };
        let left = std::sync::Mutex::new(Vec::new());
        let r = revert::revert_entries(self, opts, kind, &|idx| {
            if !idx.turns.iter().any(|t| t.number == n) {
                return Err(Error::TurnNotFound {
                    session: id.clone(),
                    turn: n,
                });
            }
            let seqs = idx
                .entries
                .iter()
                .filter(|e| e.turn >= n)
                .map(|e| e.seq)
                .collect();
            // The files whose changes in these turns the caps evicted.
            let gone = idx.evicted.iter().flat_map(|g| g.files_since_turn(n));
            let gone = gone.map(|f| f.absolute_path()).collect();
            revert::past_gap(&id, idx, seqs, gone, opts, &left)
        });
        revert::with_gap(r, left)
    }
}
