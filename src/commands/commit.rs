//! `turnback commit ID`: an agent records the file of its checkpoint as
//! written, or what the command a scan bracketed changed.

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;
use crate::reports::EntryReport;
use crate::scan_report::Scanned;

/// Record checkpoint ID's file, or scan ID's changes (for agents)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback commit 12\n  turnback commit scan-19a2b3c4d5e-0f1e")]
pub(crate) struct CommitArgs {
    /// The entry number (`N` or `#N`) or scan id `turnback checkpoint` printed
    #[arg(value_parser = id_arg, required_unless_present = "entry")]
    id: Option<Id>,
    /// The entry number, as `--entry N` (the same as ID `N`)
    #[arg(long, value_name = "N", value_parser = crate::naming::entry_number, conflicts_with = "id")]
    entry: Option<u64>,
}

impl CommitArgs {
    /// What the command names: ID, or `--entry N`.
    pub(crate) fn id(&self) -> Id {
        either_id(&self.id, self.entry)
    }
}

/// ID, else `--entry N` (clap requires one of the two).
pub(crate) fn either_id(id: &Option<Id>, entry: Option<u64>) -> Id {
    match (id, entry) {
        (Some(id), _) => id.clone(),
        (None, Some(n)) => Id::Entry(n),
        (None, None) => unreachable!("clap requires ID or --entry"),
    }
}

/// What a checkpoint's ID names: an entry number, or a scan id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Id {
    Entry(u64),
    Scan(String),
}

/// Parses ID as clap parses it: an entry number (`N` or `#N`) or a scan id
/// (`scan-...`), so that anything else is a usage error with clap's usage
/// line.
pub(crate) fn id_arg(id: &str) -> Result<Id, String> {
    if id.starts_with("scan-") {
        return Ok(Id::Scan(id.to_owned()));
    }
    crate::naming::entry_number(id)
        .map(Id::Entry)
        .map_err(|_| {
            format!(
                "{id:?} is not an entry number (`#N` or `N`) or a scan id (scan-...), as `turnback checkpoint` printed"
            )
        })
}

pub(crate) fn run(ctx: &Context, args: &CommitArgs) -> Result<Box<dyn Report>, CliError> {
    let session = ctx.agent_session()?;
    match &args.id() {
        Id::Entry(n) => {
            let e = session.commit(*n)?;
            Ok(Box::new(EntryReport {
                session: session.id().to_owned(),
                entry: e,
                prefix: "committed ",
            }))
        }
        Id::Scan(id) => Ok(Box::new(Scanned {
            report: session.commit_scan(id)?,
            exit_code: None,
        })),
    }
}
