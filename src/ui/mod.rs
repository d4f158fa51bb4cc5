//! `turnback ui`: the full-screen timeline of a workspace, live while agents
//! work, with a rewind one key away. Each part has one job; the loop
//! (`run.rs`) ties them together.

mod backend;
mod data;
mod diff_lines;
mod draw;
mod live;
#[cfg(test)]
mod render_tests;
mod run;
mod state;
mod terminal;
mod timeline;

pub(crate) use run::run;
