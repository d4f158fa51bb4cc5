//! The human-readable output of each command. What a person reads is checked
//! as snapshots in `tests/cli.rs`.

use turnback_store::{
    ConflictReason, DiffBody, Entry, Evicted, FileDiff, FileRevert, FileStatus, PathKind,
    PruneReport, RevertAction, RevertReport, SETTING_KEYS, SessionSummary, Settings, SpareReason,
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

/// A time as text output shows it: in local time (`UTC` for a zero offset).
pub fn time(t: time::OffsetDateTime) -> String {
    crate::when::absolute(t)
}

/// What an entry did to its file, in a word or two, and the sizes.
pub fn change(e: &Entry) -> String {
    match &e.after {
        None => "checkpoint, not committed".into(),
        Some(a) if a.is_dir() || e.before.is_dir() => match (e.before.exists, a.exists) {
            (false, _) => "directory created".into(),
            (_, false) => "directory removed".into(),
            _ if a.is_dir() == e.before.is_dir() => "directory's mode changed".into(),
            _ if a.is_dir() => format!("replaced by a directory, was {} bytes", e.before.size),
            _ => format!("directory replaced by a file of {} bytes", a.size),
        },
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
            s.push_str(&message_line(out, e, &time(e.time)));
            current = Some(&e.message_id);
        }
        s.push_str(&format!("  {}\n", entry_line(out, e)));
    }
    s
}

