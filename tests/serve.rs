//! `turnback serve --stdio`, spawned for real and talked to over pipes: the
//! handshake, requests answered with the JSON of `--json` (compared with the
//! command line's own output), errors with their kinds and ids, bad lines,
//! checkpoints held across requests (their lock probed with `flock`), the end
//! of input, sessions served at the same time; and the protocol transcript of
//! `docs/JSON.md` and the Python client of `docs/INTEGRATIONS.md`, run as
//! written.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{Env, bin, read, run_ok, sha256_hex, skip, tree_digest};

/// How long a response may take before the test fails (a hang must fail).
const TIMEOUT: Duration = Duration::from_secs(30);

/// A running `turnback serve --stdio` and its pipes.
pub(crate) struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Served {
    /// `turnback serve --stdio` in `env`'s workspace (no session of its own).
    pub(crate) fn start(env: &Env) -> Served {
        Served::spawn(env.cmd(None).args(["serve", "--stdio"]))
    }

    /// Spawns `cmd` with its standard streams piped; its stdout is read line
    /// by line on a thread.
    pub(crate) fn spawn(cmd: &mut Command) -> Served {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Served {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    /// Sends one line as it is.
    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request.
    pub(crate) fn send(&mut self, request: &Value) {
        self.send_line(&request.to_string());
    }

    /// The next line of standard output, which must be one JSON object.
    pub(crate) fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(TIMEOUT)
            .expect("a response line in time");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v.is_object(), "{line}");
        v
    }

    /// Sends a request and returns its response, which must carry its id.
    pub(crate) fn call(&mut self, request: Value) -> Value {
        self.send(&request);
        let r = self.recv();
        assert_eq!(r["id"], request["id"], "{r}");
        r
    }

    /// A request's `result`, which must be there (no error).
    pub(crate) fn ok(&mut self, request: Value) -> Value {
        let r = self.call(request.clone());
        assert!(r.get("error").is_none(), "{request} -> {r}");
        r["result"].clone()
    }

    /// A request's `error`, which must be there.
    pub(crate) fn err(&mut self, request: Value) -> Value {
        let r = self.call(request.clone());
        assert!(r.get("result").is_none(), "{request} -> {r}");
        r["error"].clone()
    }

    /// Closes standard input; the server must exit 0 with nothing more on
    /// stdout and nothing on stderr.
    pub(crate) fn close(mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not end at the end of its input");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(status.success(), "{status:?}: {stderr}");
        assert_eq!(stderr, "");
        assert!(self.lines.recv().is_err(), "more output after the end");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The one JSON line a `turnback --json ARGS` run prints on stdout.
fn cli_json(env: &Env, session: &str, args: &[&str]) -> Value {
    let out = env
        .cmd(Some(session))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one JSON error a failing `turnback --json ARGS` run prints on stderr.
fn cli_error(env: &Env, session: &str, args: &[&str]) -> Value {
    let out = env
        .cmd(Some(session))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let v: Value = serde_json::from_slice(&out.stderr).unwrap();
    v["error"].clone()
}

#[test]
fn hello_answers_the_protocol_the_version_and_the_ops() {
    let env = Env::new();
    let mut s = Served::start(&env);
    let hello = s.ok(json!({"id": "h", "op": "hello", "protocol": 1}));
    assert_eq!(hello["protocol"], 1);
    assert_eq!(hello["turnback"], env!("CARGO_PKG_VERSION"));
    let ops: Vec<&str> = hello["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    for op in [
        "hello",
        "write",
        "rm",
        "mv",
        "checkpoint",
        "commit",
        "rollback",
        "undo",
    ] {
        assert!(ops.contains(&op), "{op} not in {ops:?}");
    }
    assert!(!ops.contains(&"serve"), "{ops:?}");
    // A client of another protocol is told, and the server goes on.
    let e = s.err(json!({"id": 2, "op": "hello", "protocol": 2}));
    assert_eq!(e["kind"], "usage");
    assert_eq!(e["exit_code"], 2);
    assert!(e["message"].as_str().unwrap().contains("protocol 1"), "{e}");
    s.ok(json!({"id": 3, "op": "hello"}));
    s.close();
}

/// Every op `hello` lists is answered, none brings the server down (a command
/// that needs no store, as `doctor`, runs as a process runs it), and `hook`,
/// which reads an agent's event on its own standard input, is no op.
#[test]
fn every_op_hello_lists_is_answered_and_hook_is_not_one() {
    let env = Env::new();
    let mut s = Served::start(&env);
    let hello = s.ok(json!({"id": 0, "op": "hello"}));
    let ops: Vec<String> = hello["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_owned())
        .collect();
    assert!(!ops.iter().any(|o| o == "hook" || o == "run"), "{ops:?}");
    let e = s.err(json!({"id": "r", "op": "run", "args": {"cmd": ["true"]}}));
    assert_eq!(e["kind"], "usage", "{e}");
    let e = s.err(json!({"id": 1, "op": "hook", "args": {"agent": "claude-code"}}));
    assert_eq!(e["kind"], "usage", "{e}");
    let doctor = s.ok(json!({"id": 2, "op": "doctor"}));
    assert!(doctor["store"].is_object(), "{doctor}");
    for (i, op) in ops.iter().enumerate() {
        // Each answers with a result or an error object, and the server
        // still answers the next line.
        let r = s.call(json!({"id": 10 + i, "op": op}));
        assert!(
            r.get("result").is_some() || r.get("error").is_some(),
            "{op}: {r}"
        );
    }
    s.ok(json!({"id": "last", "op": "hello"}));
    s.close();
}

#[test]
fn requests_answer_what_the_command_line_prints_with_json() {
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "old\n").unwrap();
    let mut s = Served::start(&env);
    let w = s.ok(json!({"id": 1, "op": "write", "session": "A",
        "args": {"file": "a.txt", "message": "m1"}, "content": "new\n"}));
    assert_eq!(read(env.path("a.txt")), b"new\n");
    assert_eq!(w["session"], "A");
    assert_eq!(w["entry"]["seq"], 1);
    assert_eq!(w["entry"]["after"]["sha256"], sha256_hex(b"new\n"));
    // Bytes that are not UTF-8, in base64; flags by their names, `-` or `_`.
    let bytes = [0xff_u8, 0, 1, 2];
    let w2 = s.ok(json!({"id": 2, "op": "write", "session": "A",
        "args": {"file": "b.bin", "message": "m2", "expect-size": 4},
        "content_base64": "/wABAg=="}));
    assert_eq!(read(env.path("b.bin")), bytes);
    assert_eq!(w2["entry"]["after"]["size"], 4);
    // Every read-only command: the same JSON as the command line's.
    for (op, args, cli) in [
        ("log", json!({}), vec!["log"]),
        ("diff", json!({}), vec!["diff"]),
        (
            "diff",
            json!({"file": "a.txt", "stat": true}),
            vec!["diff", "a.txt", "--stat"],
        ),
        ("undo", json!({"dry_run": true}), vec!["undo", "--dry-run"]),
        (
            "rewind",
            json!({"message": "m1", "dry-run": true}),
            vec!["rewind", "m1", "--dry-run"],
        ),
    ] {
        let served = s.ok(json!({"id": op, "op": op, "session": "A", "args": args}));
        assert_eq!(served, cli_json(&env, "A", &cli), "{op} {args}");
    }
    let sessions = s.ok(json!({"id": 9, "op": "sessions"}));
    assert_eq!(sessions["sessions"][0]["id"], "A", "{sessions}");
    // A change, then the person's undo through the server.
    let before = tree_digest(env.ws.path());
    let undo = s.ok(json!({"id": 10, "op": "undo", "session": "A"}));
    assert_eq!(undo["applied"], true);
    assert_eq!(undo["files"][0]["path"], "b.bin");
    assert!(!env.path("b.bin").exists());
    assert_ne!(tree_digest(env.ws.path()), before);
    let redo = s.ok(json!({"id": 11, "op": "redo", "session": "A"}));
    assert_eq!(redo["applied"], true);
    assert_eq!(read(env.path("b.bin")), bytes);
    // A text-only command answers its text.
    let man = s.ok(json!({"id": 12, "op": "completions", "args": {"shell": "bash"}}));
    assert!(man["text"].as_str().unwrap().contains("turnback"), "{man}");
    s.close();
}

#[test]
fn errors_are_the_command_lines_objects_and_nothing_is_touched() {
    let env = Env::new();
    std::fs::write(env.path("NOTES.md"), "old\n").unwrap();
    let mut s = Served::start(&env);
    s.ok(json!({"id": 1, "op": "write", "session": "A",
        "args": {"file": "NOTES.md", "message": "m"}, "content": "mine\n"}));
    // Someone else changes the file: the undo is refused, nothing touched.
    std::fs::write(env.path("NOTES.md"), "theirs\n").unwrap();
    let before = tree_digest(env.ws.path());
    let e = s.err(json!({"id": 2, "op": "undo", "session": "A"}));
    assert_eq!(e["kind"], "refused");
    assert_eq!(e["exit_code"], 3);
    assert_eq!(e["conflicts"][0]["path"], "NOTES.md");
    assert_eq!(tree_digest(env.ws.path()), before);
    assert_eq!(e, cli_error(&env, "A", &["undo"]));
    // --force, given as a flag of the request.
    let forced = s.ok(json!({"id": 3, "op": "undo", "session": "A", "args": {"force": true}}));
    assert_eq!(forced["applied"], true);
    assert_eq!(read(env.path("NOTES.md")), b"old\n");

    // Usage errors, with the request's id, and the server goes on.
    let no_session = s.err(json!({"id": 4, "op": "write", "args": {"file": "x"}, "content": ""}));
    assert_eq!(no_session["kind"], "usage");
    assert_eq!(no_session["message"], "no session given");
    assert!(!env.path("x").exists());
    for (id, request, says) in [
        (
            5,
            json!({"op": "write", "session": "A", "args": {"file": "x"}}),
            "new contents",
        ),
        (
            6,
            json!({"op": "write", "session": "A", "args": {"file": "x", "bogus": 1}, "content": ""}),
            "bogus",
        ),
        (
            7,
            json!({"op": "undo", "session": "A", "args": {"dry_run": "yes"}}),
            "true or false",
        ),
        (8, json!({"op": "frobnicate"}), "frobnicate"),
        (9, json!({"op": "serve"}), "serve"),
        (10, json!({"op": "undo", "sesion": "A"}), "sesion"),
        (
            11,
            json!({"op": "write", "session": "A", "args": {"file": "x"}, "content": "a", "content_base64": "YQ=="}),
            "both",
        ),
        (
            12,
            json!({"op": "write", "session": "A", "args": {"file": "x"}, "content_base64": "!!"}),
            "content_base64",
        ),
        (13, json!({"op": "rewind", "session": "A"}), "MESSAGE"),
        (14, json!({"op": "undo", "session": "../etc"}), ""),
    ] {
        let mut request = request;
        request["id"] = id.into();
        let e = s.err(request.clone());
        let kind = if id == 14 {
            "invalid-session-id"
        } else {
            "usage"
        };
        assert_eq!(e["kind"], kind, "{request} -> {e}");
        assert_eq!(e["exit_code"], 2, "{request} -> {e}");
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{request} -> {e}"
        );
    }
    assert!(!env.path("x").exists());
    // A line that is not a request: an error with a null id (or its own).
    for line in ["not json", "[1, 2]", "{\"id\": 7}", "\u{1}\u{2}"] {
        s.send_line(line);
        let r = s.recv();
        assert_eq!(r["error"]["kind"], "usage", "{line} -> {r}");
        let id = if line.contains("\"id\"") {
            json!(7)
        } else {
            Value::Null
        };
        assert_eq!(r["id"], id, "{line} -> {r}");
    }
    // Bytes that are not UTF-8 on a line are a bad line too.
    s.stdin.as_mut().unwrap().write_all(b"\xff\xfe\n").unwrap();
    assert_eq!(s.recv()["error"]["kind"], "usage");
    s.ok(json!({"id": "still", "op": "log", "session": "A"}));
    s.close();
}

/// The lock file of `file` (absolute, real) in `home`: `locks/<sha256>`
/// (docs/FORMAT.md).
fn lock_file(home: &Path, file: &Path) -> PathBuf {
    home.join("locks")
        .join(sha256_hex(file.as_os_str().as_encoded_bytes()))
}

/// True when someone holds the lock of `file`: a non-blocking `flock` fails.
fn locked(home: &Path, file: &Path) -> bool {
    use rustix::fs::{FlockOperation, flock};
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_file(home, file))
        .unwrap();
    match flock(&f, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => false,
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => true,
        Err(e) => panic!("flock: {e}"),
    }
}

#[test]
fn a_checkpoint_over_serve_holds_its_lock_until_its_commit() {
    let env = Env::new();
    let file = std::fs::canonicalize(env.ws.path()).unwrap().join("a.txt");
    std::fs::write(&file, "old\n").unwrap();
    let mut s = Served::start(&env);
    let cp = s.ok(json!({"id": 1, "op": "checkpoint", "session": "A",
        "args": {"file": "a.txt", "message": "m"}}));
    assert_eq!(cp["entry"]["seq"], 1);
    assert_eq!(cp["entry"]["after"], Value::Null);
    assert!(
        locked(env.home.path(), &file),
        "the checkpoint's lock is not held"
    );
    // The agent writes the file itself, then commits.
    std::fs::write(&file, "new\n").unwrap();
    // The preview of a rollback leaves the file and the lock as they are.
    let preview = s.ok(json!({"id": 2, "op": "rollback", "session": "A",
        "args": {"id": 1, "dry_run": true}}));
    assert_eq!(preview["applied"], false);
    assert_eq!(preview["files"][0]["path"], "a.txt");
    assert_eq!(read(&file), b"new\n");
    assert!(locked(env.home.path(), &file));
    let c = s.ok(json!({"id": 3, "op": "commit", "session": "A", "args": {"id": 1}}));
    assert_eq!(c["entry"]["after"]["sha256"], sha256_hex(b"new\n"));
    assert!(
        !locked(env.home.path(), &file),
        "the lock outlived the commit"
    );
    let again = s.err(json!({"id": 4, "op": "commit", "session": "A", "args": {"id": 1}}));
    assert_eq!(again["kind"], "already-committed");

    // A second checkpoint, rolled back: the file is back, the lock free.
    let cp = s.ok(json!({"id": 5, "op": "checkpoint", "session": "A",
        "args": {"file": "a.txt", "message": "m2"}}));
    assert_eq!(cp["entry"]["seq"], 2);
    std::fs::write(&file, "half\n").unwrap();
    assert!(locked(env.home.path(), &file));
    let rb = s.ok(json!({"id": 6, "op": "rollback", "session": "A", "args": {"id": 2}}));
    assert_eq!(
        rb,
        json!({"session": "A", "rolled_back": 2, "path": "a.txt"})
    );
    assert_eq!(read(&file), b"new\n");
    assert!(!locked(env.home.path(), &file));
    s.close();
}

#[test]
fn the_end_of_input_drops_held_checkpoints_and_leaves_them_uncommitted() {
    let env = Env::new();
    let file = std::fs::canonicalize(env.ws.path()).unwrap().join("a.txt");
    std::fs::write(&file, "old\n").unwrap();
    let mut s = Served::start(&env);
    s.ok(json!({"id": 1, "op": "checkpoint", "session": "A", "args": {"file": "a.txt"}}));
    assert!(locked(env.home.path(), &file));
    std::fs::write(&file, "new\n").unwrap();
    s.close();
    assert!(
        !locked(env.home.path(), &file),
        "the lock outlived the server"
    );
    let log = cli_json(&env, "A", &["log"]);
    assert_eq!(log["entries"][0]["after"], Value::Null, "{log}");
    // As after a process that took a checkpoint and exited: commit by number.
    let c = cli_json(&env, "A", &["commit", "1"]);
    assert_eq!(c["entry"]["after"]["sha256"], sha256_hex(b"new\n"));
}

#[test]
fn sessions_are_served_at_the_same_time_and_each_in_order() {
    let env = Env::new();
    let file = std::fs::canonicalize(env.ws.path())
        .unwrap()
        .join("slow.txt");
    std::fs::write(&file, "old\n").unwrap();
    let mut s = Served::start(&env);
    // A first write makes the store's `locks/`.
    s.ok(
        json!({"id": 0, "op": "write", "session": "B", "args": {"file": "b.txt"}, "content": "b0"}),
    );
    // The test holds slow.txt's lock, as another writer would: A waits.
    let holder = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_file(env.home.path(), &file))
        .unwrap();
    rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();
    s.send(&json!({"id": "a1", "op": "write", "session": "A", "args": {"file": "slow.txt"}, "content": "a1"}));
    s.send(&json!({"id": "a2", "op": "write", "session": "A", "args": {"file": "slow.txt"}, "content": "a2"}));
    s.send(&json!({"id": "b1", "op": "write", "session": "B", "args": {"file": "b.txt"}, "content": "b1"}));
    let first = s.recv();
    assert_eq!(first["id"], "b1", "B waited for A: {first}");
    assert_eq!(read(env.path("b.txt")), b"b1");
    assert_eq!(read(&file), b"old\n");
    drop(holder);
    let (a1, a2) = (s.recv(), s.recv());
    assert_eq!(
        (a1["id"].as_str(), a2["id"].as_str()),
        (Some("a1"), Some("a2"))
    );
    assert_eq!(a1["result"]["entry"]["seq"], 1, "{a1}");
    assert_eq!(a2["result"]["entry"]["seq"], 2, "{a2}");
    assert_eq!(read(&file), b"a2");
    s.close();
}

