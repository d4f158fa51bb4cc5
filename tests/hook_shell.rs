//! Shell calls through `turnback hook`: the recorded Bash / run_shell_command
//! payloads of each agent around a real shell edit the test runs between the
//! two hook calls, then an undo from another process; a call that never got
//! its After, turnback's own commands, and two shell calls of one session at
//! once.

use std::process::{Child, Command};

use serde_json::{Value, json};

use crate::hooks::{fixture, hook, hook_cmd, quiet_hook, spawn_hook, system_message, with};
use crate::util::{Env, read_text, run_ok, tree_digest};

const CLAUDE: &str = "claude-code-2.1.332";
const CODEX: &str = "codex-0.171.0";
const GEMINI: &str = "gemini-cli-0.61.0";

/// A shell edit of every kind: `sed -i`, `rm`, `mv`, a created file.
const EDIT: &str = "sed -i 's/hello/HELLO/' hello.txt && rm somefile && mv old.txt moved.txt \
                    && echo x > created.txt";

fn files(env: &Env) {
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    std::fs::write(env.path("somefile"), "doomed\n").unwrap();
    std::fs::write(env.path("old.txt"), "moving\n").unwrap();
}

/// Runs `command` with `sh -c` in the workspace, as the agent's tool would.
fn shell(env: &Env, command: &str) {
    let st = Command::new("sh")
        .args(["-c", command])
        .current_dir(env.ws.path())
        .status()
        .unwrap();
    assert!(st.success(), "{command}");
}

fn session_of(v: &Value) -> String {
    v["session_id"].as_str().unwrap().to_owned()
}

/// The messages of the session's entries, in order, all committed.
fn messages(env: &Env, session: &str) -> Vec<(String, String)> {
    let s = env.store().open_session(session).unwrap();
    let entries = s.entries().unwrap();
    assert!(entries.iter().all(|e| e.is_committed()), "{entries:?}");
    entries
        .into_iter()
        .map(|e| (e.message_id, e.path))
        .collect()
}

fn undo(env: &Env, session: &str) {
    let mut c = env.cmd(Some(session));
    c.arg("undo");
    run_ok(c, b"", "undo");
}

fn with_command(v: Value, command: &str) -> Value {
    with(v, "/tool_input/command", command.into())
}

#[test]
fn claude_code_bash_edit_is_one_undoable_step() {
    let env = Env::new();
    let f = |n: &str| with_command(fixture(&env, &format!("{CLAUDE}/{n}.json")), EDIT);
    let (pre, post) = (f("PreToolUse-Bash"), f("PostToolUse-Bash"));
    bracket_then_undo_in("claude-code", pre, post, "toolu_fake_a595be52e60c471b", env);
}

#[test]
fn codex_bash_edit_is_one_undoable_step() {
    let env = Env::new();
    let f = |n: &str| with_command(fixture(&env, &format!("{CODEX}/{n}.json")), EDIT);
    let (pre, post) = (f("PreToolUse-Bash"), f("PostToolUse-Bash"));
    bracket_then_undo_in("codex", pre, post, "call_shell_2", env);
}

#[test]
fn gemini_run_shell_command_edit_is_one_undoable_step() {
    let env = Env::new();
    let f = |n: &str| with_command(fixture(&env, &format!("{GEMINI}/{n}.json")), EDIT);
    let (pre, post) = (
        f("BeforeTool-run_shell_command"),
        f("AfterTool-run_shell_command"),
    );
    // No id: the digest of the input, numbered.
    let digest = gemini_message(&pre);
    bracket_then_undo_in("gemini", pre, post, &digest, env);
}

/// The message Gemini's first call with `pre`'s input is recorded under.
fn gemini_message(pre: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"run_shell_command");
    h.update([0]);
    h.update(
        serde_json::to_string(&pre["tool_input"])
            .unwrap()
            .as_bytes(),
    );
    let hex: String = h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("gemini-{hex}#1")
}

