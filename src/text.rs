//! The human-readable output of each command. What a person reads is checked
//! as snapshots in `tests/cli.rs`.

use turnback_store::{
    ConflictReason, DiffBody, Entry, FileDiff, FileRevert, FileStatus, PruneReport, RevertAction,
    RevertReport, SessionSummary,
};

use crate::output::{Out, Role};

/// `s` with every control character escaped (`\e`, `\n`, `\t`, `\r`, `\x07`,
/// `\x7f`, and C1 as `\u{9b}`), for text a terminal shows: a file name, a
/// message id or a prompt comes from an agent, and printed raw it could forge
/// lines of output or send the terminal escape sequences. JSON escapes by
/// itself and is not passed through this.
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    fn is_control(c: char) -> bool {
        c < ' ' || c == '\x7f' || ('\u{80}'..='\u{9f}').contains(&c)
    }
    if !s.chars().any(is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\x1b' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if is_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`escape`] of a path's display form.
pub fn escape_path(p: &std::path::Path) -> String {
    escape(&p.display().to_string()).into_owned()
}

pub fn time(t: time::OffsetDateTime) -> String {
    let fmt =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    t.format(&fmt).unwrap_or_default()
}

/// What an entry did to its file, in a word or two, and the sizes.
pub fn change(e: &Entry) -> String {
    match &e.after {
        None => "checkpoint, not committed".into(),
        Some(a) => match (e.before.exists, a.exists) {
            (false, true) => format!("created, {} bytes", a.size),
            (true, false) => format!("deleted, was {} bytes", e.before.size),
            (true, true) => format!("changed, {} -> {} bytes", e.before.size, a.size),
            (false, false) => "nothing (absent before and after)".into(),
        },
    }
}

pub fn entry_line(out: &Out, e: &Entry) -> String {
    format!(
        "#{:<4} {}  {}",
        e.seq,
        out.paint(Role::Path, &escape(&e.path)),
        change(e)
    )
}

/// The session's entries grouped by message (consecutive runs), oldest first.
pub fn log(out: &Out, session: &str, entries: &[Entry]) -> String {
    let mut s = format!(
        "{}\n",
        out.paint(
            Role::Header,
            &format!(
                "session {session}: {} {}",
                entries.len(),
                plural(entries.len(), "change")
            )
        )
    );
    let mut current: Option<&str> = None;
    for e in entries {
        if current != Some(e.message_id.as_str()) {
            let name = if e.message_id.is_empty() {
                "(no message id)".into()
            } else {
                escape(&e.message_id)
            };
            // A scan found these changes: say so, and what ran.
            let found = match &e.scan {
                Some(m) => match &m.command {
                    Some(c) => format!("  (found by a scan of `{}`)", escape(c)),
                    None => "  (found by a scan)".into(),
                },
                None => String::new(),
            };
            s.push_str(&format!(
                "message {name}  {}{found}\n",
                out.paint(Role::Dim, &time(e.time))
            ));
            current = Some(&e.message_id);
        }
        s.push_str(&format!("  {}\n", entry_line(out, e)));
    }
    s
}

/// A revert's result, or with a preview, its plan and a diff per file.
pub fn revert(out: &Out, what: &str, r: &RevertReport, diffs: &[Option<FileDiff>]) -> String {
    let n = r.files.len();
    let mut s = if r.applied {
        format!(
            "{what} in session {}: {n} {}\n",
            r.session,
            plural(n, "file")
        )
    } else {
        format!(
            "{what} in session {} would change {n} {} (dry run, nothing touched):\n",
            r.session,
            plural(n, "file")
        )
    };
    for (i, f) in r.files.iter().enumerate() {
        s.push_str(&format!("  {}\n", file_revert(out, f, r.applied)));
        if let Some(Some(d)) = diffs.get(i) {
            s.push_str(&indent(&diff_body(out, d), "    "));
        }
    }
    s
}

fn file_revert(out: &Out, f: &FileRevert, applied: bool) -> String {
    let path = out.paint(Role::Path, &escape(&f.path));
    let verb = |done: &str, todo: &str| {
        if applied {
            done.to_string()
        } else {
            todo.to_string()
        }
    };
    let action = match (&f.status, &f.action) {
        (FileStatus::AlreadyReverted, _) => "already as it was before: nothing to do".to_string(),
        (_, RevertAction::Write { size }) => {
            format!("{} ({size} bytes)", verb("restored", "restore"))
        }
        (_, RevertAction::Delete) => verb("deleted", "delete"),
    };
    let status = match &f.status {
        FileStatus::Safe | FileStatus::AlreadyReverted => String::new(),
        FileStatus::Conflict(ConflictReason::ChangedSince { by }) => {
            // Worded as the refusal's error message words it.
            let who = by
                .as_ref()
                .map(|b| format!(" (by session {:?}, message {:?})", b.session, b.message_id))
                .unwrap_or_default();
            let note = if applied {
                format!("  [overwrote changes made since{who}]")
            } else {
                format!("  [changed since{who}]")
            };
            out.paint(Role::Warn, &note)
        }
        FileStatus::Conflict(ConflictReason::NeverCommitted) => {
            out.paint(Role::Warn, "  [change never committed]")
        }
        FileStatus::Conflict(ConflictReason::Shared { with }) => out.paint(
            Role::Warn,
            &format!("  [shared with session {}]", with.join(", ")),
        ),
    };
    format!("{path}: {action}{status}")
}

/// One file's diff body: the unified diff, or what kind of file it is.
pub fn diff_body(out: &Out, d: &FileDiff) -> String {
    match &d.body {
        DiffBody::Same => "(no difference)\n".into(),
        DiffBody::Text { unified, .. } => out.diff(&escape_diff_headers(unified)),
        DiffBody::Binary => format!("binary file: {} -> {} bytes\n", d.old.size, d.new.size),
        DiffBody::TooBig => format!(
            "too big to compare: {} -> {} bytes\n",
            d.old.size, d.new.size
        ),
    }
}

/// `turnback diff`: each file with a summary line, then (without `--stat`) its diff.
pub fn diff(out: &Out, files: &[FileDiff], stat: bool) -> String {
    let mut s = String::new();
    let (mut ins, mut del) = (0, 0);
    for d in files {
        let kind = if d.is_created() {
            "new file, "
        } else if d.is_deleted() {
            "deleted, "
        } else {
            ""
        };
        let summary = match &d.body {
            DiffBody::Text {
                insertions,
                deletions,
                ..
            } => {
                ins += insertions;
                del += deletions;
                format!(
                    "{kind}{} {}",
                    out.paint(Role::Added, &format!("+{insertions}")),
                    out.paint(Role::Removed, &format!("-{deletions}"))
                )
            }
            DiffBody::Binary => format!("{kind}binary, {} -> {} bytes", d.old.size, d.new.size),
            DiffBody::TooBig => format!(
                "{kind}too big to compare, {} -> {} bytes",
                d.old.size, d.new.size
            ),
            DiffBody::Same => "no difference".into(),
        };
        s.push_str(&format!(
            "{}: {summary}\n",
            out.paint(Role::Path, &escape(&d.path))
        ));
        if !stat && matches!(d.body, DiffBody::Text { .. }) {
            s.push_str(&diff_body(out, d));
        }
    }
    s.push_str(&format!(
        "{} {} changed, {ins} {}(+), {del} {}(-)\n",
        files.len(),
        plural(files.len(), "file"),
        plural(ins, "insertion"),
        plural(del, "deletion")
    ));
    s
}

pub fn sessions(out: &Out, list: &[SessionSummary]) -> String {
    if list.is_empty() {
        return "no sessions in this store\n".into();
    }
    let mut s = out.paint(
        Role::Header,
        &format!(
            "{:<28} {:<23} {:>7} {:>10}  WORKSPACE",
            "SESSION", "LAST CHANGE", "ENTRIES", "BYTES"
        ),
    );
    s.push('\n');
    for x in list {
        let last = x.last_change.map(time).unwrap_or_else(|| "-".into());
        let ws: Vec<String> = x.workspaces.iter().map(|w| escape_path(w)).collect();
        let ws = match &x.problem {
            Some(p) => out.paint(
                Role::Warn,
                &format!("unreadable: {}", escape(&p.to_string())),
            ),
            None => ws.join(", "),
        };
        s.push_str(&format!(
            "{:<28} {:<23} {:>7} {:>10}  {ws}\n",
            x.id, last, x.entries, x.bytes
        ));
    }
    s
}

pub fn prune(r: &PruneReport) -> String {
    let (verb, keep) = if r.applied {
        ("removed", "kept")
    } else {
        ("would remove", "would keep")
    };
    let mut s = String::new();
    for p in &r.removed {
        s.push_str(&format!(
            "{verb} session {} (last change {}, {} bytes)\n",
            p.id,
            time(p.last_change),
            p.bytes
        ));
    }
    s.push_str(&format!(
        "{verb} {} {}, {keep} {}; {verb} {} unused {} ({} bytes)\n",
        r.removed.len(),
        plural(r.removed.len(), "session"),
        r.kept,
        r.blobs_removed,
        plural(r.blobs_removed, "backup"),
        r.blob_bytes
    ));
    s
}

/// A unified diff with its `---`/`+++` lines (which name the file) escaped; the
/// lines of contents are shown as they are, as `diff` and `git diff` show them.
fn escape_diff_headers(unified: &str) -> String {
    let mut out = String::with_capacity(unified.len());
    for (i, line) in unified.split_inclusive('\n').enumerate() {
        let header = i < 2 && (line.starts_with("--- ") || line.starts_with("+++ "));
        match line.strip_suffix('\n') {
            Some(body) if header => {
                out.push_str(&escape(body));
                out.push('\n');
            }
            _ => out.push_str(line),
        }
    }
    out
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

fn indent(s: &str, by: &str) -> String {
    s.lines().map(|l| format!("{by}{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_names_every_control_character_and_leaves_the_rest() {
        assert_eq!(escape("src/lib.rs"), "src/lib.rs");
        assert!(matches!(escape("päth ü"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            escape("a\x1b[2Jb\nc\r\t\x07\x00\x7f\u{9b}\u{85}é"),
            r"a\e[2Jb\nc\r\t\x07\x00\x7f\u{9b}\u{85}é"
        );
        assert_eq!(
            escape_diff_headers("--- a/x\x1b\n+++ b/x\x1b\n@@ -1 +1 @@\n-\x1b\n"),
            "--- a/x\\e\n+++ b/x\\e\n@@ -1 +1 @@\n-\x1b\n"
        );
    }
}