/// A request that waits for a lock a later line releases: while it waits,
/// the server goes on reading, so the line that releases it runs (one
/// session's checkpoint held, another's write of the same file, then the
/// checkpoint's commit).
#[test]
fn a_request_waiting_for_a_later_lines_commit_does_not_stop_the_input() {
    let env = Env::new();
    let file = std::fs::canonicalize(env.ws.path()).unwrap().join("a.txt");
    std::fs::write(&file, "old\n").unwrap();
    let mut s = Served::start(&env);
    s.ok(json!({"id": 1, "op": "checkpoint", "session": "A", "args": {"file": "a.txt"}}));
    std::fs::write(&file, "by A\n").unwrap();
    s.send(&json!({"id": "b", "op": "write", "session": "B", "args": {"file": "a.txt"}, "content": "by B\n"}));
    // B's write is waiting for A's lock; A's commit comes after it.
    s.send(&json!({"id": "a", "op": "commit", "session": "A", "args": {"id": 1}}));
    let (first, second) = (s.recv(), s.recv());
    assert_eq!(
        first["id"], "a",
        "the commit was not read while B waited: {first}"
    );
    assert_eq!(
        first["result"]["entry"]["after"]["sha256"],
        sha256_hex(b"by A\n"),
        "{first}"
    );
    assert_eq!(second["id"], "b", "{second}");
    assert_eq!(
        second["result"]["entry"]["before"]["sha256"],
        sha256_hex(b"by A\n"),
        "{second}"
    );
    assert_eq!(read(&file), b"by B\n");
    s.close();
}

