//! Shell brackets that once lost or hid work, through `turnback run` as real
//! processes: each test failed before its fix.

use std::process::{Command, Output};

use crate::util::Env;

/// `turnback ARGS` in the workspace under an open-file limit of `fds` (a
/// macOS shell allows 256), set by the shell that then becomes turnback.
fn limited(env: &Env, fds: u32, session: Option<&str>, args: &[&str]) -> Output {
    let mut c: Command = env.command("sh", session);
    c.arg("-c")
        .arg(format!("ulimit -n {fds} && exec \"$0\" \"$@\""))
        .arg(crate::util::bin())
        .args(args);
    c.output().unwrap()
}

/// The `(path, change)` of each change a `--json` scan report recorded,
/// in path order.
fn recorded(report: &serde_json::Value) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["change"].as_str().unwrap()))
        .collect();
    out.sort();
    out
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The number of the files a command made, recorded, undone and redone
/// under an open-file limit far below it: the locks of a bracket's files no
/// longer take one descriptor each, nor does a revert's work.
#[test]
fn a_command_that_makes_many_files_is_recorded_and_undone_under_a_low_file_limit() {
    let env = Env::new();
    let files = 1_000;
    let made = format!("mkdir g && cd g && seq -f f%g 1 {files} | xargs touch");
    std::fs::write(env.path("kept.txt"), "before\n").unwrap();
    let edit = format!("{made} && echo after > ../kept.txt");
    let out = limited(&env, 48, None, &["--json", "run", "--", "sh", "-c", &edit]);
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let changes = report["changes"].as_array().unwrap();
    // The files, their directory and kept.txt.
    assert_eq!(changes.len(), files + 2, "{report}");
    let session = report["session"].as_str().unwrap().to_owned();
    ok(
        limited(&env, 48, Some(&session), &["undo"]),
        "undo under the limit",
    );
    assert!(!env.path("g").exists(), "the made directory is still there");
    assert_eq!(std::fs::read(env.path("kept.txt")).unwrap(), b"before\n");
    ok(
        limited(&env, 48, Some(&session), &["redo"]),
        "redo under the limit",
    );
    assert_eq!(std::fs::read_dir(env.path("g")).unwrap().count(), files);
    assert_eq!(std::fs::read(env.path("kept.txt")).unwrap(), b"after\n");
}

/// A file and a directory a command replaced by symbolic links: recorded
/// as removed from the backups the beginning took; the undo refuses (exit
/// code 3, nothing written, nothing followed) while the links are in the
/// way, and brings everything back once they are gone.
#[test]
fn what_a_command_replaced_by_a_link_comes_back_once_the_link_is_gone() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f"), "outside\n").unwrap();
    std::fs::write(env.path("notes.txt"), "notes\n").unwrap();
    std::fs::create_dir(env.path("d")).unwrap();
    std::fs::write(env.path("d/f"), "inner\n").unwrap();
    let cmd = format!(
        "ln -sf {0}/f notes.txt && rm -rf d && ln -s {0} d",
        outside.path().display()
    );
    let out = env
        .cmd(Some("agent"))
        .args(["--json", "run", "--", "sh", "-c", &cmd])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    assert_eq!(
        recorded(&report),
        [
            ("d", "deleted"),
            ("d/f", "deleted"),
            ("notes.txt", "deleted")
        ],
        "{report}"
    );
    let refused = env.cmd(Some("agent")).arg("undo").output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    assert_eq!(
        std::fs::read(outside.path().join("f")).unwrap(),
        b"outside\n"
    );
    assert!(
        std::fs::symlink_metadata(env.path("d"))
            .unwrap()
            .is_symlink()
    );
    std::fs::remove_file(env.path("notes.txt")).unwrap();
    std::fs::remove_file(env.path("d")).unwrap();
    ok(
        env.cmd(Some("agent")).arg("undo").output().unwrap(),
        "undo once the links are gone",
    );
    assert_eq!(std::fs::read(env.path("notes.txt")).unwrap(), b"notes\n");
    assert_eq!(std::fs::read(env.path("d/f")).unwrap(), b"inner\n");
    assert_eq!(
        std::fs::read(outside.path().join("f")).unwrap(),
        b"outside\n"
    );
}

