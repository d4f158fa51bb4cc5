//! `turnback sessions` and `turnback prune`: the store as a whole.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{PruneReport, Retention, SessionSummary};

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

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

pub(crate) fn list(ctx: &Context) -> Result<Sessions, CliError> {
    Ok(Sessions(ctx.store.sessions()?))
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

pub(crate) fn prune(ctx: &Context, dry_run: bool) -> Result<Pruned, CliError> {
    let r = ctx
        .store
        .prune(&Retention::default(), ctx.named_session(), dry_run)?;
    Ok(Pruned(r))
}
