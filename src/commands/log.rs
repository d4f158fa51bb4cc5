//! `turnback log`: what a session did, grouped by message, with the turns
//! (and their prompts) it happened in.

use serde_json::Value;
use turnback::history;
use turnback::json;
use turnback::output::Out;
use turnback_store::{Entry, Turn};

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// List the session's changes, grouped by message and turn, newest last
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback log --all")]
pub(crate) struct LogArgs {
    /// Every session with changes in this workspace
    #[arg(long)]
    all: bool,
}

/// One session's log: its entries and its turns.
pub(crate) struct SessionLog {
    id: String,
    entries: Vec<Entry>,
    turns: Vec<Turn>,
}

/// The entries of one session, or with `--all` of each session with changes
/// in the workspace.
pub(crate) struct Logs {
    all: bool,
    logs: Vec<SessionLog>,
}

impl Report for Logs {
    fn json(&self) -> Option<Value> {
        let v: Vec<_> = self
            .logs
            .iter()
            .map(|l| {
                let mut v = json::entries(&l.id, &l.entries);
                v["turns"] = history::log_turns_json(&l.turns, &l.entries);
                v
            })
            .collect();
        Some(if self.all {
            serde_json::json!({ "sessions": v })
        } else {
            v.into_iter().next().unwrap_or(Value::Null)
        })
    }

    fn text(&self, out: &Out) -> String {
        if self.logs.is_empty() {
            return "no session has changes in this workspace\n".into();
        }
        let blocks: Vec<String> = self
            .logs
            .iter()
            .map(|l| history::log(out, &l.id, &l.entries, &l.turns))
            .collect();
        blocks.join("\n")
    }
}

pub(crate) fn run(ctx: &Context, args: &LogArgs) -> Result<Logs, CliError> {
    let sessions = if args.all {
        ctx.workspace_sessions()?
    } else {
        vec![ctx.person_session()?]
    };
    let mut logs = Vec::new();
    for s in &sessions {
        logs.push(SessionLog {
            id: s.id().to_owned(),
            entries: s.entries()?,
            turns: s.turn_bounds()?,
        });
    }
    Ok(Logs {
        all: args.all,
        logs,
    })
}