/// The server reads the settings as a command line does (here the entry cap
/// and retention, from the environment), and prunes by itself after a change
/// once the store's day is up, however long it has been running.
#[test]
fn the_server_obeys_the_settings_and_prunes_by_itself() {
    let env = Env::new();
    // A session another process made and closed: the first change starts
    // the store's clock.
    let mut c = env.cmd(Some("old"));
    c.args(["write", "old.txt"]);
    run_ok(c, b"old\n", "write");
    let stamp = env.home.path().join("pruned-at");
    assert!(stamp.is_file(), "the first change starts the clock");
    let mut cmd = env.cmd(None);
    cmd.args(["serve", "--stdio"])
        .env("TURNBACK_MAX_ENTRIES", "2")
        .env("TURNBACK_KEEP_SESSIONS", "1")
        .env("TURNBACK_KEEP_DAYS", "0");
    let mut s = Served::spawn(&mut cmd);
    for i in 0..3 {
        s.ok(json!({"id": i, "op": "write", "session": "B",
            "args": {"file": "b.txt"}, "content": format!("b{i}")}));
    }
    let log = s.ok(json!({"id": "log", "op": "log", "session": "B"}));
    assert_eq!(
        log["entries"].as_array().map(Vec::len),
        Some(2),
        "the cap of 2 entries: {log}"
    );
    assert!(
        env.home.path().join("sessions/old").is_dir(),
        "pruned before its day"
    );
    // A day later, the same server's next change prunes.
    let t = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    File::open(&stamp).unwrap().set_modified(t).unwrap();
    s.ok(
        json!({"id": 9, "op": "write", "session": "B", "args": {"file": "b.txt"}, "content": "b9"}),
    );
    assert!(
        !env.home.path().join("sessions/old").exists(),
        "the server did not prune by itself"
    );
    assert!(
        env.home.path().join("sessions/B").is_dir(),
        "it pruned its own session"
    );
    s.close();
}

