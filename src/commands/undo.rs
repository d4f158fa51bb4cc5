//! `turnback undo`: a person reverts the session's newest change.

use crate::cli_error::CliError;
use crate::context::Context;
use crate::reports::{RevertFlags, Reverted, reverted};

/// Revert the session's newest change, or its newest N changes
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  turnback undo --dry-run\n  turnback undo 3      # the newest three changes, as one undo"
)]
pub(crate) struct UndoArgs {
    /// How many of the newest changes to revert (a move counts as one)
    #[arg(value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    #[command(flatten)]
    flags: RevertFlags,
}

pub(crate) fn run(ctx: &Context, args: &UndoArgs) -> Result<Reverted, CliError> {
    let session = ctx.person_session()?;
    // Read before the undo takes the entries away.
    let mark = crate::scan_report::newest_mark(&session);
    let r = match args.count {
        None | Some(1) => session.undo(args.flags.options())?,
        Some(n) => session.undo_steps(n as usize, args.flags.options())?,
    };
    let what = match args.count {
        None | Some(1) => crate::scan_report::revert_what("undo", mark.as_ref()),
        Some(n) => format!("undo of the newest {n} changes"),
    };
    Ok(reverted(&session, what, r)?.forced(args.flags.force))
}
