//! The JSON shapes of the command line: the API for agents in other languages.
//! Documented, with an example of each, in `docs/JSON.md`; change them only by
//! adding fields.

use serde_json::{Value, json};
use turnback_store::{
    ConflictReason, DiffBody, Entry, Error, Evicted, FileDiff, FileRevert, FileState, FileStatus,
    PruneReport, RevertAction, RevertReport, SETTING_KEYS, SessionSummary, SettingSource, Settings,
};

pub fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub fn state(s: &FileState) -> Value {
    let mut v = json!({ "exists": s.exists, "sha256": s.sha256, "size": s.size, "mode": s.mode });
    if s.is_dir() {
        v["directory"] = json!(true);
    }
    v
}

pub fn entry(e: &Entry) -> Value {
    let mut v = json!({
        "seq": e.seq,
        "message_id": e.message_id,
        "workspace": e.workspace.path,
        "path": e.path,
        "version": e.version,
        "time": rfc3339(e.time),
        "before": state(&e.before),
        "after": e.after.as_ref().map(state),
    });
    // Only on an entry a scan found, so every other entry keeps its shape.
    if let Some(m) = &e.scan {
        v["scan"] = json!({
            "id": m.id,
            "command": m.command,
            "shared_with": m.shared_with,
            "not_undoable": m.not_undoable,
        });
    }
    v
}

pub fn session_entry(session: &str, e: &Entry) -> Value {
    json!({ "session": session, "entry": entry(e) })
}

pub fn entries(session: &str, list: &[Entry]) -> Value {
    json!({ "session": session, "entries": list.iter().map(entry).collect::<Vec<_>>() })
}

pub fn status(s: &FileStatus) -> &'static str {
    match s {
        FileStatus::Safe => "safe",
        FileStatus::AlreadyReverted => "already-reverted",
        FileStatus::Conflict(reason) => crate::errors::conflict_reason(reason),
    }
}

fn changed_by(s: &FileStatus) -> Value {
    match s {
        FileStatus::Conflict(ConflictReason::ChangedSince { by: Some(by) }) => {
            json!({ "session": by.session, "message_id": by.message_id, "seq": by.seq })
        }
        _ => Value::Null,
    }
}

pub fn diff_body(body: &DiffBody) -> Value {
    match body {
        DiffBody::Same => json!({ "kind": "same" }),
        DiffBody::Text {
            insertions,
            deletions,
            unified,
        } => {
            json!({ "kind": "text", "insertions": insertions, "deletions": deletions, "unified": unified })
        }
        DiffBody::Binary => json!({ "kind": "binary" }),
        DiffBody::TooBig => json!({ "kind": "too-big" }),
    }
}

/// One file of a revert; `diff` only in previews.
pub fn file_revert(f: &FileRevert, diff: Option<&FileDiff>) -> Value {
    let mut v = json!({
        "workspace": f.workspace,
        "path": f.path,
        "entries": f.seqs,
        "action": match f.action {
            RevertAction::Write { .. } => "write",
            RevertAction::Delete => "delete",
            RevertAction::Directory => "directory",
            RevertAction::KeepDirectory { .. } => "keep-directory",
        },
        "status": status(&f.status),
        "changed_by": changed_by(&f.status),
        "target": state(&f.target),
    });
    if let RevertAction::KeepDirectory { holding } = &f.action {
        v["holding"] = json!(holding);
    }
    if let Some(d) = diff {
        v["diff"] = diff_body(&d.body);
    }
    v
}

pub fn revert(r: &RevertReport, diffs: &[Option<FileDiff>]) -> Value {
    let files: Vec<Value> = r
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| file_revert(f, diffs.get(i).and_then(Option::as_ref)))
        .collect();
    json!({ "session": r.session, "applied": r.applied, "files": files })
}

pub fn diff(session: &str, files: &[FileDiff]) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|d| {
            json!({
                "workspace": d.workspace,
                "path": d.path,
                "old": state(&d.old),
                "new": state(&d.new),
                "diff": diff_body(&d.body),
            })
        })
        .collect();
    json!({ "session": session, "files": files })
}

/// The workspaces' scan baselines of a store (`docs/JSON.md`).
pub fn baselines(u: &turnback_store::BaselineUsage) -> Value {
    json!({ "count": u.baselines, "bytes": u.bytes })
}

