//! `turnback checkpoint FILE`: an agent backs a file up before changing it
//! itself, then `commit`s or `rollback`s the entry, from any process.

use serde_json::Value;
use turnback::json;
use turnback::output::Out;
use turnback_store::{Entry, Session};

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Back FILE up before changing it yourself; prints the entry number (for agents)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  id=$(turnback checkpoint src/lib.rs --message call-9)\n  my-editor src/lib.rs && turnback commit \"$id\" || turnback rollback \"$id\"\n\n  id=$(turnback checkpoint --scan --message call-10)\n  sh -c 'sed -i s/a/b/ *.txt' && turnback commit \"$id\" || turnback rollback \"$id\""
)]
pub(crate) struct CheckpointArgs {
    /// The file, relative to the current directory
    #[arg(required_unless_present = "scan", conflicts_with = "scan")]
    pub file: Option<std::path::PathBuf>,
    /// The id of the message or tool call making the change
    #[arg(long, short, default_value = "", value_name = "ID")]
    pub message: String,
    /// Begin a scan of the whole workspace instead (before a shell command);
    /// prints the scan's id for `commit` or `rollback`
    #[arg(long)]
    pub scan: bool,
    /// With --scan: files larger than this many bytes are not backed up (a change to one is reported)
    #[arg(long, value_name = "BYTES", requires = "scan", default_value_t = turnback_store::DEFAULT_SIZE_LIMIT)]
    pub max_size: u64,
}

/// A scan begun: its id, or `{"session", "scan"}`.
pub(crate) struct ScanBegun {
    session: String,
    id: String,
}

impl Report for ScanBegun {
    fn json(&self) -> Option<Value> {
        Some(serde_json::json!({ "session": self.session, "scan": self.id }))
    }

    fn text(&self, _: &Out) -> String {
        format!("{}\n", self.id)
    }
}

/// `checkpoint --scan`: a scan bracket begun on the workspace.
pub(crate) fn run_scan(ctx: &Context, args: &CheckpointArgs) -> Result<ScanBegun, CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let opts = turnback_store::ScanOptions {
        size_limit: args.max_size,
        // The caller ends the bracket: while it runs, a prune keeps the session.
        owner_pid: Some(crate::sys::agent_pid()),
        ..Default::default()
    };
    let id = session.begin_scan_with(&ws, &args.message, None, &opts)?;
    Ok(ScanBegun {
        session: session.id().to_owned(),
        id,
    })
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
    let file = args
        .file
        .as_deref()
        .expect("clap requires FILE without --scan");
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let cp = session.checkpoint(&ws, ctx.user_path(file), &args.message)?;
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
