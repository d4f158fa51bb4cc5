//! `turnback undo`, `revert FILE`, `rewind MESSAGE`: a person taking changes back.

use std::path::Path;

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, picker, text};
use turnback_store::{FileDiff, RevertOptions, RevertReport, Session};

use crate::cli::RevertFlags;
use crate::commands::CliError;
use crate::context::Context;
use crate::render::{Report, Text};

fn options(flags: &RevertFlags) -> RevertOptions {
    RevertOptions {
        force: flags.force,
        dry_run: flags.dry_run,
    }
}

/// A revert done, or previewed with each file's diff.
pub(crate) struct Reverted {
    /// What was reverted, as the text names it ("undo", "rewind to before m").
    what: String,
    report: RevertReport,
    /// A preview's diff of each file (in the order of `report.files`); empty
    /// for a revert done.
    diffs: Vec<Option<FileDiff>>,
}

impl Report for Reverted {
    fn json(&self) -> Option<Value> {
        Some(json::revert(&self.report, &self.diffs))
    }

    fn text(&self, out: &Out) -> String {
        text::revert(out, &self.what, &self.report, &self.diffs)
    }
}

/// The report of a revert; a preview (dry run) comes with each file's diff.
pub(crate) fn shown(
    session: &Session,
    what: String,
    report: RevertReport,
) -> Result<Reverted, CliError> {
    let diffs: Vec<Option<FileDiff>> = if report.applied {
        Vec::new()
    } else {
        report
            .files
            .iter()
            .map(|f| session.revert_diff(f).map(Some))
            .collect::<Result<_, _>>()?
    };
    Ok(Reverted {
        what,
        report,
        diffs,
    })
}

pub(crate) fn undo(ctx: &Context, flags: &RevertFlags) -> Result<Reverted, CliError> {
    let session = ctx.person_session()?;
    let r = session.undo(options(flags))?;
    shown(&session, "undo".into(), r)
}

pub(crate) fn revert(
    ctx: &Context,
    file: &Path,
    flags: &RevertFlags,
) -> Result<Reverted, CliError> {
    let ws = ctx.workspace()?;
    let path = ctx.user_path(file);
    let session = ctx.session_for_file(&ws, &path)?;
    let r = session.revert(&ws, &path, options(flags))?;
    shown(&session, "revert".into(), r)
}

pub(crate) fn rewind(
    ctx: &Context,
    message: Option<&str>,
    turn: Option<u32>,
    flags: &RevertFlags,
) -> Result<Box<dyn Report>, CliError> {
    let session = ctx.person_session()?;
    let reverted = match (message, turn) {
        (Some(m), _) => {
            let r = session.rewind(m, options(flags))?;
            shown(&session, format!("rewind to before {}", text::escape(m)), r)?
        }
        (None, Some(n)) => {
            let r = session.rewind_to_turn(n, options(flags))?;
            shown(&session, format!("rewind to the start of turn {n}"), r)?
        }
        (None, None) => return pick_and_rewind(ctx, &session, flags),
    };
    Ok(Box::new(reverted))
}

pub(crate) fn redo(ctx: &Context, flags: &RevertFlags) -> Result<Reverted, CliError> {
    let session = ctx.redo_session()?;
    let r = session.redo(options(flags))?;
    shown(&session, "redo".into(), r)
}

/// `rewind` with no argument on a terminal: pick a turn, see the preview,
/// confirm. Where it cannot ask (not a terminal, or `--json`) a turn or
/// message is required.
fn pick_and_rewind(
    ctx: &Context,
    session: &Session,
    flags: &RevertFlags,
) -> Result<Box<dyn Report>, CliError> {
    if !ctx.render.can_ask() {
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
    let nothing_done = || Ok(Box::new(Text("nothing done\n".into())) as Box<dyn Report>);
    let io_err =
        |e: std::io::Error| CliError::new(format!("could not talk to the terminal: {e}"), None);
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout();
    let style = ctx.render.style();
    let picked = picker::pick_turn(session.id(), &turns, &mut input, &mut output, &style);
    let Some(n) = picked.map_err(io_err)? else {
        return nothing_done();
    };
    let preview_opts = RevertOptions {
        force: flags.force,
        dry_run: true,
    };
    let what = format!("rewind to the start of turn {n}");
    let preview = shown(
        session,
        what.clone(),
        session.rewind_to_turn(n, preview_opts)?,
    )?;
    ctx.render.report(&preview);
    let count = preview.report.files.len();
    let question = format!(
        "Restore {count} {} to how {} when turn {n} began?",
        if count == 1 { "file" } else { "files" },
        if count == 1 { "it was" } else { "they were" }
    );
    if flags.dry_run || !picker::confirm(&question, &mut input, &mut output).map_err(io_err)? {
        return nothing_done();
    }
    let r = session.rewind_to_turn(n, options(flags))?;
    Ok(Box::new(shown(session, what, r)?))
}