/// The lines of the fenced block after the line that starts with `marker`.
fn fenced_after(doc: &str, marker: &str) -> String {
    let (_, rest) = doc
        .split_once(marker)
        .unwrap_or_else(|| panic!("no {marker:?}"));
    let (_, rest) = rest.split_once("```").expect("a fenced block");
    let (_, rest) = rest.split_once('\n').unwrap();
    let (block, _) = rest.split_once("```").expect("the block's end");
    block.to_owned()
}

/// Same keys at every level and the same JSON types; `id`, `kind`, `seq`,
/// `path`, `session`, `applied` and `protocol` the same values.
fn same_shape(doc: &Value, real: &Value, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    match (doc, real) {
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<_>, Vec<_>) = (a.keys().collect(), b.keys().collect());
            if ka != kb {
                out.push(format!("{at}: keys {ka:?} vs {kb:?}"));
                return out;
            }
            for (k, v) in a {
                let here = format!("{at}.{k}");
                let compared = [
                    "id", "kind", "seq", "path", "session", "applied", "protocol",
                ];
                if compared.contains(&k.as_str()) && v != &b[k] {
                    out.push(format!("{here}: {v} vs {}", b[k]));
                }
                out.extend(same_shape(v, &b[k], &here));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                out.extend(same_shape(x, y, &format!("{at}[{i}]")));
            }
        }
        (a, b) => {
            let kind = |v: &Value| std::mem::discriminant(v);
            if kind(a) != kind(b) || (a.is_array() && a != b) {
                out.push(format!("{at}: {a} vs {b}"));
            }
        }
    }
    out
}

