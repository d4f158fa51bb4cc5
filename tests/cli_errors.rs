//! Every refusal and error of the command-line contract, as real processes: the
//! exit code (1 error, 2 usage, 3 refused), stderr holding exactly `error: ...`
//! (naming the file or session) and `hint: ...`, with `--json` exactly one JSON
//! error object, nothing on stdout, and nothing changed on disk: not the
//! workspace, not the store home, not the session's entries.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use turnback_store::Entry;

use crate::cli_json::{finish, one_json_line, run};
use crate::util::{Env, names_under, read, tree_digest};

/// What a failed command must leave alone.
#[derive(Debug, PartialEq, Eq)]
struct Disk {
    workspace: BTreeMap<PathBuf, String>,
    /// The store home without `locks/`: each exclusive lock writes its holder's
    /// name and pid into its lock file (docs/FORMAT.md); those files hold no data.
    home: BTreeMap<PathBuf, String>,
}

fn disk(env: &Env) -> Disk {
    Disk {
        workspace: tree_digest(env.ws.path()),
        home: home_digest(env),
    }
}

/// The home, without what a refused command may make there that holds no
/// one's changes: the per-file locks, and the summary records a lookup of
/// the session a command means writes (a cache of the indexes).
fn home_digest(env: &Env) -> BTreeMap<PathBuf, String> {
    tree_digest(env.home.path())
        .into_iter()
        .filter(|(p, _)| !p.starts_with("locks") && !p.starts_with("summary"))
        .collect()
}

/// The entries of an existing session, read through the store.
fn entries(env: &Env, id: &str) -> Vec<Entry> {
    env.store().open_session(id).unwrap().entries().unwrap()
}

/// Text that must never reach a user: Rust debug formatting, a panic.
fn assert_no_debug_output(stderr: &str, what: &str) {
    for bad in [
        "Os {",
        "Custom {",
        "kind: ",
        "panicked",
        "RUST_BACKTRACE",
        "Error {",
    ] {
        assert!(
            !stderr.contains(bad),
            "{what}: debug output ({bad:?}) on stderr:\n{stderr}"
        );
    }
}

/// What an error must look like.
struct Want<'a> {
    /// The exit code.
    code: i32,
    /// The JSON `kind`.
    kind: &'a str,
    /// Strings the message must contain: the file, the session, the id...
    names: &'a [&'a str],
}

/// Runs `args` as text and as `--json`; checks both errors against `want`, that
/// they agree, and that neither changed anything on disk. Returns the JSON
/// `error` object.
fn check_error(
    env: &Env,
    session: Option<&str>,
    args: &[&str],
    stdin: Option<&[u8]>,
    want: &Want,
) -> Value {
    let before = disk(env);
    let what = format!("turnback {}", args.join(" "));
    let text = run(env, session, args, stdin);
    assert_eq!(text.code(), want.code, "{what}: exit code\n{}", text.stderr);
    assert_eq!(text.stdout, "", "{what}: stdout");
    assert_no_debug_output(&text.stderr, &what);
    let lines: Vec<&str> = text.stderr.lines().collect();
    let [error, hint] = lines[..] else {
        panic!(
            "{what}: stderr is not one error and one hint line:\n{}",
            text.stderr
        );
    };
    let message = error
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("{what}: first line is not `error: ...`: {error}"));
    let hint = hint
        .strip_prefix("hint: ")
        .unwrap_or_else(|| panic!("{what}: second line is not `hint: ...`: {hint}"));
    assert!(
        !message.is_empty() && !hint.is_empty(),
        "{what}: {error} / {hint}"
    );
    for name in want.names {
        assert!(
            message.contains(name),
            "{what}: {message:?} does not name {name:?}"
        );
    }
    assert_eq!(disk(env), before, "{what}: something on disk changed");

    let mut json_args = vec!["--json"];
    json_args.extend_from_slice(args);
    let j = run(env, session, &json_args, stdin);
    assert_eq!(
        j.code(),
        want.code,
        "{what} --json: exit code\n{}",
        j.stderr
    );
    assert_eq!(j.stdout, "", "{what} --json: stdout");
    let v = one_json_line(&j.stderr, &format!("{what} --json: stderr"));
    let obj = v.as_object().expect("an object");
    assert_eq!(
        obj.keys().collect::<Vec<_>>(),
        ["error"],
        "{what} --json: {v}"
    );
    let e = &v["error"];
    let mut keys: Vec<&String> = e.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["conflicts", "exit_code", "hint", "kind", "message"],
        "{v}"
    );
    assert_eq!(e["kind"], want.kind, "{what} --json: {v}");
    assert_eq!(e["exit_code"], want.code, "{what} --json: {v}");
    assert_eq!(
        e["message"], message,
        "{what}: JSON and text messages differ"
    );
    assert_eq!(e["hint"], hint, "{what}: JSON and text hints differ");
    if want.kind == "refused" {
        assert!(e["conflicts"].is_array(), "{what} --json: {v}");
    } else {
        assert_eq!(e["conflicts"], Value::Null, "{what} --json: {v}");
    }
    assert_eq!(
        disk(env),
        before,
        "{what} --json: something on disk changed"
    );
    e.clone()
}

