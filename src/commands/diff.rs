//! `turnback diff`: each changed file against its first backup.

use std::path::PathBuf;

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::FileDiff;

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// Show each changed file against its first backup
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback diff src/lib.rs\n  turnback diff --stat")]
pub(crate) struct DiffArgs {
    /// Only this file
    file: Option<PathBuf>,
    /// Only a summary line per file
    #[arg(long)]
    stat: bool,
}

/// Each changed file against its first backup.
pub(crate) struct Diffed {
    session: String,
    files: Vec<FileDiff>,
    /// Only the summary lines (the JSON has the diffs all the same).
    stat: bool,
}

impl Report for Diffed {
    fn json(&self) -> Option<Value> {
        Some(json::diff(&self.session, &self.files))
    }

    fn text(&self, out: &Out) -> String {
        text::diff(out, &self.files, self.stat)
    }

    fn paged(&self) -> bool {
        true
    }
}

pub(crate) fn run(ctx: &Context, args: &DiffArgs) -> Result<Diffed, CliError> {
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
    })
}
