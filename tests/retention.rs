//! A year of daily use (issue 16): the settings a user can see (`turnback
//! config`), retention (pruning by itself, never a session a live process
//! has open), per-session caps that evict the oldest entries and remember
//! them, and collecting what no entry needs. Real processes throughout.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::util::{Env, run_with_input};

// ---------------------------------------------------------------------------
// Helpers

/// `turnback ARGS` in `env`'s workspace (as `session` when given), with
/// `stdin` as its input.
fn tb(env: &Env, session: Option<&str>, args: &[&str], stdin: &[u8]) -> Output {
    let mut c = env.cmd(session);
    c.args(args);
    run_with_input(c, stdin)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `turnback --json ARGS`, which must succeed: its one JSON object.
fn json_ok(env: &Env, session: Option<&str>, args: &[&str], stdin: &[u8]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = tb(env, session, &all, stdin);
    assert!(
        out.status.success(),
        "turnback {}: {}",
        all.join(" "),
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// `turnback --json ARGS`, which must fail with `code`: its error object.
fn json_err(env: &Env, session: Option<&str>, args: &[&str], code: i32) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = tb(env, session, &all, b"");
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stderr).expect("one JSON error object");
    v["error"].clone()
}

fn write_config(env: &Env, text: &str) {
    let path = env.config_file();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The row of `key` in `turnback config --json`.
fn setting<'v>(config: &'v Value, key: &str) -> &'v Value {
    config["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {config}"))
}

