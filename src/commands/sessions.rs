//! `turnback sessions`: every session in the store.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{BaselineUsage, SessionSummary};

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// List every session in the store
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback sessions --json")]
pub(crate) struct SessionsArgs {}

/// Every session of the store.
/// Every session of the store, and the workspaces' scan baselines, which
/// take disk of their own that no session's bytes count.
pub(crate) struct Sessions(Vec<SessionSummary>, BaselineUsage);

impl Report for Sessions {
    fn json(&self) -> Option<Value> {
        let mut v = json::sessions(&self.0);
        v["baselines"] = json::baselines(&self.1);
        Some(v)
    }

    fn text(&self, out: &Out) -> String {
        let mut s = text::sessions(out, &self.0);
        if self.1.baselines > 0 {
            s.push_str(&format!("besides: {}\n", text::baselines(&self.1, None)));
        }
        s
    }
}

pub(crate) fn run(ctx: &Context, _: &SessionsArgs) -> Result<Sessions, CliError> {
    Ok(Sessions(ctx.store.sessions()?, ctx.store.baseline_usage()?))
}
