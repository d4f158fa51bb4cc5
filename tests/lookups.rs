//! The lookups across sessions (`revert FILE`, `undo`, `log` and `sessions`
//! without `--session`) through the store's summary, as real processes: a
//! change another process makes after the summary was written is seen, a
//! summary damaged by hand changes no answer, and processes writing and
//! looking up at once all agree with the indexes.

use std::path::PathBuf;
use std::process::{Output, Stdio};

use crate::util::{Env, read_text, run_ok, run_with_input};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `turnback write FILE` in `session` (contents on stdin), as its own process.
fn write(env: &Env, session: &str, file: &str, contents: &str, msg: &str) {
    let mut c = env.cmd(Some(session));
    c.args(["write", file, "--message", msg]);
    run_ok(c, contents.as_bytes(), &format!("turnback write {file}"));
}

/// `turnback ARGS` with no session named, which must succeed and say it
/// used `session`.
fn using(env: &Env, args: &[&str], session: &str) -> Output {
    let mut c = env.cmd(None);
    c.args(args);
    let out = run_ok(c, b"", &format!("turnback {args:?}"));
    assert!(
        stderr(&out).contains(&format!("using session {session}")),
        "turnback {args:?} should use {session}: {}",
        stderr(&out)
    );
    out
}

fn records(env: &Env) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(env.home.path().join("summary"))
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn a_change_another_process_makes_after_the_summary_was_written_is_found() {
    let env = Env::new();
    std::fs::write(env.path("notes.txt"), "original\n").unwrap();
    write(&env, "agent-a", "notes.txt", "by a\n", "a1");
    write(&env, "agent-b", "other.txt", "b's\n", "b1");
    // A lookup writes the summary: agent-b has the newest change.
    using(&env, &["log"], "agent-b");
    assert_eq!(records(&env).len(), 2, "{:?}", records(&env));
    // Another process changes agent-a (its journal grows) after that.
    write(&env, "agent-a", "notes.txt", "by a again\n", "a2");
    using(&env, &["log"], "agent-a");
    // And a new session, which the summary has never seen.
    write(&env, "agent-c", "notes.txt", "by c\n", "c1");
    using(&env, &["undo"], "agent-c");
    assert_eq!(read_text(env.path("notes.txt")), "by a again\n");
    // agent-c's change is undone (redo can put it back): agent-a changed
    // the file last of the changes in effect.
    using(&env, &["revert", "notes.txt"], "agent-a");
    assert_eq!(read_text(env.path("notes.txt")), "by a\n");
    using(&env, &["redo"], "agent-a");
    assert_eq!(read_text(env.path("notes.txt")), "by a again\n");
}

#[test]
fn a_summary_damaged_by_hand_changes_no_answer() {
    let env = Env::new();
    for (i, s) in ["s1", "s2", "s3"].iter().enumerate() {
        write(&env, s, &format!("f{i}.txt"), "x\n", "m");
    }
    write(&env, "s1", "shared.txt", "one\n", "m");
    write(&env, "s2", "shared.txt", "two\n", "m");
    using(&env, &["log"], "s2");
    let found = records(&env);
    assert_eq!(found.len(), 3);
    // Each record swapped for another's, then cut short, then garbage.
    let bytes: Vec<Vec<u8>> = found.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for damage in 0..3 {
        for (i, p) in found.iter().enumerate() {
            let b = &bytes[(i + 1) % bytes.len()];
            let damaged = match damage {
                0 => b.clone(),
                1 => b[..b.len() / 2].to_vec(),
                _ => b"not a record\n".to_vec(),
            };
            std::fs::write(p, damaged).unwrap();
        }
        using(&env, &["log", "shared.txt"], "s2");
        using(&env, &["log"], "s2");
    }
    // A summary directory that is a link to another is not followed.
    let summary = env.home.path().join("summary");
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(&summary).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &summary).unwrap();
    using(&env, &["revert", "shared.txt"], "s2");
    assert_eq!(read_text(env.path("shared.txt")), "one\n");
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn processes_writing_and_looking_up_at_once_agree_with_the_indexes() {
    let env = Env::new();
    let (writers, rounds) = (4, 15);
    let mut children = Vec::new();
    for w in 0..writers {
        let mut c = env.command("sh", None);
        let bin = crate::util::bin();
        let script = format!(
            "for i in $(seq 1 {rounds}); do echo $i | TURNBACK_SESSION=w{w} '{}' write f{w}-$i.txt --message m$i || exit 1; done",
            bin.display()
        );
        c.args(["-c", &script]).stdout(Stdio::null());
        children.push(c.spawn().unwrap());
    }
    let mut lookups = Vec::new();
    for _ in 0..3 {
        let mut c = env.command("sh", None);
        let script = format!(
            "for i in $(seq 1 {rounds}); do '{}' sessions --json >/dev/null || exit 1; done",
            crate::util::bin().display()
        );
        c.args(["-c", &script]).stdout(Stdio::null());
        lookups.push(c.spawn().unwrap());
    }
    for c in children.into_iter().chain(lookups) {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    // What the summary says now is what the indexes say.
    let mut c = env.cmd(None);
    c.args(["sessions", "--json"]);
    let out = run_with_input(c, b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = env.store();
    for w in 0..writers {
        let id = format!("w{w}");
        let entries = store.open_session(&id).unwrap().entries().unwrap().len();
        assert_eq!(entries, rounds);
        let row = listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id.as_str())
            .unwrap_or_else(|| panic!("{id} not listed: {listed}"));
        assert_eq!(row["entries"], rounds, "{row}");
    }
    // No temporary is left.
    assert!(
        records(&env).iter().all(|p| !p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".tmp-")),
        "{:?}",
        records(&env)
    );
}

/// After `turnback run` and `undo`, the person's own session holds nothing in
/// effect: a plain `log` (and `undo`, `diff`) means the agent's session,
/// whose changes are still there, not the emptied one. Where no session has
/// a change in effect, the last to take one back is still found (for `log`
/// to show the gap, for `redo`).
#[test]
fn a_session_whose_changes_were_all_taken_back_does_not_hide_one_in_effect() {
    let env = Env::new();
    write(&env, "agent-a", "notes.txt", "by the agent\n", "a1");
    let mut c = env.cmd(None);
    c.args(["run", "--", "sh", "-c", "echo formatted > fmt.txt"]);
    run_ok(c, b"", "turnback run");
    // The undo takes back the newest change here: the person's command.
    let out = using(&env, &["undo"], "");
    assert!(!env.path("fmt.txt").exists(), "{}", stderr(&out));
    using(&env, &["log"], "agent-a");
    using(&env, &["diff"], "agent-a");
    // The agent's change undone too: nothing in effect anywhere, so the
    // last take-back is the session meant.
    using(&env, &["undo"], "agent-a");
    assert!(!env.path("notes.txt").exists());
    using(&env, &["log"], "agent-a");
    using(&env, &["redo"], "agent-a");
    assert_eq!(read_text(env.path("notes.txt")), "by the agent\n");
}