/// Makes the session directory `dir` look last changed `days` ago.
fn age(dir: &Path, days: u64) {
    let t = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
    for p in [dir.join("index.json"), dir.join("journal.jsonl")] {
        if let Ok(f) = std::fs::File::open(&p) {
            f.set_modified(t).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------
// Settings

#[test]
fn config_shows_each_setting_and_where_it_came_from() {
    let env = Env::new();
    let v = json_ok(&env, None, &["config"], b"");
    assert_eq!(v["config_file"], env.config_file().to_str().unwrap());
    assert_eq!(v["config_file_exists"], false);
    for (key, value) in [
        ("keep_sessions", 20u64),
        ("keep_days", 30),
        ("max_entries", 2000),
        ("max_bytes", 1 << 30),
    ] {
        let s = setting(&v, key);
        assert_eq!(
            (s["value"].as_u64(), &s["source"]),
            (Some(value), &"default".into())
        );
    }
    let s = setting(&v, "compress_backups");
    assert_eq!(
        (s["value"].as_bool(), &s["source"]),
        (Some(true), &"default".into())
    );
    write_config(&env, "# retention\nkeep_days = 7\n\nmax_bytes = \"500M\"\n");
    let mut c = env.cmd(None);
    c.args(["--json", "config"])
        .env("TURNBACK_MAX_ENTRIES", "50")
        .env("TURNBACK_MAX_BYTES", "2G");
    let out = run_with_input(c, b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["config_file_exists"], true);
    let days = setting(&v, "keep_days");
    assert_eq!(
        (&days["value"], &days["source"], &days["line"]),
        (&7.into(), &"file".into(), &2.into())
    );
    assert_eq!(days["file"], env.config_file().to_str().unwrap());
    let entries = setting(&v, "max_entries");
    assert_eq!(
        (&entries["value"], &entries["source"]),
        (&50.into(), &"env".into())
    );
    assert_eq!(entries["name"], "TURNBACK_MAX_ENTRIES");
    // The environment wins over the file.
    let bytes = setting(&v, "max_bytes");
    assert_eq!(
        (bytes["value"].as_u64(), &bytes["source"]),
        (Some(2 << 30), &"env".into())
    );
    // And the text says the same.
    let mut c = env.cmd(None);
    c.arg("config").env("TURNBACK_MAX_ENTRIES", "50");
    let text = String::from_utf8(run_with_input(c, b"").stdout).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap()
            .to_owned()
    };
    assert!(line("keep_days").contains("config.toml line 2"), "{text}");
    assert!(line("max_bytes").contains("500M"), "{text}");
    assert!(
        line("max_entries").contains("TURNBACK_MAX_ENTRIES"),
        "{text}"
    );
    assert!(line("keep_sessions").contains("default"), "{text}");
}

/// `compress_backups = false` (here from the environment) keeps new backups
/// raw; the default compresses them; either session undoes the same.
#[test]
fn compress_backups_off_keeps_new_backups_raw() {
    let env = Env::new();
    let text: String = (0..300)
        .map(|i| format!("line {i} of a file that compresses\n"))
        .collect();
    for (id, off) in [("raw", true), ("packed", false)] {
        std::fs::write(env.path("f"), &text).unwrap();
        let mut c = env.cmd(Some(id));
        c.args(["write", "f"]);
        if off {
            c.env("TURNBACK_COMPRESS_BACKUPS", "off");
        }
        let out = run_with_input(c, b"new\n");
        assert!(out.status.success(), "{}", stderr(&out));
        // The one backup (beside, compressed, the hint naming it as the
        // file's last: docs/FORMAT.md, `blobs/.last-*`).
        let mut names = blob_names(&env, id);
        let hints = names.extract_if(.., |n| n.starts_with(".last-")).count();
        assert_eq!((names.len(), hints), (1, usize::from(!off)), "{names:?}");
        let blob = session_dir(&env, id)
            .join("blobs")
            .join(names.first().unwrap());
        let bytes = std::fs::read(blob).unwrap();
        assert_eq!(bytes == text.as_bytes(), off, "{id}: {} bytes", bytes.len());
        let out = tb(&env, Some(id), &["undo"], b"");
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(std::fs::read_to_string(env.path("f")).unwrap(), text);
    }
    let bad = {
        let mut c = env.cmd(Some("raw"));
        c.args(["--json", "config"])
            .env("TURNBACK_COMPRESS_BACKUPS", "perhaps");
        run_with_input(c, b"")
    };
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn a_bad_config_file_is_an_error_naming_its_file_line_and_key_and_nothing_is_written() {
    let env = Env::new();
    write_config(&env, "keep_days = 7\nmax_entires = 10\n");
    let e = json_err(&env, None, &["config"], 2);
    assert_eq!(e["kind"], "bad-config");
    assert_eq!((&e["line"], &e["key"]), (&2.into(), &"max_entires".into()));
    assert_eq!(e["path"], env.config_file().to_str().unwrap());
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("line 2") && msg.contains("max_entires"),
        "{msg}"
    );
    // A write is refused before it touches anything.
    std::fs::write(env.path("f"), "old").unwrap();
    let out = tb(&env, Some("s"), &["write", "f"], b"new");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("config.toml line 2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(env.path("f")).unwrap(), b"old");
    assert!(!env.home.path().join("sessions/s").exists());
    // A line that does not parse names no key.
    write_config(&env, "keep_days = 7\nkeep_sessions = [\n");
    let e = json_err(&env, None, &["config"], 2);
    assert_eq!(
        (&e["kind"], &e["key"]),
        (&"bad-config".into(), &Value::Null)
    );
    assert!(e["line"].as_u64().unwrap() >= 2, "{e}");
}

#[test]
fn a_bad_environment_override_is_named() {
    let env = Env::new();
    let mut c = env.cmd(None);
    c.args(["--json", "config"])
        .env("TURNBACK_KEEP_DAYS", "a week");
    let out = run_with_input(c, b"");
    assert_eq!(out.status.code(), Some(2));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    let e = &e["error"];
    assert_eq!(e["kind"], "bad-setting");
    assert_eq!(
        (&e["name"], &e["value"]),
        (&"TURNBACK_KEEP_DAYS".into(), &"a week".into())
    );
}

#[test]
fn prune_obeys_the_config_file_the_environment_and_its_flags_in_that_order() {
    let env = Env::new();
    for (i, days) in [(0, 10), (1, 5), (2, 1)] {
        let id = format!("s{i}");
        tb(&env, Some(&id), &["write", &format!("f{i}")], b"x");
        age(&env.home.path().join("sessions").join(&id), days);
    }
    let removed = |v: &Value| -> Vec<String> {
        let mut ids: Vec<String> = v["removed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    // The defaults keep all three.
    assert!(removed(&json_ok(&env, None, &["prune", "--dry-run"], b"")).is_empty());
    write_config(&env, "keep_sessions = 0\nkeep_days = 7\n");
    assert_eq!(
        removed(&json_ok(&env, None, &["prune", "--dry-run"], b"")),
        ["s0"]
    );
    let mut c = env.cmd(None);
    c.args(["--json", "prune", "--dry-run"])
        .env("TURNBACK_KEEP_DAYS", "3");
    let v: Value = serde_json::from_slice(&run_with_input(c, b"").stdout).unwrap();
    assert_eq!(removed(&v), ["s0", "s1"]);
    let mut c = env.cmd(None);
    c.args([
        "--json",
        "prune",
        "--dry-run",
        "--keep-days",
        "30",
        "--keep-sessions",
        "1",
    ])
    .env("TURNBACK_KEEP_DAYS", "3");
    let v: Value = serde_json::from_slice(&run_with_input(c, b"").stdout).unwrap();
    assert!(removed(&v).is_empty(), "{v}");
    let v = json_ok(&env, None, &["prune", "--keep-days", "2"], b"");
    assert_eq!(removed(&v), ["s0", "s1"]);
    assert!(env.home.path().join("sessions/s2").is_dir());
    assert!(!env.home.path().join("sessions/s0").exists());
}

// ---------------------------------------------------------------------------
// Retention: the prune by itself, and a session another process has open

/// Makes the store's daily prune due (its stamp two days old).
fn prune_due(env: &Env) {
    let stamp = env.home.path().join("pruned-at");
    assert!(stamp.is_file(), "the first change starts the clock");
    let t = SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    std::fs::File::open(&stamp)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn session_dir(env: &Env, id: &str) -> std::path::PathBuf {
    env.home.path().join("sessions").join(id)
}

/// True when some process holds a lock on `path` (an exclusive `flock`
/// cannot be had at once; taken, it is let go at once).
fn someone_holds(path: &Path) -> bool {
    use rustix::fs::{FlockOperation, flock};
    let f = std::fs::File::open(path).unwrap();
    flock(&f, FlockOperation::NonBlockingLockExclusive).is_err()
}

/// The index files' bytes of session `id`: they grow with every change.
fn index_len(env: &Env, id: &str) -> u64 {
    ["index.json", "journal.jsonl"]
        .iter()
        .filter_map(|n| std::fs::metadata(session_dir(env, id).join(n)).ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn a_session_another_process_has_open_survives_every_prune_and_the_daily_one_runs_once() {
    let env = Env::new();
    for id in ["held", "idle", "idle-2"] {
        let out = tb(&env, Some(id), &["write", &format!("f-{id}")], b"one\n");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // A `turnback write` waiting for its contents on a pipe: it has `held`
    // open (and its entry in flight) until its input ends.
    let before = index_len(&env, "held");
    let mut c = env.cmd(Some("held"));
    c.args(["write", "f-held", "-m", "late"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut writer = c.spawn().unwrap();
    let start = std::time::Instant::now();
    while !someone_holds(&session_dir(&env, "held").join("live")) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the writer never opened it"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(index_len(&env, "held"), before, "it waits for its input");
    age(&session_dir(&env, "held"), 100);
    age(&session_dir(&env, "idle"), 101);
    // Asked: `held` would go but for the process that has it open.
    let v = json_ok(
        &env,
        None,
        &["prune", "--dry-run", "--keep-sessions", "0"],
        b"",
    );
    let removed: Vec<&str> = v["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(removed, ["idle"], "{v}");
    assert_eq!(v["removed"][0]["rank"], 3, "{v}");
    assert_eq!(
        v["spared"],
        serde_json::json!([{ "id": "held", "reason": "open" }])
    );
    // The text says why each goes or stays.
    let out = tb(
        &env,
        None,
        &["prune", "--dry-run", "--keep-sessions", "0"],
        b"",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("would remove session idle")
            && text.contains("3rd newest, unchanged for 101 days"),
        "{text}"
    );
    assert!(
        text.contains("would keep session held, old as it is: a running process has it open"),
        "{text}"
    );
    // By itself: another session's change, a day after the last prune.
    prune_due(&env);
    let mut c = env.cmd(Some("now"));
    c.args(["write", "f-now"])
        .env("TURNBACK_KEEP_SESSIONS", "0");
    let out = run_with_input(c, b"x");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !session_dir(&env, "idle").exists(),
        "the daily prune did not run"
    );
    assert!(
        session_dir(&env, "held").is_dir(),
        "it removed a session a process has open"
    );
    assert!(session_dir(&env, "now").is_dir());
    // The writer that had it open finishes, and both its changes undo.
    use std::io::Write;
    writer.stdin.take().unwrap().write_all(b"two\n").unwrap();
    let out = writer.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for want in [&b"one\n"[..], b""] {
        let out = tb(&env, Some("held"), &["undo"], b"");
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(std::fs::read(env.path("f-held")).unwrap_or_default(), want);
    }
    // Once a day: an old session made now stays until the stamp is a day old.
    age(&session_dir(&env, "idle-2"), 100);
    let again = || {
        let mut c = env.cmd(Some("now"));
        c.args(["write", "f-now"])
            .env("TURNBACK_KEEP_SESSIONS", "0");
        assert!(run_with_input(c, b"y").status.success());
    };
    again();
    assert!(
        session_dir(&env, "idle-2").is_dir(),
        "pruned twice in a day"
    );
    prune_due(&env);
    again();
    assert!(!session_dir(&env, "idle-2").exists());
}

// ---------------------------------------------------------------------------
// Per-session caps: eviction, the gap, and reverts that reach past it

/// `turnback write FILE -m MSG` with `contents`, as `session`, under the
/// caps `max` (`TURNBACK_MAX_ENTRIES` or `TURNBACK_MAX_BYTES`, with its value).
fn capped_write(
    env: &Env,
    session: &str,
    max: (&str, &str),
    file: &str,
    msg: &str,
    contents: &[u8],
) {
    let mut c = env.cmd(Some(session));
    c.args(["write", file, "-m", msg]).env(max.0, max.1);
    let out = run_with_input(c, contents);
    assert!(out.status.success(), "write {file}: {}", stderr(&out));
}

const ENTRIES: &str = "TURNBACK_MAX_ENTRIES";

fn paths_of(v: &Value) -> Vec<String> {
    let mut p: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|f| {
            let f = f.as_str().unwrap();
            Path::new(f)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    p.sort();
    p
}

#[test]
fn a_change_past_the_entry_cap_evicts_the_oldest_and_log_shows_the_gap() {
    let env = Env::new();
    for i in 1..=5 {
        std::fs::write(env.path(&format!("f{i}")), format!("v0 {i}\n")).unwrap();
        capped_write(
            &env,
            "s",
            (ENTRIES, "3"),
            &format!("f{i}"),
            &format!("m{i}"),
            b"new\n",
        );
    }
    // In the same index update: the journal line that adds m5's entry drops
    // the oldest and records it as evicted.
    let journal = std::fs::read_to_string(session_dir(&env, "s").join("journal.jsonl")).unwrap();
    let line = journal
        .lines()
        .find(|l| l.contains(r#""message_id":"m5""#) && l.contains(r#"{"entry":"#))
        .unwrap_or_else(|| panic!("no line adds m5: {journal}"));
    assert!(
        line.contains(r#"{"drop_entry":2}"#) && line.contains(r#"{"evict":[{"seq":2,"#),
        "{line}"
    );
    let v = json_ok(&env, Some("s"), &["log"], b"");
    let msgs: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message_id"].as_str().unwrap())
        .collect();
    assert_eq!(msgs, ["m3", "m4", "m5"], "{v}");
    let gap = &v["evicted"];
    assert_eq!(
        (&gap["entries"], &gap["through_seq"]),
        (&2.into(), &2.into()),
        "{v}"
    );
    let files: Vec<&str> = gap["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["f1", "f2"]);
    let ids: Vec<&str> = gap["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2"]);
    let out = tb(&env, Some("s"), &["log", "--color", "never"], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].contains("2 older changes evicted by the session's caps (2 messages, m1 to m2;"),
        "the gap comes first: {text}"
    );
    // A session the caps never touched has no gap.
    json_ok(&env, Some("other"), &["write", "f1"], b"other\n");
    let v = json_ok(&env, Some("other"), &["log"], b"");
    assert!(v.get("evicted").is_none(), "{v}");
}

#[test]
fn a_rewind_past_the_gap_names_the_files_it_cannot_restore_and_touches_nothing_unless_forced() {
    let env = Env::new();
    for f in ["a", "b", "c"] {
        std::fs::write(env.path(f), format!("{f} 0\n")).unwrap();
    }
    let cap = (ENTRIES, "3");
    // m1 writes a and b; m2 c; m3 a again; m4 makes d. The cap of 3 evicts
    // m1's two entries.
    capped_write(&env, "s", cap, "a", "m1", b"a 1\n");
    capped_write(&env, "s", cap, "b", "m1", b"b 1\n");
    capped_write(&env, "s", cap, "c", "m2", b"c 1\n");
    capped_write(&env, "s", cap, "a", "m3", b"a 3\n");
    capped_write(&env, "s", cap, "d", "m4", b"d 4\n");
    let before = crate::util::tree_digest(env.ws.path());
    let e = json_err(&env, Some("s"), &["rewind", "m1"], 3);
    assert_eq!(e["kind"], "evicted", "{e}");
    assert_eq!(paths_of(&e["files"]), ["a", "b"]);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("nothing was touched")
    );
    assert_eq!(
        crate::util::tree_digest(env.ws.path()),
        before,
        "refused, yet touched"
    );
    // A file whose changes all went cannot be reverted either.
    let e = json_err(&env, Some("s"), &["revert", "b"], 3);
    assert_eq!(
        (&e["kind"], paths_of(&e["files"])),
        (&"evicted".into(), vec!["b".to_owned()])
    );
    // Forced: c and d go back, a and b stay as they are and are listed.
    let v = json_ok(&env, Some("s"), &["rewind", "m1", "--force"], b"");
    assert_eq!(paths_of(&v["evicted"]), ["a", "b"], "{v}");
    assert_eq!(std::fs::read(env.path("c")).unwrap(), b"c 0\n");
    assert!(!env.path("d").exists());
    assert_eq!(std::fs::read(env.path("a")).unwrap(), b"a 3\n");
    assert_eq!(std::fs::read(env.path("b")).unwrap(), b"b 1\n");
    // What the gap does not reach is restored as ever: m3's a, after a redo.
    json_ok(&env, Some("s"), &["redo"], b"");
    let v = json_ok(&env, Some("s"), &["rewind", "m3"], b"");
    assert!(v.get("evicted").is_none(), "{v}");
    assert_eq!(std::fs::read(env.path("a")).unwrap(), b"a 1\n");
}

#[test]
fn an_undo_past_the_gap_is_refused_and_forced_lists_the_files() {
    let env = Env::new();
    std::fs::write(env.path("a"), "a 0\n").unwrap();
    capped_write(&env, "s", (ENTRIES, "1"), "a", "m1", b"a 1\n");
    capped_write(&env, "s", (ENTRIES, "1"), "b", "m2", b"b 2\n");
    json_ok(&env, Some("s"), &["undo"], b"");
    assert!(!env.path("b").exists());
    let e = json_err(&env, Some("s"), &["undo"], 3);
    assert_eq!(
        (&e["kind"], paths_of(&e["files"])),
        (&"evicted".into(), vec!["a".to_owned()])
    );
    let out = tb(
        &env,
        Some("s"),
        &["undo", "--force", "--color", "never"],
        b"",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("the session's caps evicted the changes it would need"),
        "{text}"
    );
    assert_eq!(std::fs::read(env.path("a")).unwrap(), b"a 1\n");
}

#[test]
fn a_change_past_the_byte_cap_evicts_the_oldest_backups() {
    let env = Env::new();
    let forty = |c: u8| vec![c; 40];
    std::fs::write(env.path("x"), forty(b'0')).unwrap();
    let cap = ("TURNBACK_MAX_BYTES", "100");
    // Backups of 40 bytes each: a third one passes 100.
    for (i, c) in [b'1', b'2', b'3'].into_iter().enumerate() {
        capped_write(&env, "s", cap, "x", &format!("m{i}"), &forty(c));
    }
    let v = json_ok(&env, Some("s"), &["log"], b"");
    assert_eq!(v["entries"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["evicted"]["entries"], 1);
    // Undo twice goes back to the oldest backup kept, and no further.
    json_ok(&env, Some("s"), &["undo"], b"");
    json_ok(&env, Some("s"), &["undo"], b"");
    assert_eq!(std::fs::read(env.path("x")).unwrap(), forty(b'1'));
    assert_eq!(json_err(&env, Some("s"), &["undo"], 3)["kind"], "evicted");
}

#[test]
fn an_eviction_keeps_the_base_the_kept_backups_are_stored_against_and_every_undo_works() {
    // Backups of a source file edited again and again are stored as
    // differences from its first backup (docs/FORMAT.md, "Blob encoding").
    // The cap evicts that first entry, and the collection after it (the
    // backups aged past the grace) must keep its blob while differences
    // from it are kept: each undo then puts the version before back.
    let env = Env::new();
    let line = |i: usize| {
        format!(
            "    let value_{i} = compute({i}, \"text {}\");\n",
            i * 7919 % 1000
        )
    };
    let mut text: String = (0..300).map(line).collect();
    std::fs::write(env.path("lib.rs"), &text).unwrap();
    let mut versions = vec![text.clone()];
    let cap = (ENTRIES, "3");
    let age = || {
        let old = SystemTime::now() - Duration::from_secs(7200);
        for e in std::fs::read_dir(session_dir(&env, "s").join("blobs")).unwrap() {
            std::fs::File::open(e.unwrap().path())
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    };
    for i in 0..6 {
        text.insert_str(text.len() / 2, &format!("    // edit {i}\n"));
        if i > 0 {
            age();
        }
        capped_write(&env, "s", cap, "lib.rs", &format!("m{i}"), text.as_bytes());
        versions.push(text.clone());
    }
    let blobs = session_dir(&env, "s").join("blobs");
    let names: Vec<String> = std::fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with(".base-")),
        "no backup was stored as a difference: {names:?}"
    );
    let v = json_ok(&env, Some("s"), &["log"], b"");
    assert_eq!(v["entries"].as_array().unwrap().len(), 3, "{v}");
    // A prune with no process holding the session collects all it may.
    age();
    json_ok(&env, None, &["prune"], b"");
    for want in versions[3..6].iter().rev() {
        json_ok(&env, Some("s"), &["undo"], b"");
        assert_eq!(std::fs::read_to_string(env.path("lib.rs")).unwrap(), *want);
    }
    assert_eq!(json_err(&env, Some("s"), &["undo"], 3)["kind"], "evicted");
}

// ---------------------------------------------------------------------------
// Garbage collection after processes killed at random points

/// xorshift64*: reproducible randomness from a seed the test prints.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// The names in session `id`'s `blobs/`.
fn blob_names(env: &Env, id: &str) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(session_dir(env, id).join("blobs"))
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn collection_after_random_kills_leaves_exactly_the_backups_the_index_needs_and_every_undo_works() {
    use std::collections::BTreeSet;
    let env = Env::new();
    let inputs = tempfile::tempdir().unwrap();
    let big = |seed: u8| -> Vec<u8> { (0..1 << 20).map(|i: u32| (i as u8) ^ seed).collect() };
    for (i, seed) in [1u8, 2, 3].into_iter().enumerate() {
        std::fs::write(inputs.path().join(format!("big-{i}")), big(seed)).unwrap();
    }
    std::fs::write(env.path("big.bin"), big(0)).unwrap();
    // Source text edited a little each time: its backups are stored as
    // differences from one another's base (docs/FORMAT.md, "Blob encoding").
    let text = |seed: usize| -> String {
        (0..400)
            .map(|i| {
                let edit = if i % 50 == 0 { seed * 17 } else { 0 };
                format!("    let v{i} = f({});\n", (i * 31 + edit) % 1000)
            })
            .collect()
    };
    for seed in 0..3 {
        std::fs::write(inputs.path().join(format!("text-{seed}")), text(seed + 1)).unwrap();
    }
    std::fs::write(env.path("t.rs"), text(0)).unwrap();
    for n in 0..3 {
        std::fs::write(env.path(&format!("s{n}.txt")), format!("small {n}\n")).unwrap();
    }
    let start = crate::util::tree_digest(env.ws.path());
    // TURNBACK_TEST_SEED=0x... replays a run the message of a failure names.
    let seed = std::env::var("TURNBACK_TEST_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("random kills: seed {seed:#x}");
    let mut rng = Rng(seed);
    // TURNBACK_TEST_KILL_US=N kills at most N µs after the start (60 ms
    // unless told): a stress run widens it to reach the later steps of a
    // slow (loaded, debug) build.
    let kill_us = std::env::var("TURNBACK_TEST_KILL_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60_000);
    let mut killed = 0;
    for round in 0..30 {
        let mut c = env.cmd(Some("k"));
        let input = match rng.below(5) {
            0 => {
                c.args(["write", "big.bin", "-m", &format!("m{round}")]);
                Some(inputs.path().join(format!("big-{}", rng.below(3))))
            }
            4 => {
                c.args(["write", "t.rs", "-m", &format!("m{round}")]);
                Some(inputs.path().join(format!("text-{}", rng.below(3))))
            }
            1 => {
                let n = rng.below(3);
                c.args(["write", &format!("s{n}.txt"), "-m", &format!("m{round}")]);
                Some(inputs.path().join(format!("big-{}", rng.below(3))))
            }
            2 => {
                let (a, b) = (rng.below(3), rng.below(3));
                c.args([
                    "mv",
                    &format!("s{a}.txt"),
                    &format!("s{b}.txt"),
                    "-m",
                    &format!("m{round}"),
                ]);
                None
            }
            _ => {
                c.arg("undo");
                None
            }
        };
        match input {
            Some(p) => c.stdin(std::fs::File::open(p).unwrap()),
            None => c.stdin(std::process::Stdio::null()),
        };
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(kill_us)));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
    }
    eprintln!("random kills: {killed} of 30 killed");
    // The next opener settles what the dead left; then a prune, with no
    // process holding the session, collects everything no entry needs.
    let out = tb(&env, Some("k"), &["log"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = tb(&env, None, &["prune"], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let on_disk = blob_names(&env, "k");
    let s = env.store().open_session("k").unwrap();
    let (entries, history) = (s.entries().unwrap(), s.history().unwrap());
    let hash = |st: &turnback_store::FileState| st.sha256.clone();
    let recorded: Vec<_> = history.iter().flat_map(|r| &r.entries).collect();
    let all_entries = entries.iter().chain(recorded.iter().copied());
    // What must be there: every backup taken.
    let needed: BTreeSet<String> = all_entries
        .clone()
        .filter_map(|e| hash(&e.before))
        .chain(
            history
                .iter()
                .flat_map(|r| &r.files)
                .filter_map(|f| f.overwritten.as_ref().and_then(hash)),
        )
        .collect();
    // What may be there: any state the index names.
    let named: BTreeSet<String> = all_entries
        .flat_map(|e| [hash(&e.before), e.after.as_ref().and_then(hash)])
        .chain(
            history
                .iter()
                .flat_map(|r| &r.files)
                .flat_map(|f| [hash(&f.restored), f.overwritten.as_ref().and_then(hash)]),
        )
        .flatten()
        .collect();
    let missing: Vec<_> = needed.difference(&on_disk).collect();
    assert!(
        missing.is_empty(),
        "seed {seed:#x}: backups gone: {missing:?}"
    );
    // Beside the named blobs: the bases of named blobs stored as differences,
    // with their pins (`.base-<blob>-<base>`), and each file's hint of its
    // last backup (`.last-*`); nothing else.
    let pins: Vec<(&str, &str)> = on_disk
        .iter()
        .filter_map(|n| n.strip_prefix(".base-")?.split_once('-'))
        .filter(|(blob, _)| named.contains(*blob))
        .collect();
    let extra: Vec<_> = on_disk
        .iter()
        .filter(|n| !named.contains(*n) && !n.starts_with(".last-"))
        .filter(|n| {
            !pins
                .iter()
                .any(|(b, base)| *base == n.as_str() || format!(".base-{b}-{base}") == **n)
        })
        .collect();
    assert!(extra.is_empty(), "seed {seed:#x}: left behind: {extra:?}");
    for name in ["index.json.tmp", "reverting.json.tmp"] {
        assert!(!session_dir(&env, "k").join(name).exists(), "{name} left");
    }
    drop(s);
    // Every undo still works, back to where the workspace started.
    loop {
        let out = tb(&env, Some("k"), &["--json", "undo"], b"");
        if out.status.success() {
            continue;
        }
        let e: Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(e["error"]["kind"], "nothing-to-undo", "seed {seed:#x}: {e}");
        break;
    }
    assert_eq!(
        crate::util::tree_digest(env.ws.path()),
        start,
        "seed {seed:#x}"
    );
}
