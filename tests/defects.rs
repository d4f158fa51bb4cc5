//! Defects found by trying to break the store (issue 10): a rollback over a
//! change recorded since, a revert killed part way and then run again, a change
//! of mode alone, a forced redo over a hand edit, a backup found corrupt. Each
//! test failed before its fix.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Output, Stdio};

use turnback_store::{ConflictReason, Error, FileStatus};

use crate::util::{Env, dry, forced, mode_of, plain, read, read_text, run_with_input};

fn tb(env: &Env, session: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut c = env.cmd(Some(session));
    c.args(args);
    run_with_input(c, stdin)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn chmod(p: &std::path::Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

// ---------------------------------------------------------------------------
// 1. A rollback is a revert: it refuses to destroy a change recorded since.

#[test]
fn a_rollback_refuses_when_another_session_recorded_a_change_since() {
    let env = Env::new();
    std::fs::write(env.path("F"), "original\n").unwrap();
    let out = tb(&env, "A", &["checkpoint", "F", "--message", "a1"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().to_owned();
    let out = tb(&env, "B", &["write", "F", "--message", "b1"], b"B's edit\n");
    assert!(out.status.success(), "{}", text(&out.stderr));

    // The dry run says what the rollback will do: refuse, naming B.
    let out = tb(&env, "A", &["rollback", &id, "--dry-run"], b"");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let said = text(&out.stdout) + &text(&out.stderr);
    assert!(said.contains("\"B\"") && said.contains("b1"), "{said}");
    assert_eq!(read_text(env.path("F")), "B's edit\n", "nothing touched");

    let out = tb(&env, "A", &["rollback", &id], b"");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("\"B\"") && err.contains("b1"), "{err}");
    assert_eq!(read_text(env.path("F")), "B's edit\n", "nothing touched");

    // Forced, what it overwrites is backed up: redo puts B's edit back.
    let out = tb(&env, "A", &["rollback", &id, "--force"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(read_text(env.path("F")), "original\n");
    let out = tb(&env, "A", &["redo"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(read_text(env.path("F")), "B's edit\n");
}

#[test]
fn a_rollback_refuses_when_its_own_session_wrote_the_file_since() {
    let (env, s, ws) = Env::with_session("A");
    std::fs::write(env.path("F"), "original\n").unwrap();
    let cp = s.checkpoint(&ws, "F", "a1").unwrap();
    let seq = cp.seq();
    drop(cp);
    s.write(&ws, "F", &b"a2's version\n"[..], "a2").unwrap();

    // The preview agrees with the rollback: a conflict, naming a2.
    let preview = s.rollback_with(seq, dry()).unwrap();
    assert!(!preview.applied);
    let FileStatus::Conflict(ConflictReason::ChangedSince { by: Some(by) }) =
        &preview.files[0].status
    else {
        panic!("the preview found no change since: {:?}", preview.files);
    };
    assert_eq!(by.message_id, "a2");

    let Err(Error::Refused { conflicts, .. }) = s.rollback(seq) else {
        panic!("the rollback was not refused");
    };
    let ConflictReason::ChangedSince { by: Some(by) } = &conflicts[0].reason else {
        panic!("no changer named: {:?}", conflicts[0].reason);
    };
    assert_eq!((by.session.as_str(), by.message_id.as_str()), ("A", "a2"));
    assert_eq!(read_text(env.path("F")), "a2's version\n");
    assert_eq!(s.entries().unwrap().len(), 2, "nothing recorded");

    // Forced: the file goes back to the checkpoint, and redo restores a2's.
    let r = s.rollback_with(seq, forced()).unwrap();
    assert_eq!(r.files.len(), 1);
    assert_eq!(read_text(env.path("F")), "original\n");
    assert!(s.entries().unwrap().is_empty());
    s.redo(plain()).unwrap();
    assert_eq!(read_text(env.path("F")), "a2's version\n");
    assert_eq!(s.entries().unwrap().len(), 2);
}

#[test]
fn a_rollback_of_the_callers_own_write_still_needs_no_force() {
    let (env, s, ws) = Env::with_session("A");
    std::fs::write(env.path("F"), "original\n").unwrap();
    let cp = s.checkpoint(&ws, "F", "a1").unwrap();
    std::fs::write(env.path("F"), "half writ").unwrap();
    // The preview agrees: the half-made write is the caller's, no conflict.
    let preview = cp.rollback_preview().unwrap();
    assert_eq!(preview.files.len(), 1);
    assert_eq!(preview.files[0].status, FileStatus::Safe, "{preview:?}");
    assert_eq!(
        read_text(env.path("F")),
        "half writ",
        "a preview touches nothing"
    );
    cp.rollback().unwrap();
    assert_eq!(read_text(env.path("F")), "original\n");
    assert!(s.entries().unwrap().is_empty());
    assert!(
        s.history().unwrap().is_empty(),
        "a plain rollback is not a revert to redo"
    );
}

/// Session "agent" changed files `f0` … `f{n-1}` from "before i" to "agent i",
/// all in message m1.
fn agent_wrote(n: usize) -> Env {
    let (env, s, ws) = Env::with_session("agent");
    for i in 0..n {
        std::fs::write(env.path(&format!("f{i}")), format!("before {i}\n")).unwrap();
        let body = format!("agent {i}\n");
        s.write(&ws, format!("f{i}"), body.as_bytes(), "m1")
            .unwrap();
    }
    env
}

// ---------------------------------------------------------------------------
// 3. A revert killed part way, then run again, leaves a redo as complete as an
//    uninterrupted one.

/// Runs `args` in session `s` with the crash point `failpoints`; it must abort.
fn crash(env: &Env, session: &str, args: &[&str], failpoints: &str) {
    let out = env
        .cmd(Some(session))
        .args(args)
        .env("FAILPOINTS", failpoints)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc_sigabrt()),
        "{args:?} with {failpoints} did not abort: {}",
        text(&out.stderr)
    );
}

fn libc_sigabrt() -> i32 {
    6
}

#[test]
fn a_rewind_killed_part_way_and_run_again_can_be_redone_whole() {
    let (env, s, ws) = Env::with_session("agent");
    let n = 60;
    for i in 0..n {
        std::fs::write(env.path(&format!("f{i:02}")), format!("before {i}\n")).unwrap();
    }
    for i in 0..n {
        let body = format!("agent {i}\n");
        s.write(&ws, format!("f{i:02}"), body.as_bytes(), "m1")
            .unwrap();
    }
    // Killed after 10 of the 60 files are restored.
    crash(&env, "agent", &["rewind", "m1"], "ws-renamed=9*off->return");
    let restored = (0..n)
        .filter(|i| read_text(env.path(&format!("f{i:02}"))) == format!("before {i}\n"))
        .count();
    assert_eq!(restored, 10, "the crash did not land part way");

    let out = tb(&env, "agent", &["rewind", "m1"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    for i in 0..n {
        assert_eq!(
            read_text(env.path(&format!("f{i:02}"))),
            format!("before {i}\n")
        );
    }
    let out = tb(&env, "agent", &["redo"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    for i in 0..n {
        assert_eq!(
            read_text(env.path(&format!("f{i:02}"))),
            format!("agent {i}\n"),
            "f{i:02} did not come back"
        );
    }
    // And what the session says matches the files.
    let entries = env.session("agent").entries().unwrap();
    assert_eq!(entries.len(), n);
    assert!(env.session("agent").history().unwrap().is_empty());
}

#[test]
fn an_undo_of_a_move_killed_part_way_and_run_again_can_be_redone_whole() {
    let (env, s, ws) = Env::with_session("agent");
    let big: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(env.path("big.bin"), &big).unwrap();
    s.rename(&ws, "big.bin", "moved/big.bin", "m1").unwrap();
    // The undo deletes the new name first, then writes the old one back:
    // killed in between, nothing but the backup holds the file.
    crash(&env, "agent", &["undo"], "ws-removed=return");
    let out = tb(&env, "agent", &["undo"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(read(env.path("big.bin")) == big);
    assert!(!env.path("moved/big.bin").exists());
    let out = tb(&env, "agent", &["redo"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!env.path("big.bin").exists(), "redo left the old name");
    assert!(env.path("moved/big.bin").exists(), "redo lost the file");
    assert!(read(env.path("moved/big.bin")) == big);
}

#[test]
fn a_revert_killed_part_way_is_rolled_back_by_the_next_command() {
    // What a person finds if they do not run the rewind again: the files and
    // the log agree, as if the killed rewind had never begun.
    let env = agent_wrote(5);
    crash(&env, "agent", &["rewind", "m1"], "ws-renamed=2*off->return");
    let out = tb(&env, "agent", &["log"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    for i in 0..5 {
        assert_eq!(
            read_text(env.path(&format!("f{i}"))),
            format!("agent {i}\n")
        );
    }
    assert!(crate::util::stray_temps(env.ws.path()).is_empty());
    assert!(!env.session("agent").dir().join("reverting.json").exists());
    assert_eq!(env.session("agent").entries().unwrap().len(), 5);
}

#[test]
fn a_revert_killed_after_its_index_change_is_not_rolled_back() {
    // The revert's change reached the journal; only its marker was left: the
    // revert stands.
    let env = agent_wrote(3);
    crash(&env, "agent", &["rewind", "m1"], "journal-synced=return");
    tb(&env, "agent", &["log"], b"");
    for i in 0..3 {
        assert_eq!(
            read_text(env.path(&format!("f{i}"))),
            format!("before {i}\n")
        );
    }
    let s = env.session("agent");
    assert!(s.entries().unwrap().is_empty());
    s.redo(plain()).unwrap();
    for i in 0..3 {
        assert_eq!(
            read_text(env.path(&format!("f{i}"))),
            format!("agent {i}\n")
        );
    }
}

// ---------------------------------------------------------------------------
// 9. A change of mode alone is a change.

#[test]
fn a_change_of_mode_alone_is_undone() {
    let (env, s, ws) = Env::with_session("agent");
    let f = env.path("build.rs");
    std::fs::write(&f, "fn main() {}\n").unwrap();
    chmod(&f, 0o644);
    let cp = s.checkpoint(&ws, "build.rs", "m1").unwrap();
    chmod(&f, 0o755);
    cp.commit().unwrap();
    let preview = s.rewind("m1", dry()).unwrap();
    assert_eq!(preview.files[0].status, FileStatus::Safe);
    s.rewind("m1", plain()).unwrap();
    assert_eq!(mode_of(&f), 0o644);
    assert_eq!(read_text(&f), "fn main() {}\n");
    s.redo(plain()).unwrap();
    assert_eq!(mode_of(&f), 0o755);
}

#[test]
fn a_file_whose_mode_changed_since_refuses_a_revert() {
    let (env, s, ws) = Env::with_session("agent");
    let f = env.path("run.sh");
    std::fs::write(&f, "echo one\n").unwrap();
    chmod(&f, 0o644);
    s.write(&ws, "run.sh", &b"echo two\n"[..], "m1").unwrap();
    chmod(&f, 0o755);
    assert!(matches!(s.undo(plain()), Err(Error::Refused { .. })));
    assert_eq!(mode_of(&f), 0o755);
    assert_eq!(read_text(&f), "echo two\n");
    s.undo(forced()).unwrap();
    assert_eq!((mode_of(&f), read_text(&f).as_str()), (0o644, "echo one\n"));
}

// ---------------------------------------------------------------------------
// e. `redo --force` backs up the hand edit it overwrites.

#[test]
fn a_forced_redo_keeps_the_hand_edit_it_overwrites() {
    let (env, s, ws) = Env::with_session("agent");
    std::fs::write(env.path("f"), "one\n").unwrap();
    s.write(&ws, "f", &b"two\n"[..], "m1").unwrap();
    s.undo(plain()).unwrap();
    std::fs::write(env.path("f"), "by hand\n").unwrap();
    assert!(matches!(s.redo(plain()), Err(Error::Refused { .. })));
    s.redo(forced()).unwrap();
    assert_eq!(read_text(env.path("f")), "two\n");
    // The newest change is the redo's overwrite of the hand edit: undo brings
    // the hand edit back.
    s.undo(plain()).unwrap();
    assert_eq!(read_text(env.path("f")), "by hand\n");
}

// ---------------------------------------------------------------------------
// f. A backup found corrupt is moved aside, and the next backup of the same
//    bytes makes it whole again.

#[test]
fn a_corrupt_backup_is_quarantined_and_rewritten_by_the_next_backup_of_its_bytes() {
    let (env, s, ws) = Env::with_session("agent");
    std::fs::write(env.path("f"), "precious\n").unwrap();
    let e = s.write(&ws, "f", &b"agent\n"[..], "m1").unwrap();
    let hash = e.before.sha256.clone().unwrap();
    let blob = s.dir().join("blobs").join(&hash);
    chmod(&blob, 0o600);
    std::fs::write(&blob, "PRECIOUS\n").unwrap(); // same size, other bytes
    let err = s.undo(plain()).unwrap_err();
    assert!(matches!(err, Error::BlobCorrupt { .. }), "{err}");
    assert_eq!(read_text(env.path("f")), "agent\n", "nothing touched");
    assert!(!blob.exists(), "the corrupt blob was left under its name");
    let aside: Vec<_> = std::fs::read_dir(s.dir().join("blobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&hash) && n != &hash)
        .collect();
    assert_eq!(
        aside.len(),
        1,
        "the corrupt blob is kept aside, not deleted"
    );

    // The same bytes backed up again (another file) make the backup whole.
    std::fs::write(env.path("g"), "precious\n").unwrap();
    s.write(&ws, "g", &b"other\n"[..], "m2").unwrap();
    assert_eq!(read_text(&blob), "precious\n");
    s.undo(plain()).unwrap();
    s.undo(plain()).unwrap();
    assert_eq!(read_text(env.path("f")), "precious\n");
    assert_eq!(read_text(env.path("g")), "precious\n");
}

/// Item 3 at every crash point: a rewind of three files (an edit, a file
/// created in a new directory, a removal) aborted right after any durable step
/// (its first three passes), then run again, then redone, ends with every file
/// as the agent left it, and the session saying so.
#[test]
fn a_rewind_aborted_at_any_step_then_run_again_is_redone_whole() {
    let mut aborted = 0;
    for point in turnback_store::CRASH_POINTS {
        for pass in 0..3 {
            let (env, s, ws) = Env::with_session("agent");
            std::fs::write(env.path("a.txt"), "a1\n").unwrap();
            std::fs::write(env.path("c.txt"), "c1\n").unwrap();
            s.write(&ws, "a.txt", &b"a2\n"[..], "m1").unwrap();
            s.write(&ws, "new/b.txt", &b"b\n"[..], "m2").unwrap();
            s.remove(&ws, "c.txt", "m3").unwrap();
            let agent = crate::util::tree_digest(env.ws.path());
            let failpoints = format!("{point}={pass}*off->return");
            let out = env
                .cmd(Some("agent"))
                .args(["rewind", "m1"])
                .env("FAILPOINTS", &failpoints)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            if out.status.signal() == Some(libc_sigabrt()) {
                aborted += 1;
            } else {
                assert!(out.status.success(), "{failpoints}: {}", text(&out.stderr));
            }
            let what = format!("after an abort at {failpoints}");
            let again = tb(&env, "agent", &["rewind", "m1"], b"");
            let err = text(&again.stderr);
            // The first run may have finished (no abort, or an abort after its
            // index change): then there is nothing left to rewind.
            assert!(
                again.status.success() || err.contains("no change made by message"),
                "{what}: {err}"
            );
            assert_eq!(read_text(env.path("a.txt")), "a1\n", "{what}");
            assert_eq!(read_text(env.path("c.txt")), "c1\n", "{what}");
            assert!(!env.path("new").exists(), "{what}");
            let redo = tb(&env, "agent", &["redo"], b"");
            assert!(redo.status.success(), "{what}: {}", text(&redo.stderr));
            assert_eq!(
                crate::util::tree_digest(env.ws.path()),
                agent,
                "{what}: redo"
            );
            let s = env.session("agent");
            assert_eq!(s.entries().unwrap().len(), 3, "{what}");
            assert!(s.history().unwrap().is_empty(), "{what}");
        }
    }
    assert!(
        aborted > 20,
        "only {aborted} runs aborted: the crash points moved"
    );
    eprintln!("rewind aborted at {aborted} crash-point passes, each then run again and redone");
}

// ---------------------------------------------------------------------------
// A revert removes an empty directory its change made only when no writer is
// using it (seen as a flaky races:: test, reproduced here on purpose).

#[test]
fn an_undo_never_removes_a_directory_another_writer_is_writing_in() {
    let env = Env::new();
    let s = env.session("undoer");
    let ws = env.workspace();
    // The undoer's change made the directory `p`, which its undo removes when
    // it finds it empty.
    s.write(&ws, "p/a.txt", &b"a\n"[..], "m1").unwrap();
    std::fs::remove_file(env.path("p/a.txt")).unwrap();
    s.write(&ws, "p/a.txt", &b"a again\n"[..], "m2").unwrap();
    // A writer in another session, held after its new contents are made in
    // `p` and before they are named there.
    let mut writer = env
        .cmd(Some("writer"))
        .args(["write", "p/b.txt", "--message", "w1"])
        .env("FAILPOINTS", "ws-tmp-synced=sleep(1500)")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = writer.stdin.take().unwrap();
        stdin.write_all(b"the writer's\n").unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // Both of the undoer's changes go; `p` is empty but for the writer's
    // temporary, which has no name yet.
    s.undo(forced()).unwrap();
    s.undo(forced()).unwrap();
    let out = writer.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the writer failed: {}",
        text(&out.stderr)
    );
    assert_eq!(read_text(env.path("p/b.txt")), "the writer's\n");
    assert!(!env.path("p/a.txt").exists());
    // And the writer's change undoes as any other.
    env.session("writer").undo(plain()).unwrap();
    assert!(!env.path("p/b.txt").exists());
}
