//! `turnback hook`: the payloads each agent sends (recorded from the real
//! agents, in `tests/fixtures/hooks/<agent>-<version>/`) through the real
//! binary, and what cannot be recorded from a real run: failures, hostile
//! and malformed payloads, concurrent hooks, two sessions on one file.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use crate::util::{Env, read_text, run_with_input};

/// Where the recorded payloads are.
pub fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks")
}

/// A recorded payload with its project directory made `env`'s workspace.
pub fn fixture(env: &Env, name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
    let ws = env.ws.path().to_str().unwrap();
    serde_json::from_str(&text.replace("/home/dev/project", ws)).unwrap()
}

/// `v` with `key` set to `value` (a JSON pointer's last step).
pub fn with(mut v: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = if parent.is_empty() {
        &mut v
    } else {
        v.pointer_mut(parent).unwrap()
    };
    target[key] = value;
    v
}

/// `turnback hook AGENT` run in the workspace, without the agents' variables.
pub fn hook_cmd(env: &Env, agent: &str) -> Command {
    let mut c = env.cmd(None);
    c.args(["hook", agent])
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CLAUDE_PID")
        .env_remove("GEMINI_PROJECT_DIR");
    c
}

/// Runs the hook with `event` on stdin; it must exit 0.
pub fn hook(env: &Env, agent: &str, event: &Value) -> Output {
    let out = run_with_input(hook_cmd(env, agent), event.to_string().as_bytes());
    assert_eq!(
        out.status.code(),
        Some(0),
        "hook {agent} {event}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the hook, which must print nothing at all.
pub fn quiet_hook(env: &Env, agent: &str, event: &Value) {
    let out = hook(env, agent, event);
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The `systemMessage` the hook printed (it must print exactly one object).
pub fn system_message(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {text}"));
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    v["systemMessage"].as_str().unwrap().to_owned()
}

/// Starts the hook with `event` on stdin, without waiting for it.
pub fn spawn_hook(mut cmd: Command, event: &Value) -> Child {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    child
}

const CLAUDE: &str = "claude-code-2.1.332";
const CODEX: &str = "codex-0.171.0";
const GEMINI: &str = "gemini-cli-0.61.0";
const CLAUDE_SESSION: &str = "b46b27b9-ae27-4f49-bf2e-18e522906d43";

fn claude(env: &Env, name: &str) -> Value {
    fixture(env, &format!("{CLAUDE}/{name}.json"))
}

fn open_entries(env: &Env, session: &str) -> Vec<String> {
    let Ok(s) = env.store().open_session(session) else {
        return Vec::new();
    };
    s.entries()
        .unwrap()
        .into_iter()
        .filter(|e| !e.is_committed())
        .map(|e| e.path)
        .collect()
}

fn all_entries(env: &Env, session: &str) -> Vec<(String, String, bool)> {
    env.store()
        .open_session(session)
        .unwrap()
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| (e.path.clone(), e.message_id.clone(), e.is_committed()))
        .collect()
}

#[test]
fn claude_code_write_then_edit_is_recorded_by_turn_and_rewound_from_another_process() {
    let env = Env::new();
    quiet_hook(&env, "claude-code", &claude(&env, "SessionStart"));
    quiet_hook(&env, "claude-code", &claude(&env, "UserPromptSubmit"));
    quiet_hook(&env, "claude-code", &claude(&env, "PreToolUse-Write"));
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    quiet_hook(&env, "claude-code", &claude(&env, "PostToolUse-Write"));
    let second = with(
        claude(&env, "UserPromptSubmit"),
        "/prompt",
        "now edit it".into(),
    );
    quiet_hook(&env, "claude-code", &second);
    quiet_hook(&env, "claude-code", &claude(&env, "PreToolUse-Edit"));
    std::fs::write(env.path("hello.txt"), "hello\nthere\n").unwrap();
    quiet_hook(&env, "claude-code", &claude(&env, "PostToolUse-Edit"));
    quiet_hook(&env, "claude-code", &claude(&env, "Stop"));
    quiet_hook(&env, "claude-code", &claude(&env, "SessionEnd"));

    let s = env.store().open_session(CLAUDE_SESSION).unwrap();
    let entries = s.entries().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].message_id, "toolu_fake_b0b498463b494652");
    assert_eq!(entries[1].message_id, "toolu_fake_b3391a39a35d4f8d");
    assert!(entries.iter().all(|e| e.is_committed()));
    assert_eq!((entries[0].turn, entries[1].turn), (1, 2));
    let prompts: Vec<_> = s
        .turns()
        .unwrap()
        .into_iter()
        .map(|t| t.turn.prompt)
        .collect();
    assert_eq!(prompts, ["do the thing", "now edit it"]);

    // Another process, by the agent's own session id.
    let mut c = env.cmd(Some(CLAUDE_SESSION));
    c.args(["rewind", "--turn", "2"]);
    crate::util::run_ok(c, b"", "rewind turn 2");
    assert_eq!(read_text(env.path("hello.txt")), "hello\nworld\n");
    let mut c = env.cmd(Some(CLAUDE_SESSION));
    c.args(["rewind", "--turn", "1"]);
    crate::util::run_ok(c, b"", "rewind turn 1");
    assert!(!env.path("hello.txt").exists());
}