/// Pre, the real edit, Post, then the undo from another process: what was
/// recorded is the call's, and one undo puts every file back.
fn bracket_then_undo_in(agent: &str, pre: Value, post: Value, message: &str, env: Env) {
    files(&env);
    let start = tree_digest(env.ws.path());
    let session = session_of(&pre);
    quiet_hook(&env, agent, &pre);
    shell(&env, EDIT);
    quiet_hook(&env, agent, &post);
    assert_eq!(read_text(env.path("hello.txt")), "HELLO\nworld\n");
    let mut got = messages(&env, &session);
    got.sort();
    let want: Vec<(String, String)> = [
        "created.txt",
        "hello.txt",
        "moved.txt",
        "old.txt",
        "somefile",
    ]
    .iter()
    .map(|p| (message.to_owned(), p.to_string()))
    .collect();
    assert_eq!(got, want, "{agent}");
    let s = env.store().open_session(&session).unwrap();
    assert!(s.open_scans().unwrap().is_empty());
    undo(&env, &session);
    assert_eq!(tree_digest(env.ws.path()), start, "{agent}");
}

#[test]
fn a_bash_call_without_its_post_is_committed_at_the_next_prompt_or_interrupt() {
    // Codex sends no PostToolUse after an interrupt: Pre, then Interrupt.
    let env = Env::new();
    files(&env);
    let start = tree_digest(env.ws.path());
    let pre = with_command(
        fixture(&env, &format!("{CODEX}/PreToolUse-Bash.json")),
        EDIT,
    );
    let session = session_of(&pre);
    quiet_hook(&env, "codex", &pre);
    shell(&env, EDIT);
    let s = env.store().open_session(&session).unwrap();
    assert_eq!(s.open_scans().unwrap().len(), 1);
    let interrupt = with(
        fixture(&env, &format!("{CODEX}/Interrupt-none.json")),
        "/session_id",
        session.clone().into(),
    );
    quiet_hook(&env, "codex", &interrupt);
    assert!(s.open_scans().unwrap().is_empty());
    let got: Vec<String> = messages(&env, &session).into_iter().map(|m| m.1).collect();
    assert_eq!(got.len(), 5, "{got:?}");
    undo(&env, &session);
    assert_eq!(tree_digest(env.ws.path()), start);

    // Gemini may give no AfterTool: its next BeforeAgent settles it.
    let env = Env::new();
    files(&env);
    let start = tree_digest(env.ws.path());
    let g = |n: &str| fixture(&env, &format!("{GEMINI}/{n}.json"));
    let pre = with_command(g("BeforeTool-run_shell_command"), EDIT);
    let session = session_of(&pre);
    quiet_hook(&env, "gemini", &pre);
    shell(&env, EDIT);
    quiet_hook(
        &env,
        "gemini",
        &with(g("BeforeAgent"), "/session_id", session.clone().into()),
    );
    assert_eq!(messages(&env, &session).len(), 5);
    undo(&env, &session);
    assert_eq!(tree_digest(env.ws.path()), start);
}

#[test]
fn a_failed_or_interrupted_bash_call_is_committed_too() {
    let env = Env::new();
    files(&env);
    let start = tree_digest(env.ws.path());
    let f = |n: &str| with_command(fixture(&env, &format!("{CLAUDE}/{n}.json")), EDIT);
    let session = session_of(&f("PreToolUse-Bash"));
    quiet_hook(&env, "claude-code", &f("PreToolUse-Bash"));
    // It changed files, then failed.
    shell(&env, EDIT);
    let failed = with(
        f("PostToolUseFailure-Bash"),
        "/tool_use_id",
        "toolu_fake_a595be52e60c471b".into(),
    );
    quiet_hook(&env, "claude-code", &failed);
    let got = messages(&env, &session);
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|m| m.0 == "toolu_fake_a595be52e60c471b"));
    undo(&env, &session);
    assert_eq!(tree_digest(env.ws.path()), start);
}

#[test]
fn a_turnback_command_is_not_scanned() {
    let env = Env::new();
    files(&env);
    let bin = crate::util::bin();
    let command = format!("{} undo", bin.display());
    let f = |n: &str| with_command(fixture(&env, &format!("{CLAUDE}/{n}.json")), &command);
    let session = session_of(&f("PreToolUse-Bash"));
    quiet_hook(&env, "claude-code", &f("PreToolUse-Bash"));
    // What happens meanwhile is turnback's own restore: not the agent's.
    std::fs::write(env.path("hello.txt"), "restored\n").unwrap();
    quiet_hook(&env, "claude-code", &f("PostToolUse-Bash"));
    match env.store().open_session(&session) {
        Ok(s) => {
            assert!(s.open_scans().unwrap().is_empty());
            assert!(s.entries().unwrap().is_empty());
        }
        Err(e) => assert_eq!(e.kind(), turnback_store::ErrorKind::SessionNotFound),
    }
    // A command that only starts like turnback is scanned.
    let sneaky = format!("{} log; rm somefile", bin.display());
    let g = |n: &str| with_command(fixture(&env, &format!("{CLAUDE}/{n}.json")), &sneaky);
    quiet_hook(&env, "claude-code", &g("PreToolUse-Bash"));
    std::fs::remove_file(env.path("somefile")).unwrap();
    quiet_hook(&env, "claude-code", &g("PostToolUse-Bash"));
    let got: Vec<String> = messages(&env, &session).into_iter().map(|m| m.1).collect();
    // Only what changed inside its bracket: hello.txt changed before it.
    assert_eq!(got, ["somefile"]);
}

