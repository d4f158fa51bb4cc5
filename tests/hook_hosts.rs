//! The agents that run turnback's Claude Code hooks with payloads of their
//! own: VS Code's Copilot agent, GitHub Copilot CLI and Cursor, each through
//! `turnback hook claude-code` with payloads built from their published
//! references (`tests/fixtures/hooks/<host>/SOURCES.md` says where each
//! field comes from). For each: an edit backed up and undone, a shell
//! call bracketed and undone, a read-only tool that prints nothing.

use serde_json::Value;

use crate::hooks::{fixture, quiet_hook, with};
use crate::util::{Env, read_text, run_ok, tree_digest};

const VSCODE_SESSION: &str = "6c1f5e0a-3b7d-4e55-9a1c-2f0d8b7e4a91";
const COPILOT_SESSION: &str = "0b7e2c4d-9f1a-4a3e-8c6b-5d4e3f2a1b0c";
const CURSOR_SESSION: &str = "3f9d1c2e-7a4b-4e8f-b0c1-d2e3f4a5b6c7";

/// A shell edit of every kind: `sed -i`, `rm`, `mv`, a created file.
const EDIT: &str = "sed -i 's/hello/HELLO/' hello.txt && rm somefile && mv old.txt moved.txt \
                    && echo x > created.txt";

/// Runs the host's recorded event `name` through the Claude Code hook, which
/// must print nothing.
fn send(env: &Env, host: &str, name: &str) {
    quiet_hook(env, "claude-code", &event(env, host, name));
}

fn event(env: &Env, host: &str, name: &str) -> Value {
    fixture(env, &format!("{host}/{name}.json"))
}

/// The session's entries as (message, path, committed), in order.
fn entries(env: &Env, session: &str) -> Vec<(String, String, bool)> {
    env.store()
        .open_session(session)
        .unwrap()
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| (e.message_id.clone(), e.path.clone(), e.is_committed()))
        .collect()
}

fn undo(env: &Env, session: &str) {
    let mut c = env.cmd(Some(session));
    c.arg("undo");
    run_ok(c, b"", "undo");
}

/// Writes then edits `hello.txt` between each host's file-tool events; both
/// steps are recorded under the host's call ids and undo one by one.
fn edit_then_undo(env: &Env, host: &str, session: &str, steps: [(&str, &str); 2]) {
    for (i, (tool, contents)) in steps.iter().enumerate() {
        let (pre, post) = if host == "cursor" {
            (format!("preToolUse-{tool}"), format!("postToolUse-{tool}"))
        } else {
            (format!("PreToolUse-{tool}"), format!("PostToolUse-{tool}"))
        };
        send(env, host, &pre);
        std::fs::write(env.path("hello.txt"), contents).unwrap();
        send(env, host, &post);
        let got = entries(env, session);
        assert_eq!(got.len(), i + 1, "{host}: {got:?}");
    }
    let stop = if host == "cursor" { "stop" } else { "Stop" };
    send(env, host, stop);
    let got = entries(env, session);
    assert!(
        got.iter().all(|e| e.1 == "hello.txt" && e.2),
        "{host}: {got:?}"
    );
    undo(env, session);
    assert_eq!(read_text(env.path("hello.txt")), steps[0].1, "{host}");
    undo(env, session);
    assert!(!env.path("hello.txt").exists(), "{host}");
}

fn shell_files(env: &Env) {
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    std::fs::write(env.path("somefile"), "doomed\n").unwrap();
    std::fs::write(env.path("old.txt"), "moving\n").unwrap();
}

/// The host's shell call around a real shell edit: every file it touched is
/// one step under the call's message, and one undo puts the tree back.
fn shell_then_undo(env: &Env, host: &str, session: &str, pre: Value, post: Value) {
    shell_files(env);
    let start = tree_digest(env.ws.path());
    quiet_hook(env, "claude-code", &pre);
    let st = std::process::Command::new("sh")
        .args(["-c", EDIT])
        .current_dir(env.ws.path())
        .status()
        .unwrap();
    assert!(st.success());
    quiet_hook(env, "claude-code", &post);
    assert_eq!(read_text(env.path("hello.txt")), "HELLO\nworld\n");
    let got = entries(env, session);
    let mut paths: Vec<&str> = got.iter().map(|e| e.1.as_str()).collect();
    paths.sort();
    let want = [
        "created.txt",
        "hello.txt",
        "moved.txt",
        "old.txt",
        "somefile",
    ];
    assert_eq!(paths, want, "{host}");
    assert!(
        got.iter().all(|e| e.2 && e.0 == got[0].0),
        "{host}: {got:?}"
    );
    let s = env.store().open_session(session).unwrap();
    assert!(s.open_scans().unwrap().is_empty(), "{host}");
    undo(env, session);
    assert_eq!(tree_digest(env.ws.path()), start, "{host}");
}

