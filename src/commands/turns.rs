//! `turnback turns`: the session's turns, newest first, with their prompts.

use serde_json::Value;
use turnback::history;
use turnback::output::Out;
use turnback_store::TurnSummary;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// List the session's turns, newest first: number, time, files changed, prompt
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  turnback turns\n  turnback rewind --turn -1   # back to the start of the last one"
)]
pub(crate) struct TurnsArgs {}

/// The turns of one session.
pub(crate) struct Turns {
    session: String,
    turns: Vec<TurnSummary>,
}

impl Report for Turns {
    fn json(&self) -> Option<Value> {
        Some(history::turns_json(&self.session, &self.turns))
    }

    fn text(&self, out: &Out) -> String {
        history::turns(out, &self.session, &self.turns)
    }
}

pub(crate) fn run(ctx: &Context, _: &TurnsArgs) -> Result<Turns, CliError> {
    let session = ctx.person_session()?;
    Ok(Turns {
        turns: session.turns()?,
        session: session.id().to_owned(),
    })
}
