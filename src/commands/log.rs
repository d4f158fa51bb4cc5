//! `turnback log`: what a session did, grouped by message, with the turns
//! (and their prompts) it happened in.

use std::path::PathBuf;

use serde_json::Value;
use time::OffsetDateTime;
use turnback::history;
use turnback::json;
use turnback::output::Out;
use turnback::text;
use turnback::when;
use turnback_store::{Entry, Evicted, Turn};

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// List the session's changes, grouped by message and turn, newest last
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  turnback log --all\n  turnback log -n 5\n  turnback log src/lib.rs --since 2h\n  turnback log --since 2026-12-01 --until \"2026-12-01 18:00\""
)]
pub(crate) struct LogArgs {
    /// Only this file's history (without --session: in the session that changed it last)
    file: Option<PathBuf>,
    /// Every session with changes in this workspace
    #[arg(long)]
    all: bool,
    /// Only the newest N changes (of each session)
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Only changes made at or after TIME (2026-12-01, "2026-12-01 14:30", RFC 3339, or 3h, 2d, "1 week ago")
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<OffsetDateTime>,
    /// Only changes made before TIME (as --since)
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    until: Option<OffsetDateTime>,
}

fn time_arg(s: &str) -> Result<OffsetDateTime, String> {
    when::parse_time(s, when::now())
}

/// One session's log: its entries and its turns.
pub(crate) struct SessionLog {
    id: String,
    entries: Vec<Entry>,
    turns: Vec<Turn>,
    /// What the session's caps evicted, if anything: the gap before its
    /// oldest entry kept.
    gap: Option<Evicted>,
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
                // Only a session whose caps evicted something has it.
                if let Some(g) = &l.gap {
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

    fn paged(&self) -> bool {
        true
    }

    fn text(&self, out: &Out) -> String {
        if self.logs.is_empty() {
            return "no session has changes in this workspace\n".into();
        }
        let blocks: Vec<String> = self
            .logs
            .iter()
            .map(|l| {
                let log = history::log(out, &l.id, &l.entries, &l.turns);
                // The gap goes first, before the oldest change kept.
                match (&l.gap, log.split_once('\n')) {
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
    let ws_and_file = match &args.file {
        Some(f) => {
            let ws = ctx.workspace()?;
            let path = ctx.user_path(f);
            let candidates = ws.candidate_files(&path)?;
            Some((ws, path, candidates))
        }
        None => None,
    };
    let sessions = match (&ws_and_file, args.all) {
        (_, true) => ctx.workspace_sessions()?,
        (Some((ws, path, _)), false) => vec![ctx.session_for_file(ws, path)?],
        (None, false) => vec![ctx.person_session()?],
    };
    let mut logs = Vec::new();
    for s in &sessions {
        let mut entries = s.entries()?;
        entries.retain(|e| {
            ws_and_file
                .as_ref()
                .is_none_or(|(_, _, c)| c.contains(&e.absolute_path()))
                && args.since.is_none_or(|t| e.time >= t)
                && args.until.is_none_or(|t| e.time < t)
        });
        if let Some(n) = args.max_count {
            let cut = entries.len().saturating_sub(n);
            entries.drain(..cut);
        }
        let filtered = args.file.is_some() || args.since.is_some() || args.until.is_some();
        if args.all && filtered && entries.is_empty() {
            continue;
        }
        let mut turns = s.turn_bounds()?;
        if args.max_count.is_some() || filtered {
            // Only the turns of the entries shown.
            turns.retain(|t| entries.iter().any(|e| e.turn == t.number));
        }
        logs.push(SessionLog {
            id: s.id().to_owned(),
            entries,
            turns,
            gap: s.evicted()?,
        });
    }
    Ok(Logs {
        all: args.all,
        logs,
    })
}