fn spawn(env: &Env, agent: &str, event: &Value) -> Child {
    spawn_hook(hook_cmd(env, agent), event)
}

fn done(child: Child) -> std::process::Output {
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn two_shell_calls_of_one_session_at_once_each_land_once() {
    // Claude Code runs read-only Bash calls concurrently, each its own Pre,
    // command and Post: the second Pre waits for the first bracket to end.
    let env = Env::new();
    files(&env);
    let start = tree_digest(env.ws.path());
    let base = fixture(&env, &format!("{CLAUDE}/PreToolUse-Bash.json"));
    let session = session_of(&base);
    let call = |event: &str, id: &str, command: &str| {
        let v = with(base.clone(), "/hook_event_name", event.into());
        with(with_command(v, command), "/tool_use_id", id.into())
    };
    let a = "sed -i 's/hello/HELLO/' hello.txt";
    let b = "rm somefile";
    quiet_hook(&env, "claude-code", &call("PreToolUse", "toolu_a", a));
    let b_pre = spawn(&env, "claude-code", &call("PreToolUse", "toolu_b", b));
    std::thread::sleep(std::time::Duration::from_millis(300));
    shell(&env, a);
    quiet_hook(&env, "claude-code", &call("PostToolUse", "toolu_a", a));
    let out = done(b_pre);
    assert!(
        out.stdout.is_empty(),
        "waited, then began: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    shell(&env, b);
    quiet_hook(&env, "claude-code", &call("PostToolUse", "toolu_b", b));
    let got = messages(&env, &session);
    assert_eq!(
        got,
        [
            ("toolu_a".to_owned(), "hello.txt".to_owned()),
            ("toolu_b".to_owned(), "somefile".to_owned())
        ]
    );
    undo(&env, &session);
    assert!(env.path("somefile").exists());
    assert_eq!(read_text(env.path("hello.txt")), "HELLO\nworld\n");
    undo(&env, &session);
    assert_eq!(tree_digest(env.ws.path()), start);
}

#[test]
fn two_shell_calls_whose_pres_both_come_first_chain_and_lose_nothing() {
    // Gemini CLI: Before C, Before D, After D, After C. D's Before gives up
    // waiting, commits C's bracket as it stands and begins its own: each
    // change lands once, and the person is told.
    let env = Env::new();
    files(&env);
    let start = tree_digest(env.ws.path());
    let g = |n: &str| fixture(&env, &format!("{GEMINI}/{n}.json"));
    let c = "sed -i 's/hello/HELLO/' hello.txt";
    let d = "rm somefile && echo x > created.txt";
    let ev = |name: &str, command: &str| {
        let v = g(name);
        with(
            v,
            "/tool_input",
            json!({"command": command, "description": "x"}),
        )
    };
    quiet_hook(&env, "gemini", &ev("BeforeTool-run_shell_command", c));
    shell(&env, c);
    let out = hook(&env, "gemini", &ev("BeforeTool-run_shell_command", d));
    let text = system_message(&out);
    assert!(text.contains("still runs beside"), "{text}");
    shell(&env, d);
    quiet_hook(&env, "gemini", &ev("AfterTool-run_shell_command", d));
    quiet_hook(&env, "gemini", &ev("AfterTool-run_shell_command", c));
    let session = session_of(&g("BeforeTool-run_shell_command"));
    let mut paths: Vec<String> = messages(&env, &session).into_iter().map(|m| m.1).collect();
    paths.sort();
    assert_eq!(paths, ["created.txt", "hello.txt", "somefile"]);
    undo(&env, &session);
    undo(&env, &session);
    assert_eq!(tree_digest(env.ws.path()), start);
}