/// A step that only edits `.gitignore` brings the user's ignored files
/// into scope: they were there before, so they are not recorded as made,
/// and the undo leaves them; what the command did make is still undone.
#[test]
fn an_ignore_file_edit_never_makes_the_ignored_files_the_commands() {
    let env = Env::new();
    let ws = env.ws.path();
    std::fs::write(ws.join(".gitignore"), "*.env\nlocal/\n").unwrap();
    std::fs::write(ws.join("secret.env"), "TOKEN=1\n").unwrap();
    std::fs::create_dir(ws.join("local")).unwrap();
    std::fs::write(ws.join("local/conf"), "conf\n").unwrap();
    if !crate::scan::has_git("an_ignore_file_edit_never_makes_the_ignored_files_the_commands") {
        return;
    }
    crate::scan::git(ws, &["init", "-q"]);
    let out = env
        .cmd(Some("agent"))
        .args([
            "--json",
            "run",
            "--",
            "sh",
            "-c",
            "echo '*.log' > .gitignore && echo new > made.txt",
        ])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let mut recorded: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    recorded.sort();
    assert_eq!(recorded, [".gitignore", "made.txt"], "{report}");
    ok(env.cmd(Some("agent")).arg("undo").output().unwrap(), "undo");
    assert_eq!(std::fs::read(ws.join("secret.env")).unwrap(), b"TOKEN=1\n");
    assert_eq!(std::fs::read(ws.join("local/conf")).unwrap(), b"conf\n");
    assert_eq!(
        std::fs::read(ws.join(".gitignore")).unwrap(),
        b"*.env\nlocal/\n"
    );
    assert!(!ws.join("made.txt").exists());
}

/// A file this user may not read (root's 0600 file in the workspace) and
/// one the command makes unreadable: each is reported as not backed up,
/// and everything else the command did is recorded and undone; a change of
/// mode alone needs no read. As root the commands run as `nobody` (root
/// reads everything); otherwise as this user, over a file it made 000.
#[test]
fn an_unreadable_file_is_reported_and_the_rest_recorded() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    let root = rustix::process::geteuid().is_root();
    // A binary, a workspace and a home `nobody` can reach.
    let reach = tempfile::tempdir().unwrap();
    let bin = reach.path().join("turnback");
    std::fs::copy(crate::util::bin(), &bin).unwrap();
    for p in [reach.path(), env.home.path(), env.ws.path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let ws = env.ws.path();
    for (name, text) in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("m.txt", "m\n"),
        ("secret", "s\n"),
    ] {
        std::fs::write(ws.join(name), text).unwrap();
    }
    std::fs::set_permissions(ws.join("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let nobody = (65534, 65534);
    if root {
        for p in [env.home.path(), ws] {
            std::os::unix::fs::chown(p, Some(nobody.0), Some(nobody.1)).unwrap();
        }
        for name in ["a.txt", "b.txt", "m.txt"] {
            std::os::unix::fs::chown(ws.join(name), Some(nobody.0), Some(nobody.1)).unwrap();
        }
    }
    let as_user = |args: &[&str]| {
        let mut c = env.command(&bin, Some("agent"));
        c.args(args);
        if root {
            c.uid(nobody.0).gid(nobody.1);
        }
        c.output().unwrap()
    };
    let edit = "echo A > a.txt && echo B > b.txt && chmod 000 b.txt && chmod 600 m.txt";
    let out = as_user(&["--json", "run", "--", "sh", "-c", edit]);
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    assert_eq!(
        recorded(&report),
        [("a.txt", "modified"), ("m.txt", "mode-changed")],
        "{report}"
    );
    let unrecorded = report["unrecorded"].as_array().unwrap();
    assert_eq!(unrecorded.len(), 1, "{report}");
    assert_eq!(unrecorded[0]["path"], "b.txt");
    assert_eq!(unrecorded[0]["reason"], "no-backup");
    // The unreadable secret changes under a second command: reported too.
    let out = as_user(&[
        "--json",
        "run",
        "--",
        "sh",
        "-c",
        "echo AA > a.txt && rm -f secret",
    ]);
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run again")).unwrap();
    let unrecorded = report["unrecorded"].as_array().unwrap();
    assert_eq!(unrecorded.len(), 1, "{report}");
    assert_eq!(unrecorded[0]["path"], "secret", "{report}");
    ok(as_user(&["undo"]), "undo");
    ok(as_user(&["undo"]), "undo again");
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"a\n");
    assert_eq!(crate::util::mode_of(&ws.join("m.txt")) & 0o777, 0o644);
}

