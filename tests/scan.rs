//! What a shell command changes, undone: the scan bracket through `turnback
//! run` and through `checkpoint --scan` / `commit` / `rollback` in separate
//! processes, in a real git repository and outside one; a kill between begin
//! and commit; two sessions at once; `.git` left byte for byte.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use turnback_store::Store;

use crate::util::{self, Env};

/// `git ARGS` in `dir` with an identity and no user configuration.
pub(crate) fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

pub(crate) fn has_git(test: &str) -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        util::skip(test, "git is not installed here");
    }
    ok
}

/// A workspace with a few files (and, `in_git`, committed in a repository).
fn workspace(in_git: bool) -> Env {
    let env = Env::new();
    let ws = env.ws.path();
    std::fs::create_dir(ws.join("src")).unwrap();
    for (p, c) in [
        ("src/lib.rs", "fn lib() {}\n"),
        ("src/old.rs", "old\n"),
        ("gone.txt", "gone\n"),
        ("tool.sh", "echo hi\n"),
        ("dir/inner.txt", "inner\n"),
        (".gitignore", "target/\n*.log\n"),
    ] {
        let path = ws.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, c).unwrap();
    }
    std::fs::create_dir(ws.join("target")).unwrap();
    std::fs::write(ws.join("target/build.o"), "object\n").unwrap();
    if in_git {
        git(ws, &["init", "-q"]);
        git(ws, &["add", "-A"]);
        git(ws, &["commit", "-qm", "start"]);
    }
    env
}

/// What the test command does: every kind of change a shell makes.
const EVERYTHING: &str = "printf 'fn lib() { 1 }\\n' > src/lib.rs && rm gone.txt && chmod +x tool.sh \
    && mv src/old.rs src/new.rs && mkdir -p made/deep && echo made > made/deep/f.txt \
    && rm -r dir && echo build > target/out.o && echo log > run.log";