#[test]
fn the_hooks_obey_the_settings_and_say_when_they_cannot_read_them() {
    let env = Env::new();
    // One Write hook pair of `file`, with `TURNBACK_MAX_ENTRIES` at `cap`;
    // what the PreToolUse hook said.
    let pair = |file: &str, call: &str, cap: &str| {
        let path = Value::from(env.path(file).to_str().unwrap());
        let call = Value::from(call);
        let pre = with(
            claude(&env, "PreToolUse-Write"),
            "/tool_input/file_path",
            path.clone(),
        );
        let post = with(
            claude(&env, "PostToolUse-Write"),
            "/tool_input/file_path",
            path,
        );
        let run = |event: &Value| {
            let mut c = hook_cmd(&env, "claude-code");
            c.env("TURNBACK_MAX_ENTRIES", cap);
            run_with_input(
                c,
                with(event.clone(), "/tool_use_id", call.clone())
                    .to_string()
                    .as_bytes(),
            )
        };
        let out = run(&pre);
        let said = match out.stdout.is_empty() {
            true => String::new(),
            false => system_message(&out),
        };
        std::fs::write(env.path(file), call.as_str().unwrap()).unwrap();
        run(&post);
        said
    };
    assert_eq!(pair("a.txt", "t1", "1"), "");
    assert_eq!(pair("b.txt", "t2", "1"), "");
    // The cap of one entry evicted the first.
    let entries = all_entries(&env, CLAUDE_SESSION);
    assert_eq!(entries, [("b.txt".to_owned(), "t2".to_owned(), true)]);
    // Settings that do not parse: the defaults, and the person is told.
    let said = pair("c.txt", "t3", "lots");
    assert!(said.contains("settings were not read"), "{said}");
    assert!(said.contains("TURNBACK_MAX_ENTRIES"), "{said}");
    assert_eq!(all_entries(&env, CLAUDE_SESSION).len(), 2);
}

#[test]
fn claude_code_project_dir_is_the_workspace_and_a_relative_path_is_resolved() {
    let env = Env::new();
    std::fs::create_dir(env.path("sub")).unwrap();
    std::fs::write(env.path("sub/a.txt"), "a\n").unwrap();
    let pre = with(
        claude(&env, "PreToolUse-Write"),
        "/tool_input/file_path",
        "a.txt".into(),
    );
    let pre = with(pre, "/cwd", env.path("sub").to_str().unwrap().into());
    let mut c = hook_cmd(&env, "claude-code");
    c.env("CLAUDE_PROJECT_DIR", env.ws.path());
    let out = run_with_input(c, pre.to_string().as_bytes());
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let s = env.store().open_session(CLAUDE_SESSION).unwrap();
    let e = &s.entries().unwrap()[0];
    assert_eq!(e.path, "sub/a.txt");
    assert_eq!(
        std::fs::canonicalize(&e.workspace.path).unwrap(),
        std::fs::canonicalize(env.ws.path()).unwrap()
    );
}

