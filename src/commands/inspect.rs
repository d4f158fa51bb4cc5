//! `turnback log` and `turnback diff`: what a session did.

use std::path::Path;

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{Entry, FileDiff};

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// The entries of one session, or with `--all` of each session with changes
/// in the workspace.
pub(crate) struct Logs {
    all: bool,
    /// Each session's id and entries.
    logs: Vec<(String, Vec<Entry>)>,
}

impl Report for Logs {
    fn json(&self) -> Option<Value> {
        let v: Vec<_> = self
            .logs
            .iter()
            .map(|(id, e)| json::entries(id, e))
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
            .map(|(id, e)| text::log(out, id, e))
            .collect();
        blocks.join("\n")
    }
}

pub(crate) fn log(ctx: &Context, all: bool) -> Result<Logs, CliError> {
    let sessions = if all {
        ctx.workspace_sessions()?
    } else {
        vec![ctx.person_session()?]
    };
    let mut logs = Vec::new();
    for s in &sessions {
        logs.push((s.id().to_owned(), s.entries()?));
    }
    Ok(Logs { all, logs })
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
}

pub(crate) fn diff(ctx: &Context, file: Option<&Path>, stat: bool) -> Result<Diffed, CliError> {
    let ws = ctx.workspace()?;
    let (session, only) = match file {
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
        stat,
    })
}