/// The transcript of `docs/JSON.md` ("serve --stdio"): each `→` line sent
/// to a real server in the situation it describes (a.txt holding `old`),
/// each `←` line compared by shape with what came back.
#[test]
fn the_transcript_of_json_md_is_what_the_server_says() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/JSON.md"))
        .unwrap();
    let transcript = fenced_after(&doc, "<!-- serve transcript -->");
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "old\n").unwrap();
    let mut s = Served::start(&env);
    let mut exchanged = 0;
    for line in transcript.lines() {
        if let Some(req) = line.strip_prefix("→ ") {
            s.send_line(req);
        } else if let Some(resp) = line.strip_prefix("← ") {
            let doc: Value = serde_json::from_str(resp).unwrap_or_else(|e| panic!("{e}: {resp}"));
            let real = s.recv();
            let differs = same_shape(&doc, &real, "");
            assert!(differs.is_empty(), "{resp}\nreal: {real}\n{differs:#?}");
            exchanged += 1;
        }
    }
    assert!(exchanged >= 5, "the transcript has {exchanged} responses");
    s.close();
}

/// The Python client of `docs/INTEGRATIONS.md`, run as written with the
/// built binary: it writes, lists and undoes through the server.
#[test]
fn the_python_client_of_integrations_md_runs() {
    if Command::new("python3").arg("--version").output().is_err() {
        skip(
            "the_python_client_of_integrations_md_runs",
            "python3 is not installed",
        );
        return;
    }
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/INTEGRATIONS.md"))
            .unwrap();
    let (_, section) = doc
        .split_once("## serve --stdio")
        .expect("a serve --stdio section");
    let client = fenced_after(section, "<!-- python client -->");
    let env = Env::new();
    std::fs::write(env.path("notes.txt"), "old\n").unwrap();
    let script = env.home.path().join("client.py");
    std::fs::write(&script, client).unwrap();
    let out = env
        .command("python3", None)
        .arg(&script)
        .env("TURNBACK", bin())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The client wrote notes.txt, then undid it: back as it was, and its
    // output says what each step did.
    assert_eq!(read(env.path("notes.txt")), b"old\n");
    let lines: Vec<&str> = stdout.lines().collect();
    let version = format!("turnback {} speaking protocol 1", env!("CARGO_PKG_VERSION"));
    assert_eq!(lines.len(), 4, "{stdout}");
    assert_eq!(lines[0], version);
    assert_eq!(lines[1], "wrote notes.txt as entry 1");
    assert!(lines[2].starts_with("refused - "), "{stdout}");
    assert_eq!(lines[3], "undid ['notes.txt']");
    // The undo took the entry back (redo can put it back).
    let log = cli_json(&env, "agent-1", &["log"]);
    assert_eq!(log["entries"], json!([]), "{log}");
    let redo = cli_json(&env, "agent-1", &["redo", "--dry-run"]);
    assert_eq!(redo["files"][0]["path"], "notes.txt", "{redo}");
}