#[test]
fn a_failed_or_denied_edit_is_settled_dropped_if_unchanged_and_committed_if_changed() {
    let env = Env::new();
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    std::fs::write(env.path("other.txt"), "other\n").unwrap();
    // A failed edit: PostToolUseFailure for the call.
    let pre = claude(&env, "PreToolUse-Edit");
    quiet_hook(&env, "claude-code", &pre);
    assert_eq!(open_entries(&env, CLAUDE_SESSION), ["hello.txt"]);
    let failed = with(pre.clone(), "/hook_event_name", "PostToolUseFailure".into());
    let failed = with(failed, "/error", "String to replace not found".into());
    quiet_hook(&env, "claude-code", &failed);
    assert!(all_entries(&env, CLAUDE_SESSION).is_empty());

    // A denied edit: a Pre and then nothing for that call; the next event of
    // the session settles it. Here the file did change (half a write).
    let denied = with(pre.clone(), "/tool_use_id", "toolu_denied".into());
    quiet_hook(&env, "claude-code", &denied);
    std::fs::write(env.path("hello.txt"), "half\n").unwrap();
    let other = with(
        claude(&env, "PreToolUse-Write"),
        "/tool_input/file_path",
        env.path("other.txt").to_str().unwrap().into(),
    );
    quiet_hook(&env, "claude-code", &other);
    let got = all_entries(&env, CLAUDE_SESSION);
    assert_eq!(
        got,
        [
            ("hello.txt".into(), "toolu_denied".into(), true),
            (
                "other.txt".into(),
                "toolu_fake_b0b498463b494652".into(),
                false
            ),
        ]
    );
    // Unchanged when the session stops: dropped.
    quiet_hook(&env, "claude-code", &claude(&env, "Stop"));
    assert_eq!(all_entries(&env, CLAUDE_SESSION).len(), 1);
}

#[test]
fn codex_apply_patch_adds_updates_moves_and_deletes_and_an_interrupt_settles() {
    let env = Env::new();
    std::fs::write(env.path("existing.txt"), "line one\nline two\nline three\n").unwrap();
    let fx = |n: &str| fixture(&env, &format!("{CODEX}/{n}.json"));
    let session = fx("SessionStart-startup")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    quiet_hook(&env, "codex", &fx("SessionStart-startup"));
    quiet_hook(&env, "codex", &fx("UserPromptSubmit-none"));
    quiet_hook(&env, "codex", &fx("PreToolUse-apply_patch"));
    assert_eq!(open_entries(&env, &session), ["added.txt", "existing.txt"]);
    std::fs::write(
        env.path("added.txt"),
        "hello from the fake model\nsecond line\n",
    )
    .unwrap();
    std::fs::write(
        env.path("existing.txt"),
        "line one\nline two (patched by codex)\nline three\n",
    )
    .unwrap();
    quiet_hook(&env, "codex", &fx("PostToolUse-apply_patch"));
    assert!(open_entries(&env, &session).is_empty());

    // A patch that moves one file and deletes another; Codex fires no
    // PostToolUse when it is interrupted: Interrupt settles it.
    let patch = "*** Begin Patch\n*** Update File: existing.txt\n*** Move to: moved/existing.txt\n@@\n-line one\n+LINE ONE\n*** Delete File: added.txt\n*** Update File: untouched.txt\n@@\n-x\n+y\n*** End Patch\n";
    std::fs::write(env.path("untouched.txt"), "x\n").unwrap();
    let pre = with(
        fx("PreToolUse-apply_patch"),
        "/tool_input/command",
        patch.into(),
    );
    let pre = with(pre, "/tool_use_id", "call_patch_2".into());
    quiet_hook(&env, "codex", &pre);
    assert_eq!(
        open_entries(&env, &session),
        [
            "existing.txt",
            "moved/existing.txt",
            "added.txt",
            "untouched.txt"
        ]
    );
    std::fs::create_dir(env.path("moved")).unwrap();
    std::fs::rename(env.path("existing.txt"), env.path("moved/existing.txt")).unwrap();
    std::fs::remove_file(env.path("added.txt")).unwrap();
    let interrupt = with(fx("Interrupt-none"), "/session_id", session.clone().into());
    quiet_hook(&env, "codex", &interrupt);
    let got: Vec<_> = all_entries(&env, &session)
        .into_iter()
        .filter(|e| e.1 == "call_patch_2")
        .map(|e| (e.0, e.2))
        .collect();
    // untouched.txt did not change: its entry was dropped.
    assert_eq!(
        got,
        [
            ("existing.txt".into(), true),
            ("moved/existing.txt".into(), true),
            ("added.txt".into(), true)
        ]
    );

    let mut c = env.cmd(Some(&session));
    c.args(["rewind", "--turn", "1"]);
    crate::util::run_ok(c, b"", "rewind");
    assert_eq!(
        read_text(env.path("existing.txt")),
        "line one\nline two\nline three\n"
    );
    assert!(!env.path("added.txt").exists());
    assert!(!env.path("moved").exists());
    assert_eq!(read_text(env.path("untouched.txt")), "x\n");
}

