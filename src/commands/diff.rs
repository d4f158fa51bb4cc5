//! `turnback diff`: each changed file against its first backup.

use std::path::PathBuf;

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::FileDiff;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Show each changed file against its first backup, or what an entry or a turn did
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  turnback diff src/lib.rs\n  turnback diff --stat\n  turnback diff '#4'          # what entry 4 did\n  turnback diff --turn -1     # what the last turn did"
)]
pub(crate) struct DiffArgs {
    /// Only this file; or an entry as #N: what it did
    #[arg(value_name = "FILE|#N")]
    file: Option<PathBuf>,
    /// What entry N did
    #[arg(long, value_name = "N", value_parser = crate::naming::entry_number, conflicts_with_all = ["file", "turn"])]
    entry: Option<u64>,
    /// What turn N did (each file before the turn against what the turn left); -1 is the last
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        conflicts_with = "file"
    )]
    turn: Option<i64>,
    /// Only a line per file with a bar of its changed lines, as git's --stat
    #[arg(long)]
    stat: bool,
}

/// Each changed file against its first backup.
pub(crate) struct Diffed {
    session: String,
    files: Vec<FileDiff>,
    /// Only the summary lines (the JSON has the diffs all the same).
    stat: bool,
    /// For an entry's or a turn's diff: the files whose contents after it
    /// are not kept any more (`None` for the session's diff).
    not_kept: Option<Vec<String>>,
}

impl Report for Diffed {
    fn json(&self) -> Option<Value> {
        let mut v = json::diff(&self.session, &self.files);
        if let Some(n) = &self.not_kept {
            v["not_kept"] = serde_json::json!(n);
        }
        Some(v)
    }

    fn text(&self, out: &Out) -> String {
        let mut s = text::diff(out, &self.files, self.stat);
        for f in self.not_kept.iter().flatten() {
            s.push_str(&format!(
                "{}: what the change left is not kept any more (changed since, and no backup holds it)\n",
                text::escape(f)
            ));
        }
        s
    }

    fn paged(&self) -> bool {
        true
    }
}

pub(crate) fn run(ctx: &Context, args: &DiffArgs) -> Result<Diffed, CliError> {
    let as_entry = args
        .file
        .as_ref()
        .and_then(|f| f.to_str())
        .filter(|f| f.starts_with('#'))
        .map(crate::naming::entry_number)
        .transpose()
        .map_err(|m| CliError::usage(m, "name an entry as `#N`, as `turnback log` prints it"))?;
    if let Some(n) = as_entry.or(args.entry) {
        let session = ctx.person_session()?;
        session.entry(n)?;
        let (files, not_kept) = session.entries_diff(&[n])?;
        return Ok(Diffed {
            session: session.id().to_owned(),
            files,
            stat: args.stat,
            not_kept: Some(not_kept),
        });
    }
    if let Some(t) = args.turn {
        let session = ctx.person_session()?;
        let n = crate::naming::turn(&session, t)?;
        if !session.turn_bounds()?.iter().any(|x| x.number == n) {
            return Err(turnback_store::Error::TurnNotFound {
                session: session.id().to_owned(),
                turn: n,
            }
            .into());
        }
        let seqs: Vec<u64> = session
            .entries()?
            .iter()
            .filter(|e| e.turn == n)
            .map(|e| e.seq)
            .collect();
        let (files, not_kept) = session.entries_diff(&seqs)?;
        return Ok(Diffed {
            session: session.id().to_owned(),
            files,
            stat: args.stat,
            not_kept: Some(not_kept),
        });
    }
    let ws = ctx.workspace()?;
    let (session, only) = match &args.file {
        Some(f) => {
            let path = ctx.user_path(f);
            (ctx.session_for_file(&ws, &path)?, Some(path))
        }
        None => (ctx.person_session()?, None),
    };
    let files = session.diff(only.as_deref().map(|p| (&ws, p)))?;
    Ok(Diffed {
        session: session.id().to_owned(),
        files,
        stat: args.stat,
        not_kept: None,
    })
}
