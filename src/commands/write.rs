//! `turnback write` and `turnback rm`: an agent's protected changes.

use std::path::Path;

use crate::cli::FileArgs;
use crate::commands::CliError;
use crate::context::Context;
use turnback::output::Out;
use turnback::{json, text};

pub(crate) fn write(ctx: &Context, out: &Out, args: &FileArgs) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let e = session.write(
        &ws,
        ctx.user_path(&args.file),
        std::io::stdin().lock(),
        &args.message,
    )?;
    if out.json {
        out.json(&json::session_entry(session.id(), &e));
    } else {
        out.line(&text::entry_line(out, &e));
    }
    Ok(())
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