#[test]
fn gemini_pairs_before_and_after_by_input_and_resolves_relative_paths() {
    let env = Env::new();
    let fx = |n: &str| fixture(&env, &format!("{GEMINI}/{n}.json"));
    std::fs::write(env.path("existing.txt"), "say old greeting here\n").unwrap();
    let session = fx("BeforeAgent")["session_id"].as_str().unwrap().to_owned();
    quiet_hook(&env, "gemini", &fx("SessionStart"));
    quiet_hook(&env, "gemini", &fx("BeforeAgent"));
    quiet_hook(&env, "gemini", &fx("BeforeTool-write_file"));
    std::fs::write(env.path("new_file.txt"), "hello from fake model\nline2\n").unwrap();
    quiet_hook(&env, "gemini", &fx("AfterTool-write_file"));
    quiet_hook(&env, "gemini", &fx("BeforeTool-replace"));
    std::fs::write(env.path("existing.txt"), "say new greeting here\n").unwrap();
    quiet_hook(&env, "gemini", &fx("AfterTool-replace"));
    // A failed replace still fires AfterTool, with an error: dropped.
    let failing = with(
        fx("AfterTool-replace-error"),
        "/session_id",
        session.clone().into(),
    );
    let mut before = failing.clone();
    before["hook_event_name"] = "BeforeTool".into();
    before.as_object_mut().unwrap().remove("tool_response");
    quiet_hook(&env, "gemini", &before);
    quiet_hook(&env, "gemini", &failing);
    // A relative path, resolved against cwd.
    let rel = with(
        fx("BeforeTool-write_file-relative"),
        "/session_id",
        session.clone().into(),
    );
    quiet_hook(&env, "gemini", &rel);
    std::fs::create_dir(env.path("sub")).unwrap();
    std::fs::write(env.path("sub/p_b.txt"), "B\n").unwrap();
    let mut after = rel.clone();
    after["hook_event_name"] = "AfterTool".into();
    after["tool_response"] = serde_json::json!({"llmContent": "ok", "returnDisplay": "ok"});
    quiet_hook(&env, "gemini", &after);
    quiet_hook(&env, "gemini", &fx("AfterAgent"));

    let got = all_entries(&env, &session);
    let paths: Vec<_> = got.iter().map(|e| (e.0.as_str(), e.2)).collect();
    assert_eq!(
        paths,
        [
            ("new_file.txt", true),
            ("existing.txt", true),
            ("sub/p_b.txt", true)
        ]
    );
    // No id from Gemini: each call a digest, numbered.
    assert!(
        got.iter()
            .all(|e| e.1.starts_with("gemini-") && e.1.ends_with("#1")),
        "{got:?}"
    );

    let mut c = env.cmd(Some(&session));
    c.args(["rewind", "--turn", "1"]);
    crate::util::run_ok(c, b"", "rewind");
    assert_eq!(
        read_text(env.path("existing.txt")),
        "say old greeting here\n"
    );
    assert!(!env.path("new_file.txt").exists() && !env.path("sub").exists());
}

#[test]
fn gemini_identical_calls_pair_first_in_first_out() {
    let env = Env::new();
    let fx = |n: &str| fixture(&env, &format!("{GEMINI}/{n}.json"));
    let session = fx("BeforeTool-write_file")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut after = fx("AfterTool-write_file");
    after["tool_response"] = serde_json::json!({});
    for round in 1..=2 {
        quiet_hook(&env, "gemini", &fx("BeforeTool-write_file"));
        std::fs::write(env.path("new_file.txt"), format!("round {round}\n")).unwrap();
        quiet_hook(&env, "gemini", &after);
    }
    let got = all_entries(&env, &session);
    assert_eq!(got.len(), 2);
    assert!(
        got[0].1.ends_with("#1") && got[1].1.ends_with("#2"),
        "{got:?}"
    );
    assert!(got.iter().all(|e| e.2));
}

