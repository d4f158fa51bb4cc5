//! `turnback undo`, `revert FILE`, `rewind MESSAGE`: a person taking changes back.

use std::path::Path;

use turnback_store::{FileDiff, RevertOptions, RevertReport, Session};

use crate::cli::RevertFlags;
use crate::commands::CliError;
use crate::context::Context;
use crate::output::Out;
use crate::{json, text};

fn options(flags: &RevertFlags) -> RevertOptions {
    RevertOptions {
        force: flags.force,
        dry_run: flags.dry_run,
    }
}

pub(crate) fn undo(ctx: &Context, out: &Out, flags: &RevertFlags) -> Result<(), CliError> {
    let session = ctx.person_session()?;
    let r = session.undo(options(flags))?;
    show(out, &session, "undo", &r)
}

pub(crate) fn revert(
    ctx: &Context,
    out: &Out,
    file: &Path,
    flags: &RevertFlags,
) -> Result<(), CliError> {
    let ws = ctx.workspace()?;
    let path = ctx.user_path(file);
    let session = ctx.session_for_file(&ws, &path)?;
    let r = session.revert(&ws, &path, options(flags))?;
    show(out, &session, "revert", &r)
}

pub(crate) fn rewind(
    ctx: &Context,
    out: &Out,
    message: &str,
    flags: &RevertFlags,
) -> Result<(), CliError> {
    let session = ctx.person_session()?;
    let r = session.rewind(message, options(flags))?;
    show(out, &session, &format!("rewind to before {message}"), &r)
}

/// Prints a revert; a preview (dry run) comes with each file's diff.
pub(crate) fn show(
    out: &Out,
    session: &Session,
    what: &str,
    r: &RevertReport,
) -> Result<(), CliError> {
    let diffs: Vec<Option<FileDiff>> = if r.applied {
        Vec::new()
    } else {
        r.files
            .iter()
            .map(|f| session.revert_diff(f).map(Some))
            .collect::<Result<_, _>>()?
    };
    if out.json {
        out.json(&json::revert(r, &diffs));
    } else {
        out.print(&text::revert(out, what, r, &diffs));
    }
    Ok(())
}
