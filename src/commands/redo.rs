//! `turnback redo`: a person puts back what the last undo, revert or rewind
//! took away.

use crate::cli_error::CliError;
use crate::context::Context;
use crate::reports::{RevertFlags, Reverted, reverted};

/// Put back what the last undo, revert or rewind took away
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback redo --dry-run")]
pub(crate) struct RedoArgs {
    #[command(flatten)]
    flags: RevertFlags,
}

pub(crate) fn run(ctx: &Context, args: &RedoArgs) -> Result<Reverted, CliError> {
    let session = ctx.redo_session()?;
    let r = session.redo(args.flags.options())?;
    Ok(reverted(&session, "redo".into(), r)?.forced(args.flags.force))
}