#[test]
fn shell_calls_that_change_nothing_record_nothing_and_print_nothing() {
    let env = Env::new();
    for name in [
        "PreToolUse-Bash",
        "PostToolUse-Bash",
        "PostToolUseFailure-Bash",
    ] {
        quiet_hook(&env, "claude-code", &claude(&env, name));
    }
    let fx = |n: &str| fixture(&env, &format!("{CODEX}/{n}.json"));
    for name in [
        "PreToolUse-Bash",
        "PostToolUse-Bash",
        "PreToolUse-Bash-subagent",
    ] {
        quiet_hook(&env, "codex", &fx(name));
    }
    let gx = |n: &str| fixture(&env, &format!("{GEMINI}/{n}.json"));
    for name in [
        "BeforeTool-run_shell_command",
        "AfterTool-run_shell_command",
        "AfterTool-run_shell_command-exit3",
    ] {
        quiet_hook(&env, "gemini", &gx(name));
    }
    // The fixtures' commands did not run here: each bracket found nothing,
    // so nothing is recorded; only the Codex subagent's call, which got no
    // After, still has its bracket open.
    let store = env.store();
    let mut open = Vec::new();
    for id in store.session_ids().unwrap() {
        let s = store.open_session(&id).unwrap();
        assert!(s.entries().unwrap().is_empty(), "{id}");
        open.extend(s.open_scans().unwrap().into_iter().map(|o| o.message_id));
    }
    let sub = fixture(&env, &format!("{CODEX}/PreToolUse-Bash-subagent.json"));
    assert_eq!(open, [sub["tool_use_id"].as_str().unwrap()]);
}

#[test]
fn every_recorded_payload_is_accepted_quietly() {
    // Each agent's every event, in a workspace where the files exist: exit 0,
    // nothing on stdout.
    for (dir, agent) in [
        (CLAUDE, "claude-code"),
        (CODEX, "codex"),
        (GEMINI, "gemini"),
        // The other agents that run Claude Code's hooks.
        ("vscode", "claude-code"),
        ("copilot-cli", "claude-code"),
        ("cursor", "claude-code"),
    ] {
        let env = Env::new();
        for f in ["hello.txt", "existing.txt", "new_file.txt", "added.txt"] {
            std::fs::write(env.path(f), "x\n").unwrap();
        }
        std::fs::create_dir(env.path("sub")).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(fixtures().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        assert!(names.len() >= 11, "{dir}: {names:?}");
        for n in names {
            quiet_hook(&env, agent, &fixture(&env, &format!("{dir}/{n}")));
        }
    }
}

#[test]
fn malformed_truncated_and_unknown_payloads_are_ignored_with_a_message() {
    let env = Env::new();
    let good = claude(&env, "PreToolUse-Write").to_string();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good.as_bytes()[..good.len() / 2].to_vec()),
        ("not JSON", b"hello".to_vec()),
        ("not an object", b"[1, 2]".to_vec()),
        ("empty", Vec::new()),
        (
            "session_id",
            with(claude(&env, "PreToolUse-Write"), "/session_id", 7.into())
                .to_string()
                .into_bytes(),
        ),
        (
            "session id",
            with(
                claude(&env, "PreToolUse-Write"),
                "/session_id",
                "../../x".into(),
            )
            .to_string()
            .into_bytes(),
        ),
        (
            "cwd",
            with(claude(&env, "PreToolUse-Write"), "/cwd", "relative".into())
                .to_string()
                .into_bytes(),
        ),
        (
            "file_path",
            with(
                claude(&env, "PreToolUse-Write"),
                "/tool_input/file_path",
                Value::Null,
            )
            .to_string()
            .into_bytes(),
        ),
    ];
    for (what, bytes) in cases {
        let out = run_with_input(hook_cmd(&env, "claude-code"), &bytes);
        assert_eq!(out.status.code(), Some(0), "{what}");
        let msg = system_message(&out);
        assert!(msg.starts_with("turnback: "), "{what}: {msg}");
    }
    // An event or a tool turnback does not know: nothing to say.
    let unknown = with(
        claude(&env, "Stop"),
        "/hook_event_name",
        "SomethingNew".into(),
    );
    quiet_hook(&env, "claude-code", &unknown);
    let read = with(
        claude(&env, "PreToolUse-Write"),
        "/tool_name",
        "Read".into(),
    );
    quiet_hook(&env, "claude-code", &read);
    // The last error is kept for `turnback doctor`.
    let kept = std::fs::read_to_string(env.home.path().join("last-hook-error.json")).unwrap();
    assert!(kept.contains("turnback: "), "{kept}");
    assert!(env.store().session_ids().unwrap().is_empty());
}

