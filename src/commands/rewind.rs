//! `turnback rewind`: a person reverts every change since a message, or since
//! a turn began; on a terminal without either, picks the turn.

use turnback::{picker, text};
use turnback_store::{RevertOptions, Session};

use crate::cli_error::CliError;
use crate::context::Context;
use crate::naming::{self, Target};
use crate::render::{Report, Text};
use crate::reports::{RevertFlags, reverted};

/// Revert every change since MESSAGE or entry #N, or since turn N began (or pick a turn)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  turnback rewind call-7 --dry-run\n  turnback rewind toolu_01A     # a unique prefix of a message id\n  turnback rewind '#4'          # entry 4 and every change after it\n  turnback rewind --turn 3\n  turnback rewind --turn -1     # the start of the last turn\n  turnback rewind               # pick a turn, see the preview, confirm"
)]
pub(crate) struct RewindArgs {
    /// The message id (or a unique prefix of it) to go back to, or an entry as #N (its changes are reverted too)
    #[arg(conflicts_with_all = ["turn", "entry"], value_name = "MESSAGE|#N")]
    message: Option<String>,
    /// The entry to go back to (it is reverted too)
    #[arg(long, value_name = "N", value_parser = naming::entry_number, conflicts_with = "turn")]
    entry: Option<u64>,
    /// The turn to go back to the start of; -1 is the last, -2 the one before
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    turn: Option<i64>,
    #[command(flatten)]
    flags: RevertFlags,
}

/// The rewind's report: the revert, or "nothing done" when the person who
/// was asked said no.
pub(crate) fn run(ctx: &Context, args: &RewindArgs) -> Result<Box<dyn Report>, CliError> {
    let session = ctx.person_session()?;
    let opts = args.flags.options();
    let target = match (&args.message, args.entry) {
        (Some(m), _) => Some(naming::target(&session.entries()?, m)?),
        (None, Some(n)) => Some(Target::Entry(n)),
        (None, None) => None,
    };
    let done = match (target, args.turn) {
        (Some(Target::Message(m)), _) => {
            let r = session.rewind(&m, opts)?;
            reverted(
                &session,
                format!("rewind to before {}", text::escape(&m)),
                r,
            )?
        }
        (Some(Target::Entry(n)), _) => {
            let r = session.rewind_to_entry(n, opts)?;
            reverted(&session, format!("rewind to before #{n}"), r)?
        }
        (None, Some(n)) => {
            let n = naming::turn(&session, n)?;
            let r = session.rewind_to_turn(n, opts)?;
            reverted(&session, format!("rewind to the start of turn {n}"), r)?
        }
        (None, None) => return pick_and_rewind(ctx, &session, &args.flags),
    };
    Ok(Box::new(done.forced(args.flags.force)))
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
    let preview = session.rewind_to_turn(n, preview_opts)?;
    let preview = reverted(session, what.clone(), preview)?;
    // Written to the terminal the picker talks to, as its own lines are.
    ctx.render.report(&preview).map_err(io_err)?;
    let count = preview.report.files.len();
    let question = format!(
        "Restore {count} {} to how {} when turn {n} began?",
        if count == 1 { "file" } else { "files" },
        if count == 1 { "it was" } else { "they were" }
    );
    if flags.dry_run || !picker::confirm(&question, &mut input, &mut output).map_err(io_err)? {
        return nothing_done();
    }
    let r = session.rewind_to_turn(n, flags.options())?;
    Ok(Box::new(reverted(session, what, r)?))
}
