//! `turnback log`: what a session did, grouped by message.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{Entry, Evicted};

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// List the session's changes, grouped by message, newest last
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback log --all")]
pub(crate) struct LogArgs {
    /// Every session with changes in this workspace
    #[arg(long)]
    all: bool,
}

/// The entries of one session, or with `--all` of each session with changes
/// in the workspace.
pub(crate) struct Logs {
    all: bool,
    /// Each session's id and entries.
    logs: Vec<(String, Vec<Entry>)>,
    /// Each session's gap, what its caps evicted (in the order of `logs`).
    gaps: Vec<Option<Evicted>>,
}

impl Report for Logs {
    fn json(&self) -> Option<Value> {
        let v: Vec<_> = self
            .logs
            .iter()
            .zip(&self.gaps)
            .map(|((id, e), gap)| {
                let mut v = json::entries(id, e);
                // Only a session whose caps evicted something has it.
                if let Some(g) = gap {
                    v["evicted"] = json::evicted(g);
                }
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
            .zip(&self.gaps)
            .map(|((id, e), gap)| {
                let log = text::log(out, id, e);
                // The gap goes first, before the oldest change kept.
                match (gap, log.split_once('\n')) {
                    (Some(g), Some((head, rest))) => {
                        format!("{head}\n{}{rest}", text::evicted_gap(out, g))
                    }
                    _ => log,
                }
            })
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
    let mut gaps = Vec::new();
    for s in &sessions {
        logs.push((s.id().to_owned(), s.entries()?));
        gaps.push(s.evicted()?);
    }
    Ok(Logs {
        all: args.all,
        logs,
        gaps,
    })
}
