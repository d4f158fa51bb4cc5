//! `turnback prune`: delete old sessions and the backups no session needs.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{PruneReport, Retention, SettingSource};

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Delete old sessions (keeps the 20 newest and any changed in 30 days)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "`turnback config` shows the settings in force.\n\nExample:\n  turnback prune --dry-run --keep-days 7"
)]
pub(crate) struct PruneArgs {
    /// Show what would be deleted, and why; delete nothing
    #[arg(long, short = 'n')]
    dry_run: bool,
    /// Keep this many most recently changed sessions [default: 20, or the keep_sessions setting]
    #[arg(long, value_name = "N")]
    keep_sessions: Option<usize>,
    /// Keep every session changed in this many days [default: 30, or the keep_days setting]
    #[arg(long, value_name = "DAYS")]
    keep_days: Option<u64>,
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
    let mut settings = ctx.store.settings().clone();
    if let Some(n) = args.keep_sessions {
        settings
            .keep_sessions
            .set(n, SettingSource::Flag("--keep-sessions"));
    }
    if let Some(d) = args.keep_days {
        settings
            .keep_days
            .set(d, SettingSource::Flag("--keep-days"));
    }
    let r = ctx
        .store
        .prune(&Retention::of(&settings), ctx.named_session(), args.dry_run)?;
    Ok(Pruned(r))
}
