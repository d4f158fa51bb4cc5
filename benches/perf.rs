//! turnback's benchmark suite (issue 6): every figure is a ratio against a
//! reference measured in the same run, because the machines it runs on are
//! shared and noisy. Nothing here asserts a time.
//!
//! ```text
//! cargo bench --bench perf               # the full run (docs/PERFORMANCE.md)
//! cargo bench --bench perf -- --quick    # a smoke pass of a few seconds (CI)
//! cargo bench --bench perf -- --only=1,5 # only some sections (1 to 13)
//! ```
//!
//! Sections (the rows of the table, in order):
//! 1. write-through (`Session::write`) against `std::fs::write` and a durable
//!    atomic write of the same bytes; with strace, the fsyncs of one write;
//! 2. checkpoint+commit as the session grows (indexes synthesized);
//! 3. undo, `turnback revert FILE` across 20 sessions, `turnback revert
//!    FILE`, `undo` and `log` without `--session` across 200 sessions
//!    (`perf/lookups.rs`), rewind;
//! 4. concurrent `turnback write` processes, one session and separate sessions;
//! 5. against a shadow git repository snapshotted before each write (the
//!    library, a `turnback write` process, a `turnback serve --stdio` request);
//! 6. peak RSS of `turnback write` and `turnback undo` of a large file;
//! 7. an agent's hook pair (`turnback hook claude-code`, Pre and Post of an
//!    Edit) against two bare process starts, and with 200 sessions in the store;
//! 8. `Store::blame` of a file of 10,000 lines with 500 versions, against
//!    `git blame` of the same history;
//! 9. a change at the entry cap (evicting) against one at 10 entries, and the
//!    store after a year of daily sessions under retention (`perf/caps.rs`);
//! 10. the scan bracket around a command against a shadow-git snapshot
//!     (`perf/scan.rs`);
//! 11. compact blobs: this repository's history replayed with backups
//!     compressed and not (bytes on disk, write time), and zstd against lz4
//!     on the same backups (`perf/compress.rs`);
//! 12. a `turnback write` process and an agent's hook pair in a session of
//!     10,000 entries against one of 10 (`perf/flat.rs`);
//! 13. `turnback ui` in a pseudo-terminal, from its start to its first
//!     complete frame, in a store of 200 sessions x 1,000 entries, against
//!     `turnback log` in the same store (`perf/ui.rs`).
//!
//! Scratch files go under `$TURNBACK_BENCH_DIR`, else cargo's
//! `CARGO_TARGET_TMPDIR` (`target/tmp`, on the target directory's filesystem),
//! and are removed at the end. Progress goes to stderr, the table to stdout.
//! With `$TURNBACK_REFLINK_DIR` naming a directory on a filesystem that
//! can clone files (XFS, btrfs), section 1 runs there too, as rows of its own
//! (the same variable sends the clone tests of `tests/clones.rs` there).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

// 7. Agent hooks, in a file of its own (benches/perf/hooks.rs).
#[path = "perf/hooks.rs"]
mod hooks;
use turnback_store::{RevertOptions, Session, Store, Workspace};

// Section 7, in a file of its own.
#[path = "perf/caps.rs"]
mod caps;

/// The `turnback` binary cargo built for this bench (the bench profile, i.e.
/// release, with the dev-dependency feature `failpoints` compiled in but inert).
const TB: &str = env!("CARGO_BIN_EXE_turnback");

// Section 7, in a file of its own.
#[path = "perf/scan.rs"]
mod perf_scan;

// Section 11, in a file of its own.
#[path = "perf/compress.rs"]
mod compress;

// Section 12, in a file of its own.
#[path = "perf/flat.rs"]
mod flat;

// Section 13, in a file of its own.
#[path = "perf/ui.rs"]
mod ui;

// Section 3's lookups across sessions, in a file of their own.
#[path = "perf/lookups.rs"]
mod lookups;

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let only: Option<Vec<u32>> = args
        .iter()
        .find_map(|a| a.strip_prefix("--only="))
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let base = std::env::var_os("TURNBACK_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    fs::create_dir_all(&base).expect("create the bench directory");
    let scratch = tempfile::Builder::new()
        .prefix("turnback-perf-")
        .tempdir_in(&base)
        .expect("create a scratch directory");
    let mut b = Bench {
        quick,
        dir: scratch.path().to_owned(),
        rows: Vec::new(),
        notes: Vec::new(),
    };
    let started = Instant::now();
    let sections: [Section; 13] = [
        (1, "write-through", write_through),
        (2, "growth with session size", growth),
        (3, "reverts", reverts),
        (4, "concurrency", concurrency),
        (5, "against shadow git", shadow_git),
        (6, "memory", memory),
        (7, "agent hooks", hooks::agent_hooks),
        (8, "blame", blame),
        (9, "caps and a year of retention", caps::caps),
        (10, "scan bracket", perf_scan::scan_bracket),
        (11, "compact blobs", compress::compact_blobs),
        (
            12,
            "a process's cost flat in its session's size",
            flat::flat_processes,
        ),
        (13, "`turnback ui` opens", ui::ui_opens),
    ];
    for (n, name, run) in sections {
        if only.as_ref().is_some_and(|o| !o.contains(&n)) {
            continue;
        }
        let t = Instant::now();
        eprintln!("[{n}/{}] {name}...", sections.len());
        run(&mut b);
        eprintln!("[{n}/{}] {name}: {}", sections.len(), fmt_d(t.elapsed()));
        let _ = fs::remove_dir_all(b.dir.join(format!("s{n}")));
    }
    print_report(&b, &base, started.elapsed());
}

