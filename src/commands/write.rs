//! `turnback write` and `turnback rm`: an agent's protected changes.

use std::path::Path;

use turnback::errors::Kind;
use turnback_store::Expected;

use crate::cli::{FileArgs, WriteArgs};
use crate::commands::CliError;
use crate::context::Context;
use crate::sys::{self, StdinProblem};
use turnback::output::Out;
use turnback::{json, text};

pub(crate) fn write(ctx: &Context, out: &Out, w: &WriteArgs) -> Result<(), CliError> {
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
    if out.json {
        out.json(&json::session_entry(session.id(), &e));
    } else {
        out.line(&text::entry_line(out, &e));
    }
    Ok(())
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

pub(crate) fn rm(ctx: &Context, out: &Out, args: &FileArgs) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let e = session.remove(&ws, ctx.user_path(&args.file), &args.message)?;
    if out.json {
        out.json(&json::session_entry(session.id(), &e));
    } else {
        out.line(&text::entry_line(out, &e));
    }
    Ok(())
}

pub(crate) fn mv(
    ctx: &Context,
    out: &Out,
    from: &Path,
    to: &Path,
    message: &str,
) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let entries = session.rename(&ws, ctx.user_path(from), ctx.user_path(to), message)?;
    if out.json {
        let list: Vec<_> = entries.iter().map(json::entry).collect();
        out.json(&serde_json::json!({ "session": session.id(), "entries": list }));
    } else {
        for e in &entries {
            out.line(&text::entry_line(out, e));
        }
    }
    Ok(())
}

pub(crate) fn turn(
    ctx: &Context,
    out: &Out,
    prompt: &str,
    conversation_index: Option<u64>,
) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let n = session.begin_turn(prompt, conversation_index)?;
    if out.json {
        out.json(&serde_json::json!({ "session": session.id(), "turn": n }));
    } else {
        // Only the number, so that `n=$(turnback turn --prompt ...)` works.
        out.line(&n.to_string());
    }
    Ok(())
}
