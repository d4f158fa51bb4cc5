//! A hook line its agent runs on every tool call must never exit 2 (which
//! Claude Code reads as "block") by accident: empty variables count as
//! unset, and a line this turnback cannot read (an unknown agent or flag, a
//! variable it cannot take) tells the person and lets the tool go ahead.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output};

use serde_json::Value;

use crate::hooks::{fixture, hook_cmd, system_message};
use crate::util::{Env, run_with_input};

fn write_event(env: &Env) -> Value {
    std::fs::write(env.path("notes.txt"), "before\n").unwrap();
    let v = fixture(env, "claude-code-2.1.332/PreToolUse-Write.json");
    let file = env.path("notes.txt");
    crate::hooks::with(v, "/tool_input/file_path", file.to_str().unwrap().into())
}

fn run(cmd: Command, event: &Value) -> Output {
    run_with_input(cmd, event.to_string().as_bytes())
}

/// `TURNBACK_HOME=` and `TURNBACK_WORKSPACE=` are unset, not values clap
/// refuses: the hook exits 0 and backs the file up in the default home.
#[test]
fn an_empty_variable_counts_as_unset_and_the_hook_still_protects() {
    let env = Env::new();
    let event = write_event(&env);
    let home_dir = tempfile::tempdir().unwrap();
    let mut c = hook_cmd(&env, "claude-code");
    c.env("TURNBACK_HOME", "")
        .env("TURNBACK_WORKSPACE", "")
        .env("HOME", home_dir.path())
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_DATA_HOME");
    let out = run(c, &event);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let sessions = home_dir.path().join(".local/state/turnback/sessions");
    let made: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap_or_else(|e| panic!("no store in the default home {}: {e}", sessions.display()))
        .collect();
    assert_eq!(made.len(), 1, "one session backed the file up");
}

/// A hook line this turnback cannot read (a variable that is not UTF-8, an
/// agent it does not know, a flag from a newer turnback) exits 0 with a
/// message for the person; only `--strict` on the line makes it block.
#[test]
fn a_hook_line_that_cannot_be_read_never_blocks_unless_strict() {
    let env = Env::new();
    let event = write_event(&env);
    let mut bad_session = hook_cmd(&env, "claude-code");
    bad_session.env("TURNBACK_SESSION", OsStr::from_bytes(b"caf\xe9"));
    let mut unknown_agent = env.cmd(None);
    unknown_agent.args(["hook", "no-such-agent"]);
    let mut newer_flag = hook_cmd(&env, "claude-code");
    newer_flag.arg("--from-the-future");
    for (what, cmd) in [
        ("a session that is not UTF-8", bad_session),
        ("an unknown agent", unknown_agent),
        ("an unknown flag", newer_flag),
    ] {
        let out = run(cmd, &event);
        assert_eq!(out.status.code(), Some(0), "{what}: {out:?}");
        let said = system_message(&out);
        assert!(said.contains("nothing is backed up"), "{what}: {said}");
    }
    let mut strict = hook_cmd(&env, "claude-code");
    strict.args(["--strict", "--from-the-future"]);
    let out = run(strict, &event);
    assert_eq!(out.status.code(), Some(2), "--strict blocks: {out:?}");
}

/// A hook with no store to back up into (no `TURNBACK_HOME`, no home
/// directory: a user without a passwd entry, as in some containers) lets
/// the tool go ahead and says nothing is backed up; `--strict` blocks a
/// tool that changes files, and only such a tool.
#[test]
fn a_hook_with_no_store_blocks_only_a_strict_file_tool() {
    use std::os::unix::process::CommandExt;
    let test = crate::util::this_test!();
    if !rustix::process::geteuid().is_root() {
        crate::util::skip(test, "running the hook as a user without a home needs root");
        return;
    }
    let env = Env::new();
    let write = write_event(&env);
    let prompt = fixture(&env, "claude-code-2.1.332/UserPromptSubmit.json");
    let (_bin_dir, bin) = crate::util::bin_for_anyone();
    // A user id no passwd entry names, so no home can be found for it.
    let nobody = 61_234;
    let as_nobody = |strict: bool| {
        let mut c = env.command(&bin, None);
        c.args(["hook", "claude-code"])
            .args(strict.then_some("--strict"))
            .current_dir("/")
            .env_remove("TURNBACK_HOME")
            .env_remove("HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("CLAUDE_PID")
            .uid(nobody)
            .gid(nobody);
        c
    };
    let out = run(as_nobody(false), &write);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = system_message(&out);
    assert!(said.contains("nothing is backed up"), "{said}");

    let out = run(as_nobody(true), &write);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--strict blocks a write: {out:?}"
    );
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(why.contains("nothing is backed up"), "{why}");

    let out = run(as_nobody(true), &prompt);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a prompt is never blocked: {out:?}"
    );
}
