//! The command line as an agent in another language sees it: every command that
//! prints JSON, run as a real process with `--json`, its standard output parsed
//! and checked field by field against what the test itself wrote (hashes computed
//! independently, modes set by the test, times checked against the test's clock).
//! `docs/JSON.md` documents these shapes.
//!
//! The process runner here ([`run`], [`finish`]) is shared with `cli_errors`.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::util::{Env, mode_of, read, sha256_hex, tree_digest};

/// How long any one run of the binary may take before the test kills it and
/// fails (a hang, e.g. on a fifo, must fail the test, not stall the suite).
const TIMEOUT: Duration = Duration::from_secs(20);

/// A finished run of the binary.
#[derive(Debug)]
pub(crate) struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code; a run killed by a signal fails the test.
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {:?}\n{}", self.status, self.stderr))
    }
}

/// `turnback ARGS` in the workspace of `env` (home and session as
/// [`Env::cmd`] sets them), with `stdin` fed to it (or nothing to read).
pub(crate) fn run(env: &Env, session: Option<&str>, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut cmd = env.cmd(session);
    cmd.args(args).stdout(Stdio::piped());
    finish(cmd, stdin)
}

/// Spawns `cmd` (whose stdout the caller has set), feeds `stdin`, collects
/// stdout (when piped) and stderr, and kills it after [`TIMEOUT`].
pub(crate) fn finish(mut cmd: Command, stdin: Option<&[u8]>) -> Run {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stderr(Stdio::piped());
    let what = format!("{cmd:?}");
    let mut child = cmd.spawn().unwrap();
    if let Some(bytes) = stdin {
        let mut w = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        // A process that fails before reading closes the pipe: not an error here.
        std::thread::spawn(move || {
            let _ = w.write_all(&bytes);
        });
    }
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                r.read_to_end(&mut s).unwrap();
            }
            String::from_utf8(s).expect("output is UTF-8")
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Run {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Exactly one JSON value on exactly one line: what every `--json` output is.
pub(crate) fn one_json_line(text: &str, what: &str) -> Value {
    assert!(
        text.ends_with('\n') && text.matches('\n').count() == 1,
        "{what}: not exactly one line: {text:?}"
    );
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let v = values
        .next()
        .unwrap_or_else(|| panic!("{what}: no JSON value in {text:?}"))
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text:?}"));
    assert!(values.next().is_none(), "{what}: more than one JSON value");
    v
}

/// `turnback --json ARGS`, which must succeed; its stdout, parsed.
fn json_ok(env: &Env, session: Option<&str>, args: &[&str], stdin: Option<&[u8]>) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let r = run(env, session, &all, stdin);
    let what = format!("turnback {}", all.join(" "));
    assert_eq!(r.code(), 0, "{what}: {}", r.stderr);
    assert!(
        !r.stderr.contains("error"),
        "{what}: error on stderr: {}",
        r.stderr
    );
    one_json_line(&r.stdout, &what)
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort_unstable();
    k
}

/// The file state of `bytes` with permission bits `mode`, as JSON prints it.
fn present(bytes: &[u8], mode: u32) -> Value {
    json!({ "exists": true, "sha256": sha256_hex(bytes), "size": bytes.len(), "mode": mode })
}

/// The file state of a missing file.
fn absent() -> Value {
    json!({ "exists": false, "sha256": null, "size": 0, "mode": null })
}

/// Writes `bytes` to `rel` in the workspace with mode 0o644 (whatever the umask).
fn put(env: &Env, rel: &str, bytes: &[u8]) {
    let p = env.path(rel);
    if let Some(dir) = p.parent() {
        fs::create_dir_all(dir).unwrap();
    }
    fs::write(&p, bytes).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
}