/// A section of the suite: its number, name and body.
type Section = (u32, &'static str, fn(&mut Bench));

/// The run's state: mode, scratch directory, and what it found.
struct Bench {
    quick: bool,
    dir: PathBuf,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Bench {
    /// A fresh directory for section `n`.
    fn section_dir(&self, n: u32) -> PathBuf {
        let d = self.dir.join(format!("s{n}"));
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn row(&mut self, row: Row) {
        eprintln!(
            "    {} | {} | {} | {} | {} | {} | {}",
            row.what,
            row.param,
            row.tb,
            row.reference,
            row.ratio,
            row.goal,
            row.verdict.text()
        );
        self.rows.push(row);
    }

    fn note(&mut self, text: String) {
        eprintln!("    note: {text}");
        self.notes.push(text);
    }
}

/// One line of the table.
struct Row {
    what: String,
    param: String,
    tb: String,
    reference: String,
    ratio: String,
    goal: String,
    verdict: Verdict,
}

enum Verdict {
    Met,
    Missed,
    /// No goal: the figure is reported.
    Info,
}

impl Verdict {
    fn of(met: bool) -> Verdict {
        if met { Verdict::Met } else { Verdict::Missed }
    }

    fn text(&self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Missed => "**missed**",
            Verdict::Info => "—",
        }
    }
}

/// A time row: turnback's median against a reference's, `ratio` = turnback /
/// reference, met when the ratio is at most `max` (if a goal is given).
fn time_row(
    what: &str,
    param: &str,
    tb: Duration,
    reference: (&str, Duration),
    max: Option<f64>,
) -> Row {
    let ratio = secs(tb) / secs(reference.1);
    Row {
        what: what.into(),
        param: param.into(),
        tb: fmt_d(tb),
        reference: format!("{}: {}", reference.0, fmt_d(reference.1)),
        ratio: format!("{ratio:.2}x"),
        goal: max.map_or("—".into(), |m| format!("≤ {m}x")),
        verdict: max.map_or(Verdict::Info, |m| Verdict::of(ratio <= m)),
    }
}

fn print_report(b: &Bench, base: &Path, total: Duration) {
    let mut out = String::new();
    out.push_str(&format!(
        "\nturnback benchmark ({} run, {} total)\n\n",
        if b.quick { "--quick" } else { "full" },
        fmt_d(total)
    ));
    out.push_str(&format!(
        "machine: {} cores; scratch directory {} on {}; {}; git {}\n\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        base.display(),
        fs_type(base),
        capture("uname", &["-sr"]).unwrap_or_else(|| "unknown kernel".into()),
        capture("git", &["--version"])
            .map(|v| v.trim_start_matches("git version ").to_owned())
            .unwrap_or_else(|| "not found".into()),
    ));
    let header = [
        "what",
        "size / parameter",
        "turnback (median)",
        "reference (median)",
        "ratio",
        "goal",
        "result",
    ];
    let cells: Vec<[String; 7]> = b
        .rows
        .iter()
        .map(|r| {
            [
                r.what.clone(),
                r.param.clone(),
                r.tb.clone(),
                r.reference.clone(),
                r.ratio.clone(),
                r.goal.clone(),
                r.verdict.text().into(),
            ]
        })
        .collect();
    let mut width = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: &[String]| {
        let mut s = String::from("|");
        for (c, w) in cols.iter().zip(width) {
            s.push_str(&format!(" {c}{} |", " ".repeat(w - c.chars().count())));
        }
        s.push('\n');
        s
    };
    out.push_str(&line(&header.map(String::from)));
    out.push_str(&line(&width.map(|w| "-".repeat(w))));
    for row in &cells {
        out.push_str(&line(row));
    }
    if !b.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &b.notes {
            out.push_str(&format!("- {n}\n"));
        }
    }
    print!("{out}");
}

// ---------------------------------------------------------------------------
// 1. Write-through

fn write_through(b: &mut Bench) {
    let dir = b.section_dir(1);
    write_through_in(b, &dir, "");
    count_fsyncs(b, &dir);
    sha256_rate(b);
    if let Some(base) = std::env::var_os("TURNBACK_REFLINK_DIR") {
        let dir = tempfile::tempdir_in(base).unwrap();
        let fs_type = Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(dir.path())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        write_through_in(b, dir.path(), &format!(" on {fs_type} (reflink)"));
    }
}

/// The write-through rows, with files under `dir`; `on` names the filesystem
/// in the rows' labels when it is not the default one.
fn write_through_in(b: &mut Bench, dir: &Path, on: &str) {
    let home = dir.join("home");
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    let store = Store::new(&home);
    let ws = Workspace::open(&wsdir).unwrap();
    let sizes: &[(usize, &str, usize, Option<f64>)] = if b.quick {
        &[(4 * KIB, "4 KiB", 5, Some(3.0)), (MIB, "1 MiB", 3, None)]
    } else {
        &[
            (4 * KIB, "4 KiB", 31, Some(3.0)),
            (MIB, "1 MiB", 15, None),
            (100 * MIB, "100 MiB", 5, Some(1.5)),
        ]
    };
    for &(size, label, runs, goal) in sizes {
        let session = store.session(&format!("write-{size}")).unwrap();
        let name = format!("tb-{size}.bin");
        let mut buf = vec![0u8; size];
        fill(&mut buf, 0);
        fs::write(wsdir.join(&name), &buf).unwrap();
        let (mut tb, mut plain, mut durable) = (Vec::new(), Vec::new(), Vec::new());
        // One warm-up round (store directories, page cache), then the runs.
        // Every round writes new bytes, so every backup is a new blob.
        for i in 0..=runs {
            fill(&mut buf, 1 + i as u64);
            sync();
            let t = Instant::now();
            session.write(&ws, &name, &buf[..], "m").unwrap();
            let d_tb = t.elapsed();
            sync();
            let t = Instant::now();
            fs::write(wsdir.join(format!("plain-{size}.bin")), &buf).unwrap();
            let d_plain = t.elapsed();
            sync();
            let t = Instant::now();
            durable_write(&wsdir, &format!("durable-{size}.bin"), &buf);
            let d_durable = t.elapsed();
            if i > 0 {
                tb.push(d_tb);
                plain.push(d_plain);
                durable.push(d_durable);
            }
        }
        let (tb, plain, durable) = (median(tb), median(plain), median(durable));
        b.row(time_row(
            &format!("write-through (`Session::write`) vs durable atomic write{on}"),
            &format!("{label}, {runs} runs"),
            tb,
            ("tmp+fsync+rename+dir fsync", durable),
            goal,
        ));
        b.row(time_row(
            &format!("write-through (`Session::write`) vs `std::fs::write`{on}"),
            &format!("{label}, {runs} runs"),
            tb,
            ("`std::fs::write`", plain),
            None,
        ));
    }
}

/// SHA-256 throughput of the `sha2` crate in memory, 256 KiB at a time (the
/// store's copy buffer): what every byte backed up, written or restored costs
/// on top of the I/O.
fn sha256_rate(b: &mut Bench) {
    let mut buf = vec![0u8; 256 * KIB];
    fill(&mut buf, 42);
    let total = if b.quick { 64 * MIB } else { 512 * MIB };
    let t = Instant::now();
    let mut h = Sha256::new();
    for _ in 0..total / buf.len() {
        h.update(&buf);
    }
    std::hint::black_box(h.finalize());
    let rate = total as f64 / secs(t.elapsed()) / MIB as f64;
    b.note(format!(
        "SHA-256 (sha2 crate) in memory on this machine: {rate:.0} MiB/s"
    ));
}

/// fsync/fdatasync calls of one `turnback write` and one `turnback undo`, by
/// strace when it is installed.
fn count_fsyncs(b: &mut Bench, dir: &Path) {
    if capture("strace", &["-V"]).is_none() {
        b.note("strace not installed: fsyncs per write not counted (docs/PERFORMANCE.md counts them from the code)".into());
        return;
    }
    let home = dir.join("strace-home");
    let wsdir = dir.join("strace-ws");
    fs::create_dir_all(&wsdir).unwrap();
    let mut buf = vec![0u8; 4 * KIB];
    // (fsync, fdatasync) calls of `turnback ARGS` in SESSION, all threads.
    let count = |session: &str, args: &[&str], stdin: &[u8]| -> (u64, u64) {
        let out = dir.join("strace.txt");
        let mut c = Command::new("strace");
        c.args(["-f", "-c", "-e", "trace=fsync,fdatasync", "-o"])
            .arg(&out)
            .arg(TB)
            .args(args)
            .current_dir(&wsdir)
            .env("TURNBACK_HOME", &home)
            .env("TURNBACK_SESSION", session)
            .env_remove("TURNBACK_WORKSPACE")
            .stdout(Stdio::null());
        run_with_stdin(&mut c, stdin);
        let text = fs::read_to_string(&out).unwrap();
        // `-c` prints "% time  seconds  usecs/call  calls  [errors]  syscall".
        let calls = |name: &str| -> u64 {
            text.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|t| t.last() == Some(&name))
                .and_then(|t| t.get(3).and_then(|n| n.parse().ok()))
                .unwrap_or(0)
        };
        (calls("fsync"), calls("fdatasync"))
    };
    fill(&mut buf, 100);
    fs::write(wsdir.join("existing.txt"), &buf).unwrap();
    fill(&mut buf, 101);
    let first = count("strace", &["write", "first.txt", "-m", "m"], &buf);
    fill(&mut buf, 102);
    let over = count("strace", &["write", "existing.txt", "-m", "m"], &buf);
    let undo = count("strace", &["undo"], b"");
    fill(&mut buf, 103);
    let new = count("strace", &["write", "new.txt", "-m", "m"], &buf);
    fill(&mut buf, 104);
    let deep = count("strace", &["write", "a/b/new.txt", "-m", "m"], &buf);
    let show = |(f, d): (u64, u64)| format!("{f} fsync + {d} fdatasync");
    b.note(format!(
        "strace -f -c -e trace=fsync,fdatasync on the `turnback write` process (4 KiB): over an existing file {}; \
         a new file {}; a new file in 2 new directories {}; the first write of a new session (new file) {}; \
         `turnback undo` of the 4 KiB overwrite {}; the durable atomic write reference: 2 fsync by construction",
        show(over),
        show(new),
        show(deep),
        show(first),
        show(undo),
    ));
}

