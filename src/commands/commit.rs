//! `turnback commit ID`: an agent records the file of its checkpoint as
//! written, or what the command a scan bracketed changed.

use crate::commands::CliError;
use crate::commands::common::EntryReport;
use crate::commands::scan::Scanned;
use crate::context::Context;
use crate::render::Report;

/// Record checkpoint ID's file, or scan ID's changes (for agents)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback commit 12\n  turnback commit scan-19a2b3c4d5e-0f1e")]
pub(crate) struct CommitArgs {
    /// The entry number or scan id `turnback checkpoint` printed
    #[arg(value_parser = id_arg)]
    id: String,
}

/// An entry number, or a scan id.
pub(crate) enum Id {
    Entry(u64),
    Scan(String),
}

/// Checks ID as clap parses it: an entry number or a scan id (`scan-...`),
/// so that anything else is a usage error with clap's usage line.
pub(crate) fn id_arg(id: &str) -> Result<String, String> {
    if id.parse::<u64>().is_ok() || id.starts_with("scan-") {
        Ok(id.to_owned())
    } else {
        Err("an entry number or a scan id (scan-...), as `turnback checkpoint` printed".into())
    }
}

/// What ID names (checked by [`id_arg`]): a number is an entry, else a scan.
pub(crate) fn parse_id(id: &str) -> Id {
    match id.parse() {
        Ok(n) => Id::Entry(n),
        Err(_) => Id::Scan(id.to_owned()),
    }
}

pub(crate) fn run(ctx: &Context, args: &CommitArgs) -> Result<Box<dyn Report>, CliError> {
    let session = ctx.agent_session()?;
    match parse_id(&args.id) {
        Id::Entry(n) => {
            let e = session.commit(n)?;
            Ok(Box::new(EntryReport {
                session: session.id().to_owned(),
                entry: e,
                prefix: "committed ",
            }))
        }
        Id::Scan(id) => Ok(Box::new(Scanned {
            report: session.commit_scan(&id)?,
            exit_code: None,
        })),
    }
}
