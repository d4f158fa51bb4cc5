//! A real git repository as the workspace (README: "Never writes under
//! `.git` on its own"). turnback's store lives in its home, never in the
//! workspace, and a revert touches only the files its session changed: so
//! writes, moves, removals, undo, revert, rewind, redo, `log` and `diff`
//! through the binary leave `.git` exactly as it was, down to the
//! modification times, and a rewind leaves the person's untracked work alone.
//! A file under `.git` that an agent writes through turnback is not refused:
//! it is backed up and undone like any other. Without `git` the tests say
//! they skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::SystemTime;

use crate::util::{self, Env, this_test};

const SESSION: &str = "agent";

/// `git ARGS` in `dir`, with an identity and no user or system
/// configuration; must succeed.
fn git(dir: &Path, args: &[&str]) -> Output {
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
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A workspace that is a git repository with one commit (`a.txt`,
/// `src/lib.rs`); `None`, after saying so, without git.
fn repository(test: &str) -> Option<Env> {
    let has_git = Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_git {
        util::skip(test, "git is not installed here");
        return None;
    }
    let env = Env::new();
    let ws = env.ws.path();
    git(ws, &["init", "-q"]);
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("a.txt"), "a, committed\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "// lib, committed\n").unwrap();
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "init"]);
    Some(env)
}

/// Everything under `dir` with its kind, mode, contents and modification
/// time (directories included): a write that put back the same bytes shows.
fn exactly(dir: &Path) -> BTreeMap<PathBuf, (String, SystemTime)> {
    let digest = util::tree_digest(dir);
    let mut all: BTreeMap<PathBuf, (String, SystemTime)> = digest
        .into_iter()
        .map(|(rel, what)| {
            let mtime = std::fs::symlink_metadata(dir.join(&rel))
                .unwrap()
                .modified()
                .unwrap();
            (rel, (what, mtime))
        })
        .collect();
    let top = std::fs::metadata(dir).unwrap().modified().unwrap();
    all.insert(PathBuf::from("."), ("dir".into(), top));
    all
}

/// `turnback ARGS` in the session, `stdin` as input; must exit 0.
fn turnback(env: &Env, args: &[&str], stdin: &[u8]) -> String {
    let mut c = env.cmd(Some(SESSION));
    c.args(args).env("NO_COLOR", "1");
    let out = util::run_ok(c, stdin, &format!("turnback {args:?}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn nothing_turnback_does_in_a_git_repository_writes_under_dot_git() {
    let Some(env) = repository(this_test!()) else {
        return;
    };
    let ws = env.ws.path();
    let dot_git = ws.join(".git");
    // The person's own work, never given to turnback.
    std::fs::write(ws.join("untracked.txt"), "mine, not committed\n").unwrap();
    std::fs::write(ws.join("a.txt"), "a, edited by hand first\n").unwrap();
    let git_before = exactly(&dot_git);

    turnback(
        &env,
        &["write", "a.txt", "--message", "m1"],
        b"a by the agent\n",
    );
    turnback(&env, &["write", "src/new.rs", "--message", "m2"], b"new\n");
    turnback(
        &env,
        &["write", "docs/guide.md", "--message", "m3"],
        b"guide\n",
    );
    turnback(&env, &["rm", "src/lib.rs", "--message", "m4"], b"");
    turnback(
        &env,
        &["mv", "src/new.rs", "src/moved.rs", "--message", "m5"],
        b"",
    );
    turnback(&env, &["log"], b"");
    turnback(&env, &["diff"], b"");
    turnback(&env, &["undo"], b"");
    turnback(&env, &["revert", "docs/guide.md"], b"");
    turnback(&env, &["redo"], b"");
    turnback(&env, &["rewind", "m1"], b"");
    turnback(&env, &["redo"], b"");
    turnback(&env, &["rewind", "m1"], b"");
    turnback(&env, &["sessions"], b"");

    let git_after = exactly(&dot_git);
    let changed: Vec<&PathBuf> = git_before
        .keys()
        .chain(git_after.keys())
        .filter(|p| git_before.get(*p) != git_after.get(*p))
        .collect();
    assert!(
        changed.is_empty(),
        "under .git, written, created, deleted or touched: {changed:?}"
    );
    assert!(util::stray_temps(&dot_git).is_empty());
    // Rewound to before the session's first change: the hand edit and the
    // untracked file are as the person left them, and git agrees.
    assert_eq!(
        util::read_text(ws.join("a.txt")),
        "a, edited by hand first\n"
    );
    assert_eq!(
        util::read_text(ws.join("untracked.txt")),
        "mine, not committed\n"
    );
    assert!(!ws.join("docs").exists() && !ws.join("src/moved.rs").exists());
    let status = git(ws, &["status", "--porcelain"]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        " M a.txt\n?? untracked.txt\n"
    );
}

/// The README's claim is "never on its own", not "never": a file under
/// `.git` that an agent writes through turnback (a hook, the configuration)
/// is protected like any other, so that undo takes it back exactly.
#[test]
fn a_file_under_dot_git_written_through_turnback_is_backed_up_and_undone_like_any_other() {
    let Some(env) = repository(this_test!()) else {
        return;
    };
    let ws = env.ws.path();
    let dot_git = ws.join(".git");
    let before = util::tree_digest(&dot_git);
    let config = util::read_text(dot_git.join("config"));

    turnback(
        &env,
        &["write", ".git/hooks/pre-commit", "--message", "hook"],
        b"#!/bin/sh\nexit 0\n",
    );
    let changed = format!("{config}[turnback]\n\tnote = by the agent\n");
    turnback(
        &env,
        &["write", ".git/config", "--message", "config"],
        changed.as_bytes(),
    );
    assert_eq!(util::read_text(dot_git.join("config")), changed);
    let log = turnback(&env, &["log", "--json"], b"");
    let log: serde_json::Value = serde_json::from_str(&log).unwrap();
    let paths: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".git/hooks/pre-commit", ".git/config"]);

    turnback(&env, &["undo"], b"");
    turnback(&env, &["undo"], b"");
    assert_eq!(
        util::tree_digest(&dot_git),
        before,
        "undo left .git changed"
    );
    git(ws, &["status", "--porcelain"]);
}
