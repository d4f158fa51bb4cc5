//! `turnback turns`: the session's user turns, with what each changed.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, picker};
use turnback_store::TurnSummary;

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// List the session's user turns, oldest first, with the files each changed
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  turnback turns\n  turnback rewind --turn 3   # back to how the files were when turn 3 began"
)]
pub(crate) struct TurnsArgs {}

/// The turns of one session.
pub(crate) struct Turns {
    session: String,
    turns: Vec<TurnSummary>,
}

impl Report for Turns {
    fn json(&self) -> Option<Value> {
        Some(json::turns(&self.session, &self.turns))
    }

    fn text(&self, out: &Out) -> String {
        if self.turns.is_empty() {
            return format!(
                "session {} has no turns\n",
                turnback::text::escape(&self.session)
            );
        }
        self.turns
            .iter()
            .map(|t| format!("{}\n", picker::turn_line(out, t)))
            .collect()
    }
}

pub(crate) fn run(ctx: &Context, _: &TurnsArgs) -> Result<Turns, CliError> {
    let session = ctx.person_session()?;
    Ok(Turns {
        session: session.id().to_owned(),
        turns: session.turns()?,
    })
}