/// The workspace root as entries record it: its canonical path.
fn canonical(env: &Env) -> String {
    fs::canonicalize(env.ws.path())
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// Checks that `t` is an RFC 3339 time in UTC, between `since` (less a second
/// of clock granularity) and now; returns it.
fn check_time(t: &Value, since: OffsetDateTime) -> OffsetDateTime {
    let s = t
        .as_str()
        .unwrap_or_else(|| panic!("time is not a string: {t}"));
    let parsed =
        OffsetDateTime::parse(s, &Rfc3339).unwrap_or_else(|e| panic!("{s:?} is not RFC 3339: {e}"));
    assert!(s.ends_with('Z'), "{s:?} is not in UTC");
    assert!(
        parsed >= since - Duration::from_secs(1)
            && parsed <= OffsetDateTime::now_utc() + Duration::from_secs(1),
        "{s} is not between {since} and now"
    );
    parsed
}

/// An entry without its `time`, which is checked (see [`check_time`]).
fn untimed(entry: &Value, since: OffsetDateTime) -> Value {
    let mut e = entry.clone();
    let t = e
        .as_object_mut()
        .unwrap_or_else(|| panic!("entry is not an object: {entry}"))
        .remove("time")
        .unwrap_or_else(|| panic!("entry without time: {entry}"));
    check_time(&t, since);
    e
}

/// An entry as JSON prints it, without `time`.
fn entry(ws: &str, seq: u64, message: &str, path: &str, version: u32) -> Value {
    json!({
        "seq": seq,
        "message_id": message,
        "workspace": ws,
        "path": path,
        "version": version,
    })
}

/// `entry` with its before and after states.
fn with_states(mut e: Value, before: Value, after: Value) -> Value {
    e["before"] = before;
    e["after"] = after;
    e
}

#[test]
fn write_prints_the_entry_it_recorded() {
    let env = Env::new();
    let ws = canonical(&env);
    put(&env, "a.txt", b"old\n");
    fs::set_permissions(env.path("a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    let t0 = OffsetDateTime::now_utc();

    let v = json_ok(
        &env,
        Some("agent-1"),
        &["write", "a.txt", "--message", "call-1"],
        Some(b"new contents\n"),
    );
    assert_eq!(keys(&v), ["entry", "session"]);
    assert_eq!(v["session"], "agent-1");
    assert_eq!(
        keys(&v["entry"]),
        [
            "after",
            "before",
            "message_id",
            "path",
            "seq",
            "time",
            "version",
            "workspace"
        ]
    );
    assert_eq!(
        untimed(&v["entry"], t0),
        with_states(
            entry(&ws, 1, "call-1", "a.txt", 1),
            present(b"old\n", 0o640),
            present(b"new contents\n", 0o640),
        )
    );
    assert_eq!(read(env.path("a.txt")), b"new contents\n");
    assert_eq!(mode_of(&env.path("a.txt")), 0o640, "the mode is kept");

    // A new file in new directories: "before" is absence.
    let v = json_ok(
        &env,
        Some("agent-1"),
        &["write", "sub/dir/new.txt", "-m", "call-2"],
        Some(b"fresh\n"),
    );
    let mode = mode_of(&env.path("sub/dir/new.txt"));
    assert_eq!(
        untimed(&v["entry"], t0),
        with_states(
            entry(&ws, 2, "call-2", "sub/dir/new.txt", 1),
            absent(),
            present(b"fresh\n", mode),
        )
    );

    // The same file again: version 2, "before" is what call-1 wrote. Empty
    // stdin writes an empty file, and no --message is an empty message id.
    let v = json_ok(&env, Some("agent-1"), &["write", "a.txt"], Some(b""));
    assert_eq!(
        untimed(&v["entry"], t0),
        with_states(
            entry(&ws, 3, "", "a.txt", 2),
            present(b"new contents\n", 0o640),
            present(b"", 0o640),
        )
    );
    assert_eq!(
        v["entry"]["after"]["sha256"],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn a_write_of_the_bytes_the_file_holds_records_nothing_and_says_so() {
    let env = Env::new();
    put(&env, "sub/a.txt", b"same\n");
    let before = tree_digest(env.ws.path());
    let v = json_ok(
        &env,
        Some("agent-1"),
        &["write", "sub/a.txt", "--message", "call-1"],
        Some(b"same\n"),
    );
    assert_eq!(
        v,
        json!({ "session": "agent-1", "entry": null, "path": "sub/a.txt" })
    );
    assert_eq!(tree_digest(env.ws.path()), before, "nothing touched");
    // Nothing to undo, and the text says so.
    let r = run(
        &env,
        Some("agent-1"),
        &["write", "sub/a.txt"],
        Some(b"same\n"),
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(r.stdout.contains("unchanged"), "{}", r.stdout);
    let log = json_ok(&env, Some("agent-1"), &["log"], None);
    assert_eq!(log["entries"], json!([]), "{log}");
    // Other bytes are a change, as ever.
    let v = json_ok(
        &env,
        Some("agent-1"),
        &["write", "sub/a.txt"],
        Some(b"new\n"),
    );
    assert_eq!(v["entry"]["seq"], 1);
}

#[test]
fn rm_prints_the_entry_with_an_absent_after() {
    let env = Env::new();
    let ws = canonical(&env);
    put(&env, "dir/bye.txt", b"goodbye\n");
    fs::set_permissions(env.path("dir/bye.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    let t0 = OffsetDateTime::now_utc();
    let v = json_ok(
        &env,
        Some("s"),
        &["rm", "dir/bye.txt", "-m", "call-9"],
        None,
    );
    assert_eq!(keys(&v), ["entry", "session"]);
    assert_eq!(v["session"], "s");
    assert_eq!(
        untimed(&v["entry"], t0),
        with_states(
            entry(&ws, 1, "call-9", "dir/bye.txt", 1),
            present(b"goodbye\n", 0o600),
            absent(),
        )
    );
    assert!(!env.path("dir/bye.txt").exists());
}

#[test]
fn checkpoint_commit_and_rollback_print_the_entry_and_what_was_rolled_back() {
    let env = Env::new();
    let ws = canonical(&env);
    put(&env, "c.txt", b"v1\n");
    let t0 = OffsetDateTime::now_utc();

    let cp = json_ok(
        &env,
        Some("s"),
        &["checkpoint", "c.txt", "-m", "call-3"],
        None,
    );
    assert_eq!(keys(&cp), ["entry", "session"]);
    assert_eq!(cp["session"], "s");
    assert_eq!(
        untimed(&cp["entry"], t0),
        with_states(
            entry(&ws, 1, "call-3", "c.txt", 1),
            present(b"v1\n", 0o644),
            Value::Null,
        ),
        "a checkpoint not yet committed has after: null"
    );

    // The agent edits the file itself; commit records what it left.
    put(&env, "c.txt", b"v2 by the agent\n");
    let committed = json_ok(&env, Some("s"), &["commit", "1"], None);
    assert_eq!(keys(&committed), ["entry", "session"]);
    let mut want = cp["entry"].clone();
    want["after"] = present(b"v2 by the agent\n", 0o644);
    assert_eq!(
        committed["entry"], want,
        "commit adds after and changes nothing else"
    );

    // A checkpoint of a file that does not exist yet, rolled back.
    let cp2 = json_ok(
        &env,
        Some("s"),
        &["checkpoint", "new.txt", "-m", "call-4"],
        None,
    );
    assert_eq!(
        untimed(&cp2["entry"], t0),
        with_states(entry(&ws, 2, "call-4", "new.txt", 1), absent(), Value::Null)
    );
    put(&env, "new.txt", b"half written");
    let rb = json_ok(&env, Some("s"), &["rollback", "2"], None);
    assert_eq!(
        rb,
        json!({ "session": "s", "rolled_back": 2, "path": "new.txt" })
    );
    assert!(
        !env.path("new.txt").exists(),
        "rollback deletes what was not there"
    );

    let log = json_ok(&env, Some("s"), &["log"], None);
    assert_eq!(
        log,
        json!({ "session": "s", "entries": [committed["entry"]], "turns": [] })
    );
}

#[test]
fn log_lists_every_entry_exactly_as_the_commands_printed_it() {
    let env = Env::new();
    let ws = canonical(&env);
    put(&env, "a.txt", b"a\n");
    put(&env, "b.txt", b"b\n");
    let t0 = OffsetDateTime::now_utc();
    let mut printed = vec![
        json_ok(
            &env,
            Some("s"),
            &["write", "a.txt", "-m", "m1"],
            Some(b"a2\n"),
        ),
        json_ok(&env, Some("s"), &["rm", "b.txt", "-m", "m1"], None),
        json_ok(
            &env,
            Some("s"),
            &["write", "a.txt", "-m", "m2"],
            Some(b"a3\n"),
        ),
        json_ok(&env, Some("s"), &["checkpoint", "c.txt", "-m", "m3"], None),
    ]
    .into_iter()
    .map(|v| {
        assert_eq!(v["session"], "s");
        v["entry"].clone()
    })
    .collect::<Vec<_>>();

    let log = json_ok(&env, Some("s"), &["log"], None);
    assert_eq!(keys(&log), ["entries", "session", "turns"]);
    assert_eq!(log["turns"], json!([]));
    assert_eq!(log["session"], "s");
    assert_eq!(log["entries"], Value::Array(printed.clone()));
    let seqs: Vec<&Value> = printed.iter().map(|e| &e["seq"]).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert_eq!(printed[3]["after"], Value::Null, "uncommitted checkpoint");
    assert_eq!(
        untimed(&printed[2], t0),
        with_states(
            entry(&ws, 3, "m2", "a.txt", 2),
            present(b"a2\n", 0o644),
            present(b"a3\n", 0o644)
        )
    );
    let times: Vec<OffsetDateTime> = printed.iter().map(|e| check_time(&e["time"], t0)).collect();
    assert!(times.is_sorted(), "entries are oldest first: {times:?}");

    // Without --session, the newest session here is used (a note on stderr):
    // stdout is the same single JSON line. `--json` after the command works too.
    let r = run(&env, None, &["log", "--json"], None);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(one_json_line(&r.stdout, "log --json"), log);

    // An undo takes the entry out of the log.
    json_ok(&env, Some("s"), &["undo", "--force"], None);
    printed.pop();
    let log = json_ok(&env, Some("s"), &["log"], None);
    assert_eq!(log["entries"], Value::Array(printed));
}

#[test]
fn log_all_lists_each_session_with_changes_here_oldest_first() {
    let env = Env::new();
    let elsewhere = tempfile::tempdir().unwrap();
    assert_eq!(
        json_ok(&env, None, &["log", "--all"], None),
        json!({ "sessions": [] })
    );

    let older = json_ok(
        &env,
        Some("older"),
        &["write", "a.txt", "-m", "m1"],
        Some(b"1\n"),
    );
    let newer = json_ok(
        &env,
        Some("newer"),
        &["write", "b.txt", "-m", "m1"],
        Some(b"2\n"),
    );
    // A session that only changed another workspace is not listed.
    let s = env.store().session("other").unwrap();
    let other_ws = turnback_store::Workspace::open(elsewhere.path()).unwrap();
    s.write(&other_ws, "x.txt", &b"x"[..], "m").unwrap();

    let all = json_ok(&env, None, &["log", "--all"], None);
    assert_eq!(
        all,
        json!({ "sessions": [
            { "session": "older", "entries": [older["entry"]], "turns": [] },
            { "session": "newer", "entries": [newer["entry"]], "turns": [] },
        ] })
    );
    // With a session named, only that one.
    assert_eq!(
        json_ok(&env, Some("newer"), &["log", "--all"], None),
        json!({ "sessions": [ { "session": "newer", "entries": [newer["entry"]], "turns": [] } ] })
    );
}

#[test]
fn diff_compares_each_file_with_its_first_backup() {
    let env = Env::new();
    let ws = canonical(&env);
    put(&env, "a.txt", b"one\ntwo\n");
    put(&env, "d.txt", b"gone\n");
    put(&env, "same.txt", b"same\n");
    for (args, stdin) in [
        (&["write", "a.txt"][..], Some(&b"one\n2\n"[..])),
        (&["write", "a.txt"], Some(b"one\nTWO\nthree\n")),
        (&["write", "bin.bin"], Some(b"a\0b")),
        (&["write", "created.txt"], Some(b"hi\n")),
        (&["rm", "d.txt"], None),
        (&["write", "same.txt"], Some(b"changed\n")),
    ] {
        json_ok(&env, Some("s"), args, stdin);
    }
    // Back to its first backup by hand: left out of the diff.
    put(&env, "same.txt", b"same\n");

    let a = json!({
        "workspace": ws,
        "path": "a.txt",
        "old": present(b"one\ntwo\n", 0o644),
        "new": present(b"one\nTWO\nthree\n", 0o644),
        "diff": {
            "kind": "text",
            "insertions": 2,
            "deletions": 1,
            "unified": "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+TWO\n+three\n",
        },
    });
    let bin = json!({
        "workspace": ws,
        "path": "bin.bin",
        "old": absent(),
        "new": present(b"a\0b", mode_of(&env.path("bin.bin"))),
        "diff": { "kind": "binary" },
    });
    let created = json!({
        "workspace": ws,
        "path": "created.txt",
        "old": absent(),
        "new": present(b"hi\n", mode_of(&env.path("created.txt"))),
        "diff": text_diff(1, 0, "--- /dev/null\n+++ b/created.txt\n@@ -0,0 +1 @@\n+hi\n"),
    });
    let d = json!({
        "workspace": ws,
        "path": "d.txt",
        "old": present(b"gone\n", 0o644),
        "new": absent(),
        "diff": {
            "kind": "text",
            "insertions": 0,
            "deletions": 1,
            "unified": "--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
        },
    });
    let before = tree_digest(env.ws.path());
    let all = json_ok(&env, Some("s"), &["diff"], None);
    assert_eq!(
        all,
        json!({ "session": "s", "files": [a, bin, created, d] })
    );
    assert_eq!(
        json_ok(&env, Some("s"), &["diff", "a.txt"], None),
        json!({ "session": "s", "files": [a] })
    );
    // --stat changes the text output only.
    assert_eq!(json_ok(&env, Some("s"), &["diff", "--stat"], None), all);
    // Without --session, the session that changed the file last.
    let r = run(&env, None, &["--json", "diff", "d.txt"], None);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        one_json_line(&r.stdout, "diff d.txt"),
        json!({ "session": "s", "files": [d] })
    );
    assert_eq!(tree_digest(env.ws.path()), before, "diff changes nothing");
}

/// A session `s` with three changes: a.txt a1 → a2 (m1), new.txt created (m2),
/// a.txt a2 → a3 (m3).
fn three_changes() -> (Env, String) {
    let env = Env::new();
    put(&env, "a.txt", b"a1\n");
    json_ok(
        &env,
        Some("s"),
        &["write", "a.txt", "-m", "m1"],
        Some(b"a2\n"),
    );
    json_ok(
        &env,
        Some("s"),
        &["write", "new.txt", "-m", "m2"],
        Some(b"n\n"),
    );
    json_ok(
        &env,
        Some("s"),
        &["write", "a.txt", "-m", "m3"],
        Some(b"a3\n"),
    );
    let ws = canonical(&env);
    (env, ws)
}

/// One file of a revert report, without `diff`.
fn reverted(ws: &str, path: &str, entries: &[u64], action: &str, target: Value) -> Value {
    json!({
        "workspace": ws,
        "path": path,
        "entries": entries,
        "action": action,
        "status": "safe",
        "changed_by": null,
        "target": target,
    })
}

fn text_diff(ins: u64, del: u64, unified: &str) -> Value {
    json!({ "kind": "text", "insertions": ins, "deletions": del, "unified": unified })
}

fn with_diff(mut file: Value, diff: Value) -> Value {
    file["diff"] = diff;
    file
}

#[test]
fn dry_runs_of_undo_revert_and_rewind_preview_each_file_with_its_diff() {
    let (env, ws) = three_changes();
    let disk = (tree_digest(env.ws.path()), tree_digest(env.home.path()));

    let a2 = reverted(&ws, "a.txt", &[3], "write", present(b"a2\n", 0o644));
    let undo = json_ok(&env, Some("s"), &["undo", "--dry-run"], None);
    assert_eq!(keys(&undo), ["applied", "files", "session"]);
    assert_eq!(
        keys(&undo["files"][0]),
        [
            "action",
            "changed_by",
            "diff",
            "entries",
            "path",
            "status",
            "target",
            "workspace"
        ]
    );
    assert_eq!(
        undo,
        json!({ "session": "s", "applied": false, "files": [with_diff(
            a2.clone(),
            text_diff(1, 1, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a3\n+a2\n"),
        )] })
    );

    let gone = reverted(&ws, "new.txt", &[2], "delete", absent());
    assert_eq!(
        json_ok(&env, Some("s"), &["revert", "new.txt", "--dry-run"], None),
        json!({ "session": "s", "applied": false, "files": [with_diff(
            gone.clone(),
            text_diff(0, 1, "--- a/new.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-n\n"),
        )] })
    );

    // Newest change first; a file changed twice lists both entries, newest first,
    // and goes back to its oldest "before".
    assert_eq!(
        json_ok(&env, Some("s"), &["rewind", "m1", "--dry-run"], None),
        json!({ "session": "s", "applied": false, "files": [
            with_diff(
                reverted(&ws, "a.txt", &[3, 1], "write", present(b"a1\n", 0o644)),
                text_diff(1, 1, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a3\n+a1\n"),
            ),
            with_diff(
                gone.clone(),
                text_diff(0, 1, "--- a/new.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-n\n"),
            ),
        ] })
    );
    assert_eq!(
        (tree_digest(env.ws.path()), tree_digest(env.home.path())),
        disk,
        "a dry run changes nothing, in the workspace or the store"
    );

    // For real: the same shape with applied true and no diff.
    assert_eq!(
        json_ok(&env, Some("s"), &["undo"], None),
        json!({ "session": "s", "applied": true, "files": [a2] })
    );
    assert_eq!(read(env.path("a.txt")), b"a2\n");
    assert_eq!(
        json_ok(&env, Some("s"), &["revert", "new.txt"], None),
        json!({ "session": "s", "applied": true, "files": [gone] })
    );
    assert!(!env.path("new.txt").exists());
    assert_eq!(
        json_ok(&env, Some("s"), &["rewind", "m1"], None),
        json!({ "session": "s", "applied": true, "files": [
            reverted(&ws, "a.txt", &[1], "write", present(b"a1\n", 0o644)),
        ] })
    );
    assert_eq!(read(env.path("a.txt")), b"a1\n");
    assert_eq!(
        json_ok(&env, Some("s"), &["log"], None),
        json!({ "session": "s", "entries": [], "turns": [] })
    );
}

#[test]
fn a_preview_names_each_files_status_and_who_changed_it() {
    let env = Env::new();
    let ws = canonical(&env);
    for (f, old, new, msg) in [
        ("h.txt", "h1\n", "h2\n", "m-h"),
        ("o.txt", "o1\n", "o2\n", "m-o"),
        ("a.txt", "a1\n", "a2\n", "m-a"),
    ] {
        put(&env, f, old.as_bytes());
        json_ok(
            &env,
            Some("mine"),
            &["write", f, "-m", msg],
            Some(new.as_bytes()),
        );
    }
    put(&env, "c.txt", b"c1\n");
    json_ok(
        &env,
        Some("mine"),
        &["checkpoint", "c.txt", "-m", "m-c"],
        None,
    );
    // h.txt by hand; o.txt by another session; a.txt back as it was; c.txt
    // edited under a checkpoint never committed.
    put(&env, "h.txt", b"by hand\n");
    json_ok(
        &env,
        Some("theirs"),
        &["write", "o.txt", "-m", "their-call"],
        Some(b"o3\n"),
    );
    put(&env, "a.txt", b"a1\n");
    put(&env, "c.txt", b"c2\n");

    let file = |path: &str, seq: u64, before: &[u8], status: &str, by: Value| {
        json!({
            "workspace": ws,
            "path": path,
            "entries": [seq],
            "action": "write",
            "status": status,
            "changed_by": by,
            "target": present(before, 0o644),
        })
    };
    let c = file("c.txt", 4, b"c1\n", "never-committed", Value::Null);
    let a = file("a.txt", 3, b"a1\n", "already-reverted", Value::Null);
    let o = file(
        "o.txt",
        2,
        b"o1\n",
        "changed-since",
        json!({ "session": "theirs", "message_id": "their-call", "seq": 1 }),
    );
    let h = file("h.txt", 1, b"h1\n", "changed-since", Value::Null);
    let before = tree_digest(env.ws.path());
    // A dry run reports conflicts, and exits 3 as the real one would, with
    // its refusal on stderr.
    let dry = run(
        &env,
        Some("mine"),
        &["--json", "rewind", "m-h", "--dry-run"],
        None,
    );
    assert_eq!(dry.code(), 3, "{}", dry.stderr);
    let refusal = one_json_line(&dry.stderr, "the refusal of a dry run");
    assert_eq!(refusal["error"]["kind"], "refused");
    assert_eq!(refusal["error"]["conflicts"].as_array().unwrap().len(), 3);
    assert_eq!(
        one_json_line(&dry.stdout, "a dry run"),
        json!({ "session": "mine", "applied": false, "files": [
            with_diff(c.clone(), text_diff(1, 1, "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c2\n+c1\n")),
            with_diff(a.clone(), json!({ "kind": "same" })),
            with_diff(o.clone(), text_diff(1, 1, "--- a/o.txt\n+++ b/o.txt\n@@ -1 +1 @@\n-o3\n+o1\n")),
            with_diff(h.clone(), text_diff(1, 1, "--- a/h.txt\n+++ b/h.txt\n@@ -1 +1 @@\n-by hand\n+h1\n")),
        ] })
    );
    assert_eq!(tree_digest(env.ws.path()), before);

    // Forced for real: the statuses found, every file back.
    assert_eq!(
        json_ok(&env, Some("mine"), &["rewind", "m-h", "--force"], None),
        json!({ "session": "mine", "applied": true, "files": [c, a, o, h] })
    );
    for (f, want) in [
        ("h.txt", "h1\n"),
        ("o.txt", "o1\n"),
        ("a.txt", "a1\n"),
        ("c.txt", "c1\n"),
    ] {
        assert_eq!(read(env.path(f)), want.as_bytes(), "{f}");
    }
}

#[test]
fn sessions_lists_every_session_with_its_size_and_problem() {
    let env = Env::new();
    let ws = canonical(&env);
    assert_eq!(
        json_ok(&env, None, &["sessions"], None),
        json!({ "sessions": [], "baselines": { "count": 0, "bytes": 0 } })
    );
    put(&env, "a.txt", b"12345");
    put(&env, "b.txt", b"123");
    let t0 = OffsetDateTime::now_utc();
    json_ok(&env, Some("s-a"), &["write", "a.txt"], Some(b"x"));
    json_ok(&env, Some("s-a"), &["write", "b.txt"], Some(b"y"));
    let last_a = json_ok(&env, Some("s-a"), &["write", "a.txt"], Some(b"z"));
    let last_b = json_ok(&env, Some("s-b"), &["write", "new.txt"], Some(b"new"));
    // Sessions on disk with no entries, and with a damaged index.
    fs::create_dir_all(env.home.path().join("sessions/s-empty")).unwrap();
    let bad = env.store().session("s-bad").unwrap();
    fs::create_dir_all(bad.dir()).unwrap();
    let bad_index = bad.dir().join("index.json");
    fs::write(&bad_index, b"{ not json").unwrap();

    let v = json_ok(&env, None, &["sessions"], None);
    assert_eq!(keys(&v), ["baselines", "sessions"]);
    let list = v["sessions"].as_array().unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["s-bad", "s-empty", "s-a", "s-b"],
        "no last change first (by id), then by last change"
    );
    for s in list {
        assert_eq!(
            keys(s),
            [
                "bytes",
                "entries",
                "id",
                "last_change",
                "problem",
                "workspaces"
            ]
        );
    }
    let problem = list[0]["problem"].as_str().unwrap();
    assert!(
        problem.contains(bad_index.to_str().unwrap()) && problem.contains("corrupt"),
        "{problem}"
    );
    assert_eq!(
        list[0],
        json!({ "id": "s-bad", "workspaces": [], "last_change": null, "entries": 0, "bytes": 0, "problem": problem })
    );
    assert_eq!(
        list[1],
        json!({ "id": "s-empty", "workspaces": [], "last_change": null, "entries": 0, "bytes": 0, "problem": null })
    );
    // Backups: "12345" and "123" (the later "x" backup of a.txt is 1 byte).
    assert_eq!(
        list[2],
        json!({ "id": "s-a", "workspaces": [ws], "last_change": last_a["entry"]["time"], "entries": 3, "bytes": 5 + 3 + 1, "problem": null })
    );
    assert_eq!(
        list[3],
        json!({ "id": "s-b", "workspaces": [ws], "last_change": last_b["entry"]["time"], "entries": 1, "bytes": 0, "problem": null })
    );
    check_time(&list[2]["last_change"], t0);
}

#[test]
fn prune_dry_run_reports_what_it_would_delete_and_deletes_nothing() {
    let env = Env::new();
    let ws = env.workspace();
    let store = env.store();
    // 21 sessions: the default keeps the 20 newest and any changed in 30 days.
    for i in 0..21 {
        let s = store.session(&format!("s{i:02}")).unwrap();
        fs::write(env.path(&format!("f{i}")), b"old0").unwrap();
        s.write(&ws, format!("f{i}"), &b"x"[..], "m").unwrap();
    }
    let set_mtime = |p: &Path, t: SystemTime| {
        fs::File::open(p).unwrap().set_modified(t).unwrap();
    };
    // s00 last changed in 2001: beyond both limits.
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let s00 = store.open_session("s00").unwrap();
    set_mtime(&s00.dir().join("index.json"), old);
    set_mtime(&s00.dir().join("journal.jsonl"), old);
    // s20 keeps a backup nothing names (a write whose contents never arrived),
    // two hours old.
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("the agent's pipe closed"))
        }
    }
    let s20 = store.session("s20").unwrap();
    fs::write(env.path("g"), b"gold").unwrap();
    let err = s20.write(&ws, "g", Broken, "m").unwrap_err();
    assert!(err.to_string().contains("the agent's pipe closed"), "{err}");
    let blob = s20.dir().join("blobs").join(sha256_hex(b"gold"));
    assert!(blob.is_file());
    set_mtime(&blob, SystemTime::now() - Duration::from_secs(7200));

    // A handle open in this process keeps its session in use, which a prune
    // never removes: let them go first.
    drop((s00, s20));
    let disk = (tree_digest(env.ws.path()), tree_digest(env.home.path()));
    let v = json_ok(&env, None, &["prune", "--dry-run"], None);
    assert_eq!(
        v,
        json!({
            "applied": false,
            "keep_sessions": 20,
            "keep_days": 30,
            "removed": [ { "id": "s00", "last_change": "2001-09-09T01:46:40Z", "bytes": 4, "rank": 21 } ],
            "spared": [],
            "kept": 20,
            "blobs_removed": 1,
            "blob_bytes": 4,
            "baselines_removed": 0,
            "baseline_bytes": 0,
        })
    );
    assert_eq!(
        (tree_digest(env.ws.path()), tree_digest(env.home.path())),
        disk,
        "a dry run deletes nothing"
    );
}
