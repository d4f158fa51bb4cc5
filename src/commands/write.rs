//! `turnback write` and `turnback rm`: an agent's protected changes.

use crate::cli::FileArgs;
use crate::commands::CliError;
use crate::context::Context;
use crate::output::Out;
use crate::{json, text};

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
