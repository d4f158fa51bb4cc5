//! What the scan commands share: a scan's report (`commit ID`, `rollback
//! ID`, `run`), the person's own session for a workspace, and the words for
//! entries a scan found.

use serde_json::{Value, json};
use turnback::output::Out;
use turnback::text::escape;
use turnback_store::{PathKind, ScanChangeKind, ScanReport, Session, Store, Unrecorded, Workspace};

use crate::cli_error::CliError;
use crate::render::Report;

/// A scan committed or rolled back, and for `run` the command's exit code.
pub(crate) struct Scanned {
    pub(crate) report: ScanReport,
    pub(crate) exit_code: Option<i32>,
}

fn kind(k: ScanChangeKind) -> &'static str {
    match k {
        ScanChangeKind::Modified => "modified",
        ScanChangeKind::ModeChanged => "mode-changed",
        ScanChangeKind::Created => "created",
        ScanChangeKind::Deleted => "deleted",
        ScanChangeKind::Replaced => "replaced",
    }
}

/// An unrecorded change: its path, its reason's JSON name, and its words.
fn unrecorded(u: &Unrecorded) -> (&str, &'static str, String) {
    match u {
        Unrecorded::Link { path, before, now } => (
            path,
            "symbolic-link",
            match before {
                // What the link replaced is recorded as removed.
                PathKind::File | PathKind::Directory => format!(
                    "{}: the link is not undone (turnback records no symbolic link, and follows none); what it replaced comes back with an undo once the link is gone",
                    turnback::text::link_change(before, now)
                ),
                _ => format!(
                    "{}: not undone (turnback records no symbolic link, and follows none)",
                    turnback::text::link_change(before, now)
                ),
            },
        ),
        Unrecorded::UnderLink { path, link } => (
            path,
            "under-symbolic-link",
            format!(
                "was in a directory the symbolic link {} replaced: not restored (an undo never goes through a link)",
                escape(link)
            ),
        ),
        Unrecorded::TooBig { path, size } => (
            path,
            "too-big",
            format!("{size} bytes, over the size limit: not backed up, an undo cannot restore it"),
        ),
        Unrecorded::RecordedBy { path, session } => (
            path,
            "recorded-by",
            format!("recorded by session {session} during the command: its change"),
        ),
        Unrecorded::NoBackup { path, reason } => {
            (path, "no-backup", format!("not backed up: {reason}"))
        }
    }
}

/// A side of a link's change, as JSON: `{"kind"}`, and `target` for a link.
fn kind_json(k: &PathKind) -> Value {
    match k {
        PathKind::Absent => json!({ "kind": "absent" }),
        PathKind::File => json!({ "kind": "file" }),
        PathKind::Directory => json!({ "kind": "directory" }),
        PathKind::Link { target } => json!({ "kind": "link", "target": target }),
    }
}

impl Report for Scanned {
    fn json(&self) -> Option<Value> {
        let r = &self.report;
        let changes: Vec<Value> = r
            .changes
            .iter()
            .map(|c| {
                let mut v = json!({ "path": c.path, "change": kind(c.kind), "seq": c.seq, "shared_with": c.shared_with });
                if c.directory {
                    v["directory"] = json!(true);
                }
                if let Some(holding) = &c.kept {
                    v["kept"] = json!({ "holding": holding });
                }
                v
            })
            .collect();
        let unrec: Vec<Value> = r
            .unrecorded
            .iter()
            .map(|u| {
                let (path, reason, _) = unrecorded(u);
                let mut v = json!({ "path": path, "reason": reason });
                match u {
                    Unrecorded::TooBig { size, .. } => v["size"] = json!(size),
                    Unrecorded::RecordedBy { session, .. } => v["session"] = json!(session),
                    Unrecorded::Link { before, now, .. } => {
                        v["before"] = kind_json(before);
                        v["now"] = kind_json(now);
                    }
                    Unrecorded::UnderLink { link, .. } => v["link"] = json!(link),
                    _ => {}
                }
                v
            })
            .collect();
        let mut v = json!({
            "session": r.session,
            "scan": r.id,
            "message_id": r.message_id,
            "command": r.command,
            "rolled_back": r.rolled_back,
            "changes": changes,
            "unrecorded": unrec,
        });
        if let Some(code) = self.exit_code {
            v["exit_code"] = json!(code);
        }
        Some(v)
    }

