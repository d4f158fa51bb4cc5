//! Section 12, a process's cost flat in its session's size (issue 16): every
//! `turnback write` and every agent hook is a new process, which reads its
//! session's summary (`index.summary`) instead of the whole index. A
//! `turnback write` of a 4 KiB file, and a Claude Code hook pair (PreToolUse
//! and PostToolUse of an Edit, as section 7), in a session of 10,000 entries
//! against one of 10 (sessions synthesized as section 2's, the entry cap
//! raised so that nothing is evicted), runs of the two interleaved.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use turnback_store::Workspace;

use super::{
    Bench, KIB, TB, WsId, fill, median, run_with_stdin, sync, synth_index, thousands, time_row,
};

/// The session sizes compared.
const BIG: usize = 10_000;
const SMALL: usize = 10;

pub(super) fn flat_processes(b: &mut Bench) {
    let dir = b.section_dir(12);
    let runs = if b.quick { 5 } else { 21 };
    let mut big = Agent::new(&dir.join("big"), BIG);
    let mut small = Agent::new(&dir.join("small"), SMALL);
    // The first change to a synthesized session rewrites its snapshot (it
    // is of an older format) and makes its summary: not timed.
    for a in [&mut big, &mut small] {
        a.write(0);
        a.hook_pair(0);
    }
    let (mut writes, mut pairs) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for i in 1..=runs {
        writes.0.push(big.write(i));
        writes.1.push(small.write(i));
        pairs.0.push(big.hook_pair(i));
        pairs.1.push(small.hook_pair(i));
    }
    for a in [&big, &small] {
        a.check(2 * (runs + 1));
    }
    let param = |what: &str| format!("{what}, {} entries, {runs} runs", thousands(BIG));
    b.row(time_row(
        "`turnback write` process (4 KiB file)",
        &param("4 KiB file"),
        median(writes.0),
        (&format!("{SMALL} entries"), median(writes.1)),
        Some(1.5),
    ));
    b.row(time_row(
        "Claude Code hook pair (PreToolUse + PostToolUse) for an Edit",
        &param("4 KiB file"),
        median(pairs.0),
        (&format!("{SMALL} entries"), median(pairs.1)),
        Some(1.5),
    ));
}

/// A workspace and a home whose session `agent` has `n` synthesized entries.
struct Agent {
    synthesized: usize,
    home: PathBuf,
    wsdir: PathBuf,
    config: PathBuf,
    buf: Vec<u8>,
}

impl Agent {
    fn new(dir: &Path, n: usize) -> Agent {
        let (home, wsdir, config) = (dir.join("home"), dir.join("ws"), dir.join("config"));
        fs::create_dir_all(&wsdir).unwrap();
        fs::create_dir_all(&config).unwrap();
        let ws = Workspace::open(&wsdir).unwrap();
        synth_index(&home, "agent", &WsId::of(&ws), n, "src");
        let mut buf = vec![0u8; 4 * KIB];
        fill(&mut buf, n as u64);
        for name in ["written.rs", "edited.rs"] {
            fs::write(wsdir.join(name), &buf).unwrap();
        }
        sync();
        Agent {
            synthesized: n,
            home,
            wsdir: ws.root().to_owned(),
            config,
            buf,
        }
    }

    /// A `turnback` command in this agent's home and workspace, with no
    /// settings but the raised entry cap.
    fn command(&self) -> Command {
        let mut c = Command::new(TB);
        c.current_dir(&self.wsdir)
            .env("TURNBACK_HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("TURNBACK_MAX_ENTRIES", "1000000")
            .env_remove("TURNBACK_WORKSPACE")
            .stdout(Stdio::null());
        c
    }

    /// Times one `turnback write` of new contents of `written.rs`.
    fn write(&mut self, i: usize) -> Duration {
        fill(&mut self.buf, 1000 + i as u64);
        let mut c = self.command();
        c.args(["write", "written.rs", "--message", &format!("w{i}")])
            .env("TURNBACK_SESSION", "agent");
        sync();
        let t = Instant::now();
        run_with_stdin(&mut c, &self.buf);
        t.elapsed()
    }

    /// Times a Pre+Post hook pair around an edit of `edited.rs` (the edit
    /// itself not timed).
    fn hook_pair(&mut self, i: usize) -> Duration {
        let file = self.wsdir.join("edited.rs");
        let hook = |event: &str| {
            let payload = json!({
                "session_id": "agent",
                "cwd": self.wsdir,
                "hook_event_name": event,
                "tool_name": "Edit",
                "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
                "tool_use_id": format!("toolu_{i}"),
            });
            let mut c = self.command();
            c.args(["hook", "claude-code"])
                .env("CLAUDE_PROJECT_DIR", &self.wsdir);
            run_with_stdin(&mut c, payload.to_string().as_bytes());
        };
        sync();
        let t = Instant::now();
        hook("PreToolUse");
        let pre = t.elapsed();
        let mut buf = vec![0u8; 4 * KIB];
        fill(&mut buf, 5000 + i as u64);
        fs::write(&file, &buf).unwrap();
        let t = Instant::now();
        hook("PostToolUse");
        pre + t.elapsed()
    }

    /// Every write and hook pair was recorded, committed, and nothing was
    /// evicted: the processes did not fail quietly.
    fn check(&self, made: usize) {
        let s = turnback_store::Store::new(&self.home)
            .open_session("agent")
            .unwrap();
        let entries = s.entries().unwrap();
        assert_eq!(entries.len(), self.synthesized + made);
        assert!(entries.iter().all(|e| e.is_committed()));
        assert!(s.evicted().unwrap().is_none(), "nothing evicted");
    }
}