/// A read-only tool's before and after: nothing printed, nothing recorded,
/// whether or not the session exists yet.
fn read_only_is_silent(env: &Env, host: &str, session: &str, pre: &str, post: &str) {
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    send(env, host, pre);
    send(env, host, post);
    assert!(env.store().open_session(session).is_err(), "{host}");
    let prompt = match host {
        "cursor" => "beforeSubmitPrompt",
        _ => "UserPromptSubmit",
    };
    send(env, host, prompt);
    send(env, host, pre);
    send(env, host, post);
    assert!(entries(env, session).is_empty(), "{host}");
    assert!(
        !env.home.path().join("last-hook-error.json").exists(),
        "{host}"
    );
}

fn with_command(v: Value) -> Value {
    with(v, "/tool_input/command", EDIT.into())
}

#[test]
fn vscode_create_file_and_replace_string_are_backed_up_and_undone() {
    let env = Env::new();
    send(&env, "vscode", "SessionStart");
    send(&env, "vscode", "UserPromptSubmit");
    // create_file in the documented camelCase envelope, the replace in the
    // snake_case one later builds send.
    let steps = [
        ("create_file", "hello\nworld\n"),
        ("replace_string_in_file", "hello\nthere\n"),
    ];
    edit_then_undo(&env, "vscode", VSCODE_SESSION, steps);
}

#[test]
fn vscode_reports_an_edit_before_it_is_on_disk_and_the_next_event_records_it() {
    // VS Code fires PostToolUse when its buffer changed, before the file is
    // written (microsoft/vscode#315926): the backup stays open until the
    // next event, which records the file as it then is.
    let env = Env::new();
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    send(&env, "vscode", "UserPromptSubmit");
    send(&env, "vscode", "PreToolUse-apply_patch");
    send(&env, "vscode", "PostToolUse-apply_patch");
    std::fs::write(env.path("hello.txt"), "hello\nthere\n").unwrap();
    assert_eq!(entries(&env, VSCODE_SESSION).len(), 1);
    assert!(!entries(&env, VSCODE_SESSION)[0].2, "still open");
    // The next tool call, even a read (VS Code runs the hook on every one).
    send(&env, "vscode", "PreToolUse-read_file");
    let got = entries(&env, VSCODE_SESSION);
    assert_eq!(
        got,
        [(
            "call_03Patch__vscode-1764498600003".to_owned(),
            "hello.txt".to_owned(),
            true
        )]
    );
    undo(&env, VSCODE_SESSION);
    assert_eq!(read_text(env.path("hello.txt")), "hello\nworld\n");
}

#[test]
fn vscode_run_in_terminal_is_one_undoable_step() {
    let env = Env::new();
    let pre = with_command(event(&env, "vscode", "PreToolUse-run_in_terminal"));
    let post = with_command(event(&env, "vscode", "PostToolUse-run_in_terminal"));
    shell_then_undo(&env, "vscode", VSCODE_SESSION, pre, post);
}

#[test]
fn vscode_read_only_tool_prints_nothing() {
    let env = Env::new();
    read_only_is_silent(
        &env,
        "vscode",
        VSCODE_SESSION,
        "PreToolUse-read_file",
        "PostToolUse-read_file",
    );
}

#[test]
fn copilot_cli_create_and_str_replace_are_backed_up_and_undone() {
    // No tool_use_id: each call is named by a digest of its input.
    let env = Env::new();
    send(&env, "copilot-cli", "SessionStart");
    send(&env, "copilot-cli", "UserPromptSubmit");
    let steps = [
        ("create", "hello\nworld\n"),
        ("str_replace", "hello\nthere\n"),
    ];
    edit_then_undo(&env, "copilot-cli", COPILOT_SESSION, steps);
}

#[test]
fn copilot_cli_failed_str_replace_is_dropped_when_nothing_changed() {
    let env = Env::new();
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    send(&env, "copilot-cli", "PreToolUse-str_replace");
    send(&env, "copilot-cli", "PostToolUse-str_replace-failure");
    assert!(entries(&env, COPILOT_SESSION).is_empty());
}

#[test]
fn copilot_cli_bash_is_one_undoable_step() {
    let env = Env::new();
    let pre = with_command(event(&env, "copilot-cli", "PreToolUse-bash"));
    let post = with_command(event(&env, "copilot-cli", "PostToolUse-bash"));
    shell_then_undo(&env, "copilot-cli", COPILOT_SESSION, pre, post);
}

#[test]
fn copilot_cli_view_prints_nothing() {
    let env = Env::new();
    read_only_is_silent(
        &env,
        "copilot-cli",
        COPILOT_SESSION,
        "PreToolUse-view",
        "PostToolUse-view",
    );
    // `str_replace_editor` edits, but its `view` command only reads.
    let view = with(
        event(&env, "copilot-cli", "PreToolUse-view"),
        "/tool_name",
        "str_replace_editor".into(),
    );
    let view = with(view, "/tool_input/command", "view".into());
    quiet_hook(&env, "claude-code", &view);
    assert!(entries(&env, COPILOT_SESSION).is_empty());
}