// ---------------------------------------------------------------------------
// 2. Growth with session size

fn growth(b: &mut Bench) {
    let dir = b.section_dir(2);
    let home = dir.join("home");
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    // The entry cap raised past the sizes measured: at the default one the
    // first change would evict all but 2,000 entries, and the rows would
    // measure a session at the cap (section 9 does).
    let settings = turnback_store::Settings {
        max_entries: turnback_store::Setting {
            value: 1_000_000,
            source: turnback_store::SettingSource::Default,
        },
        ..turnback_store::Settings::default()
    };
    let store = Store::new(&home).with_settings(settings);
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    let sizes: &[(usize, &str, usize)] = if b.quick {
        &[(1_000, "1,000 entries", 5)]
    } else {
        &[
            (1_000, "1,000 entries", 15),
            (10_000, "10,000 entries", 9),
            (100_000, "100,000 entries", 5),
        ]
    };
    for &(n, label, runs) in sizes {
        let t = Instant::now();
        synth_index(&home, &format!("grow-{n}"), &id, n, "src");
        synth_index(&home, &format!("grow-ref-{n}"), &id, 10, "src");
        sync();
        eprintln!("    synthesized {n} entries in {}", fmt_d(t.elapsed()));
        let bytes = fs::metadata(home.join(format!("sessions/grow-{n}/index.json")))
            .unwrap()
            .len();
        b.note(format!(
            "synthesized index.json of {} entries: {:.1} MB",
            thousands(n),
            bytes as f64 / 1e6
        ));
        let big = store.session(&format!("grow-{n}")).unwrap();
        let small = store.session(&format!("grow-ref-{n}")).unwrap();
        let (mut tb, mut reference) = (Vec::new(), Vec::new());
        for i in 0..=runs {
            let seed = 1000 * n as u64 + 2 * i as u64;
            let r = checkpoint_commit(&small, &ws, &wsdir, &format!("ref-{n}.txt"), seed);
            let t = checkpoint_commit(&big, &ws, &wsdir, &format!("big-{n}.txt"), seed + 1);
            if i > 0 {
                reference.push(r);
                tb.push(t);
            }
        }
        // What a writer pays once in a while: folding the journal into a new
        // snapshot (here the few lines the runs above appended).
        sync();
        let t = Instant::now();
        big.compact().unwrap();
        b.note(format!(
            "compaction (`Session::compact`, snapshot rewritten durably) of {} entries: {}",
            thousands(n),
            fmt_d(t.elapsed())
        ));
        let goal = (n == 100_000).then_some(1.5);
        b.row(time_row(
            "checkpoint+commit (4 KiB file)",
            &format!("{label}, {runs} runs"),
            median(tb),
            ("10 entries", median(reference)),
            goal,
        ));
    }
}

/// Times `checkpoint` and `commit` of `name` (the edit in between is not
/// timed). The file gets new contents first, so its backup is a new blob.
fn checkpoint_commit(s: &Session, ws: &Workspace, wsdir: &Path, name: &str, seed: u64) -> Duration {
    let mut buf = vec![0u8; 4 * KIB];
    fill(&mut buf, seed);
    fs::write(wsdir.join(name), &buf).unwrap();
    sync();
    let t = Instant::now();
    let cp = s.checkpoint(ws, name, "m").unwrap();
    let first = t.elapsed();
    fill(&mut buf, seed ^ 0xffff_ffff);
    fs::write(wsdir.join(name), &buf).unwrap();
    let t = Instant::now();
    cp.commit().unwrap();
    first + t.elapsed()
}