/// Two brackets of one session open at once in one workspace (two `turnback
/// run`s side by side): what changed while both were open may be either's,
/// so it is marked shared and an undo refuses (exit code 3) rather than
/// take back the other command's work; the other bracket does not take
/// again what the first recorded.
#[test]
fn two_brackets_of_one_session_at_once_do_not_take_each_others_changes() {
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "a\n").unwrap();
    let begin = || {
        let out = env
            .cmd(Some("agent"))
            .args(["checkpoint", "--scan", "--message", "m"])
            .output()
            .unwrap();
        ok(out, "checkpoint --scan").trim().to_owned()
    };
    let (first, second) = (begin(), begin());
    assert_ne!(first, second);
    std::fs::write(env.path("a.txt"), "changed by one of them\n").unwrap();
    let commit = |id: &str| -> serde_json::Value {
        let out = env
            .cmd(Some("agent"))
            .args(["--json", "commit", id])
            .output()
            .unwrap();
        serde_json::from_str(&ok(out, &format!("commit {id}"))).unwrap()
    };
    let report = commit(&first);
    assert_eq!(report["changes"][0]["path"], "a.txt", "{report}");
    assert_eq!(report["changes"][0]["shared_with"][0], "agent", "{report}");
    let report = commit(&second);
    assert_eq!(report["changes"].as_array().unwrap().len(), 0, "{report}");
    let refused = env.cmd(Some("agent")).arg("undo").output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    assert_eq!(
        std::fs::read(env.path("a.txt")).unwrap(),
        b"changed by one of them\n"
    );
}

/// Names that are not UTF-8: a tracked one no longer fails every scan in
/// git, and outside git or in it a command that deletes, changes or makes
/// one is never "changed no file": each is reported as not backed up, by
/// its bytes, and the rest of the command is recorded and undone.
#[test]
fn a_name_that_is_not_utf8_never_fails_the_scan_nor_hides_its_change() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    for in_git in [false, true] {
        let env = Env::new();
        let ws = env.ws.path();
        std::fs::write(ws.join(OsStr::from_bytes(b"caf\xe9.txt")), "cafe\n").unwrap();
        std::fs::write(ws.join(OsStr::from_bytes(b"ke\xe9p.txt")), "keep\n").unwrap();
        std::fs::write(ws.join("a.txt"), "a\n").unwrap();
        if in_git {
            if !crate::scan::has_git(
                "a_name_that_is_not_utf8_never_fails_the_scan_nor_hides_its_change",
            ) {
                return;
            }
            for args in [
                &["init", "-q"][..],
                &["add", "-A"],
                &["commit", "-qm", "start"],
            ] {
                crate::scan::git(ws, args);
            }
        }
        // The command's names come from the shell's own octal escapes.
        let edit = r#"rm caf*.txt && echo b > a.txt && echo n > "$(printf 'n\351w')""#;
        let out = env
            .cmd(Some("agent"))
            .args(["--json", "run", "--", "sh", "-c", edit])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
        let recorded: Vec<&str> = report["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert_eq!(recorded, ["a.txt"], "in git: {in_git}: {report}");
        let mut unrecorded: Vec<(&str, &str)> = report["unrecorded"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| (u["path"].as_str().unwrap(), u["reason"].as_str().unwrap()))
            .collect();
        unrecorded.sort();
        assert_eq!(
            unrecorded,
            [("caf\\xe9.txt", "no-backup"), ("n\\xe9w", "no-backup")],
            "in git: {in_git}: {report}"
        );
        ok(env.cmd(Some("agent")).arg("undo").output().unwrap(), "undo");
        assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"a\n");
    }
}