/// Writes `bytes` to `rel` in the workspace with mode 0o644.
fn put(env: &Env, rel: &str, bytes: &[u8]) {
    let p = env.path(rel);
    if let Some(dir) = p.parent() {
        fs::create_dir_all(dir).unwrap();
    }
    fs::write(&p, bytes).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
}

/// `turnback ARGS` through the binary, which must succeed.
fn ok(env: &Env, session: Option<&str>, args: &[&str], stdin: Option<&[u8]>) -> String {
    let r = run(env, session, args, stdin);
    assert_eq!(r.code(), 0, "turnback {}: {}", args.join(" "), r.stderr);
    r.stdout
}

/// The workspace root as entries record it.
fn canonical(env: &Env) -> String {
    fs::canonicalize(env.ws.path())
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// Session `s`: f.txt v1 → v2 (message m1), g.txt g1 → g2 (m2).
fn two_changes() -> Env {
    let env = Env::new();
    put(&env, "f.txt", b"v1\n");
    put(&env, "g.txt", b"g1\n");
    ok(
        &env,
        Some("s"),
        &["write", "f.txt", "-m", "m1"],
        Some(b"v2\n"),
    );
    ok(
        &env,
        Some("s"),
        &["write", "g.txt", "-m", "m2"],
        Some(b"g2\n"),
    );
    env
}

/// A refusal of `args` in session `s`: exit 3, the session's entries and every
/// file untouched, one conflict per file of `conflicts` (path, seq, reason).
fn check_refusal(env: &Env, args: &[&str], names: &[&str], conflicts: Value) {
    let entries_before = entries(env, "s");
    let e = check_error(
        env,
        Some("s"),
        args,
        None,
        &Want {
            code: 3,
            kind: "refused",
            names,
        },
    );
    assert_eq!(e["conflicts"], conflicts);
    assert_eq!(entries(env, "s"), entries_before, "entries changed");
}

fn conflict(env: &Env, path: &str, seq: u64, reason: &str, by: Value) -> Value {
    json!({ "workspace": canonical(env), "path": path, "seq": seq, "reason": reason, "changed_by": by })
}

#[test]
fn undo_refuses_a_file_changed_by_hand_until_forced() {
    let env = two_changes();
    put(&env, "g.txt", b"by hand\n");
    check_refusal(
        &env,
        &["undo"],
        &["g.txt", "\"s\"", "changed since"],
        json!([conflict(&env, "g.txt", 2, "changed-since", Value::Null)]),
    );
    assert_eq!(read(env.path("g.txt")), b"by hand\n");
    ok(&env, Some("s"), &["undo", "--force"], None);
    assert_eq!(read(env.path("g.txt")), b"g1\n");
}

#[test]
fn revert_refuses_a_file_changed_by_hand_until_forced() {
    let env = two_changes();
    put(&env, "f.txt", b"by hand\n");
    check_refusal(
        &env,
        &["revert", "f.txt"],
        &["f.txt", "\"s\"", "changed since"],
        json!([conflict(&env, "f.txt", 1, "changed-since", Value::Null)]),
    );
    ok(&env, Some("s"), &["revert", "f.txt", "--force"], None);
    assert_eq!(read(env.path("f.txt")), b"v1\n");
    assert_eq!(read(env.path("g.txt")), b"g2\n", "only the file asked for");
}

#[test]
fn rewind_refuses_if_one_file_changed_by_hand_and_touches_none() {
    let env = two_changes();
    put(&env, "f.txt", b"by hand\n");
    check_refusal(
        &env,
        &["rewind", "m1"],
        &["f.txt", "\"s\"", "changed since"],
        json!([conflict(&env, "f.txt", 1, "changed-since", Value::Null)]),
    );
    assert_eq!(
        read(env.path("g.txt")),
        b"g2\n",
        "g.txt was safe, but untouched"
    );
    ok(&env, Some("s"), &["rewind", "m1", "--force"], None);
    assert_eq!(read(env.path("f.txt")), b"v1\n");
    assert_eq!(read(env.path("g.txt")), b"g1\n");
}

#[test]
fn a_refusal_names_the_session_and_message_that_changed_the_file() {
    let env = two_changes();
    ok(
        &env,
        Some("theirs"),
        &["write", "f.txt", "-m", "their-call"],
        Some(b"theirs\n"),
    );
    let by = json!({ "session": "theirs", "message_id": "their-call", "seq": 1 });
    for args in [&["revert", "f.txt"][..], &["rewind", "m1"]] {
        check_refusal(
            &env,
            args,
            &["f.txt", "\"theirs\"", "\"their-call\""],
            json!([conflict(&env, "f.txt", 1, "changed-since", by.clone())]),
        );
    }
    assert_eq!(read(env.path("f.txt")), b"theirs\n");
    ok(&env, Some("s"), &["revert", "f.txt", "--force"], None);
    assert_eq!(read(env.path("f.txt")), b"v1\n");
}

#[test]
fn a_checkpoint_never_committed_refuses_until_forced() {
    let env = Env::new();
    put(&env, "c.txt", b"c1\n");
    assert_eq!(
        ok(&env, Some("s"), &["checkpoint", "c.txt", "-m", "m1"], None),
        "1\n"
    );
    put(&env, "c.txt", b"c2\n");
    for args in [&["undo"][..], &["revert", "c.txt"], &["rewind", "m1"]] {
        check_refusal(
            &env,
            args,
            &["c.txt", "\"s\"", "never committed"],
            json!([conflict(&env, "c.txt", 1, "never-committed", Value::Null)]),
        );
    }
    ok(&env, Some("s"), &["undo", "--force"], None);
    assert_eq!(read(env.path("c.txt")), b"c1\n");
    assert!(entries(&env, "s").is_empty());
}

#[test]
fn agent_commands_need_a_session() {
    let env = Env::new();
    put(&env, "f.txt", b"f\n");
    for args in [
        &["write", "f.txt"][..],
        &["rm", "f.txt"],
        &["checkpoint", "f.txt"],
        &["commit", "1"],
        &["rollback", "1"],
    ] {
        let e = check_error(
            &env,
            None,
            args,
            Some(b"new\n"),
            &Want {
                code: 2,
                kind: "usage",
                names: &["no session given"],
            },
        );
        let hint = e["hint"].as_str().unwrap();
        assert!(
            hint.contains("--session") && hint.contains("TURNBACK_SESSION"),
            "{hint}"
        );
    }
    assert!(
        names_under(env.home.path()).is_empty(),
        "the home stays empty"
    );
    assert_eq!(read(env.path("f.txt")), b"f\n");
}

#[test]
fn an_invalid_session_id_is_a_usage_error() {
    let env = two_changes();
    let long = "a".repeat(129);
    for id in ["bad/id", ".hidden", "..", "a b", "", long.as_str()] {
        let shown = format!("invalid session id {id:?}");
        for args in [
            &["write", "f.txt"][..],
            &["log"],
            &["undo"],
            &["revert", "f.txt"],
        ] {
            // An empty TURNBACK_SESSION counts as unset (below); an
            // empty --session is still refused.
            if id.is_empty() {
                continue;
            }
            // Through TURNBACK_SESSION, then through --session.
            check_error(
                &env,
                Some(id),
                args,
                Some(b"x"),
                &Want {
                    code: 2,
                    kind: "invalid-session-id",
                    names: &[&shown],
                },
            );
        }
        let flag = format!("--session={id}");
        check_error(
            &env,
            None,
            &[&flag, "checkpoint", "f.txt"],
            None,
            &Want {
                code: 2,
                kind: "invalid-session-id",
                names: &[&shown],
            },
        );
    }
    assert_eq!(read(env.path("f.txt")), b"v2\n");
    // An empty TURNBACK_SESSION is no session named: `log` finds the
    // newest one with changes here, as without the variable.
    let out = env.cmd(Some("")).arg("log").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("f.txt"),
        "{out:?}"
    );
}

