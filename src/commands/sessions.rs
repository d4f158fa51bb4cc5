//! `turnback sessions`: every session in the store.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::SessionSummary;

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// List every session in the store
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback sessions --json")]
pub(crate) struct SessionsArgs {}

/// Every session of the store.
pub(crate) struct Sessions(Vec<SessionSummary>);

impl Report for Sessions {
    fn json(&self) -> Option<Value> {
        Some(json::sessions(&self.0))
    }

    fn text(&self, out: &Out) -> String {
        text::sessions(out, &self.0)
    }
}

pub(crate) fn run(ctx: &Context, _: &SessionsArgs) -> Result<Sessions, CliError> {
    Ok(Sessions(ctx.store.sessions()?))
}