// ---------------------------------------------------------------------------
// 3. Reverts

fn reverts(b: &mut Bench) {
    let dir = b.section_dir(3);
    undo_rows(b, &dir);
    revert_file_rows(b, &dir);
    lookups::lookup_rows(b, &dir);
    rewind_rows(b, &dir);
}

fn undo_rows(b: &mut Bench, dir: &Path) {
    let home = dir.join("undo-home");
    let wsdir = dir.join("undo-ws");
    fs::create_dir_all(&wsdir).unwrap();
    let store = Store::new(&home);
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    let sizes: &[(usize, &str, usize)] = if b.quick {
        &[(1_000, "4 KiB file, session of 1,000 entries", 3)]
    } else {
        &[
            (1_000, "4 KiB file, session of 1,000 entries", 15),
            (100_000, "4 KiB file, session of 100,000 entries", 5),
        ]
    };
    for &(n, label, runs) in sizes {
        synth_index(&home, &format!("undo-{n}"), &id, n, "src");
        synth_index(&home, &format!("undo-ref-{n}"), &id, 10, "src");
        sync();
        let big = store.session(&format!("undo-{n}")).unwrap();
        let small = store.session(&format!("undo-ref-{n}")).unwrap();
        let mut buf = vec![0u8; 4 * KIB];
        let (mut tb, mut reference) = (Vec::new(), Vec::new());
        for i in 0..=runs {
            let mut one = |s: &Session, name: &str, seed: u64| {
                fill(&mut buf, seed);
                fs::write(wsdir.join(name), &buf).unwrap();
                fill(&mut buf, seed + 1);
                s.write(&ws, name, &buf[..], "m").unwrap();
                sync();
                let t = Instant::now();
                let r = s.undo(RevertOptions::default()).unwrap();
                let d = t.elapsed();
                assert!(r.applied && r.files.len() == 1);
                d
            };
            let seed = 10_000 * n as u64 + 4 * i as u64;
            let r = one(&small, &format!("ref-{n}.txt"), seed);
            let t = one(&big, &format!("big-{n}.txt"), seed + 2);
            if i > 0 {
                reference.push(r);
                tb.push(t);
            }
        }
        b.row(time_row(
            "undo (`Session::undo`)",
            &format!("{label}, {runs} runs"),
            median(tb),
            ("session of 10 entries", median(reference)),
            None,
        ));
    }
}

fn revert_file_rows(b: &mut Bench, dir: &Path) {
    let runs = if b.quick { 3 } else { 11 };
    // A home of 20 sessions of 1,000 entries, and a home of 1 session of 10;
    // in each the file's newest change is a real write.
    let big = lookups::setup(dir, "revert-big", 20, 1_000);
    let small = lookups::setup(dir, "revert-small", 1, 10);
    sync();
    let mut buf = vec![0u8; 4 * KIB];
    let (mut tb, mut reference) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        let mut one = |h: &lookups::Home, seed| {
            h.write(&mut buf, seed);
            sync();
            let mut c = Command::new(TB);
            c.args(["revert", "target.txt"])
                .current_dir(&h.wsdir)
                .env("TURNBACK_HOME", &h.home)
                .env_remove("TURNBACK_SESSION")
                .env_remove("TURNBACK_WORKSPACE")
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let t = Instant::now();
            run_with_stdin(&mut c, b"");
            t.elapsed()
        };
        let r = one(&small, 50_000 + 4 * i as u64);
        let t = one(&big, 50_002 + 4 * i as u64);
        if i > 0 {
            reference.push(r);
            tb.push(t);
        }
    }
    b.row(time_row(
        "`turnback revert FILE` (no --session; whole process)",
        &format!("20 sessions × 1,000 entries, {runs} runs"),
        median(tb),
        ("1 session of 10 entries", median(reference)),
        None,
    ));
}

fn rewind_rows(b: &mut Bench, dir: &Path) {
    let home = dir.join("rewind-home");
    let wsdir = dir.join("rewind-ws");
    fs::create_dir_all(&wsdir).unwrap();
    let store = Store::new(&home);
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    // Entries are files × 10 changes each; the reference is 1 file × 10.
    let (files, label, runs) = if b.quick {
        (10, "100 entries (10 files × 10 changes)", 3)
    } else {
        (100, "1,000 entries (100 files × 10 changes)", 9)
    };
    let (mut tb, mut reference) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        let one = |files: usize, name: &str| {
            let sid = format!("rw-{name}-{i}");
            synth_rewind(&home, &sid, &id, &wsdir, files, 10, &sid);
            sync();
            let s = store.session(&sid).unwrap();
            let t = Instant::now();
            let r = s.rewind("m0-0", RevertOptions::default()).unwrap();
            let d = t.elapsed();
            assert!(r.applied && r.files.len() == files, "rewind of {sid}");
            d
        };
        let r = one(1, "ref");
        let t = one(files, "big");
        if i > 0 {
            reference.push(r);
            tb.push(t);
        }
    }
    b.row(time_row(
        "rewind (`Session::rewind`)",
        &format!("{label}, {runs} runs"),
        median(tb),
        ("10 entries (1 file × 10)", median(reference)),
        None,
    ));
}

// ---------------------------------------------------------------------------
// 4. Concurrency