#[test]
fn parse_errors_print_clap_usage_and_exit_2() {
    let env = two_changes();
    let before = disk(&env);
    for args in [
        &["--bogus", "log"][..],
        &["log", "--nope"],
        &["frobnicate"],
        &[],
        &["write"],
        &["rm"],
        &["checkpoint"],
        &["commit"],
        &["commit", "abc"],
        &["rollback", "-1"],
        &["revert"],
        &["undo", "extra"],
        &["--color", "sometimes", "log"],
        &["completions", "tcsh-9"],
    ] {
        let what = format!("turnback {}", args.join(" "));
        let r = run(&env, Some("s"), args, None);
        assert_eq!(r.code(), 2, "{what}\n{}", r.stderr);
        assert_eq!(r.stdout, "", "{what}");
        assert!(r.stderr.starts_with("error: "), "{what}:\n{}", r.stderr);
        assert!(
            r.stderr.contains("Usage: turnback") || r.stderr.contains("try '--help'"),
            "{what}: no usage:\n{}",
            r.stderr
        );
        assert_no_debug_output(&r.stderr, &what);
    }
    assert_eq!(disk(&env), before);
}

/// `rewind` with neither MESSAGE nor `--turn` can only ask on a terminal; in a
/// pipe (and with `--json`) it is a usage error that says what to pass.
#[test]
fn rewind_without_a_target_off_a_terminal_is_a_usage_error() {
    let env = two_changes();
    let e = check_error(
        &env,
        Some("s"),
        &["rewind"],
        None,
        &Want {
            code: 2,
            kind: "usage",
            names: &["rewind needs a MESSAGE or --turn N"],
        },
    );
    assert!(e["hint"].as_str().unwrap().contains("--turn N"), "{e}");
}

