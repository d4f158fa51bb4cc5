//! `turnback mv FROM TO`: an agent moves a file as one undoable step.

use std::path::PathBuf;

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::Entry;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Move FROM to TO as one undoable step (for agents)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback mv src/old_name.rs src/new_name.rs --message call-9")]
pub(crate) struct MvArgs {
    /// The file to move
    from: PathBuf,
    /// Where it goes
    to: PathBuf,
    /// The id of the message or tool call making the change
    #[arg(long, short, default_value = "", value_name = "ID")]
    message: String,
}

/// The two entries of a move: a line each, or `{"session", "entries"}`.
pub(crate) struct Moved {
    session: String,
    entries: Vec<Entry>,
}

impl Report for Moved {
    fn json(&self) -> Option<Value> {
        Some(json::entries(&self.session, &self.entries))
    }

    fn text(&self, out: &Out) -> String {
        self.entries
            .iter()
            .map(|e| format!("{}\n", text::entry_line(out, e)))
            .collect()
    }
}

pub(crate) fn run(ctx: &Context, args: &MvArgs) -> Result<Moved, CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let entries = session.rename(
        &ws,
        ctx.user_path(&args.from),
        ctx.user_path(&args.to),
        &args.message,
    )?;
    Ok(Moved {
        session: session.id().to_owned(),
        entries,
    })
}
