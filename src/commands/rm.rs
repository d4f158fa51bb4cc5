//! `turnback rm FILE`: an agent deletes a file, backed up first.

use crate::cli_error::CliError;
use crate::context::Context;
use crate::reports::{EntryReport, FileArgs};

/// Delete FILE, backed up first (for agents)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback rm old_notes.txt --message call-8")]
pub(crate) struct RmArgs {
    #[command(flatten)]
    pub file: FileArgs,
}

pub(crate) fn run(ctx: &Context, args: &RmArgs) -> Result<EntryReport, CliError> {
    let args = &args.file;
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let e = session.remove(&ws, ctx.user_path(&args.file), &args.message)?;
    Ok(EntryReport {
        session: session.id().to_owned(),
        entry: e,
        prefix: "",
    })
}