    fn text(&self, out: &Out) -> String {
        let r = &self.report;
        let n = r.changes.len();
        let files = if n == 1 { "file" } else { "files" };
        let what = match &r.command {
            Some(c) => format!("`{}`", escape(c)),
            None => format!("scan {}", r.id),
        };
        let kept = r.changes.iter().filter(|c| c.kept.is_some()).count();
        let mut s = if r.rolled_back && kept > 0 {
            let put = n - kept;
            let files = if put == 1 { "file" } else { "files" };
            let dirs = if kept == 1 {
                "directory"
            } else {
                "directories"
            };
            format!("{what} rolled back: {put} {files} put back, {kept} {dirs} kept\n")
        } else if r.rolled_back {
            format!("{what} rolled back: {n} {files} put back\n")
        } else if n == 0 {
            format!("{what} changed no file (session {})\n", r.session)
        } else {
            format!(
                "{what} changed {n} {files}, recorded in session {} as {:?} (`turnback undo` takes them back)\n",
                r.session, r.message_id
            )
        };
        for c in &r.changes {
            let shared = if c.shared_with.is_empty() {
                String::new()
            } else {
                format!("  [shared with session {}]", c.shared_with.join(", "))
            };
            let seq = c.seq.map(|n| format!("#{n:<4} ")).unwrap_or_default();
            let dir = if c.directory { " (a directory)" } else { "" };
            let kept = match &c.kept {
                Some(h) => format!(
                    "; kept: it holds {}, which the scan did not record",
                    escape(h)
                ),
                None => String::new(),
            };
            s.push_str(&format!(
                "  {seq}{}  {}{dir}{kept}{shared}\n",
                out.paint(turnback::output::Role::Path, &escape(&c.path)),
                kind(c.kind)
            ));
        }
        for u in &r.unrecorded {
            let (path, _, words) = unrecorded(u);
            s.push_str(&format!("  {}  {words}\n", escape(path)));
        }
        s
    }

    fn exit_code(&self) -> Option<u8> {
        // A shell's convention: the code itself, or 128 + the signal.
        self.exit_code.map(|c| c.clamp(0, 255) as u8)
    }
}

/// The id of a person's own session for a workspace: their user name and
/// the workspace's directory name (what `sessions` shows), and a digest of
/// its path so that two checkouts named alike get two sessions.
pub(crate) fn person_session_id(ws: &Workspace) -> String {
    // Without a user name (an empty environment), the user id: never
    // `person-person-…`.
    let named = |var| std::env::var(var).ok().filter(|u: &String| !u.is_empty());
    let user = named("USER")
        .or_else(|| named("LOGNAME"))
        .unwrap_or_else(|| format!("uid{}", rustix::process::geteuid().as_raw()));
    let dir = ws
        .root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect()
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in ws.root().as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("person-{}-{}-{:08x}", clean(&user), clean(&dir), h as u32)
}

/// The person's own session for `ws`, made on first use.
pub(crate) fn person_session(store: &Store, ws: &Workspace) -> Result<Session, CliError> {
    Ok(store.session(&person_session_id(ws))?.confine_to(ws.root()))
}

/// `what` ("undo"), saying so when the entries it takes are a scan's: "undo
/// of `cargo fmt` (changes a scan found)", and naming what the scan found
/// but could not back up, which the undo does not restore.
pub(crate) fn revert_what(what: &str, mark: Option<&turnback_store::ScanMark>) -> String {
    let Some(m) = mark else {
        return what.to_owned();
    };
    let mut s = match &m.command {
        Some(c) => format!("{what} of `{}` (changes a scan found", escape(c)),
        None => format!("{what} (changes a scan found"),
    };
    if !m.not_undoable.is_empty() {
        let names: Vec<String> = m
            .not_undoable
            .iter()
            .map(|p| escape(p).into_owned())
            .collect();
        s.push_str(&format!(
            "; not restored, never backed up: {}",
            names.join(", ")
        ));
    }
    s.push(')');
    s
}

/// The scan mark of the step an undo of `session` takes (its newest entry).
pub(crate) fn newest_mark(session: &Session) -> Option<turnback_store::ScanMark> {
    session.entries().ok()?.pop()?.scan.map(|m| *m)
}
