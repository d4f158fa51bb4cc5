//! `turnback write` and `turnback rm`: an agent's protected changes.

use std::path::Path;

use serde_json::Value;
use turnback::errors::Kind;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{Entry, Expected};

use crate::cli::{FileArgs, WriteArgs};
use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;
use crate::sys::{self, StdinProblem};

/// One entry a command made or changed: its line, or `{"session", "entry"}`.
pub(crate) struct EntryReport {
    pub(crate) session: String,
    pub(crate) entry: Entry,
    /// What the text line starts with ("committed ").
    pub(crate) prefix: &'static str,
}

impl Report for EntryReport {
    fn json(&self) -> Option<Value> {
        Some(json::session_entry(&self.session, &self.entry))
    }

    fn text(&self, out: &Out) -> String {
        format!("{}{}\n", self.prefix, text::entry_line(out, &self.entry))
    }
}

pub(crate) fn write(ctx: &Context, w: &WriteArgs) -> Result<EntryReport, CliError> {
    // Before anything is opened: a closed or unreadable stdin, or a person's
    // terminal, must not become the file's contents.
    if let Some(problem) = sys::stdin_problem() {
        return Err(stdin_error(problem, &w.file.file));
    }
    let args = &w.file;
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let expected = Expected {
        size: w.expect_size,
        sha256: w.expect_sha256.clone(),
    };
    let e = session.write_expecting(
        &ws,
        ctx.user_path(&args.file),
        std::io::stdin().lock(),
        &args.message,
        &expected,
    )?;
    Ok(EntryReport {
        session: session.id().to_owned(),
        entry: e,
        prefix: "",
    })
}

/// The error for a standard input that cannot be `file`'s new contents.
fn stdin_error(problem: StdinProblem, file: &Path) -> CliError {
    let file = file.display();
    let pipe = "turnback write reads the new contents from standard input: pipe them in";
    match problem {
        StdinProblem::Closed => CliError::new(
            format!("standard input is closed: no new contents for {file}; nothing was written"),
            Some(pipe.into()),
        )
        .kind(Kind::NoInput),
        StdinProblem::NotReadable => CliError::new(
            format!(
                "standard input is not open for reading: no new contents for {file}; nothing was written"
            ),
            Some(pipe.into()),
        )
        .kind(Kind::NoInput),
        StdinProblem::Terminal => CliError::usage(
            format!("standard input is a terminal: no new contents for {file}; nothing was written"),
            pipe,
        ),
    }
}

pub(crate) fn rm(ctx: &Context, args: &FileArgs) -> Result<EntryReport, CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let e = session.remove(&ws, ctx.user_path(&args.file), &args.message)?;
    Ok(EntryReport {
        session: session.id().to_owned(),
        entry: e,
        prefix: "",
    })
}

/// The two entries of a move: a line each, or `{"session", "entries"}`.
pub(crate) struct Moved {
    session: String,
    entries: Vec<Entry>,
}

impl Report for Moved {
    fn json(&self) -> Option<Value> {
        Some(json::entries(&self.session, &self.entries))
    }

    fn text(&self, out: &Out) -> String {
        self.entries
            .iter()
            .map(|e| format!("{}\n", text::entry_line(out, e)))
            .collect()
    }
}

pub(crate) fn mv(ctx: &Context, from: &Path, to: &Path, message: &str) -> Result<Moved, CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let entries = session.rename(&ws, ctx.user_path(from), ctx.user_path(to), message)?;
    Ok(Moved {
        session: session.id().to_owned(),
        entries,
    })
}

/// The number of the turn begun.
pub(crate) struct TurnBegun {
    session: String,
    turn: u32,
}

impl Report for TurnBegun {
    fn json(&self) -> Option<Value> {
        Some(serde_json::json!({ "session": self.session, "turn": self.turn }))
    }

    fn text(&self, _: &Out) -> String {
        // Only the number, so that `n=$(turnback turn --prompt ...)` works.
        format!("{}\n", self.turn)
    }
}

pub(crate) fn turn(
    ctx: &Context,
    prompt: &str,
    conversation_index: Option<u64>,
) -> Result<TurnBegun, CliError> {
    let session = ctx.agent_session()?;
    let turn = session.begin_turn(prompt, conversation_index)?;
    Ok(TurnBegun {
        session: session.id().to_owned(),
        turn,
    })
}
