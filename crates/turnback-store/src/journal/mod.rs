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
//!
//! A change that needs only what the session's summary (`index.summary`)
//! holds works on a partial state made from it, so that a new process that
//! writes one file does not read the whole index; every change rewrites the
//! summary after its line.
//!
//! One job per part: `line` is the line format, `state` the index as replayed
//! (with its lookups), `tracked` the change tracker that turns a change into
//! the ops of one line, `file` the files themselves (reading them
//! strictly, appending, compacting, and the cache), `change` a change:
//! the tracker run on the cache brought up to date, and its line appended;
//! `summary` the summary's format, `table` its per-file lines, and `live`
//! the cache made from it.

mod change;
mod file;
mod line;
mod live;
mod state;
mod summary;
mod table;
mod tracked;

#[cfg(test)]
pub(crate) use change::change;
pub(crate) use change::{Need, change_again, load};
pub(crate) use file::{Files, Loaded, replay_on_empty};
pub(crate) use live::summary_agrees;
pub(crate) use state::State;
pub(crate) use summary::{Paths as SummaryPaths, round_trip as summary_round_trip};
pub(crate) use tracked::Tracked;
