//! `turnback turn --prompt P`: an agent begins a user turn.

use serde_json::Value;
use turnback::output::Out;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Begin a user turn; prints its number (for agents)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  turnback turn --prompt \"add a --verbose flag\" --conversation-index 14"
)]
pub(crate) struct TurnArgs {
    /// The user's prompt that opens the turn (shown by the rewind picker)
    #[arg(long)]
    prompt: String,
    /// Where the turn starts in the agent's conversation
    #[arg(long, value_name = "N")]
    conversation_index: Option<u64>,
}

/// The number of the turn begun.
pub(crate) struct TurnBegun {
    session: String,
    turn: u32,
}

impl Report for TurnBegun {
    fn json(&self) -> Option<Value> {
        Some(serde_json::json!({ "session": self.session, "turn": self.turn }))
    }

    fn text(&self, _: &Out) -> String {
        // Only the number, so that `n=$(turnback turn --prompt ...)` works.
        format!("{}\n", self.turn)
    }
}

pub(crate) fn run(ctx: &Context, args: &TurnArgs) -> Result<TurnBegun, CliError> {
    let session = ctx.agent_session()?;
    let turn = session.begin_turn(&args.prompt, args.conversation_index)?;
    Ok(TurnBegun {
        session: session.id().to_owned(),
        turn,
    })
}
