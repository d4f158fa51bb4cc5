//! `turnback checkpoint FILE`: an agent backs a file up before changing it
//! itself, then `commit`s or `rollback`s the entry, from any process.

use serde_json::Value;
use turnback::json;
use turnback::output::Out;
use turnback_store::{Entry, Session};

use crate::commands::CliError;
use crate::commands::common::FileArgs;
use crate::context::Context;
use crate::render::Report;

/// Back FILE up before changing it yourself; prints the entry number (for agents)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  id=$(turnback checkpoint src/lib.rs --message call-9)\n  my-editor src/lib.rs && turnback commit \"$id\" || turnback rollback \"$id\""
)]
pub(crate) struct CheckpointArgs {
    #[command(flatten)]
    pub file: FileArgs,
}

/// The entry a checkpoint made: its number, or `{"session", "entry"}`.
pub(crate) struct Checkpointed {
    session: String,
    seq: u64,
    /// `None` if it was gone by the time it was read back.
    entry: Option<Entry>,
}

impl Report for Checkpointed {
    fn json(&self) -> Option<Value> {
        Some(match &self.entry {
            Some(e) => json::session_entry(&self.session, e),
            None => serde_json::json!({ "session": self.session, "entry": null }),
        })
    }

    fn text(&self, _: &Out) -> String {
        // Only the number, so that `id=$(turnback checkpoint FILE)` works.
        format!("{}\n", self.seq)
    }
}

pub(crate) fn run(ctx: &Context, args: &CheckpointArgs) -> Result<Checkpointed, CliError> {
    let args = &args.file;
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let cp = session.checkpoint(&ws, ctx.user_path(&args.file), &args.message)?;
    let seq = cp.seq();
    // The lock is released as this process ends; commit and rollback take it again.
    drop(cp);
    checkpointed(&session, seq)
}

/// The report of checkpoint `seq` of `session`, its entry read back.
pub(crate) fn checkpointed(session: &Session, seq: u64) -> Result<Checkpointed, CliError> {
    let entry = session.entries()?.into_iter().find(|e| e.seq == seq);
    Ok(Checkpointed {
        session: session.id().to_owned(),
        seq,
        entry,
    })
}