#[test]
fn hostile_paths_outside_through_a_link_or_a_fifo_are_left_alone() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "keep\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), env.path("filelink")).unwrap();
    let fifo = env.path("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let pre = |path: &Path| {
        with(
            claude(&env, "PreToolUse-Write"),
            "/tool_input/file_path",
            path.to_str().unwrap().into(),
        )
    };
    let cases = [
        (outside.path().join("secret"), "outside the workspace"),
        (
            env.ws.path().join("../x/../secret"),
            "outside the workspace",
        ),
        (env.path("link/secret"), "outside the workspace"),
        (env.path("filelink"), "outside the workspace"),
        (fifo.clone(), "NOT backed up"),
    ];
    for (path, said) in cases {
        let out = hook(&env, "claude-code", &pre(&path));
        let msg = system_message(&out);
        assert!(msg.contains(said), "{}: {msg}", path.display());
    }
    assert_eq!(read_text(outside.path().join("secret")), "keep\n");
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing was written outside");
    assert!(open_entries(&env, CLAUDE_SESSION).is_empty());
}

#[test]
fn strict_blocks_a_tool_whose_backup_failed_and_nothing_else() {
    let env = Env::new();
    let fifo = env.path("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let pre = with(
        claude(&env, "PreToolUse-Write"),
        "/tool_input/file_path",
        fifo.to_str().unwrap().into(),
    );
    let mut c = hook_cmd(&env, "claude-code");
    c.arg("--strict");
    let out = run_with_input(c, pre.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOT backed up"));
    // A good backup is not blocked.
    let ok = claude(&env, "PreToolUse-Write");
    let mut c = hook_cmd(&env, "claude-code");
    c.arg("--strict");
    let out = run_with_input(c, ok.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

/// A `Write` of a large file carries the whole file in its event, twice
/// after it (`tool_input.content`, `tool_response.content`): an event over
/// the 64 MiB the hook reads whole is read on, without the contents it
/// does not need, and the old file is backed up all the same. (What it
/// keeps is capped still, and a call named by a digest pairs up: unit tests
/// of `hooks::large_event`, where a small cap makes them quick; a debug
/// build reads such an event at about 5 MiB/s.)
#[test]
fn an_event_over_64_mib_still_backs_up_its_file() {
    let env = Env::new();
    let big: Value = "x".repeat(65 << 20).into();
    std::fs::write(env.path("hello.txt"), "old\n").unwrap();
    let pre = with(
        claude(&env, "PreToolUse-Write"),
        "/tool_input/content",
        big.clone(),
    );
    quiet_hook(&env, "claude-code", &pre);
    std::fs::write(env.path("hello.txt"), big.as_str().unwrap()).unwrap();
    let post = with(
        claude(&env, "PostToolUse-Write"),
        "/tool_input/content",
        big,
    );
    quiet_hook(&env, "claude-code", &post);
    let entries = all_entries(&env, CLAUDE_SESSION);
    let id = "toolu_fake_b0b498463b494652".to_owned();
    assert_eq!(entries, [("hello.txt".to_owned(), id, true)]);
    let mut c = env.cmd(Some(CLAUDE_SESSION));
    c.arg("undo");
    crate::util::run_ok(c, b"", "undo the large write");
    assert_eq!(read_text(env.path("hello.txt")), "old\n");
}

#[test]
fn a_write_of_the_same_bytes_through_the_hooks_records_nothing() {
    let env = Env::new();
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    quiet_hook(&env, "claude-code", &claude(&env, "UserPromptSubmit"));
    quiet_hook(&env, "claude-code", &claude(&env, "PreToolUse-Write"));
    assert_eq!(open_entries(&env, CLAUDE_SESSION), ["hello.txt"]);
    // The agent's Write tool puts back the bytes the file holds.
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    quiet_hook(&env, "claude-code", &claude(&env, "PostToolUse-Write"));
    assert!(all_entries(&env, CLAUDE_SESSION).is_empty());
    // A real change is still recorded.
    quiet_hook(&env, "claude-code", &claude(&env, "PreToolUse-Edit"));
    std::fs::write(env.path("hello.txt"), "hello\nthere\n").unwrap();
    quiet_hook(&env, "claude-code", &claude(&env, "PostToolUse-Edit"));
    let got = all_entries(&env, CLAUDE_SESSION);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].2, "committed");
}

#[test]
fn parallel_post_tool_use_hooks_all_commit() {
    let env = Env::new();
    let n = 8;
    let pre = |i: usize| {
        let p = with(
            claude(&env, "PreToolUse-Write"),
            "/tool_input/file_path",
            env.path(&format!("f{i}.txt")).to_str().unwrap().into(),
        );
        with(p, "/tool_use_id", format!("toolu_{i}").into())
    };
    for i in 0..n {
        quiet_hook(&env, "claude-code", &pre(i));
        std::fs::write(env.path(&format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    let children: Vec<_> = (0..n)
        .map(|i| {
            let post = with(pre(i), "/hook_event_name", "PostToolUse".into());
            spawn_hook(hook_cmd(&env, "claude-code"), &post)
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    }
    let got = all_entries(&env, CLAUDE_SESSION);
    assert_eq!(got.len(), n);
    assert!(got.iter().all(|e| e.2), "{got:?}");
    let mut c = env.cmd(Some(CLAUDE_SESSION));
    c.args(["rewind", "toolu_0"]);
    crate::util::run_ok(c, b"", "rewind");
    assert!((0..n).all(|i| !env.path(&format!("f{i}.txt")).exists()));
}

#[test]
fn a_second_session_waits_for_the_first_ones_mark_then_backs_up_its_after() {
    let env = Env::new();
    std::fs::write(env.path("shared.txt"), "v0\n").unwrap();
    let edit = |session: &str, id: &str| {
        let p = with(
            claude(&env, "PreToolUse-Edit"),
            "/session_id",
            session.into(),
        );
        let p = with(p, "/tool_use_id", id.into());
        with(
            p,
            "/tool_input/file_path",
            env.path("shared.txt").to_str().unwrap().into(),
        )
    };
    // Session A's agent is this test process (the hook's parent): alive.
    quiet_hook(&env, "claude-code", &edit("sess-a", "a1"));
    // Session B's checkpoint of the same file waits for A's mark.
    let mut b = spawn_hook(hook_cmd(&env, "claude-code"), &edit("sess-b", "b1"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        b.try_wait().unwrap().is_none(),
        "B did not wait for A's mark"
    );
    std::fs::write(env.path("shared.txt"), "v1 by A\n").unwrap();
    let post_a = with(
        edit("sess-a", "a1"),
        "/hook_event_name",
        "PostToolUse".into(),
    );
    quiet_hook(&env, "claude-code", &post_a);
    let out = b.wait_with_output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    std::fs::write(env.path("shared.txt"), "v2 by B\n").unwrap();
    let post_b = with(
        edit("sess-b", "b1"),
        "/hook_event_name",
        "PostToolUse".into(),
    );
    quiet_hook(&env, "claude-code", &post_b);

    // B's backup is A's after: undoing B gives A's version back.
    let b_entry = &env
        .store()
        .open_session("sess-b")
        .unwrap()
        .entries()
        .unwrap()[0];
    let a_entry = &env
        .store()
        .open_session("sess-a")
        .unwrap()
        .entries()
        .unwrap()[0];
    assert!(
        b_entry
            .before
            .same_contents(a_entry.after.as_ref().unwrap())
    );
    let mut c = env.cmd(Some("sess-b"));
    c.arg("undo");
    crate::util::run_ok(c, b"", "undo B");
    assert_eq!(read_text(env.path("shared.txt")), "v1 by A\n");
}

#[test]
fn a_mark_whose_agent_is_gone_is_stale_and_not_waited_for() {
    let env = Env::new();
    std::fs::write(env.path("shared.txt"), "v0\n").unwrap();
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let edit = |session: &str| {
        let p = with(
            claude(&env, "PreToolUse-Edit"),
            "/session_id",
            session.into(),
        );
        with(
            p,
            "/tool_input/file_path",
            env.path("shared.txt").to_str().unwrap().into(),
        )
    };
    let mut c = hook_cmd(&env, "claude-code");
    c.env("CLAUDE_PID", dead.to_string());
    let out = run_with_input(c, edit("sess-dead").to_string().as_bytes());
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(open_entries(&env, "sess-dead"), ["shared.txt"]);
    // Without waiting (a wait would end in "busy" after the lock timeout).
    let out = hook(&env, "claude-code", &edit("sess-live"));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(open_entries(&env, "sess-live"), ["shared.txt"]);
}

#[test]
fn a_hook_run_through_a_shell_marks_the_agent_not_the_shell() {
    // Codex and Gemini CLI run a hook's command line in a shell, which exits
    // with it: the mark must name the agent (here this test), or it would be
    // stale at once and another session would not wait for it.
    let env = Env::new();
    std::fs::write(env.path("existing.txt"), "line one\nline two\nline three\n").unwrap();
    let pre = fixture(&env, &format!("{CODEX}/PreToolUse-apply_patch.json"));
    let mut c = env.command("sh", None);
    // `; :` keeps the shell from replacing itself with turnback.
    c.args(["-c", "\"$0\" hook codex; :"])
        .arg(crate::util::bin());
    let out = run_with_input(c, pre.to_string().as_bytes());
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let session = pre["session_id"].as_str().unwrap();
    let s = env.store().open_session(session).unwrap();
    let file = std::fs::canonicalize(env.path("existing.txt")).unwrap();
    let mark = s.mark_of(&file).expect("the open checkpoint's mark");
    assert_eq!(mark.pid, std::process::id());
}

#[test]
fn parallel_subagents_do_not_settle_each_others_open_edits() {
    // Claude Code runs Task subagents side by side in one session (their
    // events carry `agent_id`): one's hook must not settle the other's
    // checkpoint while its edit is still to come.
    let env = Env::new();
    for f in ["one.txt", "two.txt", "three.txt"] {
        std::fs::write(env.path(f), "old\n").unwrap();
    }
    let call = |event: &str, agent: &str, id: &str, file: &str| {
        let p = with(
            claude(&env, "PreToolUse-Edit"),
            "/hook_event_name",
            event.into(),
        );
        let p = with(p, "/agent_id", agent.into());
        let p = with(p, "/agent_type", "general-purpose".into());
        let p = with(p, "/tool_use_id", id.into());
        with(
            p,
            "/tool_input/file_path",
            env.path(file).to_str().unwrap().into(),
        )
    };
    quiet_hook(
        &env,
        "claude-code",
        &call("PreToolUse", "agent-1", "t1", "one.txt"),
    );
    quiet_hook(
        &env,
        "claude-code",
        &call("PreToolUse", "agent-2", "t2", "two.txt"),
    );
    std::fs::write(env.path("one.txt"), "new one\n").unwrap();
    quiet_hook(
        &env,
        "claude-code",
        &call("PostToolUse", "agent-1", "t1", "one.txt"),
    );
    // agent-2's edit has not happened yet: its checkpoint is still open.
    assert_eq!(open_entries(&env, CLAUDE_SESSION), ["two.txt"]);
    std::fs::write(env.path("two.txt"), "new two\n").unwrap();
    quiet_hook(
        &env,
        "claude-code",
        &call("PostToolUse", "agent-2", "t2", "two.txt"),
    );
    let got = all_entries(&env, CLAUDE_SESSION);
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|e| e.2), "{got:?}");
    // A subagent's call that never got its After is settled when the main
    // agent stops.
    quiet_hook(
        &env,
        "claude-code",
        &call("PreToolUse", "agent-3", "t3", "three.txt"),
    );
    quiet_hook(
        &env,
        "claude-code",
        &call("PreToolUse", "agent-1", "t4", "one.txt"),
    );
    assert_eq!(open_entries(&env, CLAUDE_SESSION), ["three.txt", "one.txt"]);
    quiet_hook(&env, "claude-code", &claude(&env, "Stop"));
    assert!(open_entries(&env, CLAUDE_SESSION).is_empty());
    assert_eq!(all_entries(&env, CLAUDE_SESSION).len(), 2);
}

/// An agent's hooks are how most people use turnback: the store's daily
/// prune runs after a tool's change is committed, as after a command line's
/// change (never before a tool), and spares the agent's own session.
#[test]
fn the_daily_prune_runs_after_a_tools_change_and_spares_the_agents_session() {
    let env = Env::new();
    let mut c = env.cmd(Some("old"));
    c.args(["write", "old.txt"]);
    crate::util::run_ok(c, b"old\n", "write");
    let stamp = env.home.path().join("pruned-at");
    assert!(stamp.is_file(), "the first change starts the clock");
    let config = env.config_file();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "keep_sessions = 1\nkeep_days = 0\n").unwrap();
    let day_old = || {
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 24 * 3600);
        std::fs::File::open(&stamp)
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    day_old();
    let pre = with(
        claude(&env, "PreToolUse-Write"),
        "/tool_input/file_path",
        env.path("new.txt").to_str().unwrap().into(),
    );
    quiet_hook(&env, "claude-code", &pre);
    assert!(
        env.home.path().join("sessions/old").is_dir(),
        "pruned before the tool ran"
    );
    std::fs::write(env.path("new.txt"), "new\n").unwrap();
    let post = with(pre, "/hook_event_name", "PostToolUse".into());
    quiet_hook(&env, "claude-code", &post);
    assert!(
        !env.home.path().join("sessions/old").exists(),
        "the hooks never pruned"
    );
    let got = all_entries(&env, CLAUDE_SESSION);
    assert_eq!(got.len(), 1, "the agent's own session: {got:?}");
}
