//! `turnback undo`: a person reverts the session's newest change.

use crate::commands::CliError;
use crate::commands::common::{RevertFlags, Reverted, reverted};
use crate::context::Context;

/// Revert the session's newest change
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback undo --dry-run")]
pub(crate) struct UndoArgs {
    #[command(flatten)]
    flags: RevertFlags,
}

pub(crate) fn run(ctx: &Context, args: &UndoArgs) -> Result<Reverted, CliError> {
    let session = ctx.person_session()?;
    // Read before the undo takes the entries away.
    let mark = crate::commands::scan::newest_mark(&session);
    let r = session.undo(args.flags.options())?;
    let what = crate::commands::scan::revert_what("undo", mark.as_ref());
    reverted(&session, what, r)
}