#[test]
fn requests_sent_before_the_end_of_input_are_all_answered() {
    let env = Env::new();
    let mut s = Served::start(&env);
    for i in 1..=3 {
        s.send(
            &json!({"id": i, "op": "write", "session": format!("S{}", i % 2),
            "args": {"file": format!("f{i}.txt")}, "content": format!("{i}")}),
        );
    }
    // The input ends at once; the server answers what it was given, then ends.
    drop(s.stdin.take());
    let mut ids: Vec<i64> = (0..3).map(|_| s.recv()["id"].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3]);
    for i in 1..=3 {
        assert_eq!(
            read(env.path(&format!("f{i}.txt"))),
            format!("{i}").as_bytes()
        );
    }
    s.close();
}

#[test]
fn a_server_killed_while_it_holds_a_checkpoint_leaves_the_lock_free() {
    let env = Env::new();
    let file = std::fs::canonicalize(env.ws.path()).unwrap().join("a.txt");
    std::fs::write(&file, "old\n").unwrap();
    let mut s = Served::start(&env);
    s.ok(json!({"id": 1, "op": "checkpoint", "session": "A", "args": {"file": "a.txt"}}));
    assert!(locked(env.home.path(), &file));
    std::fs::write(&file, "half\n").unwrap();
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    assert!(
        !locked(env.home.path(), &file),
        "the kernel keeps a dead server's lock"
    );
    // The entry is open, as the checkpoint left it: rolled back by number.
    let rb = cli_json(&env, "A", &["rollback", "1"]);
    assert_eq!(rb["rolled_back"], 1);
    assert_eq!(read(&file), b"old\n");
}