/// `--json` promises the error as one JSON object on stderr; an error clap finds
/// while parsing (an unknown flag, a missing argument) is printed as clap's text.
#[test]
fn with_json_a_parse_error_is_one_json_object_too() {
    let env = Env::new();
    for args in [
        &["--json", "--bogus", "log"][..],
        &["--json", "write"],
        &["--json", "commit", "abc"],
    ] {
        let what = format!("turnback {}", args.join(" "));
        let r = run(&env, Some("s"), args, None);
        assert_eq!(r.code(), 2, "{what}");
        assert_eq!(r.stdout, "", "{what}");
        let v = one_json_line(&r.stderr, &what);
        assert_eq!(v["error"]["kind"], "usage", "{what}: {v}");
        assert_eq!(v["error"]["exit_code"], 2, "{what}: {v}");
    }
}

#[test]
fn a_session_that_does_not_exist_is_an_error_and_is_not_created() {
    let env = two_changes();
    for args in [
        &["log"][..],
        &["log", "--all"],
        &["undo"],
        &["revert", "f.txt"],
        &["rewind", "m1"],
        &["diff"],
        &["diff", "f.txt"],
    ] {
        check_error(
            &env,
            Some("nosuch"),
            args,
            None,
            &Want {
                code: 1,
                kind: "session-not-found",
                names: &["\"nosuch\"", env.home.path().to_str().unwrap()],
            },
        );
    }
    assert!(!env.home.path().join("sessions/nosuch").exists());
}