/// The line that heads a message's entries in a log: its id, `shown_time`
/// (the entry's time as the caller shows times), and, for the changes a
/// scan found, that it did and what ran.
pub fn message_line(out: &Out, e: &Entry, shown_time: &str) -> String {
    let name = if e.message_id.is_empty() {
        "(no message id)".into()
    } else {
        escape(&e.message_id)
    };
    let found = match &e.scan {
        Some(m) => match &m.command {
            Some(c) => format!("  (found by a scan of `{}`)", escape(c)),
            None => "  (found by a scan)".into(),
        },
        None => String::new(),
    };
    format!(
        "message {name}  {}{found}\n",
        out.paint(Role::Dim, shown_time)
    )
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
        (_, RevertAction::Directory) => {
            verb("made again (a directory)", "make again (a directory)")
        }
        (_, RevertAction::KeepDirectory { holding }) => format!(
            "{} (a directory holding {}, which the changes reverted did not make)",
            verb("kept", "keep"),
            escape(holding)
        ),
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
        FileStatus::Conflict(ConflictReason::NotEmpty { found }) => out.paint(
            Role::Warn,
            &format!("  [a directory now, holding {}]", escape(found)),
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

/// `turnback diff`: each file with a summary line and its diff; with
/// `--stat`, git's lines with bars ([`stat`]).
pub fn diff(out: &Out, files: &[FileDiff], stat: bool) -> String {
    if stat {
        return self::stat(out, files);
    }
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

/// The widest bar of `--stat`, as git keeps its bars to the terminal.
const BAR: usize = 40;

/// `diff --stat` as git prints it: a line per file with its count of changed
/// lines and a bar of `+` and `-` (scaled to the largest file), then the
/// totals.
pub fn stat(out: &Out, files: &[FileDiff]) -> String {
    let width = files
        .iter()
        .map(|d| escape(&d.path).chars().count())
        .max()
        .unwrap_or(0);
    let largest = files
        .iter()
        .map(|d| match d.body {
            DiffBody::Text {
                insertions,
                deletions,
                ..
            } => insertions + deletions,
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    let count_width = largest.to_string().len();
    let (mut ins, mut del) = (0, 0);
    let mut s = String::new();
    for d in files {
        let path = escape(&d.path);
        let pad = width - path.chars().count();
        let what = match &d.body {
            DiffBody::Text {
                insertions,
                deletions,
                ..
            } => {
                ins += insertions;
                del += deletions;
                let n = insertions + deletions;
                // Scaled down only when the largest would not fit; a file
                // with changes keeps at least one mark of each kind it has.
                let scale = |k: usize| {
                    if largest <= BAR || k == 0 {
                        k
                    } else {
                        (k * BAR / largest).max(1)
                    }
                };
                format!(
                    "{n:>count_width$} {}{}",
                    out.paint(Role::Added, &"+".repeat(scale(*insertions))),
                    out.paint(Role::Removed, &"-".repeat(scale(*deletions)))
                )
            }
            DiffBody::Binary => format!("Bin {} -> {} bytes", d.old.size, d.new.size),
            DiffBody::TooBig => {
                format!("too big to compare, {} -> {} bytes", d.old.size, d.new.size)
            }
            DiffBody::Same => "0".into(),
        };
        s.push_str(&format!(
            " {}{} | {}\n",
            out.paint(Role::Path, &path),
            " ".repeat(pad),
            what.trim_end()
        ));
    }
    s.push_str(&format!(
        " {} {} changed, {ins} {}(+), {del} {}(-)\n",
        files.len(),
        plural(files.len(), "file"),
        plural(ins, "insertion"),
        plural(del, "deletion")
    ));
    s
}

/// The workspaces' scan baselines of a store in words: how many and the
/// disk they take, and the cap on each when given.
pub fn baselines(u: &turnback_store::BaselineUsage, cap: Option<u64>) -> String {
    let mut s = format!(
        "{} workspace {} of {} bytes on disk",
        u.baselines,
        if u.baselines == 1 {
            "baseline"
        } else {
            "baselines"
        },
        u.bytes
    );
    if let Some(cap) = cap {
        s.push_str(&format!(" (at most {cap} bytes of copies each)"));
    }
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
    let days = r.retention.keep_for.as_secs() / (24 * 3600);
    let now = time::OffsetDateTime::now_utc();
    for p in &r.removed {
        let unchanged = (now - p.last_change).whole_days().max(0);
        s.push_str(&format!(
            "{verb} session {} (last change {}, {} bytes): {} newest, unchanged for {unchanged} {} (keeping the {} newest and any changed in {days} {})\n",
            p.id,
            time(p.last_change),
            p.bytes,
            ordinal(p.rank),
            plural(unchanged as usize, "day"),
            r.retention.keep_recent,
            plural(days as usize, "day"),
        ));
    }
    for x in &r.spared {
        let why = match x.reason {
            SpareReason::InUse => "it is the session in use",
            SpareReason::Open => "a running process has it open",
            SpareReason::Busy => "a change to it is under way",
            SpareReason::Changed => "it changed while prune ran",
            SpareReason::Unreadable => "its index cannot be read",
            SpareReason::Writing => "a running agent or command is between a backup and its commit",
        };
        s.push_str(&format!("{keep} session {}, old as it is: {why}\n", x.id));
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
    if r.baselines_removed > 0 {
        s.push_str(&format!(
            "{verb} {} scan {} no kept session uses ({} bytes)\n",
            r.baselines_removed,
            plural(r.baselines_removed, "baseline"),
            r.baseline_bytes
        ));
    }
    s
}

/// The line `log` shows where the caps evicted the oldest changes.
pub fn evicted_gap(out: &Out, g: &Evicted) -> String {
    let (first, last) = (g.messages.first(), g.messages.last());
    let messages = match (first, last) {
        (Some(a), Some(b)) if a.id == b.id => format!("message {}", escape(&a.id)),
        (Some(a), Some(b)) => format!(
            "{} messages, {} to {}",
            g.messages.len(),
            escape(&a.id),
            escape(&b.id)
        ),
        _ => "no message".into(),
    };
    let line = format!(
        "… {} older {} evicted by the session's caps ({messages}; {} to {}): undo, revert and rewind cannot go back past them",
        g.entries,
        plural(g.entries as usize, "change"),
        time(g.oldest),
        time(g.newest),
    );
    format!("{}\n", out.paint(Role::Warn, &line))
}

/// 1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The settings in force (`turnback config`), each with where it came from.
pub fn settings(out: &Out, s: &Settings) -> String {
    let file = match &s.config_file {
        Some(p) if p.exists() => escape_path(p),
        Some(p) => format!("{} (none there)", escape_path(p)),
        None => "(no home directory to look in)".into(),
    };
    let mut text = format!("config file: {file}\n");
    for (key, value, env) in setting_rows(s) {
        text.push_str(&format!(
            "{key:<18} {value:<12} {}  (env {env})\n",
            out.paint(Role::Dim, &escape(&s.source_of(key).to_string()))
        ));
    }
    text
}

/// Each setting's key, value as shown, and environment variable.
fn setting_rows(s: &Settings) -> Vec<(&'static str, String, &'static str)> {
    let size = |n: u64| match n {
        n if n % (1 << 30) == 0 => format!("{}G", n >> 30),
        n if n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    };
    let values = [
        s.keep_sessions.value.to_string(),
        s.keep_days.value.to_string(),
        s.max_entries.value.to_string(),
        size(s.max_bytes.value),
        s.compress_backups.value.to_string(),
        size(s.max_baseline_bytes.value),
    ];
    SETTING_KEYS
        .iter()
        .zip(values)
        .map(|((key, env), v)| (*key, v, *env))
        .collect()
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

/// `word`, with an `s` unless `n` is 1.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

fn indent(s: &str, by: &str) -> String {
    s.lines().map(|l| format!("{by}{l}\n")).collect()
}

/// What happened to a symbolic link, in words.
pub fn link_change(before: &PathKind, now: &PathKind) -> String {
    let to = |t: &str| format!("a symbolic link to {}", escape(t));
    match (before, now) {
        (PathKind::Link { target: a }, PathKind::Link { target: b }) => format!(
            "a symbolic link changed from {} to {}",
            escape(a),
            escape(b)
        ),
        (PathKind::Link { target }, PathKind::Absent) => format!("{} removed", to(target)),
        (PathKind::Link { target }, other) => {
            format!("{} replaced by {}", to(target), kind_words(other))
        }
        (PathKind::Absent, PathKind::Link { target }) => format!("{} made", to(target)),
        (other, PathKind::Link { target }) => {
            format!("{} replaced by {}", kind_words(other), to(target))
        }
        _ => "a symbolic link changed".into(),
    }
}

fn kind_words(k: &PathKind) -> &'static str {
    match k {
        PathKind::Absent => "nothing",
        PathKind::File => "a file",
        PathKind::Directory => "a directory",
        PathKind::Link { .. } => "a symbolic link",
    }
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
