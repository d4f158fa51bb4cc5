//! How results look: human text, or JSON for agents in other languages.

use serde_json::{Value, json};
use turnback_store::{Entry, FileState, FileStatus, RevertAction, RevertReport, SessionSummary};

pub(crate) fn state_json(s: &FileState) -> Value {
    json!({ "exists": s.exists, "sha256": s.sha256, "size": s.size, "mode": s.mode })
}

pub(crate) fn entry_json(e: &Entry) -> Value {
    json!({
        "seq": e.seq,
        "message_id": e.message_id,
        "workspace": e.workspace.path,
        "path": e.path,
        "version": e.version,
        "time": rfc3339(e.time),
        "before": state_json(&e.before),
        "after": e.after.as_ref().map(state_json),
    })
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn short_time(t: time::OffsetDateTime) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    t.format(&fmt).unwrap_or_default()
}

pub(crate) fn entry_line(e: &Entry) -> String {
    let what = match (&e.before.exists, e.after.as_ref().map(|a| a.exists)) {
        (_, None) => "checkpoint (not committed)",
        (false, Some(true)) => "created",
        (true, Some(false)) => "deleted",
        (false, Some(false)) => "no-op",
        (true, Some(true)) => "changed",
    };
    format!(
        "#{:<4} {}  {:<12} {} (v{}){}",
        e.seq,
        short_time(e.time),
        if e.message_id.is_empty() {
            "-"
        } else {
            &e.message_id
        },
        e.path,
        e.version,
        format_args!("  {what}")
    )
}

pub(crate) fn revert_json(r: &RevertReport) -> Value {
    json!({
        "session": r.session,
        "applied": r.applied,
        "files": r.files.iter().map(|f| json!({
            "workspace": f.workspace,
            "path": f.path,
            "entries": f.seqs,
            "action": match f.action { RevertAction::Write { .. } => "write", RevertAction::Delete => "delete" },
            "status": match &f.status {
                FileStatus::Safe => "safe",
                FileStatus::AlreadyReverted => "already-reverted",
                FileStatus::ChangedSince { .. } => "changed-since",
                FileStatus::NeverCommitted => "never-committed",
            },
        })).collect::<Vec<_>>(),
    })
}

pub(crate) fn revert_text(r: &RevertReport) -> String {
    let mut out = String::new();
    let verb = if r.applied { "" } else { "would " };
    for f in &r.files {
        let action = match (&f.status, &f.action) {
            (FileStatus::AlreadyReverted, _) => "already as before".to_string(),
            (_, RevertAction::Write { size }) => format!("{verb}restore ({size} bytes)"),
            (_, RevertAction::Delete) => format!("{verb}delete"),
        };
        let status = match &f.status {
            FileStatus::Safe => String::new(),
            FileStatus::AlreadyReverted => String::new(),
            FileStatus::ChangedSince { by: Some(by) } => {
                format!(
                    "  [changed since by session {}, message {}]",
                    by.session, by.message_id
                )
            }
            FileStatus::ChangedSince { by: None } => "  [changed since]".into(),
            FileStatus::NeverCommitted => "  [never committed]".into(),
        };
        out.push_str(&format!("{}: {action}{status}\n", f.path));
    }
    out
}

pub(crate) fn sessions_json(list: &[SessionSummary]) -> Value {
    json!(
        list.iter()
            .map(|s| json!({
                "id": s.id,
                "workspaces": s.workspaces,
                "entries": s.entries,
                "last_change": s.last_change.map(rfc3339),
                "bytes": s.bytes,
                "problem": s.problem,
            }))
            .collect::<Vec<_>>()
    )
}