#[test]
fn person_commands_with_no_session_in_the_workspace() {
    let env = Env::new();
    put(&env, "f.txt", b"f\n");
    let ws = canonical(&env);
    for args in [&["undo"][..], &["rewind", "m1"], &["log"], &["diff"]] {
        check_error(
            &env,
            None,
            args,
            None,
            &Want {
                code: 1,
                kind: "no-session",
                names: &["no session has changes in", &ws],
            },
        );
    }
}

#[test]
fn undo_with_nothing_left_to_undo() {
    let env = two_changes();
    ok(&env, Some("s"), &["undo"], None);
    ok(&env, Some("s"), &["undo"], None);
    // A session on disk with no entries (every session has its lock and live
    // files), private as turnback makes it.
    let empty = env.home.path().join("sessions/empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::set_permissions(&empty, fs::Permissions::from_mode(0o700)).unwrap();
    for name in ["lock", "live"] {
        std::fs::write(empty.join(name), b"").unwrap();
        std::fs::set_permissions(empty.join(name), fs::Permissions::from_mode(0o600)).unwrap();
    }
    for id in ["s", "empty"] {
        let names = format!("session {id:?} has nothing to undo");
        check_error(
            &env,
            Some(id),
            &["undo"],
            None,
            &Want {
                code: 1,
                kind: "nothing-to-undo",
                names: &[&names],
            },
        );
    }
}

#[test]
fn revert_of_a_file_no_session_changed() {
    let env = two_changes();
    put(&env, "other.txt", b"o\n");
    // No session named: none changed it.
    let e = check_error(
        &env,
        None,
        &["revert", "other.txt"],
        None,
        &Want {
            code: 1,
            kind: "no-change-to-file",
            names: &["no session has a change to", "other.txt"],
        },
    );
    // Named as typed, not as an absolute path; no git here: no `git restore`.
    assert!(
        !e["message"]
            .as_str()
            .unwrap()
            .contains(env.ws.path().to_str().unwrap())
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("never backed it up")
    );
    assert!(e["hint"].as_str().unwrap().contains("turnback log --all"));
    // A session named that did not change it: the same words, the file as
    // typed, the same hint.
    let e = check_error(
        &env,
        Some("s"),
        &["revert", "other.txt"],
        None,
        &Want {
            code: 1,
            kind: "no-change-to-file",
            names: &["session \"s\" has no change to other.txt here: turnback never backed it up"],
        },
    );
    assert!(
        e["hint"].as_str().unwrap().contains("turnback log --all"),
        "{e}"
    );
    // Nor a file that does not exist at all.
    check_error(
        &env,
        Some("s"),
        &["revert", "missing.txt"],
        None,
        &Want {
            code: 1,
            kind: "no-change-to-file",
            names: &["\"s\"", "missing.txt"],
        },
    );
}

#[test]
fn rewind_to_an_unknown_message() {
    let env = two_changes();
    check_error(
        &env,
        Some("s"),
        &["rewind", "no-such-call"],
        None,
        &Want {
            code: 1,
            kind: "message-not-found",
            names: &["\"s\"", "\"no-such-call\""],
        },
    );
}

#[test]
fn commit_and_rollback_of_an_unknown_entry() {
    let env = two_changes();
    for cmd in ["commit", "rollback"] {
        check_error(
            &env,
            Some("s"),
            &[cmd, "99"],
            None,
            &Want {
                code: 1,
                kind: "no-such-entry",
                names: &["\"s\"", "entry 99"],
            },
        );
    }
    // An entry that was undone is gone too.
    ok(&env, Some("s"), &["undo"], None);
    check_error(
        &env,
        Some("s"),
        &["commit", "2"],
        None,
        &Want {
            code: 1,
            kind: "no-such-entry",
            names: &["\"s\"", "entry 2"],
        },
    );
}

#[test]
fn commit_and_rollback_of_a_committed_entry() {
    let env = two_changes();
    put(&env, "c.txt", b"c1\n");
    ok(&env, Some("s"), &["checkpoint", "c.txt"], None);
    ok(&env, Some("s"), &["commit", "3"], None);
    for (cmd, seq) in [
        ("commit", "1"),
        ("rollback", "1"),
        ("commit", "3"),
        ("rollback", "3"),
    ] {
        let entry = format!("entry {seq}");
        check_error(
            &env,
            Some("s"),
            &[cmd, seq],
            None,
            &Want {
                code: 1,
                kind: "already-committed",
                names: &["\"s\"", &entry, "already committed"],
            },
        );
    }
}

#[test]
fn write_outside_the_workspace_is_refused_before_anything_is_written() {
    let env = two_changes();
    let outside = tempfile::tempdir().unwrap();
    let escape = format!(
        "../{}-escaped.txt",
        env.ws.path().file_name().unwrap().to_str().unwrap()
    );
    let absolute = outside.path().join("abs.txt");
    std::os::unix::fs::symlink(outside.path(), env.path("link")).unwrap();
    let ws = canonical(&env);
    for (args, name) in [
        (vec!["write", escape.as_str()], escape.as_str()),
        (
            vec!["write", absolute.to_str().unwrap()],
            absolute.to_str().unwrap(),
        ),
        (vec!["write", "link/via.txt"], "link/via.txt"),
        (vec!["checkpoint", escape.as_str()], escape.as_str()),
        (
            vec!["rm", absolute.to_str().unwrap()],
            absolute.to_str().unwrap(),
        ),
    ] {
        check_error(
            &env,
            Some("s"),
            &args,
            Some(b"escaped\n"),
            &Want {
                code: 1,
                kind: "outside-workspace",
                names: &[name, "outside the workspace", &ws],
            },
        );
    }
    assert!(!env.ws.path().parent().unwrap().join(&escape[3..]).exists());
    assert!(
        names_under(outside.path()).is_empty(),
        "nothing written outside"
    );
}

/// A session's first write that fails leaves no empty session behind.
#[test]
fn a_failed_first_write_creates_no_session() {
    let env = Env::new();
    let before = disk(&env);
    let r = run(&env, Some("fresh"), &["write", "../x"], Some(b"x"));
    assert_eq!(r.code(), 1, "{}", r.stderr);
    assert_eq!(
        disk(&env),
        before,
        "the store home changed: {:?}",
        names_under(env.home.path())
    );
}

/// [`disk`] for a workspace holding a fifo, which `tree_digest` would block on.
fn fifo_safe_digest(root: &Path) -> BTreeMap<PathBuf, String> {
    names_under(root)
        .into_iter()
        .map(|rel| {
            let p = root.join(&rel);
            let md = fs::symlink_metadata(&p).unwrap();
            let d = if md.file_type().is_fifo() {
                "fifo".to_owned()
            } else if md.is_dir() {
                "dir".to_owned()
            } else {
                format!("{:o} {:?}", md.permissions().mode(), fs::read(&p).unwrap())
            };
            (rel, d)
        })
        .collect()
}

#[test]
fn write_refuses_a_directory_and_a_fifo_without_hanging() {
    let env = two_changes();
    fs::create_dir(env.path("dir")).unwrap();
    put(&env, "dir/inside.txt", b"i\n");
    let status = Command::new("mkfifo")
        .arg(env.path("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let before = (fifo_safe_digest(env.ws.path()), home_digest(&env));
    for (args, kind) in [
        (&["write", "dir"][..], "directory"),
        (&["rm", "dir"], "directory"),
        (&["checkpoint", "dir"], "directory"),
        (&["write", "pipe"], "fifo"),
        (&["rm", "pipe"], "fifo"),
        (&["checkpoint", "pipe"], "fifo"),
    ] {
        let file = env.path(args[1]);
        let it_is = format!("(it is a {kind})");
        // `check_error` compares tree digests, which cannot read a fifo: compare
        // here instead, after each run (each `run` has a timeout).
        let what = args.join(" ");
        for json in [false, true] {
            let mut all = if json { vec!["--json"] } else { vec![] };
            all.extend_from_slice(args);
            let r = run(&env, Some("s"), &all, Some(b"new\n"));
            assert_eq!(r.code(), 1, "{what}: {}", r.stderr);
            assert_eq!(r.stdout, "", "{what}");
            assert_no_debug_output(&r.stderr, &what);
            let message = if json {
                let v = one_json_line(&r.stderr, &what);
                assert_eq!(v["error"]["kind"], "not-regular-file", "{v}");
                assert_eq!(v["error"]["exit_code"], 1, "{v}");
                assert_eq!(
                    v["error"]["hint"], "turnback protects regular files only",
                    "{v}"
                );
                v["error"]["message"].as_str().unwrap().to_owned()
            } else {
                let lines: Vec<&str> = r.stderr.lines().collect();
                assert_eq!(lines.len(), 2, "{what}: {}", r.stderr);
                assert_eq!(lines[1], "hint: turnback protects regular files only");
                lines[0].strip_prefix("error: ").unwrap().to_owned()
            };
            assert!(
                message.contains(file.to_str().unwrap()) && message.contains(&it_is),
                "{what}: {message}"
            );
            assert_eq!(
                (fifo_safe_digest(env.ws.path()), home_digest(&env)),
                before,
                "{what}: something on disk changed"
            );
        }
    }
}

/// Session `s` of [`two_changes`] with its index replaced by `bytes`.
fn damaged_index(bytes: &[u8]) -> (Env, PathBuf) {
    let env = two_changes();
    let index = env.home.path().join("sessions/s/index.json");
    assert!(index.is_file());
    fs::write(&index, bytes).unwrap();
    (env, index)
}

/// Every command that reads session `s`.
const READERS: &[&[&str]] = &[
    &["log"],
    &["log", "--all"],
    &["undo"],
    &["undo", "--dry-run"],
    &["revert", "f.txt"],
    &["rewind", "m1", "--force"],
    &["diff"],
    &["write", "f.txt"],
    &["write", "new/file.txt"],
    &["rm", "g.txt"],
    &["checkpoint", "f.txt"],
    &["commit", "1"],
    &["rollback", "1"],
];

#[test]
fn a_corrupt_index_is_left_as_it_is_and_the_hint_says_to_move_it_aside() {
    let (env, index) = damaged_index(b"{\"format\": 1, \"entries\": [tru");
    let shown = index.to_str().unwrap();
    for args in READERS {
        let e = check_error(
            &env,
            Some("s"),
            args,
            Some(b"new\n"),
            &Want {
                code: 1,
                kind: "corrupt-index",
                names: &["\"s\"", shown, "corrupt"],
            },
        );
        let hint = e["hint"].as_str().unwrap();
        assert!(hint.starts_with(&format!("move {shown} aside")), "{hint}");
    }
    assert_eq!(read(&index), b"{\"format\": 1, \"entries\": [tru");
}

#[test]
fn an_index_with_a_newer_format_is_left_as_it_is() {
    let bytes =
        br#"{"format": 99, "session": "s", "next_seq": 1, "entries": [], "from_the_future": true}"#;
    let (env, index) = damaged_index(bytes);
    for args in READERS {
        let e = check_error(
            &env,
            Some("s"),
            args,
            Some(b"new\n"),
            &Want {
                code: 1,
                kind: "newer-format",
                names: &["\"s\"", index.to_str().unwrap(), "format 99"],
            },
        );
        assert!(
            e["hint"].as_str().unwrap().contains("newer turnback"),
            "{e}"
        );
    }
    assert_eq!(read(&index), bytes);
}

#[test]
fn rm_of_a_missing_file() {
    let env = two_changes();
    let entries_before = entries(&env, "s");
    check_error(
        &env,
        Some("s"),
        &["rm", "missing.txt"],
        None,
        &Want {
            code: 1,
            kind: "file-not-found",
            names: &["missing.txt", "does not exist"],
        },
    );
    assert_eq!(entries(&env, "s"), entries_before, "no entry recorded");
}

/// `--json` promises one JSON object on stderr; the note naming the session a
/// person's command guessed must not come before it.
#[test]
fn with_json_stderr_is_only_the_error_even_when_the_session_is_guessed() {
    let env = two_changes();
    put(&env, "f.txt", b"by hand\n");
    for args in [
        &["--json", "revert", "f.txt"][..],
        &["--json", "rewind", "m1"],
    ] {
        let what = args.join(" ");
        let r = run(&env, None, args, None);
        assert_eq!(r.code(), 3, "{what}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{what}");
        let v = one_json_line(&r.stderr, &what);
        assert_eq!(v["error"]["kind"], "refused", "{v}");
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    let env = two_changes();
    // The reader is gone before the first byte is written; some output is
    // larger than a pipe's buffer too.
    let many = "line\n".repeat(2000);
    ok(
        &env,
        Some("s"),
        &["write", "big.txt"],
        Some(many.as_bytes()),
    );
    for args in [
        &["log"][..],
        &["--json", "log"],
        &["diff"],
        &["--json", "diff"],
        &["sessions"],
        &["undo", "--dry-run"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = env.cmd(Some("s"));
        cmd.args(args).stdout(Stdio::from(writer));
        let r = finish(cmd, None);
        let what = args.join(" ");
        assert_eq!(
            r.status.code(),
            Some(0),
            "{what}: {:?}\n{}",
            r.status,
            r.stderr
        );
        assert_eq!(r.stderr, "", "{what}: stderr");
    }
    assert_eq!(read(env.path("big.txt")), many.as_bytes());
}

/// Other I/O errors: a workspace that does not exist, a store home that is a file.
#[test]
fn io_errors_name_the_path_and_give_a_hint() {
    let env = two_changes();
    let elsewhere = tempfile::tempdir().unwrap();
    let missing = elsewhere.path().join("no-such-dir");
    let file_home = elsewhere.path().join("home-is-a-file");
    fs::write(&file_home, b"").unwrap();
    let (missing, file_home) = (missing.to_str().unwrap(), file_home.to_str().unwrap());
    for (args, name) in [
        (vec!["--workspace", missing, "write", "f.txt"], missing),
        (vec!["--workspace", missing, "diff"], missing),
        (vec!["--home", file_home, "write", "f.txt"], file_home),
        (vec!["--home", file_home, "sessions"], file_home),
    ] {
        check_error(
            &env,
            Some("s"),
            &args,
            Some(b"new\n"),
            &Want {
                code: 1,
                kind: "io",
                names: &[name],
            },
        );
    }
    assert_eq!(read(file_home), b"");
}

/// `turnback log | head`: the reader of the output has gone before the
/// command wrote. That ends the command quietly with exit code 0; any other
/// error writing the output (a full disk) is one line on stderr and exit
/// code 1. (It is `main` that decides so: the presentation library returns
/// the error, for an agent that embeds it to decide for itself.)
#[test]
fn a_closed_output_pipe_ends_quietly_and_another_write_error_is_reported() {
    let env = Env::new();
    for json in [false, true] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut c = env.cmd(None);
        c.arg("sessions").stdout(writer);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "json {json}: {stderr}");
        assert_eq!(stderr, "", "json {json}");

        let full = match fs::OpenOptions::new().write(true).open("/dev/full") {
            Ok(f) => f,
            Err(e) => {
                eprintln!("skipped the full-disk half: cannot open /dev/full: {e}");
                continue;
            }
        };
        let mut c = env.cmd(None);
        c.arg("sessions").stdout(full);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "json {json}: {stderr}");
        assert_eq!(
            stderr, "error: could not write the output: No space left on device (os error 28)\n",
            "json {json}"
        );
    }
}
