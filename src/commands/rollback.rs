//! `turnback rollback ID`: an agent puts the file of its checkpoint back and
//! drops the entry.

use serde_json::Value;
use turnback::output::Out;
use turnback::text;
use turnback_store::Entry;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;
use crate::reports::{RevertFlags, reverted};

/// Put the file of checkpoint ID back and drop the entry (for agents)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  turnback rollback 12\n\nRefused (exit code 3) when a change to the file was recorded since the\ncheckpoint, by this session or another; --force rolls back over it, backing\nup what it overwrites (`turnback redo` puts it back)."
)]
pub(crate) struct RollbackArgs {
    /// The entry number (`N` or `#N`) or scan id `turnback checkpoint` printed
    #[arg(value_parser = crate::commands::commit::id_arg, required_unless_present = "entry")]
    id: Option<crate::commands::commit::Id>,
    /// The entry number, as `--entry N` (the same as ID `N`)
    #[arg(long, value_name = "N", value_parser = crate::naming::entry_number, conflicts_with = "id")]
    entry: Option<u64>,
    #[command(flatten)]
    pub(crate) flags: RevertFlags,
}

impl RollbackArgs {
    /// What the command names: ID, or `--entry N`.
    pub(crate) fn id(&self) -> crate::commands::commit::Id {
        crate::commands::commit::either_id(&self.id, self.entry)
    }
}

/// A rollback done: the entry's line, or `{"session", "rolled_back", "path"}`.
pub(crate) struct RolledBack {
    pub(crate) session: String,
    pub(crate) id: u64,
    /// The entry as it was before the rollback dropped it.
    pub(crate) entry: Option<Entry>,
}

impl Report for RolledBack {
    fn json(&self) -> Option<Value> {
        let path = self.entry.as_ref().map(|e| e.path.clone());
        Some(serde_json::json!({ "session": self.session, "rolled_back": self.id, "path": path }))
    }

    fn text(&self, out: &Out) -> String {
        match &self.entry {
            Some(e) => format!("rolled back {}\n", text::entry_line(out, e)),
            None => String::new(),
        }
    }
}

/// A rollback, or with `--dry-run` its preview.
pub(crate) fn run(ctx: &Context, args: &RollbackArgs) -> Result<Box<dyn Report>, CliError> {
    let session = ctx.agent_session()?;
    let id = match &args.id() {
        crate::commands::commit::Id::Entry(n) => *n,
        crate::commands::commit::Id::Scan(_) if args.flags.dry_run || args.flags.force => {
            return Err(CliError::usage(
                "--dry-run and --force are for a checkpoint's entry, not a scan",
                "`turnback rollback SCAN` puts back what changed since the scan began",
            ));
        }
        crate::commands::commit::Id::Scan(id) => {
            return Ok(Box::new(crate::scan_report::Scanned {
                report: session.rollback_scan(id)?,
                exit_code: None,
            }));
        }
    };
    let entry = session.entries()?.into_iter().find(|e| e.seq == id);
    let r = session.rollback_with(id, args.flags.options())?;
    if args.flags.dry_run {
        let what = format!("rollback of {id}");
        return Ok(Box::new(
            reverted(&session, what, r)?.forced(args.flags.force),
        ));
    }
    Ok(Box::new(RolledBack {
        session: session.id().to_owned(),
        id,
        entry,
    }))
}