/// A prune that keeps no session (`--keep-days 0 --keep-sessions 0`) while
/// an agent is between a write's PreToolUse and PostToolUse, or while a
/// shell bracket is open, and its process lives: the session is kept
/// ("writing"), the backup with it, and the undo brings the old bytes back.
#[test]
fn prune_keeps_a_session_whose_write_or_bracket_is_under_way() {
    let env = Env::new();
    std::fs::write(env.path("notes.txt"), "before\n").unwrap();
    let v = crate::hooks::fixture(&env, "claude-code-2.1.332/PreToolUse-Write.json");
    let file = env.path("notes.txt");
    let pre = crate::hooks::with(v, "/tool_input/file_path", file.to_str().unwrap().into());
    let session = pre["session_id"].as_str().unwrap().to_owned();
    // The agent is this test process: alive throughout.
    let mut c = crate::hooks::hook_cmd(&env, "claude-code");
    c.env("CLAUDE_PID", std::process::id().to_string());
    let out = crate::util::run_with_input(c, pre.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // The agent writes; meanwhile a prune that keeps nothing runs.
    std::fs::write(env.path("notes.txt"), "after\n").unwrap();
    let prune = |env: &Env| {
        let out = env
            .cmd(None)
            .args([
                "--json",
                "prune",
                "--keep-days",
                "0",
                "--keep-sessions",
                "0",
            ])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_str(&ok(out, "prune")).unwrap();
        report
    };
    let report = prune(&env);
    assert_eq!(report["removed"].as_array().unwrap().len(), 0, "{report}");
    assert_eq!(report["spared"][0]["id"], session.as_str(), "{report}");
    assert_eq!(report["spared"][0]["reason"], "writing", "{report}");
    let post = crate::hooks::with(pre.clone(), "/hook_event_name", "PostToolUse".into());
    let mut c = crate::hooks::hook_cmd(&env, "claude-code");
    c.env("CLAUDE_PID", std::process::id().to_string());
    let out = crate::util::run_with_input(c, post.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    ok(
        env.cmd(Some(&session)).arg("undo").output().unwrap(),
        "undo",
    );
    assert_eq!(std::fs::read(env.path("notes.txt")).unwrap(), b"before\n");

    // An agent that is gone no longer keeps its session; if its tool's
    // PostToolUse comes after all, it says the change was NOT backed up.
    let env2 = Env::new();
    std::fs::write(env2.path("notes.txt"), "before\n").unwrap();
    let file2 = env2.path("notes.txt");
    let pre2 = crate::hooks::with(
        pre.clone(),
        "/tool_input/file_path",
        file2.to_str().unwrap().into(),
    );
    let pre2 = crate::hooks::with(pre2, "/cwd", env2.ws.path().to_str().unwrap().into());
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    for (event, name) in [(&pre2, "PreToolUse"), (&pre2, "PostToolUse")] {
        if name == "PostToolUse" {
            let report = prune(&env2);
            assert_eq!(report["removed"].as_array().unwrap().len(), 1, "{report}");
        }
        let event = crate::hooks::with(event.clone(), "/hook_event_name", name.into());
        let mut c = crate::hooks::hook_cmd(&env2, "claude-code");
        c.env("CLAUDE_PID", dead.to_string());
        let out = crate::util::run_with_input(c, event.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        if name == "PostToolUse" {
            let said = crate::hooks::system_message(&out);
            assert!(
                said.contains("NOT backed up") && said.contains("pruned"),
                "{said}"
            );
        }
    }

    // A bracket `checkpoint --scan` opened, its caller (this process) alive.
    let env = Env::new();
    let out = env
        .cmd(Some("agent"))
        .args(["checkpoint", "--scan", "--message", "m"])
        .output()
        .unwrap();
    ok(out, "checkpoint --scan");
    let report = prune(&env);
    assert_eq!(report["spared"][0]["id"], "agent", "{report}");
    assert_eq!(report["spared"][0]["reason"], "writing", "{report}");
}

/// A person's session made where the environment names no user (`USER`
/// and `LOGNAME` unset or empty, as under some service managers): named
/// by the user id, never `person-person-…`.
#[test]
fn a_person_session_without_a_user_name_is_named_by_the_user_id() {
    let env = Env::new();
    for user in [None, Some("")] {
        let mut c = env.cmd(None);
        c.env_remove("LOGNAME");
        match user {
            Some(u) => c.env("USER", u),
            None => c.env_remove("USER"),
        };
        let out = c
            .args(["--json", "run", "--", "sh", "-c", "echo x >> a.txt"])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
        let session = report["session"].as_str().unwrap();
        let uid = rustix::process::geteuid().as_raw();
        assert!(
            session.starts_with(&format!("person-uid{uid}-")),
            "USER {user:?}: {session}"
        );
    }
}