fn concurrency(b: &mut Bench) {
    let dir = b.section_dir(4);
    let home = dir.join("home");
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    let (procs, writes, reps): (&[usize], usize, usize) = if b.quick {
        (&[1, 2], 4, 1)
    } else {
        (&[1, 2, 4, 8], 24, 5)
    };
    // Each process overwrites its own file with new 4 KiB contents each time
    // (a backup and a write per call), through a shell loop of real processes.
    let script = r#"
        i=0
        while [ "$i" -lt "$WRITES" ]; do
            i=$((i+1))
            printf '%4096d' "$i$W" | "$TB" write "$FILE" --message "m$W-$i" >/dev/null || exit 1
        done
    "#;
    let mut results: Vec<(usize, bool, Vec<f64>)> = Vec::new();
    for rep in 0..reps {
        for &p in procs {
            for shared in [true, false] {
                for w in 0..p {
                    fs::write(wsdir.join(format!("w{w}.txt")), format!("initial {w}\n")).unwrap();
                }
                sync();
                let session = |w: usize| match shared {
                    true => format!("conc-one-{rep}-{p}"),
                    false => format!("conc-sep-{rep}-{p}-{w}"),
                };
                let t = Instant::now();
                let children: Vec<_> = (0..p)
                    .map(|w| {
                        Command::new("sh")
                            .args(["-c", script])
                            .current_dir(&wsdir)
                            .env("TB", TB)
                            .env("WRITES", writes.to_string())
                            .env("W", w.to_string())
                            .env("FILE", format!("w{w}.txt"))
                            .env("TURNBACK_HOME", &home)
                            .env("TURNBACK_SESSION", session(w))
                            .env_remove("TURNBACK_WORKSPACE")
                            .spawn()
                            .expect("spawn sh")
                    })
                    .collect();
                for mut c in children {
                    assert!(c.wait().unwrap().success(), "a writer failed");
                }
                let elapsed = t.elapsed();
                let store = Store::new(&home);
                let recorded: usize = (0..p)
                    .map(session)
                    .collect::<std::collections::BTreeSet<_>>()
                    .iter()
                    .map(|id| store.open_session(id).unwrap().entries().unwrap().len())
                    .sum();
                assert_eq!(recorded, p * writes, "entries recorded");
                let rate = (p * writes) as f64 / secs(elapsed);
                match results.iter_mut().find(|r| r.0 == p && r.1 == shared) {
                    Some(r) => r.2.push(rate),
                    None => results.push((p, shared, vec![rate])),
                }
            }
        }
    }
    let rate_of = |p: usize, shared: bool| {
        let r = results.iter().find(|r| r.0 == p && r.1 == shared).unwrap();
        median_f(r.2.clone())
    };
    for shared in [true, false] {
        let one = rate_of(1, shared);
        for &p in procs.iter().filter(|&&p| p > 1) {
            let rate = rate_of(p, shared);
            b.row(Row {
                what: format!(
                    "concurrent `turnback write` 4 KiB, {}: throughput",
                    if shared {
                        "one session"
                    } else {
                        "separate sessions"
                    }
                ),
                param: format!(
                    "{p} processes × {writes} writes, {}",
                    if reps == 1 {
                        "1 run".to_owned()
                    } else {
                        format!("{reps} runs")
                    }
                ),
                tb: format!("{rate:.1} writes/s"),
                reference: format!("1 process: {one:.1} writes/s"),
                ratio: format!("{:.2}x scaling", rate / one),
                goal: "—".into(),
                verdict: Verdict::Info,
            });
        }
    }
}

// ---------------------------------------------------------------------------
// 5. Against shadow git

/// A workspace with a shadow git repository and turnback sessions on it.
struct Shadow {
    wsdir: PathBuf,
    git_dir: PathBuf,
    ws: Workspace,
    lib: Session,
    home: PathBuf,
    seed: u64,
    /// A `turnback serve --stdio` on the same store, and its output.
    serve: Option<Serve>,
}

/// A running `turnback serve --stdio`: requests in, response lines out.
struct Serve {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Serve {
    fn start(home: &Path, wsdir: &Path) -> Serve {
        let mut child = Command::new(TB)
            .args(["serve", "--stdio"])
            .current_dir(wsdir)
            .env("TURNBACK_HOME", home)
            .env("TURNBACK_SESSION", "shadow-serve")
            .env_remove("TURNBACK_WORKSPACE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start turnback serve");
        Serve {
            stdin: child.stdin.take().unwrap(),
            stdout: std::io::BufReader::new(child.stdout.take().unwrap()),
            child,
            next: 0,
        }
    }