#[test]
fn cursor_write_and_str_replace_are_backed_up_and_undone() {
    let env = Env::new();
    send(&env, "cursor", "sessionStart");
    send(&env, "cursor", "beforeSubmitPrompt");
    let steps = [
        ("Write", "hello\nworld\n"),
        ("StrReplace", "hello\nthere\n"),
    ];
    edit_then_undo(&env, "cursor", CURSOR_SESSION, steps);
}

#[test]
fn cursor_shell_is_one_undoable_step() {
    let env = Env::new();
    let pre = with_command(event(&env, "cursor", "preToolUse-Shell"));
    let post = with_command(event(&env, "cursor", "postToolUse-Shell"));
    shell_then_undo(&env, "cursor", CURSOR_SESSION, pre, post);
}

#[test]
fn cursor_read_prints_nothing() {
    let env = Env::new();
    read_only_is_silent(
        &env,
        "cursor",
        CURSOR_SESSION,
        "preToolUse-Read",
        "postToolUse-Read",
    );
}

#[test]
fn cursor_with_claude_event_names_is_protected_the_same() {
    // Whether Cursor renames its events for Claude Code's hooks is not
    // documented: Claude's names work as well as its own.
    let env = Env::new();
    let rename =
        |name: &str, to: &str| with(event(&env, "cursor", name), "/hook_event_name", to.into());
    quiet_hook(
        &env,
        "claude-code",
        &rename("preToolUse-Write", "PreToolUse"),
    );
    std::fs::write(env.path("hello.txt"), "hello\n").unwrap();
    quiet_hook(
        &env,
        "claude-code",
        &rename("postToolUse-Write", "PostToolUse"),
    );
    let got = entries(&env, CURSOR_SESSION);
    assert_eq!(
        got,
        [(
            "toolu_01CursorWrite".to_owned(),
            "hello.txt".to_owned(),
            true
        )]
    );
}

const OPENCODE_SESSION: &str = "ses_5a1e3c2b7ffeQk2T9vX4mN8pLr";

/// opencode, through turnback's plugin (`turnback hook opencode`): the
/// events the plugin sends for a write, an edit, a failed edit, two calls
/// of one reply at once (before, before, after, after) and a bash command
/// are each recorded under the call's id, and undo one by one.
#[test]
fn opencode_plugin_events_protect_writes_edits_parallel_calls_and_bash() {
    let env = Env::new();
    let send = |name: &str| quiet_hook(&env, "opencode", &event(&env, "opencode", name));
    let write = |name: &str, text: &str| std::fs::write(env.path(name), text).unwrap();
    send("UserPromptSubmit");
    send("PreToolUse-write");
    write("hello.txt", "hello\n");
    send("PostToolUse-write");
    send("PreToolUse-edit");
    write("hello.txt", "hello world\n");
    send("PostToolUse-edit");
    // A failed edit changed nothing: no entry.
    send("PreToolUse-edit-failed");
    send("PostToolUseFailure-edit-failed");
    assert_eq!(entries(&env, OPENCODE_SESSION).len(), 2);
    // Two calls at once: the second's before leaves the first's backup open.
    send("PreToolUse-write-a");
    send("PreToolUse-write-b");
    write("a.txt", "A\n");
    write("b.txt", "B\n");
    send("PostToolUse-write-a");
    send("PostToolUse-write-b");
    let got = entries(&env, OPENCODE_SESSION);
    let ids: Vec<(&str, &str, bool)> = got
        .iter()
        .map(|(m, p, c)| (m.as_str(), p.as_str(), *c))
        .collect();
    assert_eq!(
        ids,
        [
            ("toolu_01Wr1te", "hello.txt", true),
            ("toolu_02Ed1t", "hello.txt", true),
            ("toolu_04Par4", "a.txt", true),
            ("toolu_05Par5", "b.txt", true),
        ]
    );
    send("PreToolUse-bash");
    let mut sh = std::process::Command::new("sh");
    sh.current_dir(env.ws.path()).args([
        "-c",
        "sed -i 's/world/there/' hello.txt && echo made > made.txt",
    ]);
    assert!(sh.status().unwrap().success());
    send("PostToolUse-bash");
    send("PreToolUse-apply_patch");
    write("hello.txt", "patched\n");
    send("PostToolUse-apply_patch");
    send("Stop");
    let got = entries(&env, OPENCODE_SESSION);
    assert!(got.iter().all(|e| e.2), "{got:?}");
    undo(&env, OPENCODE_SESSION);
    assert_eq!(read_text(env.path("hello.txt")), "hello there\n");
    undo(&env, OPENCODE_SESSION);
    assert_eq!(read_text(env.path("hello.txt")), "hello world\n");
    assert!(!env.path("made.txt").exists());
    undo(&env, OPENCODE_SESSION);
    assert!(!env.path("b.txt").exists());
    assert!(env.path("a.txt").exists());
    undo(&env, OPENCODE_SESSION);
    assert!(!env.path("a.txt").exists());
    undo(&env, OPENCODE_SESSION);
    assert_eq!(read_text(env.path("hello.txt")), "hello\n");
    undo(&env, OPENCODE_SESSION);
    assert!(!env.path("hello.txt").exists());
}