#[test]
fn the_server_writes_no_note_on_stderr() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    // A store an older turnback left readable by others.
    std::fs::set_permissions(env.home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut s = Served::start(&env);
    s.ok(
        json!({"id": 1, "op": "write", "session": "A", "args": {"file": "a.txt"}, "content": "a"}),
    );
    s.ok(json!({"id": 2, "op": "log", "session": "A"}));
    // A person's command without a session: the command line says on stderr
    // which session it used; the server does not.
    let log = s.ok(json!({"id": 3, "op": "log"}));
    assert_eq!(log["session"], "A");
    let mode = std::fs::metadata(env.home.path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
    // `close` checks that stderr stayed empty.
    s.close();
}

#[test]
fn the_servers_own_session_and_workspace_are_the_requests_defaults() {
    let env = Env::new();
    let other = tempfile::tempdir().unwrap();
    let ws = other.path().to_str().unwrap();
    let mut s = Served::spawn(env.cmd(None).args([
        "serve",
        "--stdio",
        "--session",
        "D",
        "--workspace",
        ws,
    ]));
    let w = s.ok(json!({"id": 1, "op": "write", "args": {"file": other.path().join("x.txt").to_str().unwrap()}, "content": "x"}));
    assert_eq!(w["session"], "D");
    assert_eq!(w["entry"]["path"], "x.txt");
    assert_eq!(read(other.path().join("x.txt")), b"x");
    // A request's own session wins.
    let y = other.path().join("y.txt");
    let w = s.ok(json!({"id": 2, "op": "write", "session": "E",
        "args": {"file": y.to_str().unwrap()}, "content": "y"}));
    assert_eq!(w["session"], "E");
    // FILE is relative to the server's directory, as on the command line:
    // outside the server's workspace here.
    let e = s.err(json!({"id": 3, "op": "write", "args": {"file": "z.txt"}, "content": "z"}));
    assert_eq!(e["kind"], "outside-workspace");
    assert!(!env.path("z.txt").exists());
    s.close();
}