fn run(env: &Env, session: Option<&str>, args: &[&str]) -> Output {
    env.cmd(session).args(args).output().unwrap()
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The workspace without what is ignored (target/, *.log) and without .git,
/// byte for byte, with every file's and directory's mode.
fn scope_digest(env: &Env) -> Vec<(std::path::PathBuf, String)> {
    util::tree_digest(env.ws.path())
        .into_iter()
        .filter(|(p, _)| {
            let s = p.to_string_lossy();
            !s.starts_with(".git/")
                && s != ".git"
                && !s.starts_with("target")
                && !s.ends_with(".log")
        })
        .map(|(p, what)| match what.as_str() {
            "dir" => {
                let mode = util::mode_of(&env.ws.path().join(&p)) & 0o7777;
                (p, format!("dir {mode:o}"))
            }
            _ => (p, what),
        })
        .collect()
}

fn every_change_through_run(in_git: bool) {
    let env = workspace(in_git);
    let ws = env.ws.path();
    let git_before = in_git.then(|| util::tree_digest(&ws.join(".git")));
    let start = scope_digest(&env);
    let out = run(&env, None, &["--json", "run", "--", "sh", "-c", EVERYTHING]);
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let changes: Vec<(String, String)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().into(),
                c["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("dir", "deleted"),
        ("dir/inner.txt", "deleted"),
        ("gone.txt", "deleted"),
        ("made", "created"),
        ("made/deep", "created"),
        ("made/deep/f.txt", "created"),
        ("src/lib.rs", "modified"),
        ("src/new.rs", "created"),
        ("src/old.rs", "deleted"),
        ("tool.sh", "mode-changed"),
    ]
    .iter()
    .map(|(p, c)| (p.to_string(), c.to_string()))
    .collect();
    assert_eq!(changes, want, "{report}");
    // Quoted as a shell would need it typed again.
    let quoted = format!("sh -c '{}'", EVERYTHING.replace('\'', r"'\''"));
    assert_eq!(report["command"], quoted.as_str());
    assert!(report["session"].as_str().unwrap().starts_with("person-"));
    // The log says a scan found them, and with which command.
    let log = ok(run(&env, None, &["log"]), "log");
    assert!(log.contains("(found by a scan of `sh -c"), "{log}");
    let dry = ok(run(&env, None, &["undo", "--dry-run"]), "undo --dry-run");
    assert!(dry.contains("changes a scan found"), "{dry}");
    ok(run(&env, None, &["undo"]), "undo");
    assert_eq!(scope_digest(&env), start, "the undo put everything back");
    assert_eq!(
        util::read_text(env.path("target/out.o")),
        "build\n",
        "ignored: left alone"
    );
    assert_eq!(
        util::read_text(env.path("run.log")),
        "log\n",
        "ignored: left alone"
    );
    assert!(
        !env.path("made").exists(),
        "the directories it made are gone"
    );
    ok(run(&env, None, &["redo"]), "redo");
    assert!(util::mode_of(&env.path("tool.sh")) & 0o100 != 0);
    assert_eq!(util::read_text(env.path("made/deep/f.txt")), "made\n");
    if let Some(before) = git_before {
        assert_eq!(
            util::tree_digest(&ws.join(".git")),
            before,
            ".git is byte-identical"
        );
    }
}

#[test]
fn every_change_a_shell_makes_undoes_through_run_in_git() {
    if has_git("scan::every_change_a_shell_makes_undoes_through_run_in_git") {
        every_change_through_run(true);
    }
}

#[test]
fn every_change_a_shell_makes_undoes_through_run_outside_git() {
    every_change_through_run(false);
}

fn two_process_bracket(in_git: bool) {
    let env = workspace(in_git);
    let start = scope_digest(&env);
    let id = ok(
        run(
            &env,
            Some("agent"),
            &["checkpoint", "--scan", "--message", "call-1"],
        ),
        "checkpoint --scan",
    );
    let id = id.trim();
    assert!(id.starts_with("scan-"), "{id}");
    // The command, in a process of its own.
    let sh = env
        .command("sh", None)
        .args(["-c", EVERYTHING])
        .status()
        .unwrap();
    assert!(sh.success());
    let text = ok(run(&env, Some("agent"), &["commit", id]), "commit");
    assert!(text.contains("changed 10 files"), "{text}");
    let again = run(&env, Some("agent"), &["--json", "commit", id]);
    assert_eq!(again.status.code(), Some(1), "a scan commits once");
    assert!(String::from_utf8_lossy(&again.stderr).contains("no-such-scan"));
    ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert_eq!(scope_digest(&env), start);

    // And a rollback: everything back, nothing recorded.
    let before_log = ok(run(&env, Some("agent"), &["--json", "log"]), "log");
    let id = ok(
        run(
            &env,
            Some("agent"),
            &["checkpoint", "--scan", "-m", "call-2"],
        ),
        "checkpoint",
    );
    env.command("sh", None)
        .args(["-c", EVERYTHING])
        .status()
        .unwrap();
    let out = ok(
        run(&env, Some("agent"), &["rollback", id.trim()]),
        "rollback",
    );
    assert!(out.contains("rolled back"), "{out}");
    assert_eq!(scope_digest(&env), start);
    assert_eq!(
        ok(run(&env, Some("agent"), &["--json", "log"]), "log"),
        before_log
    );
}

#[test]
fn a_bracket_begun_in_one_process_ends_in_another_in_git() {
    if has_git("scan::a_bracket_begun_in_one_process_ends_in_another_in_git") {
        two_process_bracket(true);
    }
}

#[test]
fn a_bracket_begun_in_one_process_ends_in_another_outside_git() {
    two_process_bracket(false);
}

#[test]
fn run_exits_with_the_commands_code_and_a_half_done_command_undoes() {
    let env = workspace(false);
    let out = run(
        &env,
        Some("agent"),
        &[
            "run",
            "--",
            "sh",
            "-c",
            "echo half > gone.txt; exit 7; echo never > src/lib.rs",
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(util::read_text(env.path("gone.txt")), "half\n");
    ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert_eq!(util::read_text(env.path("gone.txt")), "gone\n");
    let missing = run(&env, Some("agent"), &["run", "--", "no-such-command-here"]);
    assert_eq!(missing.status.code(), Some(1));
    let s = Store::new(env.home.path()).open_session("agent").unwrap();
    assert!(
        s.open_scans().unwrap().is_empty(),
        "a command that never ran closes its bracket"
    );
}

#[test]
fn a_hand_edit_before_the_command_comes_back_not_the_commit() {
    if !has_git("scan::a_hand_edit_before_the_command_comes_back_not_the_commit") {
        return;
    }
    let env = workspace(true);
    std::fs::write(env.path("src/lib.rs"), "edited by hand\n").unwrap();
    ok(
        run(
            &env,
            None,
            &["run", "--", "sh", "-c", "echo formatted > src/lib.rs"],
        ),
        "run",
    );
    ok(run(&env, None, &["undo"]), "undo");
    assert_eq!(util::read_text(env.path("src/lib.rs")), "edited by hand\n");
}

#[test]
fn a_kill_between_begin_and_commit_leaves_an_open_scan_that_commits_later() {
    let env = workspace(false);
    let start = scope_digest(&env);
    // The command kills turnback, its parent, before the commit.
    let out = run(
        &env,
        Some("agent"),
        &[
            "run",
            "--",
            "sh",
            "-c",
            "echo changed > src/lib.rs; rm gone.txt; kill -9 $PPID",
        ],
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9)
    );
    let s = Store::new(env.home.path()).open_session("agent").unwrap();
    let open = s.open_scans().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(
        open[0].command.as_deref(),
        Some("sh -c 'echo changed > src/lib.rs; rm gone.txt; kill -9 $PPID'")
    );
    ok(
        run(&env, Some("agent"), &["commit", &open[0].id]),
        "commit after the kill",
    );
    ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert_eq!(scope_digest(&env), start);
}

#[test]
fn another_sessions_write_during_the_bracket_is_not_the_brackets() {
    let env = workspace(false);
    let id = ok(
        run(&env, Some("a"), &["checkpoint", "--scan", "-m", "a1"]),
        "begin",
    );
    let mut w = env.cmd(Some("b"));
    w.args(["write", "src/lib.rs", "-m", "b1"]);
    util::run_ok(w, b"b's write\n", "b writes");
    std::fs::write(env.path("gone.txt"), "a's command\n").unwrap();
    let r: serde_json::Value = serde_json::from_str(&ok(
        run(&env, Some("a"), &["--json", "commit", id.trim()]),
        "commit",
    ))
    .unwrap();
    assert_eq!(r["changes"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["changes"][0]["path"], "gone.txt");
    assert_eq!(r["unrecorded"][0]["path"], "src/lib.rs");
    assert_eq!(r["unrecorded"][0]["reason"], "recorded-by");
    assert_eq!(r["unrecorded"][0]["session"], "b");
}

#[test]
fn overlapping_brackets_of_two_sessions_share_what_both_saw_and_the_undo_refuses() {
    let env = workspace(false);
    let a = ok(
        run(&env, Some("a"), &["checkpoint", "--scan", "-m", "a1"]),
        "a begins",
    );
    let b = ok(
        run(&env, Some("b"), &["checkpoint", "--scan", "-m", "b1"]),
        "b begins",
    );
    // Whose command made this? Both brackets saw it happen.
    std::fs::write(env.path("src/lib.rs"), "someone's change\n").unwrap();
    let ra: serde_json::Value = serde_json::from_str(&ok(
        run(&env, Some("a"), &["--json", "commit", a.trim()]),
        "a commits",
    ))
    .unwrap();
    assert_eq!(
        ra["changes"][0]["shared_with"],
        serde_json::json!(["b"]),
        "{ra}"
    );
    let rb: serde_json::Value = serde_json::from_str(&ok(
        run(&env, Some("b"), &["--json", "commit", b.trim()]),
        "b commits",
    ))
    .unwrap();
    assert!(rb["changes"].as_array().unwrap().is_empty(), "{rb}");
    assert_eq!(rb["unrecorded"][0]["reason"], "recorded-by");
    let undo = run(&env, Some("a"), &["--json", "undo"]);
    assert_eq!(undo.status.code(), Some(3), "{undo:?}");
    assert!(
        String::from_utf8_lossy(&undo.stderr).contains("\"shared\""),
        "{undo:?}"
    );
    assert_eq!(
        util::read_text(env.path("src/lib.rs")),
        "someone's change\n",
        "untouched"
    );
    ok(run(&env, Some("a"), &["undo", "--force"]), "forced");
    assert_eq!(util::read_text(env.path("src/lib.rs")), "fn lib() {}\n");
}

#[test]
fn a_symbolic_link_is_reported_never_followed_and_ignored_files_never_touched() {
    let env = workspace(false);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "outside\n").unwrap();
    let cmd = format!(
        "ln -s {} link && echo x > target/new.o",
        outside.path().join("secret").display()
    );
    let r: serde_json::Value = serde_json::from_str(&ok(
        run(&env, Some("a"), &["--json", "run", "--", "sh", "-c", &cmd]),
        "run",
    ))
    .unwrap();
    let target = outside.path().join("secret").display().to_string();
    assert_eq!(
        r["unrecorded"][0],
        serde_json::json!({
            "path": "link",
            "reason": "symbolic-link",
            "before": {"kind": "absent"},
            "now": {"kind": "link", "target": target},
        })
    );
    assert!(r["changes"].as_array().unwrap().is_empty(), "{r}");
    assert_eq!(util::read_text(outside.path().join("secret")), "outside\n");
    let mode = std::fs::metadata(outside.path().join("secret"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn an_interrupt_stops_the_command_not_turnback_which_records_what_it_did() {
    let env = workspace(false);
    // The command interrupts turnback (as a Ctrl-C would, with the command),
    // then goes on: turnback waits for it and records both changes.
    let out = run(
        &env,
        Some("agent"),
        &[
            "--json",
            "run",
            "--",
            "sh",
            "-c",
            "echo one > gone.txt; kill -INT $PPID; kill -QUIT $PPID; sleep 0.2; echo two > src/lib.rs",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    assert_eq!(r["changes"].as_array().unwrap().len(), 2, "{r}");
    // And a command killed by the interrupt exits as a shell says it did.
    let out = run(
        &env,
        Some("agent"),
        &[
            "run",
            "--",
            "sh",
            "-c",
            "echo three > gone.txt; kill -INT $$",
        ],
    );
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert_eq!(util::read_text(env.path("gone.txt")), "one\n");
}

#[test]
fn a_file_over_max_size_is_reported_and_left_to_the_person() {
    let env = workspace(false);
    std::fs::write(env.path("big.bin"), vec![b'a'; 4096]).unwrap();
    let out = run(
        &env,
        Some("agent"),
        &[
            "--json",
            "run",
            "--max-size",
            "1000",
            "--",
            "sh",
            "-c",
            "echo b > big.bin; echo c > gone.txt",
        ],
    );
    let r: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    assert_eq!(r["changes"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(
        r["unrecorded"][0],
        serde_json::json!({"path": "big.bin", "reason": "too-big", "size": 4096})
    );
    let text = ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert!(text.contains("gone.txt"), "{text}");
    assert!(
        text.contains("not restored, never backed up: big.bin"),
        "the undo says so: {text}"
    );
    assert_eq!(
        util::read_text(env.path("big.bin")),
        "b\n",
        "not restored: never backed up"
    );
}

#[test]
fn the_log_in_json_says_which_entries_a_scan_found() {
    let env = workspace(false);
    ok(
        run(
            &env,
            Some("agent"),
            &["run", "-m", "fmt", "--", "sh", "-c", "echo x > gone.txt"],
        ),
        "run",
    );
    let mut w = env.cmd(Some("agent"));
    w.args(["write", "src/lib.rs", "-m", "w"]);
    util::run_ok(w, b"written\n", "write");
    let log: serde_json::Value =
        serde_json::from_str(&ok(run(&env, Some("agent"), &["--json", "log"]), "log")).unwrap();
    let e = &log["entries"];
    assert_eq!(
        e[0]["scan"]["command"], "sh -c 'echo x > gone.txt'",
        "{log}"
    );
    assert_eq!(e[0]["scan"]["shared_with"], serde_json::json!([]));
    assert!(e[1].get("scan").is_none(), "a write is not a scan's: {log}");
}

#[test]
fn a_store_home_inside_the_workspace_is_out_of_scope() {
    let env = workspace(false);
    let home = env.path("store-home");
    let out = env
        .cmd(Some("agent"))
        .env("TURNBACK_HOME", &home)
        .args(["--json", "run", "--", "sh", "-c", "echo x > gone.txt"])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let paths: Vec<&str> = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["gone.txt"],
        "the store's own files are not the command's: {r}"
    );
}

/// What the test command does to directories: a file replaced by a tree, a
/// tree (with a mode of its own) by a file, an empty directory removed (with
/// its mode) and one made.
const SWAPS: &str = "rm tool.sh && mkdir -p tool.sh/sub && echo x > tool.sh/x && echo y > tool.sh/sub/y \
    && rm -r dir && echo now a file > dir && rmdir src/empty && mkdir made";

/// `SWAPS` through `turnback run`, then undo, redo and undo: each time the
/// tree is exactly the one before (or after) the command, and `.git` is
/// untouched; an undo over a file someone put in a directory the command
/// made is refused (exit 3), forced too, touching nothing.
fn swaps_through_run(in_git: bool) {
    let env = workspace(in_git);
    let ws = env.ws.path();
    std::fs::create_dir(ws.join("src/empty")).unwrap();
    std::fs::set_permissions(ws.join("src/empty"), PermissionsExt::from_mode(0o700)).unwrap();
    std::fs::set_permissions(ws.join("dir"), PermissionsExt::from_mode(0o750)).unwrap();
    let git_before = in_git.then(|| util::tree_digest(&ws.join(".git")));
    let start = scope_digest(&env);
    let out = run(&env, None, &["--json", "run", "--", "sh", "-c", SWAPS]);
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let changes: Vec<(String, String, bool)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().into(),
                c["change"].as_str().unwrap().into(),
                c["directory"] == true,
            )
        })
        .collect();
    let want: Vec<(String, String, bool)> = [
        ("dir", "replaced", false),
        ("dir/inner.txt", "deleted", false),
        ("made", "created", true),
        ("src/empty", "deleted", true),
        ("tool.sh", "replaced", true),
        ("tool.sh/sub", "created", true),
        ("tool.sh/sub/y", "created", false),
        ("tool.sh/x", "created", false),
    ]
    .iter()
    .map(|(p, c, d)| (p.to_string(), c.to_string(), *d))
    .collect();
    assert_eq!(changes, want, "{report}");
    let after = scope_digest(&env);
    ok(run(&env, None, &["undo"]), "undo");
    assert_eq!(scope_digest(&env), start, "the undo put every tree back");
    ok(run(&env, None, &["redo"]), "redo");
    assert_eq!(scope_digest(&env), after, "the redo did the command again");
    // Someone's file in the directory the command made in tool.sh's place.
    std::fs::write(ws.join("tool.sh/sub/mine"), "mine\n").unwrap();
    let held = scope_digest(&env);
    for args in [&["--json", "undo"][..], &["--json", "undo", "--force"]] {
        let out = run(&env, None, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("\"not-empty\""), "{args:?}: {err}");
        assert_eq!(scope_digest(&env), held, "{args:?}: nothing touched");
    }
    std::fs::remove_file(ws.join("tool.sh/sub/mine")).unwrap();
    ok(run(&env, None, &["undo"]), "undo");
    assert_eq!(scope_digest(&env), start, "and undone again");
    if let Some(before) = git_before {
        assert_eq!(
            util::tree_digest(&ws.join(".git")),
            before,
            ".git is byte-identical"
        );
    }
}

#[test]
fn files_and_directories_swapped_undo_and_redo_through_run_in_git() {
    if has_git("scan::files_and_directories_swapped_undo_and_redo_through_run_in_git") {
        swaps_through_run(true);
    }
}

#[test]
fn files_and_directories_swapped_undo_and_redo_through_run_outside_git() {
    swaps_through_run(false);
}

/// The same through the two-process bracket, ended by a rollback: every
/// tree back, nothing recorded.
#[test]
fn a_rollback_in_another_process_puts_swapped_trees_back() {
    let env = workspace(false);
    std::fs::create_dir(env.path("src/empty")).unwrap();
    let start = scope_digest(&env);
    let id = ok(
        run(&env, Some("agent"), &["checkpoint", "--scan", "-m", "c"]),
        "checkpoint --scan",
    );
    let sh = env
        .command("sh", None)
        .args(["-c", SWAPS])
        .status()
        .unwrap();
    assert!(sh.success());
    ok(
        run(&env, Some("agent"), &["rollback", id.trim()]),
        "rollback",
    );
    assert_eq!(scope_digest(&env), start);
    let s = Store::new(env.home.path()).open_session("agent").unwrap();
    assert!(s.entries().unwrap().is_empty());
}

/// A rollback over a file the command replaced by a directory that now holds
/// a file the scan did not record (an ignored log) is refused up front, as
/// an undo is (`not-empty`, exit code 3, the file named), touching nothing;
/// the scan stays open and rolls back once the log is gone.
#[test]
fn a_rollback_over_a_swapped_directory_holding_an_ignored_file_is_refused_up_front() {
    let env = workspace(false);
    let start = scope_digest(&env);
    let id = ok(
        run(&env, Some("agent"), &["checkpoint", "--scan", "-m", "c"]),
        "checkpoint --scan",
    );
    let cmd = "echo changed > src/lib.rs && rm tool.sh && mkdir -p tool.sh/sub \
        && echo x > tool.sh/x && echo log > tool.sh/sub/build.log";
    let sh = env.command("sh", None).args(["-c", cmd]).status().unwrap();
    assert!(sh.success());
    let held = util::tree_digest(env.ws.path());
    let out = run(&env, Some("agent"), &["--json", "rollback", id.trim()]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"not-empty\""), "{err}");
    assert!(
        err.contains("tool.sh/sub/build.log"),
        "names the file: {err}"
    );
    assert_eq!(util::tree_digest(env.ws.path()), held, "nothing touched");
    let text = run(&env, Some("agent"), &["rollback", id.trim()]);
    assert_eq!(text.status.code(), Some(3), "{text:?}");
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(err.contains("tool.sh/sub/build.log"), "{err}");
    assert!(
        err.contains("hint: move what the directory holds elsewhere"),
        "no --force to suggest: {err}"
    );
    std::fs::remove_file(env.path("tool.sh/sub/build.log")).unwrap();
    ok(
        run(&env, Some("agent"), &["rollback", id.trim()]),
        "rollback",
    );
    assert_eq!(scope_digest(&env), start);
}

/// A directory the command made that holds an ignored file stays on undo and
/// on rollback, and each says so (kept, and what it holds), in text and in
/// `--json`, instead of reporting it deleted.
#[test]
fn a_made_directory_kept_for_an_ignored_file_is_reported_kept() {
    let env = workspace(false);
    let cmd = "mkdir -p logs && echo log > logs/run.log && echo x > gone.txt";
    ok(
        run(&env, Some("agent"), &["run", "--", "sh", "-c", cmd]),
        "run",
    );
    let text = ok(run(&env, Some("agent"), &["undo", "--dry-run"]), "preview");
    assert!(
        text.contains("logs: keep (a directory holding logs/run.log"),
        "{text}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&ok(run(&env, Some("agent"), &["--json", "undo"]), "undo")).unwrap();
    let logs = r["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "logs")
        .unwrap()
        .clone();
    assert_eq!(logs["action"], "keep-directory", "{r}");
    assert_eq!(logs["holding"], "logs/run.log", "{r}");
    assert_eq!(util::read_text(env.path("logs/run.log")), "log\n");
    assert_eq!(util::read_text(env.path("gone.txt")), "gone\n");
    // Through the two-process bracket, rolled back.
    let id = ok(
        run(&env, Some("agent"), &["checkpoint", "--scan", "-m", "c"]),
        "checkpoint --scan",
    );
    let sh = env
        .command("sh", None)
        .args(["-c", "mkdir -p out && echo o > out/o.log && echo y > out/y"])
        .status()
        .unwrap();
    assert!(sh.success());
    let text = ok(
        run(&env, Some("agent"), &["rollback", id.trim()]),
        "rollback",
    );
    assert!(text.contains("1 file put back, 1 directory kept"), "{text}");
    assert!(
        text.contains("out  created (a directory); kept: it holds out/o.log"),
        "{text}"
    );
    assert!(!env.path("out/y").exists());
}

/// A `chmod` of a directory through `run` is recorded (`mode-changed`, a
/// directory) and undone and redone, every mode exactly.
#[test]
fn a_directory_chmod_through_run_undoes_and_redoes() {
    let env = workspace(false);
    let start = scope_digest(&env);
    let r: serde_json::Value = serde_json::from_str(&ok(
        run(
            &env,
            Some("agent"),
            &[
                "--json",
                "run",
                "--",
                "sh",
                "-c",
                "chmod 700 src && chmod 711 dir",
            ],
        ),
        "run",
    ))
    .unwrap();
    let changes: Vec<(&str, &str, bool)> = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap(),
                c["change"].as_str().unwrap(),
                c["directory"] == true,
            )
        })
        .collect();
    assert_eq!(
        changes,
        [("dir", "mode-changed", true), ("src", "mode-changed", true)],
        "{r}"
    );
    let after = scope_digest(&env);
    let log = ok(run(&env, Some("agent"), &["log"]), "log");
    assert!(log.contains("directory's mode changed"), "{log}");
    ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert_eq!(scope_digest(&env), start);
    ok(run(&env, Some("agent"), &["redo"]), "redo");
    assert_eq!(scope_digest(&env), after);
    assert_eq!(util::mode_of(&env.path("src")) & 0o777, 0o700);
}

/// `prune` drops the scan baseline (outside git) of a workspace no kept
/// session uses, and says so; the next `run` there builds it again.
#[test]
fn prune_drops_the_baseline_of_a_workspace_no_kept_session_uses() {
    let env = workspace(false);
    let baselines = || {
        std::fs::read_dir(env.home.path().join("baselines"))
            .map(|r| r.count())
            .unwrap_or(0)
    };
    let cmd = ["run", "--", "sh", "-c", "echo x > gone.txt"];
    ok(run(&env, Some("agent"), &cmd), "run");
    assert_eq!(baselines(), 1);
    let all = ["--keep-sessions", "0", "--keep-days", "0"];
    let dry = ok(
        run(&env, None, &[&["prune", "--dry-run"][..], &all].concat()),
        "dry run",
    );
    assert!(
        dry.contains("would remove 1 scan baseline no kept session uses"),
        "{dry}"
    );
    assert_eq!(baselines(), 1, "a dry run deletes nothing");
    let r: serde_json::Value = serde_json::from_str(&ok(
        run(&env, None, &[&["--json", "prune"][..], &all].concat()),
        "prune",
    ))
    .unwrap();
    assert_eq!(r["removed"][0]["id"], "agent", "{r}");
    assert_eq!(r["baselines_removed"], 1, "{r}");
    assert!(r["baseline_bytes"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(baselines(), 0);
    let again = ["run", "--", "sh", "-c", "echo y > gone.txt"];
    ok(run(&env, Some("agent"), &again), "run again");
    assert_eq!(baselines(), 1);
    ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert_eq!(util::read_text(env.path("gone.txt")), "x\n");
}

/// What `run` says of each symbolic link it does not undo: which, what was
/// there and what is, and why, in text. A directory a link replaced is
/// recorded as removed, with what was in it: the undo refuses while the
/// link is in the way (exit code 3), then brings them back.
#[test]
fn run_says_which_links_are_not_undone_and_why() {
    let env = workspace(false);
    let cmd = "ln -s elsewhere made && rm -r dir && ln -s src dir && echo x > gone.txt";
    let text = ok(
        run(&env, Some("agent"), &["run", "--", "sh", "-c", cmd]),
        "run",
    );
    assert!(
        text.contains("made  a symbolic link to elsewhere made: not undone (turnback records no symbolic link, and follows none)"),
        "{text}"
    );
    assert!(
        text.contains("dir  a directory replaced by a symbolic link to src: the link is not undone (turnback records no symbolic link, and follows none); what it replaced comes back with an undo once the link is gone"),
        "{text}"
    );
    assert!(text.contains("dir/inner.txt  deleted"), "{text}");
    let refused = run(&env, Some("agent"), &["undo"]);
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    assert_eq!(
        util::read_text(env.path("gone.txt")),
        "x\n",
        "nothing written"
    );
    std::fs::remove_file(env.path("dir")).unwrap();
    let undo = ok(run(&env, Some("agent"), &["undo"]), "undo");
    assert!(undo.contains("never backed up: made"), "{undo}");
    assert_eq!(util::read_text(env.path("gone.txt")), "gone\n");
    assert_eq!(util::read_text(env.path("dir/inner.txt")), "inner\n");
}

/// The one git index cache file of the store, if there is one.
fn git_index_cache(env: &Env) -> Option<Vec<u8>> {
    let dirs = std::fs::read_dir(env.home.path().join("baselines")).ok()?;
    let mut found: Vec<Vec<u8>> = dirs
        .filter_map(|d| std::fs::read(d.ok()?.path().join("git-index")).ok())
        .collect();
    assert!(found.len() <= 1, "one workspace, one cache");
    found.pop()
}

/// With `GIT_DIR` pointing at another repository (as under some git hooks)
/// git lists that repository's index, so the listing cached from the
/// workspace's own `.git/index` must be neither used nor written: used, it
/// would vouch for clean files by objects the other repository lacks, and
/// their undo would have nothing to put back.
#[test]
fn git_settings_that_point_elsewhere_bypass_the_git_listing_cache() {
    if !has_git("scan::git_settings_that_point_elsewhere_bypass_the_git_listing_cache") {
        return;
    }
    let env = workspace(true);
    ok(run(&env, Some("a"), &["run", "--", "true"]), "first run");
    let cached = git_index_cache(&env).expect("the first run caches git's listing");

    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["init", "-q"]);
    let out = env
        .cmd(Some("a"))
        .args(["run", "--", "sh", "-c", "echo changed > src/lib.rs"])
        .env("GIT_DIR", other.path().join(".git"))
        .env("GIT_WORK_TREE", env.ws.path())
        .output()
        .unwrap();
    ok(out, "run with GIT_DIR elsewhere");
    assert_eq!(
        git_index_cache(&env).as_ref(),
        Some(&cached),
        "no listing of another index is cached under this one's key"
    );
    ok(run(&env, Some("a"), &["undo"]), "undo");
    assert_eq!(util::read_text(env.path("src/lib.rs")), "fn lib() {}\n");
}

/// A clean tracked file whose object git no longer has (a pruned or
/// damaged repository, a partial clone offline): its before-contents are
/// gone with git's copy, so it is reported as never backed up, and the rest
/// of the bracket is recorded and undoes, rather than the commit failing.
#[test]
fn a_clean_file_whose_git_object_is_gone_is_reported_and_the_rest_recorded() {
    if !has_git("scan::a_clean_file_whose_git_object_is_gone_is_reported_and_the_rest_recorded") {
        return;
    }
    let env = workspace(true);
    let oid = Command::new("git")
        .args(["rev-parse", ":src/lib.rs"])
        .current_dir(env.ws.path())
        .output()
        .unwrap();
    let oid = String::from_utf8(oid.stdout).unwrap();
    let oid = oid.trim();
    let object = env.path(&format!(".git/objects/{}/{}", &oid[..2], &oid[2..]));
    std::fs::remove_file(object).unwrap();
    let cmd = "echo changed > src/lib.rs && echo new > new.txt";
    let said = ok(run(&env, Some("a"), &["run", "--", "sh", "-c", cmd]), "run");
    assert!(
        said.contains("src/lib.rs  not backed up: git's copy is gone"),
        "{said}"
    );
    let undo = ok(run(&env, Some("a"), &["undo"]), "undo");
    assert!(undo.contains("never backed up: src/lib.rs"), "{undo}");
    assert!(!env.path("new.txt").exists(), "{undo}");
    assert_eq!(util::read_text(env.path("src/lib.rs")), "changed\n");
}

/// A symbolic link planted as the store's `baselines/` directory, or as one
/// workspace's baseline under it, is refused as every other store
/// directory is (`unsafe-store`), and nothing is written through it.
#[test]
fn a_symbolic_link_planted_as_a_baseline_directory_is_refused() {
    let env = workspace(false);
    let outside = tempfile::tempdir().unwrap();
    let planted = outside.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    let baselines = env.home.path().join("baselines");
    let refused = |what: &str| {
        let out = run(&env, Some("agent"), &["--json", "run", "--", "true"]);
        assert!(!out.status.success(), "{what}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let v: serde_json::Value = serde_json::from_str(err.trim()).unwrap_or_else(|e| {
            panic!("{what}: stderr is not JSON ({e}): {err}");
        });
        assert_eq!(v["error"]["kind"], "unsafe-store", "{what}: {v}");
        assert_eq!(
            std::fs::read_dir(&planted).unwrap().count(),
            0,
            "{what}: written through the link"
        );
    };
    // Before any scan: `baselines/` itself a link.
    std::fs::create_dir_all(env.home.path()).unwrap();
    std::os::unix::fs::symlink(&planted, &baselines).unwrap();
    refused("baselines/ a link");
    // After a scan: the workspace's baseline a link.
    std::fs::remove_file(&baselines).unwrap();
    ok(run(&env, Some("agent"), &["run", "--", "true"]), "run");
    let key = std::fs::read_dir(&baselines)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .expect("a baseline");
    std::fs::remove_dir_all(&key).unwrap();
    std::os::unix::fs::symlink(&planted, &key).unwrap();
    refused("baselines/<key> a link");
    // Its blobs a link.
    std::fs::remove_file(&key).unwrap();
    ok(run(&env, Some("agent"), &["run", "--", "true"]), "run");
    let blobs = key.join("blobs");
    std::fs::remove_dir_all(&blobs).unwrap();
    std::os::unix::fs::symlink(&planted, &blobs).unwrap();
    refused("baselines/<key>/blobs a link");
}

/// The disk the files directly in `dir` take, in allocated blocks (what
/// `du` counts), and how many there are.
fn disk_of(dir: &Path) -> (u64, usize) {
    use std::os::unix::fs::MetadataExt;
    let Ok(read) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    read.flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .fold((0, 0), |(b, n), m| (b + m.blocks() * 512, n + 1))
}

/// The blobs directory of the one workspace baseline of `env`'s store.
fn baseline_blobs(env: &Env) -> std::path::PathBuf {
    let all = env.home.path().join("baselines");
    let mut keys: Vec<_> = std::fs::read_dir(&all)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    keys.pop().unwrap().join("blobs")
}

/// Issue 6: outside git every file is copied into the workspace's baseline;
/// under `TURNBACK_MAX_BASELINE_BYTES` the copies stop at the cap, and a
/// change to a file not copied is reported not backed up (the run's report,
/// the undo), never lost silently. `status`, `sessions` and `config` count
/// the baselines' disk.
#[test]
fn a_scan_baseline_stays_within_its_cap_and_says_what_it_did_not_back_up() {
    let env = Env::new();
    let n = 100;
    // Each different: the same contents would be one copy.
    let contents = |i: usize| format!("{i:03}\n").repeat(2_500).into_bytes();
    for i in 0..n {
        std::fs::write(env.path(&format!("f{i:03}.txt")), contents(i)).unwrap();
    }
    let cap: u64 = 256 << 10;
    let capped = |args: &[&str]| {
        let mut c = env.cmd(Some("agent"));
        c.env("TURNBACK_MAX_BASELINE_BYTES", "256K").args(args);
        c.output().unwrap()
    };
    let out = capped(&[
        "--json",
        "run",
        "--",
        "sh",
        "-c",
        "for f in f*.txt; do echo b > $f; done",
    ]);
    let r: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let (disk, blobs) = disk_of(&baseline_blobs(&env));
    assert!(
        disk <= cap,
        "{disk} bytes of baseline over the cap of {cap} ({blobs} blobs)"
    );
    assert!(blobs > 0, "what fits is still copied");
    let changes = r["changes"].as_array().unwrap();
    let unrecorded = r["unrecorded"].as_array().unwrap();
    assert_eq!(changes.len() + unrecorded.len(), n, "{r}");
    assert_eq!(changes.len(), blobs, "a change for each copy: {r}");
    assert!(!unrecorded.is_empty(), "{r}");
    assert!(unrecorded.iter().all(|u| u["reason"] == "no-backup"), "{r}");
    // In words, why: a file that can never fit.
    std::fs::write(env.path("big.bin"), vec![b'a'; 300 << 10]).unwrap();
    let text = ok(
        capped(&["run", "--", "sh", "-c", "echo c > big.bin"]),
        "run",
    );
    assert!(text.contains("scan baseline is full"), "{text}");
    // The undo (of the first run: the second recorded nothing) restores
    // what was copied and names what it cannot.
    let undo = ok(capped(&["undo"]), "undo");
    assert!(undo.contains("not restored, never backed up"), "{undo}");
    let restored = (0..n)
        .filter(|&i| util::read(env.path(&format!("f{i:03}.txt"))) == contents(i))
        .count();
    assert_eq!(restored, blobs, "{undo}");
    // Counted where a person looks.
    let status: serde_json::Value =
        serde_json::from_str(&ok(capped(&["--json", "status"]), "status")).unwrap();
    assert_eq!(status["store"]["baselines"]["count"], 1, "{status}");
    let counted = status["store"]["baselines"]["bytes"].as_u64().unwrap();
    // What is on the disk now: the second bracket's beginning may have
    // dropped copies the first one needed, so not `disk` of before.
    let (disk_now, _) = disk_of(&baseline_blobs(&env));
    assert!(counted >= disk_now, "{disk_now} bytes on disk: {status}");
    let text = ok(capped(&["status"]), "status");
    assert!(text.contains("1 workspace baseline"), "{text}");
    let sessions: serde_json::Value =
        serde_json::from_str(&ok(capped(&["--json", "sessions"]), "sessions")).unwrap();
    assert_eq!(sessions["baselines"]["count"], 1, "{sessions}");
    let text = ok(capped(&["sessions"]), "sessions");
    assert!(text.contains("1 workspace baseline"), "{text}");
    let config: serde_json::Value =
        serde_json::from_str(&ok(capped(&["--json", "config"]), "config")).unwrap();
    assert_eq!(config["baselines"]["bytes"], counted, "{config}");
    let max = config["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "max_baseline_bytes")
        .cloned();
    assert_eq!(
        max.as_ref().map(|m| &m["value"]),
        Some(&serde_json::json!(cap)),
        "{config}"
    );
    let text = ok(capped(&["config"]), "config");
    assert!(text.contains("max_baseline_bytes"), "{text}");
    assert!(text.contains("1 workspace baseline"), "{text}");
}

/// Issue 6: a file changed by one command after another is copied into the
/// baseline again by each beginning; the old copy goes once the baseline
/// holds the new one and no open scan names it. A file the commands delete
/// leaves no copy behind.
#[test]
fn a_baseline_keeps_only_the_copies_it_still_needs() {
    let env = workspace(false);
    let files = || {
        util::tree_digest(env.ws.path())
            .keys()
            .filter(|p| std::fs::symlink_metadata(env.ws.path().join(p)).is_ok_and(|m| m.is_file()))
            .count()
    };
    for i in 0..5 {
        let cmd = format!("echo {i} >> src/lib.rs && echo {i} > made{i}.txt");
        ok(
            run(&env, Some("agent"), &["run", "--", "sh", "-c", &cmd]),
            "run",
        );
    }
    ok(
        run(
            &env,
            Some("agent"),
            &["run", "--", "sh", "-c", "rm made0.txt made1.txt"],
        ),
        "run",
    );
    ok(run(&env, Some("agent"), &["run", "--", "true"]), "run");
    let (_, blobs) = disk_of(&baseline_blobs(&env));
    let n = files();
    assert!(blobs <= n, "{blobs} copies for {n} files");
    // Every change still undoes: the session holds its own copies.
    for _ in 0..6 {
        ok(run(&env, Some("agent"), &["undo"]), "undo");
    }
    assert_eq!(util::read_text(env.path("src/lib.rs")), "fn lib() {}\n");
    assert!(!env.path("made0.txt").exists());
}
