//! `turnback commit ID`: an agent records the file of its checkpoint as written.

use crate::commands::CliError;
use crate::commands::common::EntryReport;
use crate::context::Context;

/// Record the file of checkpoint ID as written (for agents)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback commit 12")]
pub(crate) struct CommitArgs {
    /// The entry number `turnback checkpoint` printed (`N` or `#N`)
    #[arg(value_parser = crate::naming::entry_number)]
    pub(crate) id: u64,
}

pub(crate) fn run(ctx: &Context, args: &CommitArgs) -> Result<EntryReport, CliError> {
    let session = ctx.agent_session()?;
    let e = session.commit(args.id)?;
    Ok(EntryReport {
        session: session.id().to_owned(),
        entry: e,
        prefix: "committed ",
    })
}
