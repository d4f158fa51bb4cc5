//! Section 13, `turnback ui` opens (issue 34): a store of 200 sessions of
//! 1,000 entries each (20 of 100 with `--quick`) in one workspace,
//! synthesized as section 2's; the time from starting `turnback ui` in a
//! pseudo-terminal (util-linux's `script`, 80x24, as `tests/ui.rs` runs it)
//! to its first complete frame (the sessions pane's title, with the number
//! of sessions, and the footer's keys written), then `q`; against a `turnback log` process in the same
//! store. Medians of a few runs, the two interleaved; nothing asserted.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use turnback_store::Workspace;

use super::{Bench, TB, WsId, median, synth_index, thousands, time_row};

pub(super) fn ui_opens(b: &mut Bench) {
    let dir = b.section_dir(13);
    let (sessions, entries, runs) = if b.quick {
        (20, 100, 3)
    } else {
        (200, 1_000, 7)
    };
    let (home, wsdir, config) = (dir.join("home"), dir.join("ws"), dir.join("config"));
    fs::create_dir_all(&wsdir).unwrap();
    fs::create_dir_all(&config).unwrap();
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    for i in 0..sessions {
        synth_index(
            &home,
            &format!("agent-{i:03}"),
            &id,
            entries,
            &format!("s{i:03}"),
        );
    }
    let env = Env {
        home,
        wsdir: ws.root().to_owned(),
        config,
    };
    // The title's words are written apart (the terminal skips the blanks).
    let title = format!("({sessions})");
    // One of each first, not timed (the page cache, the summaries).
    env.open_ui(&title);
    env.log();
    let (mut ui, mut log) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        ui.push(env.open_ui(&title));
        log.push(env.log());
    }
    b.row(time_row(
        "`turnback ui` opens: start to the first complete frame, 80x24",
        &format!(
            "{sessions} sessions x {} entries, {runs} runs",
            thousands(entries)
        ),
        median(ui),
        ("`turnback log` in the same store", median(log)),
        None,
    ));
}

/// The store and workspace the commands run in.
struct Env {
    home: PathBuf,
    wsdir: PathBuf,
    config: PathBuf,
}

impl Env {
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.wsdir)
            .env("TURNBACK_HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("TURNBACK_MAX_ENTRIES", "1000000")
            .env_remove("TURNBACK_WORKSPACE")
            .env_remove("TURNBACK_SESSION")
            .env_remove("NO_COLOR");
        c
    }

    /// Times a `turnback log` process, to its exit.
    fn log(&self) -> Duration {
        let mut c = self.command(Path::new(TB));
        c.arg("log").stdout(Stdio::null()).stderr(Stdio::null());
        let t = Instant::now();
        let status = c.status().expect("run turnback log");
        let took = t.elapsed();
        assert!(status.success(), "turnback log failed");
        took
    }

    /// Times `turnback ui` from its start to a screen showing `title` and
    /// the footer, then quits it with `q`.
    fn open_ui(&self, title: &str) -> Duration {
        let line = format!(
            "stty rows 24 cols 80; exec {} ui --color never",
            Path::new(TB).display()
        );
        let mut c = self.command(Path::new("script"));
        c.args(["-qec", &line, "/dev/null"])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let t = Instant::now();
        let mut child = c.spawn().expect("start script (util-linux)");
        let mut keys = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let shown =
            |bytes: &[u8], what: &str| bytes.windows(what.len()).any(|w| w == what.as_bytes());
        let took = loop {
            {
                let bytes = out.lock().unwrap();
                if shown(&bytes, "sessions") && shown(&bytes, title) && shown(&bytes, "q quit") {
                    break t.elapsed();
                }
            }
            if t.elapsed() > Duration::from_secs(60) {
                stop(&mut child);
                panic!(
                    "turnback ui showed no frame in 60 s:\n{}",
                    String::from_utf8_lossy(&out.lock().unwrap())
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        keys.write_all(b"q").unwrap();
        keys.flush().unwrap();
        let end = Instant::now();
        loop {
            match child.try_wait().unwrap() {
                Some(status) => {
                    assert!(status.success(), "turnback ui exited with {status}");
                    break;
                }
                None if end.elapsed() > Duration::from_secs(10) => {
                    stop(&mut child);
                    panic!("turnback ui did not quit on q");
                }
                None => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        drop(keys);
        reader.join().unwrap();
        took
    }
}

/// Ends `script` and the view under it, both started by this section: the
/// view is killed by its id (its parent is `script`), since a view whose
/// terminal went away is not sure to end by itself.
fn stop(child: &mut Child) {
    let script = child.id().to_string();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the fields after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if ppid == Some(script.as_str()) {
            let pid = entry.file_name().to_string_lossy().into_owned();
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