    /// One `write` request of `bytes` (base64, as a client with bytes sends
    /// them), answered.
    fn write(&mut self, file: &str, bytes: &[u8]) {
        use base64::Engine;
        use std::io::BufRead;
        self.next += 1;
        let request = json!({
            "id": self.next,
            "op": "write",
            "args": {"file": file, "message": "m"},
            "content_base64": base64::engine::general_purpose::STANDARD.encode(bytes),
        });
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(
            line.starts_with(&format!("{{\"id\":{},\"result\"", self.next)),
            "{line}"
        );
    }
}

impl Serve {
    /// A `hello` request answered: the protocol's own cost, no file touched.
    fn hello(&mut self) -> Duration {
        use std::io::BufRead;
        self.next += 1;
        let t = Instant::now();
        writeln!(self.stdin, "{}", json!({"id": self.next, "op": "hello"})).unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let took = t.elapsed();
        assert!(line.contains("\"protocol\""), "{line}");
        took
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Shadow {
    fn git(&self) -> Command {
        let mut c = Command::new("git");
        c.arg(format!("--git-dir={}", self.git_dir.display()))
            .arg(format!("--work-tree={}", self.wsdir.display()))
            .args([
                "-c",
                "user.name=turnback bench",
                "-c",
                "user.email=bench@example.invalid",
                "-c",
                "gc.auto=0",
                "-c",
                "maintenance.auto=false",
                "-c",
                "commit.gpgSign=false",
            ])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(&self.wsdir)
            .stdout(Stdio::null());
        c
    }

    /// `git add -A && git commit -q -m x`.
    fn snapshot(&self, message: &str) {
        run_with_stdin(self.git().args(["add", "-A"]), b"");
        run_with_stdin(self.git().args(["commit", "-q", "-m", message]), b"");
    }

    fn next(&mut self) -> Vec<u8> {
        self.seed += 1;
        let mut buf = vec![0u8; 4 * KIB];
        fill(&mut buf, self.seed);
        buf
    }

    /// A write protected by a shadow-git snapshot: snapshot, then the plain write.
    fn git_write(&mut self) -> Duration {
        let buf = self.next();
        sync();
        let t = Instant::now();
        self.snapshot("x");
        fs::write(self.wsdir.join("src/git-target.txt"), &buf).unwrap();
        t.elapsed()
    }

    fn lib_write(&mut self) -> Duration {
        let buf = self.next();
        sync();
        let t = Instant::now();
        self.lib
            .write(&self.ws, "src/lib-target.txt", &buf[..], "m")
            .unwrap();
        t.elapsed()
    }

    /// A write through the running `turnback serve --stdio`: the request
    /// made, sent and answered.
    fn serve_write(&mut self) -> Duration {
        let buf = self.next();
        let serve = self.serve.as_mut().expect("started");
        sync();
        let t = Instant::now();
        serve.write("src/serve-target.txt", &buf);
        t.elapsed()
    }

    fn cli_write(&mut self) -> Duration {
        let buf = self.next();
        let mut c = Command::new(TB);
        c.args(["write", "src/cli-target.txt", "--message", "m"])
            .current_dir(&self.wsdir)
            .env("TURNBACK_HOME", &self.home)
            .env("TURNBACK_SESSION", "shadow-cli")
            .env_remove("TURNBACK_WORKSPACE")
            .stdout(Stdio::null());
        sync();
        let t = Instant::now();
        run_with_stdin(&mut c, &buf);
        t.elapsed()
    }
}

fn shadow_git(b: &mut Bench) {
    if capture("git", &["--version"]).is_none() {
        b.note("git not installed: section 5 skipped".into());
        return;
    }
    let dir = b.section_dir(5);
    let (sizes, runs): (&[usize], usize) = if b.quick {
        (&[1_000], 3)
    } else {
        (&[1_000, 10_000, 50_000], 21)
    };
    let mut small: Option<Shadow> = None;
    for &n in sizes {
        let t = Instant::now();
        let wsdir = dir.join(format!("ws-{n}"));
        make_tree(&wsdir, n);
        let store_home = dir.join(format!("home-{n}"));
        let ws = Workspace::open(&wsdir).unwrap();
        let lib = Store::new(&store_home).session("shadow-lib").unwrap();
        let serve = Some(Serve::start(&store_home, &wsdir));
        let mut sh = Shadow {
            wsdir: wsdir.clone(),
            git_dir: dir.join(format!("shadow-{n}.git")),
            ws,
            lib,
            home: store_home,
            seed: 7_000_000 * n as u64,
            serve,
        };
        for f in ["git", "lib", "cli", "serve"] {
            fs::write(wsdir.join(format!("src/{f}-target.txt")), f).unwrap();
        }
        run_with_stdin(sh.git().args(["init", "-q"]), b"");
        sync();
        eprintln!("    workspace of {n} files made in {}", fmt_d(t.elapsed()));
        // Files written within the index's second are "racily clean" and
        // git would hash them again on every add; let that second pass.
        std::thread::sleep(Duration::from_millis(1100));
        let t = Instant::now();
        sh.snapshot("first");
        let first = t.elapsed();
        b.row(Row {
            what: "shadow git: first snapshot (`git add -A && git commit`)".into(),
            param: format!("{} files", thousands(n)),
            tb: "none (no such step)".into(),
            reference: format!("git: {}", fmt_d(first)),
            ratio: "—".into(),
            goal: "—".into(),
            verdict: Verdict::Info,
        });
        // Warm-up: a round of each, so git's index and turnback's store are warm.
        // (Each git round commits the change the previous round wrote.)
        fs::write(wsdir.join("src/git-target.txt"), "changed").unwrap();
        sh.git_write();
        sh.git_write();
        sh.lib_write();
        sh.cli_write();
        sh.serve_write();
        if let Some(s) = small.as_mut() {
            s.lib_write();
            s.cli_write();
        }
        let (mut git, mut lib, mut cli, mut lib1k, mut cli1k) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut served = Vec::new();
        for _ in 0..runs {
            git.push(sh.git_write());
            lib.push(sh.lib_write());
            cli.push(sh.cli_write());
            served.push(sh.serve_write());
            if let Some(s) = small.as_mut() {
                lib1k.push(s.lib_write());
                cli1k.push(s.cli_write());
            }
        }
        let git = median(git);
        let goal = match n {
            10_000 => Some(20.0),
            50_000 => Some(80.0),
            _ => None,
        };
        let (lib, cli, served) = (median(lib), median(cli), median(served));
        for (how, tb) in [
            ("library `Session::write`", lib),
            ("`turnback write` process", cli),
            ("`turnback serve --stdio` request", served),
        ] {
            let faster = secs(git) / secs(tb);
            b.row(Row {
                what: format!("protected 4 KiB write vs shadow git: {how}"),
                param: format!("{} files, {runs} runs", thousands(n)),
                tb: fmt_d(tb),
                reference: format!("git add -A && commit, then write: {}", fmt_d(git)),
                ratio: format!("{faster:.1}x faster"),
                goal: goal.map_or("—".into(), |g| format!("≥ {g}x faster")),
                verdict: goal.map_or(Verdict::Info, |g| Verdict::of(faster >= g)),
            });
        }
        if n == sizes[0] {
            let serve = sh.serve.as_mut().expect("started");
            let hello = median((0..runs).map(|_| serve.hello()).collect());
            b.row(Row {
                what: "`serve --stdio` round trip: a `hello` request, no file touched".into(),
                param: format!("{runs} runs"),
                tb: fmt_d(hello),
                reference: "—".into(),
                ratio: "—".into(),
                goal: "—".into(),
                verdict: Verdict::Info,
            });
        }
        b.row(time_row(
            "4 KiB write through `serve --stdio` (request to response) vs the library call",
            &format!("{} files, {runs} runs", thousands(n)),
            served,
            ("`Session::write`", lib),
            Some(1.2),
        ));
        if small.is_some() {
            for (how, tb, reference) in [
                ("library", lib, median(lib1k)),
                ("`turnback write`", cli, median(cli1k)),
            ] {
                b.row(time_row(
                    &format!("turnback write-through ({how}) vs workspace size"),
                    &format!("{} files, {runs} runs", thousands(n)),
                    tb,
                    ("same, 1,000 files", reference),
                    Some(1.5),
                ));
            }
        }
        if small.is_none() {
            small = Some(sh);
        }
    }
}

/// `n` small files (60 to 600 bytes), 100 per directory, two levels deep.
fn make_tree(root: &Path, n: usize) {
    for i in 0..n {
        let d = root.join(format!("src/m{:02}/d{:03}", i / 10_000, (i / 100) % 100));
        if i % 100 == 0 {
            fs::create_dir_all(&d).unwrap();
        }
        let line = format!("// file {i}: some source text of a small workspace file\n");
        fs::write(d.join(format!("f{i:06}.rs")), line.repeat(1 + i % 10)).unwrap();
    }
}

// ---------------------------------------------------------------------------
// 6. Memory

fn memory(b: &mut Bench) {
    if !Path::new("/usr/bin/time").exists() {
        b.note("/usr/bin/time not installed: section 6 skipped".into());
        return;
    }
    let dir = b.section_dir(6);
    let home = dir.join("home");
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    let (size, label) = if b.quick {
        (64 * MIB, "64 MiB")
    } else {
        (1024 * MIB, "1 GiB")
    };
    let src = dir.join("new.bin");
    make_big(&src, size, 1);
    make_big(&wsdir.join("big.bin"), size, 2);
    sync();
    // Peak RSS (KiB) and wall time of one turnback process.
    let rss = |args: &[&str], stdin: Option<&Path>| -> (u64, Duration) {
        let out = dir.join("rss.txt");
        let mut c = Command::new("/usr/bin/time");
        c.args(["-f", "%M", "-o"])
            .arg(&out)
            .arg(TB)
            .args(args)
            .current_dir(&wsdir)
            .env("TURNBACK_HOME", &home)
            .env("TURNBACK_SESSION", "memory")
            .env_remove("TURNBACK_WORKSPACE")
            .stdout(Stdio::null())
            .stdin(match stdin {
                Some(p) => Stdio::from(fs::File::open(p).unwrap()),
                None => Stdio::null(),
            });
        let t = Instant::now();
        let status = c.status().unwrap();
        let d = t.elapsed();
        assert!(status.success(), "turnback {args:?} failed");
        let kib = fs::read_to_string(&out)
            .unwrap()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .next_back()
            .expect("a peak RSS from /usr/bin/time");
        (kib, d)
    };
    let (base, _) = rss(&["--version"], None);
    let (write, write_t) = rss(&["write", "big.bin", "--message", "big"], Some(&src));
    assert_eq!(
        fs::metadata(wsdir.join("big.bin")).unwrap().len(),
        size as u64
    );
    let (undo, undo_t) = rss(&["undo"], None);
    let mut head = vec![0u8; MIB];
    fill(&mut head, 2 << 32);
    let mut restored = vec![0u8; MIB];
    let mut f = fs::File::open(wsdir.join("big.bin")).unwrap();
    std::io::Read::read_exact(&mut f, &mut restored).unwrap();
    assert_eq!(f.metadata().unwrap().len(), size as u64);
    assert!(restored == head, "undo restored the old file");
    for (what, kib) in [
        (
            "peak RSS: `turnback write` (contents on stdin from a file)",
            write,
        ),
        ("peak RSS: `turnback undo` of that write", undo),
    ] {
        let limit = 32 * 1024;
        b.row(Row {
            what: what.into(),
            param: label.into(),
            tb: fmt_kib(kib),
            reference: format!("`turnback --version`: {}", fmt_kib(base)),
            ratio: format!("{:.2}x", kib as f64 / base as f64),
            goal: "≤ 32 MiB".into(),
            verdict: Verdict::of(kib <= limit),
        });
    }
    b.note(format!(
        "memory section wall times (one run each, over an existing file of the same size): \
         `turnback write` {label} {}, `turnback undo` {}",
        fmt_d(write_t),
        fmt_d(undo_t)
    ));
}

/// A file of `size` pseudo-random bytes, written 1 MiB at a time; its first
/// MiB is `fill(seed << 32)`.
fn make_big(path: &Path, size: usize, seed: u64) {
    let mut f = fs::File::create(path).unwrap();
    let mut buf = vec![0u8; MIB];
    for k in 0..size / MIB {
        fill(&mut buf, (seed << 32) + k as u64);
        f.write_all(&buf).unwrap();
    }
}

// ---------------------------------------------------------------------------
// Synthesized sessions (docs/FORMAT.md, format 3)

/// A workspace root as an index records it.
struct WsId {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl WsId {
    fn of(ws: &Workspace) -> WsId {
        let md = fs::metadata(ws.root()).unwrap();
        WsId {
            path: ws.root().to_owned(),
            dev: md.dev(),
            ino: md.ino(),
        }
    }

    fn json(&self) -> Value {
        json!({ "path": self.path, "dev": self.dev, "ino": self.ino })
    }
}

fn state(sha256: &str, size: usize) -> Value {
    json!({ "exists": true, "sha256": sha256, "size": size, "mode": 0o644 })
}

fn absent() -> Value {
    json!({ "exists": false, "sha256": null, "size": 0, "mode": null })
}

/// RFC 3339 time `offset_ms` after a base 30 days ago (so that any real change
/// made later is newer than every synthesized one).
fn past_time(offset_ms: usize) -> String {
    let base = OffsetDateTime::now_utc() - time::Duration::days(30);
    (base + time::Duration::milliseconds(offset_ms as i64))
        .format(&Rfc3339)
        .unwrap()
}

fn write_index(home: &Path, id: &str, entries: Vec<Value>, turns: Vec<Value>, reads: Vec<Value>) {
    let dir = home.join("sessions").join(id);
    fs::create_dir_all(dir.join("blobs")).unwrap();
    let index = json!({
        "format": 3,
        "session": id,
        "journal": 0,
        "next_seq": entries.len() + 1,
        "entries": entries,
        "next_turn": turns.len() + 1,
        "turns": turns,
        "history": [],
        "next_record": 1,
        "reads": reads,
    });
    let mut bytes = serde_json::to_vec_pretty(&index).unwrap();
    bytes.push(b'\n');
    fs::write(dir.join("index.json"), bytes).unwrap();
}

/// `<home>/sessions/<id>/index.json` with `n` entries as an agent would leave
/// them: distinct paths under `tag/`, every tenth one a created file, a turn
/// every 50 entries, one read mark per file. The blobs they name are not
/// there (nothing reads them unless these entries are reverted).
fn synth_index(home: &Path, id: &str, ws: &WsId, n: usize, tag: &str) {
    let mut entries = Vec::with_capacity(n);
    let mut reads = Vec::with_capacity(n);
    let mut turns = Vec::new();
    for i in 0..n {
        let seq = i + 1;
        let turn = i / 50 + 1;
        if i % 50 == 0 {
            turns.push(json!({
                "number": turn,
                "prompt": format!("turn {turn}: refactor the module and fix the failing tests"),
                "time": past_time(i * 1000),
                "conversation_index": 2 * turn,
            }));
        }
        let path = format!("{tag}/mod{:03}/file{seq:06}.rs", i / 100 % 1000);
        let size = 200 + (i * 37) % 8000;
        let after = state(&hex_sha(format!("{id}/{seq}/after").as_bytes()), size + 40);
        let before = match i % 10 {
            9 => absent(),
            _ => state(&hex_sha(format!("{id}/{seq}/before").as_bytes()), size),
        };
        entries.push(json!({
            "seq": seq,
            "message_id": format!("toolu_{:020}", seq * 7919),
            "workspace": ws.json(),
            "path": path,
            "version": 1,
            "time": past_time(i * 1000 + 500),
            "before": before,
            "after": after,
            "turn": turn,
        }));
        reads.push(json!({ "file": ws.path.join(&path), "state": after }));
    }
    write_index(home, id, entries, turns, reads);
}

/// A session of `files` × `versions` real entries, the newest round last (one
/// message per entry: `m<round>-<file>`), whose backups exist and whose files
/// are at their newest "after": what `rewind("m0-0")` reverts in full.
fn synth_rewind(
    home: &Path,
    id: &str,
    ws: &WsId,
    wsdir: &Path,
    files: usize,
    versions: usize,
    tag: &str,
) {
    let blobs = home.join("sessions").join(id).join("blobs");
    fs::create_dir_all(&blobs).unwrap();
    fs::create_dir_all(wsdir.join(tag)).unwrap();
    let mut buf = vec![0u8; 4 * KIB];
    // hashes[f][v]: version v of file f (0 = the original).
    let mut hashes = vec![Vec::new(); files];
    for (f, h) in hashes.iter_mut().enumerate() {
        for v in 0..=versions {
            fill(&mut buf, hash_u64(&format!("{tag}/{f}/{v}")));
            let sha = hex_sha(&buf);
            if v < versions {
                fs::write(blobs.join(&sha), &buf).unwrap();
            } else {
                let p = wsdir.join(format!("{tag}/f{f:03}.txt"));
                fs::write(&p, &buf).unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
            }
            h.push(sha);
        }
    }
    let mut entries = Vec::new();
    for round in 0..versions {
        for (f, h) in hashes.iter().enumerate() {
            let seq = entries.len() + 1;
            entries.push(json!({
                "seq": seq,
                "message_id": format!("m{round}-{f}"),
                "workspace": ws.json(),
                "path": format!("{tag}/f{f:03}.txt"),
                "version": round + 1,
                "time": past_time(seq),
                "before": state(&h[round], 4 * KIB),
                "after": state(&h[round + 1], 4 * KIB),
                "turn": 0,
            }));
        }
    }
    let reads = hashes
        .iter()
        .enumerate()
        .map(|(f, h)| {
            json!({
                "file": ws.path.join(format!("{tag}/f{f:03}.txt")),
                "state": state(&h[versions], 4 * KIB),
            })
        })
        .collect();
    write_index(home, id, entries, Vec::new(), reads);
}

// ---------------------------------------------------------------------------
// Helpers

/// The reference: temporary, write, fsync, rename over, fsync the directory.
fn durable_write(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs::rename(&tmp, dir.join(name)).unwrap();
    fs::File::open(dir).unwrap().sync_all().unwrap();
}

/// Pseudo-random bytes (xorshift), different everywhere for each seed, so that
/// no two versions share a backup.
fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

fn hash_u64(s: &str) -> u64 {
    let d = Sha256::digest(s.as_bytes());
    u64::from_le_bytes(d[..8].try_into().unwrap())
}

fn hex_sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Flushes dirty data, so that a timed operation does not pay for the setup's
/// writes (or the previous operation's).
fn sync() {
    let _ = Command::new("sync").status();
}

/// Runs `c` with `stdin` as its standard input; panics unless it succeeds.
fn run_with_stdin(c: &mut Command, stdin: &[u8]) {
    let mut child = c
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {c:?}: {e}"));
    {
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{c:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The trimmed stdout of a command, if it runs and succeeds.
fn capture(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_owned()
    })
}

/// The filesystem type of `dir`, from `df -T`.
fn fs_type(dir: &Path) -> String {
    Command::new("df")
        .arg("-T")
        .arg(dir)
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let line = text.lines().nth(1)?.to_owned();
            let cols: Vec<&str> = line.split_whitespace().collect();
            Some(format!("{} ({})", cols.get(1)?, cols.first()?))
        })
        .unwrap_or_else(|| "an unknown filesystem".into())
}

fn median(mut v: Vec<Duration>) -> Duration {
    assert!(!v.is_empty());
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn fmt_d(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn fmt_kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------
// 7. Blame

/// `Store::blame` of a file of `lines` lines that an agent changed `versions`
/// times (a few lines each, through `Session::write`), against `git blame`
/// of the same history committed version by version in a git repository.
fn blame(b: &mut Bench) {
    let dir = b.section_dir(7);
    let (lines, versions, runs) = if b.quick {
        (1_000, 50, 3)
    } else {
        (10_000, 500, 7)
    };
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    let store = Store::new(dir.join("home"));
    let ws = Workspace::open(&wsdir).unwrap();
    let session = store.session("blame-agent").unwrap();
    let git = capture("git", &["--version"]).is_some();
    let run_git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&wsdir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    };
    let mut text: Vec<String> = (0..lines)
        .map(|i| format!("line {i} of the file"))
        .collect();
    let t = Instant::now();
    fs::write(wsdir.join("big.txt"), text.join("\n") + "\n").unwrap();
    if git {
        run_git(&["init", "-q"]);
        run_git(&["add", "big.txt"]);
        run_git(&[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "v0",
        ]);
    }
    let mut seed = 77u64;
    for v in 1..=versions {
        for _ in 0..5 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = (seed >> 33) as usize % text.len();
            text[at] = format!("line {at} changed by version {v}");
        }
        let body = text.join("\n") + "\n";
        session
            .write(&ws, "big.txt", body.as_bytes(), &format!("call-{v}"))
            .unwrap();
        if git {
            run_git(&[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-qam",
                &format!("v{v}"),
            ]);
        }
    }
    eprintln!(
        "    {versions} versions of {lines} lines made in {}",
        fmt_d(t.elapsed())
    );
    let mut tb = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let blamed = store.blame(&ws, "big.txt").unwrap().unwrap();
        tb.push(t.elapsed());
        assert_eq!(blamed.lines.len(), lines);
        assert!(!blamed.gaps);
    }
    let param = format!(
        "{} lines, {versions} versions, {runs} runs",
        thousands(lines)
    );
    if !git {
        b.note("git not installed: the blame row has no reference".into());
        b.row(Row {
            what: "blame (`Store::blame`)".into(),
            param,
            tb: fmt_d(median(tb)),
            reference: "none (git not installed)".into(),
            ratio: "—".into(),
            goal: "—".into(),
            verdict: Verdict::Info,
        });
        return;
    }
    let mut reference = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        run_git(&["blame", "--porcelain", "big.txt"]);
        reference.push(t.elapsed());
    }
    b.row(time_row(
        "blame (`Store::blame`)",
        &param,
        median(tb),
        (
            "`git blame --porcelain` of the same history",
            median(reference),
        ),
        None,
    ));
}
