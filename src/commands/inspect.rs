//! `turnback log` and `turnback diff`: what a session did.

use std::path::Path;

use crate::commands::CliError;
use crate::context::Context;
use turnback::output::Out;
use turnback::{json, text};

pub(crate) fn log(ctx: &Context, out: &Out, all: bool) -> Result<(), CliError> {
    let sessions = if all {
        ctx.workspace_sessions()?
    } else {
        vec![ctx.person_session()?]
    };
    let mut logs = Vec::new();
    for s in &sessions {
        logs.push((s.id().to_owned(), s.entries()?));
    }
    if out.json {
        let v: Vec<_> = logs.iter().map(|(id, e)| json::entries(id, e)).collect();
        if all {
            out.json(&serde_json::json!({ "sessions": v }));
        } else {
            out.json(&v[0]);
        }
    } else if logs.is_empty() {
        out.line("no session has changes in this workspace");
    } else {
        let blocks: Vec<String> = logs.iter().map(|(id, e)| text::log(out, id, e)).collect();
        out.print(&blocks.join("\n"));
    }
    Ok(())
}

pub(crate) fn diff(
    ctx: &Context,
    out: &Out,
    file: Option<&Path>,
    stat: bool,
) -> Result<(), CliError> {
    let ws = ctx.workspace()?;
    let (session, only) = match file {
        Some(f) => {
            let path = ctx.user_path(f);
            (ctx.session_for_file(&ws, &path)?, Some(path))
        }
        None => (ctx.person_session()?, None),
    };
    let files = session.diff(only.as_deref().map(|p| (&ws, p)))?;
    if out.json {
        out.json(&json::diff(session.id(), &files));
    } else {
        out.print(&text::diff(out, &files, stat));
    }
    Ok(())
}
