//! Section 7, agent hooks: what protecting an agent's `Edit` costs it, as the agent
//! pays it: two `turnback hook claude-code` processes (PreToolUse before the
//! edit, PostToolUse after) against the floor of any hook, two bare process
//! starts of `turnback --version`; and the same pair in a store of 200
//! sessions against a store of one.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use turnback_store::Workspace;

use super::{Bench, KIB, TB, WsId, fill, median, run_with_stdin, sync, synth_index, time_row};

pub(super) fn agent_hooks(b: &mut Bench) {
    let dir = b.section_dir(7);
    let runs = if b.quick { 7 } else { 31 };
    let one = pair_in(&dir.join("one"), 0, runs);
    let many = pair_in(&dir.join("many"), 200, runs);
    let mut starts = Vec::new();
    for i in 0..=runs {
        let t = Instant::now();
        for _ in 0..2 {
            let ok = Command::new(TB)
                .arg("--version")
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok);
        }
        if i > 0 {
            starts.push(t.elapsed());
        }
    }
    let starts = median(starts);
    b.row(time_row(
        "Claude Code hook pair (PreToolUse + PostToolUse) for an Edit",
        &format!("4 KiB file, 1 session, {runs} runs"),
        one,
        ("2 × `turnback --version`", starts),
        Some(3.0),
    ));
    b.row(time_row(
        "Claude Code hook pair (PreToolUse + PostToolUse) for an Edit",
        &format!("4 KiB file, 200 sessions in the store, {runs} runs"),
        many,
        ("1 session", one),
        Some(1.25),
    ));
}

/// The median time of a Pre+Post hook pair around an edit of a 4 KiB file,
/// in a store that holds `others` sessions of 10 entries besides the agent's.
fn pair_in(dir: &Path, others: usize, runs: usize) -> Duration {
    let home = dir.join("home");
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    for i in 0..others {
        synth_index(&home, &format!("other-{i}"), &id, 10, "src");
    }
    let file = wsdir.join("lib.rs");
    let mut buf = vec![0u8; 4 * KIB];
    fill(&mut buf, 7);
    fs::write(&file, &buf).unwrap();
    sync();
    let hook = |event: &str, n: usize| {
        let payload = json!({
            "session_id": "bench-agent",
            "cwd": wsdir,
            "hook_event_name": event,
            "tool_name": "Edit",
            "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
            "tool_use_id": format!("toolu_{n}"),
        });
        let mut c = Command::new(TB);
        c.args(["hook", "claude-code"])
            .env("TURNBACK_HOME", &home)
            .env("CLAUDE_PROJECT_DIR", &wsdir)
            .current_dir(&wsdir);
        run_with_stdin(&mut c, payload.to_string().as_bytes());
    };
    let mut times = Vec::new();
    for i in 0..=runs {
        let t = Instant::now();
        hook("PreToolUse", i);
        let pre = t.elapsed();
        fill(&mut buf, 100 + i as u64);
        fs::write(&file, &buf).unwrap();
        let t = Instant::now();
        hook("PostToolUse", i);
        if i > 0 {
            times.push(pre + t.elapsed());
        }
    }
    // Every pair was recorded: the hooks did not fail quietly.
    let s = turnback_store::Store::new(&home)
        .open_session("bench-agent")
        .unwrap();
    let entries = s.entries().unwrap();
    assert_eq!(entries.len(), runs + 1);
    assert!(entries.iter().all(|e| e.is_committed()));
    median(times)
}
