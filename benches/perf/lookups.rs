//! Section 3's lookups across sessions (issue 16): `turnback revert FILE`,
//! `turnback undo` and `turnback log`, each without `--session` (so each
//! finds its session among all of the store's), as whole processes in a
//! store of 200 sessions of 1,000 entries against a store of 1 such session.
//! Before each timed command the file's newest change is a real write into
//! one session (so that session's summary record is stale, as it is after
//! an agent's change, and the others' are not); the first round, which
//! makes every record, is not timed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use turnback_store::{Store, Workspace};

use super::{Bench, KIB, TB, WsId, fill, median, run_with_stdin, sync, synth_index, time_row};

/// A home of `sessions` synthesized sessions of `entries` each, its
/// workspace, and the session the real writes go to.
pub(super) struct Home {
    pub(super) home: PathBuf,
    pub(super) wsdir: PathBuf,
    ws: Workspace,
    writer: String,
}

pub(super) fn setup(dir: &Path, name: &str, sessions: usize, entries: usize) -> Home {
    let home = dir.join(format!("{name}-home"));
    let wsdir = dir.join(format!("{name}-ws"));
    fs::create_dir_all(&wsdir).unwrap();
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    for k in 0..sessions {
        synth_index(
            &home,
            &format!("past-{k:03}"),
            &id,
            entries,
            &format!("s{k}"),
        );
    }
    Home {
        home,
        wsdir,
        ws,
        writer: format!("past-{:03}", sessions / 2),
    }
}

impl Home {
    /// A real change of `target.txt` in the writer's session (the file held
    /// something else before, by hand).
    pub(super) fn write(&self, buf: &mut [u8], seed: u64) {
        fill(buf, seed);
        fs::write(self.wsdir.join("target.txt"), &*buf).unwrap();
        fill(buf, seed + 1);
        let s = Store::new(&self.home).session(&self.writer).unwrap();
        s.write(&self.ws, "target.txt", &*buf, "m").unwrap();
    }

    /// `turnback ARGS` as a whole process, with no session named.
    fn time(&self, args: &[&str]) -> Duration {
        let mut c = Command::new(TB);
        c.args(args)
            .current_dir(&self.wsdir)
            .env("TURNBACK_HOME", &self.home)
            .env("NO_COLOR", "1")
            .env_remove("TURNBACK_SESSION")
            .env_remove("TURNBACK_WORKSPACE")
            .stdout(Stdio::null());
        sync();
        let t = Instant::now();
        run_with_stdin(&mut c, b"");
        t.elapsed()
    }

    /// The writer's entries of `target.txt` now (what the commands left).
    fn entries(&self) -> usize {
        let s = Store::new(&self.home).open_session(&self.writer).unwrap();
        let entries = s.entries().unwrap();
        entries.iter().filter(|e| e.path == "target.txt").count()
    }
}

pub(super) fn lookup_rows(b: &mut Bench, dir: &Path) {
    let (sessions, runs) = if b.quick { (20, 3) } else { (200, 11) };
    let entries = 1_000;
    let many = setup(dir, "lookup-many", sessions, entries);
    let one = setup(dir, "lookup-one", 1, entries);
    sync();
    let mut buf = vec![0u8; 4 * KIB];
    let commands: [(&str, &[&str]); 3] = [
        ("`turnback revert FILE`", &["revert", "target.txt"]),
        ("`turnback undo`", &["undo"]),
        ("`turnback log`", &["log"]),
    ];
    let mut times = vec![(Vec::new(), Vec::new()); commands.len()];
    for i in 0..=runs {
        for (c, (_, args)) in commands.iter().enumerate() {
            let seed = 70_000 + 10 * (i * commands.len() + c) as u64;
            let mut one_run = |h: &Home, seed| {
                h.write(&mut buf, seed);
                let written = h.entries();
                let t = h.time(args);
                // Each chose the writer's session: revert and undo took
                // back the newest change of the file, log none.
                let expected = match args[0] {
                    "log" => written,
                    _ => written - 1,
                };
                assert_eq!(h.entries(), expected, "turnback {args:?}");
                t
            };
            let r = one_run(&one, seed);
            let t = one_run(&many, seed + 2);
            if i > 0 {
                times[c].0.push(t);
                times[c].1.push(r);
            }
        }
    }
    for ((what, _), (tb, reference)) in commands.iter().zip(times) {
        b.row(time_row(
            &format!("{what} (no --session; whole process)"),
            &format!(
                "{sessions} sessions × {} entries, {runs} runs",
                super::thousands(entries)
            ),
            median(tb),
            ("1 session of 1,000 entries", median(reference)),
            Some(1.5),
        ));
    }
}
