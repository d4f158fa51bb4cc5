//! Presentation shared by the `turnback` command and by agents that put
//! turnback behind a terminal UI (see `examples/agent.rs`): the human text of
//! each result, the JSON API's shapes, the table of errors, colour, and the
//! picker of turns.
//!
//! Everything that changes files is in the `turnback-store` crate; this crate
//! only renders and asks.

pub mod blame_view;
pub mod entry_view;
pub mod errors;
pub mod history;
pub mod json;
pub mod output;
pub mod picker;
pub mod text;
pub mod when;
