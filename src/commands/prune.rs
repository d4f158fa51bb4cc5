//! `turnback prune`: delete old sessions and the backups no session needs.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{PruneReport, Retention};

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// Delete old sessions (keeps the 20 newest and any changed in 30 days)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback prune --dry-run")]
pub(crate) struct PruneArgs {
    /// Show what would be deleted; delete nothing
    #[arg(long, short = 'n')]
    dry_run: bool,
}

/// What prune removed, or would remove.
pub(crate) struct Pruned(PruneReport);

impl Report for Pruned {
    fn json(&self) -> Option<Value> {
        Some(json::prune(&self.0))
    }

    fn text(&self, _: &Out) -> String {
        text::prune(&self.0)
    }
}

pub(crate) fn run(ctx: &Context, args: &PruneArgs) -> Result<Pruned, CliError> {
    let r = ctx
        .store
        .prune(&Retention::default(), ctx.named_session(), args.dry_run)?;
    Ok(Pruned(r))
}
