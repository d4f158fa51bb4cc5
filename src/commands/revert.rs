//! `turnback undo`, `revert FILE`, `rewind MESSAGE`: a person taking changes back.

use std::path::Path;

use turnback_store::{FileDiff, RevertOptions, RevertReport, Session};

use turnback::picker;

use crate::cli::RevertFlags;
use crate::commands::CliError;
use crate::context::Context;
use turnback::output::Out;
use turnback::{json, text};

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
    message: Option<&str>,
    turn: Option<u32>,
    flags: &RevertFlags,
) -> Result<(), CliError> {
    let session = ctx.person_session()?;
    match (message, turn) {
        (Some(m), _) => {
            let r = session.rewind(m, options(flags))?;
            show(
                out,
                &session,
                &format!("rewind to before {}", text::escape(m)),
                &r,
            )
        }
        (None, Some(n)) => {
            let r = session.rewind_to_turn(n, options(flags))?;
            show(
                out,
                &session,
                &format!("rewind to the start of turn {n}"),
                &r,
            )
        }
        (None, None) => pick_and_rewind(&session, out, flags),
    }
}

pub(crate) fn redo(ctx: &Context, out: &Out, flags: &RevertFlags) -> Result<(), CliError> {
    let session = ctx.redo_session()?;
    let r = session.redo(options(flags))?;
    show(out, &session, "redo", &r)
}

/// `rewind` with no argument on a terminal: pick a turn, see the preview,
/// confirm. Off a terminal (or with `--json`) a turn or message is required.
fn pick_and_rewind(session: &Session, out: &Out, flags: &RevertFlags) -> Result<(), CliError> {
    use std::io::IsTerminal;
    if out.json || !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CliError::usage(
            "rewind needs a MESSAGE or --turn N when it cannot ask",
            "`turnback rewind --turn N`, or run it on a terminal to pick a turn",
        ));
    }
    let turns = session.turns()?;
    if turns.is_empty() {
        return Err(CliError::new(
            format!("session {} has no turns to pick from", session.id()),
            Some(
                "`turnback rewind MESSAGE` rewinds to a message; agents begin turns with `turnback turn`"
                    .into(),
            ),
        ));
    }
    let io_err =
        |e: std::io::Error| CliError::new(format!("could not talk to the terminal: {e}"), None);
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout();
    let picked = picker::pick_turn(session.id(), &turns, &mut input, &mut output, out);
    let Some(n) = picked.map_err(io_err)? else {
        out.line("nothing done");
        return Ok(());
    };
    let preview_opts = RevertOptions {
        force: flags.force,
        dry_run: true,
    };
    let preview = session.rewind_to_turn(n, preview_opts)?;
    let what = format!("rewind to the start of turn {n}");
    show(out, session, &what, &preview)?;
    let count = preview.files.len();
    let question = format!(
        "Restore {count} {} to how {} when turn {n} began?",
        if count == 1 { "file" } else { "files" },
        if count == 1 { "it was" } else { "they were" }
    );
    if flags.dry_run || !picker::confirm(&question, &mut input, &mut output).map_err(io_err)? {
        out.line("nothing done");
        return Ok(());
    }
    let r = session.rewind_to_turn(n, options(flags))?;
    show(out, session, &what, &r)
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
