//! `turnback checkpoint`, `commit`, `rollback`: the bracket around a write an
//! agent makes itself, across processes.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{Entry, RevertOptions};

use crate::cli::{FileArgs, RevertFlags};
use crate::commands::CliError;
use crate::commands::write::EntryReport;
use crate::context::Context;
use crate::render::Report;

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

pub(crate) fn checkpoint(ctx: &Context, args: &FileArgs) -> Result<Checkpointed, CliError> {
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let cp = session.checkpoint(&ws, ctx.user_path(&args.file), &args.message)?;
    let seq = cp.seq();
    // The lock is released as this process ends; commit and rollback take it again.
    drop(cp);
    let entry = session.entries()?.into_iter().find(|e| e.seq == seq);
    Ok(Checkpointed {
        session: session.id().to_owned(),
        seq,
        entry,
    })
}

pub(crate) fn commit(ctx: &Context, id: u64) -> Result<EntryReport, CliError> {
    let session = ctx.agent_session()?;
    let e = session.commit(id)?;
    Ok(EntryReport {
        session: session.id().to_owned(),
        entry: e,
        prefix: "committed ",
    })
}

/// A rollback done: the entry's line, or `{"session", "rolled_back", "path"}`.
pub(crate) struct RolledBack {
    session: String,
    id: u64,
    /// The entry as it was before the rollback dropped it.
    entry: Option<Entry>,
}

impl Report for RolledBack {
    fn json(&self) -> Option<Value> {
        let path = self.entry.as_ref().map(|e| e.path.clone());
        Some(serde_json::json!({ "session": self.session, "rolled_back": self.id, "path": path }))
    }

    fn text(&self, out: &Out) -> String {
        match &self.entry {
            Some(e) => format!("rolled back {}\n", text::entry_line(out, e)),
            None => String::new(),
        }
    }
}

/// A rollback, or with `--dry-run` its preview.
pub(crate) fn rollback(
    ctx: &Context,
    id: u64,
    flags: &RevertFlags,
) -> Result<Box<dyn Report>, CliError> {
    let session = ctx.agent_session()?;
    let entry = session.entries()?.into_iter().find(|e| e.seq == id);
    let opts = RevertOptions {
        force: flags.force,
        dry_run: flags.dry_run,
    };
    let r = session.rollback_with(id, opts)?;
    if flags.dry_run {
        let what = format!("rollback of {id}");
        return Ok(Box::new(crate::commands::revert::shown(&session, what, r)?));
    }
    Ok(Box::new(RolledBack {
        session: session.id().to_owned(),
        id,
        entry,
    }))
}