pub fn sessions(list: &[SessionSummary]) -> Value {
    let list: Vec<Value> = list
        .iter()
        .map(|s| {
            json!({
                "id": s.id,
                "workspaces": s.workspaces,
                "last_change": s.last_change.map(rfc3339),
                "entries": s.entries,
                "bytes": s.bytes,
                "problem": s.problem.as_ref().map(|p| p.to_string()),
            })
        })
        .collect();
    json!({ "sessions": list })
}

pub fn prune(r: &PruneReport) -> Value {
    let removed: Vec<Value> = r
        .removed
        .iter()
        .map(|s| json!({ "id": s.id, "last_change": rfc3339(s.last_change), "bytes": s.bytes, "rank": s.rank }))
        .collect();
    let spared: Vec<Value> = r
        .spared
        .iter()
        .map(|s| json!({ "id": s.id, "reason": s.reason.name() }))
        .collect();
    json!({
        "applied": r.applied,
        "keep_sessions": r.retention.keep_recent,
        "keep_days": r.retention.keep_for.as_secs() / (24 * 3600),
        "removed": removed,
        "spared": spared,
        "kept": r.kept,
        "blobs_removed": r.blobs_removed,
        "blob_bytes": r.blob_bytes,
        "baselines_removed": r.baselines_removed,
        "baseline_bytes": r.baseline_bytes,
    })
}

/// What a session's caps evicted (`log`'s `evicted`).
pub fn evicted(g: &Evicted) -> Value {
    let files: Vec<Value> = g
        .files
        .iter()
        .map(|f| json!({ "workspace": f.workspace, "path": f.path, "seq": f.seq, "message_id": f.message_id, "turn": f.turn }))
        .collect();
    let messages: Vec<Value> = g
        .messages
        .iter()
        .map(|m| json!({ "id": m.id, "seq": m.seq, "turn": m.turn }))
        .collect();
    json!({
        "entries": g.entries,
        "through_seq": g.through_seq,
        "oldest": rfc3339(g.oldest),
        "newest": rfc3339(g.newest),
        "files": files,
        "messages": messages,
    })
}

/// The settings in force (`turnback config`): each key's value and where it
/// came from.
pub fn settings(s: &Settings) -> Value {
    let values = [
        json!(s.keep_sessions.value),
        json!(s.keep_days.value),
        json!(s.max_entries.value),
        json!(s.max_bytes.value),
        json!(s.compress_backups.value),
        json!(s.max_baseline_bytes.value),
    ];
    let list: Vec<Value> = SETTING_KEYS
        .iter()
        .zip(values)
        .map(|((key, env), value)| {
            let (source, file, line) = match s.source_of(key) {
                SettingSource::Default => ("default", None, None),
                SettingSource::File { path, line } => ("file", Some(path), Some(*line)),
                SettingSource::Env(_) => ("env", None, None),
                SettingSource::Flag(_) => ("flag", None, None),
            };
            let name = match s.source_of(key) {
                SettingSource::Env(n) | SettingSource::Flag(n) => Some(*n),
                _ => None,
            };
            json!({
                "key": key,
                "value": value,
                "source": source,
                "file": file,
                "line": line,
                "name": name,
                "env": env,
            })
        })
        .collect();
    json!({
        "config_file": s.config_file,
        "config_file_exists": s.config_file.as_ref().is_some_and(|p| p.exists()),
        "settings": list,
    })
}

/// The stable `kind` name of a store error (`docs/JSON.md`), from the one
/// table of errors (`crate::errors`).
pub fn error_kind(e: &Error) -> &'static str {
    crate::errors::row(e.kind().into()).name
}

/// The error object: `kind`, `message`, `hint`, `exit_code`, `conflicts`
/// (`null` unless `more` sets it), then the fields of `more`, an object the
/// error's row of the table made (`crate::errors::Row::json`).
pub fn error(
    kind: &str,
    message: &str,
    hint: Option<&str>,
    exit_code: u8,
    more: Option<&Value>,
) -> Value {
    let mut e = json!({
        "kind": kind,
        "message": message,
        "hint": hint,
        "exit_code": exit_code,
        "conflicts": null,
    });
    if let (Some(Value::Object(more)), Some(obj)) = (more, e.as_object_mut()) {
        // A field already there (`conflicts`) keeps its place.
        obj.extend(more.clone());
    }
    json!({ "error": e })
}
