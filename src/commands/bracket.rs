//! `turnback checkpoint`, `commit`, `rollback`: the bracket around a write an
//! agent makes itself, across processes.

use turnback_store::RevertOptions;

use crate::cli::{FileArgs, RevertFlags};
use crate::commands::CliError;
use crate::context::Context;
use turnback::output::Out;
use turnback::{json, text};

pub(crate) fn checkpoint(ctx: &Context, out: &Out, args: &FileArgs) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let cp = session.checkpoint(&ws, ctx.user_path(&args.file), &args.message)?;
    let seq = cp.seq();
    // The lock is released as this process ends; commit and rollback take it again.
    drop(cp);
    if out.json {
        let entry = session.entries()?.into_iter().find(|e| e.seq == seq);
        match entry {
            Some(e) => out.json(&json::session_entry(session.id(), &e)),
            None => out.json(&serde_json::json!({ "session": session.id(), "entry": null })),
        }
    } else {
        // Only the number, so that `id=$(turnback checkpoint FILE)` works.
        out.line(&seq.to_string());
    }
    Ok(())
}

pub(crate) fn commit(ctx: &Context, out: &Out, id: u64) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let e = session.commit(id)?;
    if out.json {
        out.json(&json::session_entry(session.id(), &e));
    } else {
        out.line(&format!("committed {}", text::entry_line(out, &e)));
    }
    Ok(())
}

pub(crate) fn rollback(
    ctx: &Context,
    out: &Out,
    id: u64,
    flags: &RevertFlags,
) -> Result<(), CliError> {
    let session = ctx.agent_session()?;
    let entry = session.entries()?.into_iter().find(|e| e.seq == id);
    let opts = RevertOptions {
        force: flags.force,
        dry_run: flags.dry_run,
    };
    let r = session.rollback_with(id, opts)?;
    if flags.dry_run {
        return crate::commands::revert::show(out, &session, &format!("rollback of {id}"), &r);
    }
    if out.json {
        let path = entry.as_ref().map(|e| e.path.clone());
        out.json(&serde_json::json!({ "session": session.id(), "rolled_back": id, "path": path }));
    } else if let Some(e) = entry {
        out.line(&format!("rolled back {}", text::entry_line(out, &e)));
    }
    Ok(())
}
