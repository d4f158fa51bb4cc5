//! Symlink races and many processes at once.
//!
//! **Races.** A helper process swaps a directory of the workspace for a
//! symbolic link to a directory outside it (or swaps the workspace root itself
//! for another directory) as fast as it can, while this process undoes,
//! reverts, rewinds and redoes the session's changes, through the library and
//! through `turnback` processes, writing again between them so that there is
//! always something to revert. Whatever the interleaving, nothing outside the
//! workspace may be written, created or deleted, and no temporary may be left
//! there; and the race must really happen: some attempts go through, some are
//! refused (`UnsafePath` for the directory, `WorkspaceMoved` for the root).
//! Afterwards every session opens, no entry is in flight or left by a write
//! that reported failure (it wrote nothing), and with the attacker gone every
//! entry can be undone.
//!
//! The helper is this test binary run again in a helper mode: the test
//! `races::swapper`, ignored in an ordinary run (the harness lists it as
//! ignored, with why) and run with `--ignored` by the races, with
//! `TURNBACK_RACE_SWAPPER` set. The
//! real directory is moved aside *inside* the workspace (`d` → `d.aside`): a
//! directory moved out of the workspace carries every descriptor open on it,
//! which is moving the files, not redirecting a path.
//!
//! Each race has two tiers that run the same code: a short one of
//! [`SHORT_ATTEMPTS`] attempts (a few seconds) that always runs, and a long one
//! of [`LONG_ATTEMPTS`] (or `TURNBACK_LONG_ATTEMPTS`) that runs only when
//! `TURNBACK_LONG_TESTS=1` is set, and otherwise says it skipped
//! ([`util::skip`]: on stderr and in the skip log that `.ci/run` prints at its
//! end). CI runs the long tier with a bounded number of attempts:
//!
//! ```text
//! TURNBACK_LONG_TESTS=1 cargo test --release --test tests races:: -- --nocapture
//! TURNBACK_LONG_TESTS=1 TURNBACK_LONG_ATTEMPTS=2000 cargo test --test tests races::long_
//! ```
//!
//! **Many processes.** Eight `turnback` processes (shell loops) work at once on
//! two sessions that share one workspace: writes to shared and private files,
//! `rm`, `mv`, undo, revert and rewind. Afterwards every session opens, no
//! change that reported success is lost unless a revert that reported success
//! took it, and every entry's "after" is a write of its own session.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;
use turnback_store::{Error, Session, Store, Workspace};

use crate::util::{self, Rng, forced, names_under, plain, sha256_hex, stray_temps, tree_digest};

/// Revert attempts of the short tier, which runs in CI.
const SHORT_ATTEMPTS: usize = 300;
/// Revert attempts of the long tier (`TURNBACK_LONG_TESTS=1`), unless
/// `TURNBACK_LONG_ATTEMPTS` says otherwise.
const LONG_ATTEMPTS: usize = 10_000;
/// How long (at most, in microseconds) the swapper leaves the swapped path as
/// it found it, and as a link (or another directory).
const HOLD_REAL_US: usize = 400;
const HOLD_SWAPPED_US: usize = 200;
/// Set (to `dir` or `root`) in the helper process that swaps.
const SWAPPER_ENV: &str = "TURNBACK_RACE_SWAPPER";

// ---------------------------------------------------------------------------
// Helpers

fn long_tests() -> bool {
    std::env::var("TURNBACK_LONG_TESTS").is_ok_and(|v| v == "1")
}

/// The attempts of a long tier: `TURNBACK_LONG_ATTEMPTS` (CI bounds the
/// tier with it), else [`LONG_ATTEMPTS`].
fn long_attempts() -> usize {
    match std::env::var("TURNBACK_LONG_ATTEMPTS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("TURNBACK_LONG_ATTEMPTS={v:?} is not a number")),
        Err(_) => LONG_ATTEMPTS,
    }
}

/// True when the long tiers run; else `test` says it skipped.
fn long_or_skip(test: &str) -> bool {
    let long = long_tests();
    if !long {
        util::skip(test, "the long tier runs with TURNBACK_LONG_TESTS=1");
    }
    long
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink())
}

/// `turnback` with this home and session, run in `cwd`.
fn turnback(home: &Path, cwd: &Path, session: &str) -> Command {
    let mut c = Command::new(util::bin());
    c.current_dir(cwd)
        .env("TURNBACK_HOME", home)
        .env("TURNBACK_SESSION", session)
        .env_remove("TURNBACK_WORKSPACE")
        .env("NO_COLOR", "1");
    c
}

/// A failed command: the kind of its error (`refused` for exit 3, the JSON
/// error's `kind` for 1 and 2, `odd exit` for anything else), and its message.
type Failure = (String, String);

/// Runs a `turnback --json ...` command to the end: its JSON output when it
/// exits 0, else how it failed.
fn run_json(mut cmd: Command, stdin: &[u8]) -> Result<Value, Failure> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn turnback");
    let mut input = child.stdin.take().unwrap();
    // A command that fails before it reads its input closes the pipe early.
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().expect("wait for turnback");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let message = serde_json::from_str::<Value>(stderr.trim())
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| stderr.clone());
    match out.status.code() {
        Some(0) => serde_json::from_slice(&out.stdout).map_err(|e| {
            let out = String::from_utf8_lossy(&out.stdout);
            ("odd exit".into(), format!("unparsable output ({e}): {out}"))
        }),
        // Exit code 3 is every refusal that touched nothing: a changed file
        // or another workspace (`refused`), and a link in the way, told
        // apart as `unsafe-path`.
        Some(3) => match error_kind(&stderr).as_str() {
            "unsafe-path" => Err(("unsafe-path".into(), message)),
            _ => Err(("refused".into(), message)),
        },
        Some(1 | 2) => Err((error_kind(&stderr), message)),
        other => Err(("odd exit".into(), format!("exit {other:?}: {stderr}"))),
    }
}

/// The `kind` of a `--json` error object on stderr.
fn error_kind(stderr: &str) -> String {
    serde_json::from_str::<Value>(stderr.trim())
        .ok()
        .and_then(|v| v["error"]["kind"].as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("unparsable error: {stderr}"))
}

/// Outcomes by kind (`ok`, or an error kind as `--json` names it), with the
/// first message of each.
#[derive(Default)]
struct Tally {
    counts: BTreeMap<String, usize>,
    examples: BTreeMap<String, String>,
}

impl Tally {
    fn add(&mut self, kind: &str, example: impl FnOnce() -> String) {
        *self.counts.entry(kind.to_owned()).or_default() += 1;
        self.examples.entry(kind.to_owned()).or_insert_with(example);
    }

    fn lib<T>(&mut self, r: &turnback_store::Result<T>) {
        match r {
            Ok(_) => self.add("ok", String::new),
            Err(e) => self.add(turnback::json::error_kind(e), || e.to_string()),
        }
    }

    fn cli(&mut self, r: &Result<Value, Failure>) {
        match r {
            Ok(_) => self.add("ok", String::new),
            Err((kind, message)) => self.add(kind, || format!("turnback: {message}")),
        }
    }

    fn count(&self, kind: &str) -> usize {
        self.counts.get(kind).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// The kinds seen that are not in `allowed`, with an example each.
    fn unexpected(&self, allowed: &[&str]) -> Vec<String> {
        self.counts
            .keys()
            .filter(|k| !allowed.contains(&k.as_str()))
            .map(|k| format!("{k} x{}: {}", self.counts[k], self.examples[k]))
            .collect()
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        write!(f, "{}", parts.join(", "))
    }
}

// ---------------------------------------------------------------------------
// The swapper: this binary run again in helper mode.

/// Where the swapper works, and how it is told to stop.
struct SwapPaths {
    /// The path swapped: a directory of the workspace, or the root.
    path: PathBuf,
    /// Where the real directory waits while a link (or another directory) is
    /// at `path`.
    aside: PathBuf,
    /// The directory outside the workspace the link points to (and, for the
    /// root, the directory renamed into its place).
    target: PathBuf,
    /// The same directory as a relative link sees it from `path`'s parent:
    /// every other link is made with it.
    relative: PathBuf,
}

impl SwapPaths {
    /// A name beside `path` for a directory that someone else made at `path`
    /// while the real one was aside.
    fn intruder(&self, n: u64) -> PathBuf {
        let mut name = self.path.file_name().unwrap().to_owned();
        name.push(format!(".intruder.{n}"));
        self.path.with_file_name(name)
    }

    /// Puts the real directory back at `path` from `aside`, moving anything
    /// that was made at `path` meanwhile (a directory a write created while
    /// `path` was missing) to an intruder name beside it.
    fn put_back(&self, intruders: &mut u64) {
        for _ in 0..8 {
            if std::fs::rename(&self.aside, &self.path).is_ok() || !self.aside.exists() {
                return;
            }
            if is_link(&self.path) {
                let _ = std::fs::remove_file(&self.path);
            } else {
                let _ = std::fs::rename(&self.path, self.intruder(*intruders));
                *intruders += 1;
            }
        }
    }

    /// Leaves things as they were before the swapper started: no link at
    /// `path`, the target directory at its own name, the real one at `path`.
    /// For whatever state a stopped (or killed) swapper left.
    fn settle(&self, target_ino: u64) {
        if is_link(&self.path) {
            std::fs::remove_file(&self.path).unwrap();
        }
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == target_ino) {
            std::fs::rename(&self.path, &self.target).unwrap();
        }
        let mut n = 1_000_000;
        self.put_back(&mut n);
        assert!(!self.aside.exists(), "{} left aside", self.aside.display());
        assert!(self.path.is_dir() && !is_link(&self.path));
        assert_eq!(std::fs::metadata(&self.target).unwrap().ino(), target_ino);
    }
}

/// The helper process: swaps `TURNBACK_RACE_PATH` over and over until the
/// stop file appears (or its parent dies), then prints how often.
///
/// Mode `dir`: move the real directory aside, put a link to the target at its
/// name (absolute and relative in turn), remove the link, move the directory
/// back. Mode `root` does the same on every other turn, and on the others puts
/// the target directory itself at the root's name (a directory with another
/// inode). Each state is held for a random moment of up to a few hundred
/// microseconds, the real directory twice as long as the swapped one: a
/// swapper at full speed leaves the real directory in place so briefly that
/// hardly an operation gets through, and the race would test only refusals.
#[test]
#[ignore = "a helper process: the race tests run it with --ignored"]
fn swapper() {
    let Ok(mode) = std::env::var(SWAPPER_ENV) else {
        util::skip(
            util::this_test!(),
            "a helper process: runs only when a race starts it",
        );
        return;
    };
    let var = |name: &str| {
        PathBuf::from(std::env::var_os(name).unwrap_or_else(|| panic!("{name} is not set")))
    };
    let paths = SwapPaths {
        path: var("TURNBACK_RACE_PATH"),
        aside: var("TURNBACK_RACE_ASIDE"),
        target: var("TURNBACK_RACE_TARGET"),
        relative: var("TURNBACK_RACE_RELATIVE"),
    };
    let control = var("TURNBACK_RACE_CONTROL");
    let stop = control.join("stop");
    let parent = std::os::unix::process::parent_id();
    std::fs::write(control.join("ready"), "").unwrap();
    let (mut turns, mut links, mut dirs, mut intruders) = (0u64, 0u64, 0u64, 0u64);
    let mut rng = Rng::new(u64::from(std::process::id()));
    let mut hold = |max_us: usize| {
        let us = rng.below(max_us + 1);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us as u64));
        }
    };
    loop {
        if turns % 16 == 0 && (stop.exists() || std::os::unix::process::parent_id() != parent) {
            break;
        }
        turns += 1;
        let moved = std::fs::rename(&paths.path, &paths.aside).is_ok();
        if mode == "root" && turns % 2 == 0 {
            if moved && std::fs::rename(&paths.target, &paths.path).is_ok() {
                dirs += 1;
                hold(HOLD_SWAPPED_US);
                let _ = std::fs::rename(&paths.path, &paths.target);
            }
        } else if symlink(
            if links % 2 == 0 {
                &paths.target
            } else {
                &paths.relative
            },
            &paths.path,
        )
        .is_ok()
        {
            links += 1;
            hold(HOLD_SWAPPED_US);
            let _ = std::fs::remove_file(&paths.path);
        }
        if moved {
            paths.put_back(&mut intruders);
        }
        hold(HOLD_REAL_US);
    }
    println!("swapper: {turns} turns, {links} links, {dirs} directories, {intruders} intruders");
}

/// A running swapper process; killed if the test ends without stopping it.
struct Swapper {
    child: Option<Child>,
    control: TempDir,
}

impl Swapper {
    fn start(mode: &str, paths: &SwapPaths) -> Swapper {
        let control = tempfile::tempdir().unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "races::swapper",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SWAPPER_ENV, mode)
            .env("TURNBACK_RACE_PATH", &paths.path)
            .env("TURNBACK_RACE_ASIDE", &paths.aside)
            .env("TURNBACK_RACE_TARGET", &paths.target)
            .env("TURNBACK_RACE_RELATIVE", &paths.relative)
            .env("TURNBACK_RACE_CONTROL", control.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the swapper");
        let mut swapper = Swapper {
            child: Some(child),
            control,
        };
        let started = Instant::now();
        while !swapper.control.path().join("ready").exists() {
            let child = swapper.child.as_mut().unwrap();
            if let Some(status) = child.try_wait().unwrap() {
                let mut out = String::new();
                child.stdout.take().unwrap().read_to_string(&mut out).ok();
                panic!("the swapper exited before it began ({status}): {out}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the swapper did not start"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        swapper
    }

    /// Tells the swapper to stop, waits for it (killing it after 10 s), and
    /// returns what it printed.
    fn stop(mut self) -> String {
        std::fs::write(self.control.path().join("stop"), "").unwrap();
        let mut child = self.child.take().unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.find("swapper:").map(|at| l[at..].to_owned()))
            .unwrap_or_else(|| "swapper: (no report)".to_owned())
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------
// The race: reverts (and writes) while the swapper works.

/// One race's setting.
struct Arena {
    home: TempDir,
    /// Holds the workspace and the outside directory side by side; everything
    /// in it but the workspace is "outside".
    base: TempDir,
    /// The workspace root's name in `base`.
    root_name: &'static str,
    /// The directory outside the workspace that the swapper points at.
    outside: PathBuf,
    /// The files the session changes, relative to the root.
    files: Vec<&'static str>,
}

impl Arena {
    fn root(&self) -> PathBuf {
        self.base.path().join(self.root_name)
    }

    /// Everything under `base` except the workspace, as a digest.
    fn outside_digest(&self) -> BTreeMap<PathBuf, String> {
        tree_digest(self.base.path())
            .into_iter()
            .filter(|(p, _)| !p.starts_with(self.root_name))
            .collect()
    }
}

/// What the session's first writes leave in `rel`; the outside directory holds
/// the same, so that a revert that followed a link would find those files
/// exactly as the session left them and restore (or delete) them.
fn setup_contents(rel: &str) -> String {
    format!("setup {rel}\n")
}

/// How reverts, writes and `turnback` processes reach the workspace.
struct Access {
    /// Where `turnback` processes run.
    cli_dir: PathBuf,
    /// Passed as `--workspace` when set.
    cli_workspace: Option<PathBuf>,
    /// Prefix of a file's path on the command line (empty: relative to `cli_dir`).
    cli_prefix: PathBuf,
    /// Whether writes also go through `turnback write` (not for the root race:
    /// a process started while the root's name points elsewhere works there, as
    /// asked).
    cli_writes: bool,
    /// The refusal the race causes.
    refusal: &'static str,
}

#[derive(Clone, Copy, Debug)]
enum RevertKind {
    Undo,
    Revert,
    Rewind,
    Redo,
}

/// The attempts in turn: through the library, plain and forced, and through
/// `turnback` processes (forced every other round).
const ROUND: [(bool, RevertKind, bool); 10] = [
    (false, RevertKind::Undo, false),
    (false, RevertKind::Revert, false),
    (false, RevertKind::Rewind, false),
    (false, RevertKind::Redo, false),
    (false, RevertKind::Undo, true),
    (false, RevertKind::Revert, true),
    (false, RevertKind::Rewind, true),
    (true, RevertKind::Undo, false),
    (true, RevertKind::Revert, false),
    (true, RevertKind::Rewind, false),
];

struct RaceResult {
    reverts: Tally,
    writes: Tally,
    elapsed: Duration,
    swapper: String,
    /// The sessions the race used, in order.
    sessions: Vec<Session>,
    /// The writes that failed, by message id (unique in a race), with why.
    failed_writes: BTreeMap<String, String>,
}

/// Attempts per session: every undo, revert and rewind adds to the session's
/// history, and every operation reads and writes the whole index, so one
/// session for ten thousand attempts would spend its time in JSON. The race
/// moves on to a new session (the same code path) every `EPOCH` attempts.
const EPOCH: usize = 50;

/// Runs `attempts` reverts (and the writes that keep them busy) against
/// `first` and its successors while the swapper works on `paths`, then stops
/// it and checks that nothing outside the workspace changed.
fn race(
    arena: &Arena,
    first: &Session,
    ws: &Workspace,
    access: &Access,
    mode: &str,
    paths: &SwapPaths,
    attempts: usize,
) -> RaceResult {
    let outside_before = tree_digest(&arena.outside);
    let base_before = arena.outside_digest();
    let target_ino = std::fs::metadata(&paths.target).unwrap().ino();
    let store = Store::new(arena.home.path());
    let started = Instant::now();
    let swapper = Swapper::start(mode, paths);
    let mut rng = Rng::new(attempts as u64 ^ mode.len() as u64);
    let mut reverts = Tally::default();
    let mut writes = Tally::default();
    let mut sessions = vec![first.clone()];
    let mut failed_writes = BTreeMap::new();
    let cli = |session: &Session, args: &[&str]| {
        let mut c = turnback(arena.home.path(), &access.cli_dir, session.id());
        c.arg("--json");
        if let Some(w) = &access.cli_workspace {
            c.arg("--workspace").arg(w);
        }
        c.args(args);
        c
    };
    let cli_path = |rel: &str| access.cli_prefix.join(rel).to_str().unwrap().to_owned();

    for i in 0..attempts {
        if i > 0 && i % EPOCH == 0 {
            let id = format!("{}-{}", first.id(), i / EPOCH);
            sessions.push(store.session(&id).unwrap());
        }
        let session = sessions.last().unwrap();
        // Something to revert: at least three entries, and a new write every
        // third attempt. Writes fail too while the path is swapped; fine.
        let have = session.entries().expect("the index parses").len();
        let n_writes = if have < 3 { 3 } else { usize::from(i % 3 == 0) };
        for j in 0..n_writes {
            let rel = *rng.pick(&arena.files);
            let message = format!("m{i}-{j}");
            let contents = format!("w {rel} {i}-{j}\n");
            let failure = if access.cli_writes && (i + j) % 5 == 0 {
                let mut c = cli(session, &["write", &cli_path(rel), "--message", &message]);
                c.stdin(Stdio::piped());
                let r = run_json(c, contents.as_bytes());
                writes.cli(&r);
                r.err()
                    .map(|(kind, message)| format!("turnback write {rel}: {kind}: {message}"))
            } else {
                let r = session.write(ws, rel, contents.as_bytes(), &message);
                writes.lib(&r);
                r.err().map(|e| format!("Session::write {rel}: {e}"))
            };
            if let Some(why) = failure {
                failed_writes.insert(message, why);
            }
        }

        let (through_cli, kind, force) = ROUND[i % ROUND.len()];
        let entries = session.entries().expect("the index parses");
        let rel = *rng.pick(&arena.files);
        let message = if entries.is_empty() {
            "none".to_owned()
        } else {
            rng.pick(&entries).message_id.clone()
        };
        if through_cli {
            let cli_force = (i / ROUND.len()) % 2 == 1;
            let path = cli_path(rel);
            let mut args: Vec<&str> = match kind {
                RevertKind::Undo => vec!["undo"],
                RevertKind::Revert => vec!["revert", &path],
                RevertKind::Rewind => vec!["rewind", &message],
                RevertKind::Redo => vec!["redo"],
            };
            if cli_force {
                args.push("--force");
            }
            reverts.cli(&run_json(cli(session, &args), b""));
        } else {
            let opts = if force { forced() } else { plain() };
            let r = match kind {
                RevertKind::Undo => session.undo(opts),
                RevertKind::Revert => session.revert(ws, rel, opts),
                RevertKind::Rewind => session.rewind(&message, opts),
                RevertKind::Redo => session.redo(opts),
            };
            reverts.lib(&r);
        }
    }

    let swapper = swapper.stop();
    paths.settle(target_ino);
    let elapsed = started.elapsed();

    // The point of it all: outside, nothing written, created or deleted.
    assert_eq!(
        tree_digest(&arena.outside),
        outside_before,
        "the directory outside the workspace changed ({reverts}; writes {writes})"
    );
    assert_eq!(
        arena.outside_digest(),
        base_before,
        "something beside the workspace changed"
    );
    let temps: Vec<PathBuf> = names_under(arena.base.path())
        .into_iter()
        .filter(|p| !p.starts_with(arena.root_name))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".turnback-"))
        })
        .collect();
    assert!(temps.is_empty(), "temporaries outside: {temps:?}");
    RaceResult {
        reverts,
        writes,
        elapsed,
        swapper,
        sessions,
        failed_writes,
    }
}

/// After a race: every session opens again, its entries parse, none is in
/// flight and none is left by a write that failed (a failed write records
/// nothing: every entry here has its "after"), no temporary is left in the
/// workspace, and with the attacker gone every remaining entry can be undone
/// (forced, newest session first) until there is nothing left.
fn check_after_race(arena: &Arena, r: &RaceResult) {
    let store = Store::new(arena.home.path());
    let mut problems = Vec::new();
    for session in r.sessions.iter().rev() {
        let again = store.open_session(session.id()).expect("the session opens");
        let entries = again.entries().expect("the index parses");
        for e in &entries {
            let what = format!(
                "{} seq {} ({}, message {}, before {}, after {})",
                again.id(),
                e.seq,
                e.path,
                e.message_id,
                state(&e.before),
                e.after.as_ref().map_or("none".into(), state),
            );
            if e.in_flight.is_some() {
                problems.push(format!("{what}: still in flight"));
            }
            if let Some(why) = r.failed_writes.get(&e.message_id) {
                problems.push(format!("{what}: the entry of a write that failed ({why})"));
            } else if e.after.is_none() {
                problems.push(format!("{what}: never committed"));
            }
        }
        assert_eq!(stray_temps(&arena.root()), Vec::<PathBuf>::new());
        for _ in 0..=entries.len() {
            match again.undo(forced()) {
                Ok(_) => {}
                Err(Error::NothingToUndo { .. }) => break,
                Err(e) => panic!("{}: undo after the race: {e}", again.id()),
            }
        }
        assert!(again.entries().unwrap().is_empty());
    }
    assert_eq!(stray_temps(&arena.root()), Vec::<PathBuf>::new());
    assert!(problems.is_empty(), "after the race: {problems:#?}");
}

/// A file state in a few words.
fn state(s: &turnback_store::FileState) -> String {
    match &s.sha256 {
        Some(h) if s.exists => format!("{}...", &h[..8]),
        _ => "absent".into(),
    }
}

fn report(name: &str, attempts: usize, r: &RaceResult) {
    eprintln!(
        "{name}: {attempts} attempts in {:.1?} ({} sessions)\n  reverts: {}\n  writes: {}\n  {}",
        r.elapsed,
        r.sessions.len(),
        r.reverts,
        r.writes,
        r.swapper
    );
    for (what, tally) in [("revert", &r.reverts), ("write", &r.writes)] {
        for (kind, example) in tally.examples.iter().filter(|(k, _)| *k != "ok") {
            let example: String = example.chars().take(200).collect();
            eprintln!("  first {what} {kind}: {example}");
        }
    }
}

/// Kinds of outcome a revert attempt may have in a race. A session exists from
/// its first write that gets past the checks, so a revert in a session whose
/// writes the race has refused so far finds none.
const REVERT_OUTCOMES: [&str; 8] = [
    "ok",
    "session-not-found",
    "refused",
    "nothing-to-undo",
    "nothing-to-redo",
    "no-change-to-file",
    "message-not-found",
    "io",
];

/// Kinds of outcome a write may have in a race.
const WRITE_OUTCOMES: [&str; 3] = ["ok", "outside-workspace", "io"];

// --- A directory of the workspace swapped for a link out of it -------------

const DIR_FILES: [&str; 7] = [
    "d/f0.txt",
    "d/f1.txt",
    "d/f2.txt",
    "d/f3.txt",
    "d/n0.txt",
    "d/n1.txt",
    "d/deep/n2.txt",
];

fn dir_race(name: &str, attempts: usize) {
    let base = tempfile::tempdir().unwrap();
    let arena = Arena {
        home: tempfile::tempdir().unwrap(),
        outside: base.path().join("outside"),
        base,
        root_name: "ws",
        files: DIR_FILES.to_vec(),
    };
    let root = arena.root();
    std::fs::create_dir_all(root.join("d")).unwrap();
    for rel in &DIR_FILES[..4] {
        std::fs::write(root.join(rel), format!("original {rel}\n")).unwrap();
    }
    // Outside: the same names with the contents the session leaves, and one more.
    for rel in DIR_FILES {
        let p = arena.outside.join(rel.strip_prefix("d/").unwrap());
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, setup_contents(rel)).unwrap();
    }
    std::fs::write(arena.outside.join("keep.txt"), "not the workspace's\n").unwrap();

    let session = Store::new(arena.home.path()).session(name).unwrap();
    let ws = Workspace::open(&root).unwrap();
    for rel in DIR_FILES {
        session
            .write(&ws, rel, setup_contents(rel).as_bytes(), "setup")
            .unwrap();
    }
    let access = Access {
        cli_dir: root.clone(),
        cli_workspace: None,
        cli_prefix: PathBuf::new(),
        cli_writes: true,
        refusal: "unsafe-path",
    };
    let paths = SwapPaths {
        path: root.join("d"),
        aside: root.join("d.aside"),
        target: arena.outside.clone(),
        relative: PathBuf::from("../outside"),
    };
    let r = race(&arena, &session, &ws, &access, "dir", &paths, attempts);
    report(name, attempts, &r);
    check_outcomes(&r, attempts, access.refusal, &[], &["unsafe-path"]);
    check_after_race(&arena, &r);
}

/// Every attempt was made, some went through, some were refused by the race,
/// and nothing happened that the race cannot explain.
fn check_outcomes(
    r: &RaceResult,
    attempts: usize,
    refusal: &str,
    revert_refusals: &[&str],
    write_refusals: &[&str],
) {
    assert_eq!(r.reverts.total(), attempts);
    let unexpected = r
        .reverts
        .unexpected(&[&REVERT_OUTCOMES[..], &[refusal], revert_refusals].concat());
    assert!(unexpected.is_empty(), "reverts: {unexpected:#?}");
    let unexpected = r
        .writes
        .unexpected(&[&WRITE_OUTCOMES[..], write_refusals].concat());
    assert!(unexpected.is_empty(), "writes: {unexpected:#?}");
    assert!(
        r.reverts.count("ok") > 0,
        "no revert went through: {}",
        r.reverts
    );
    assert!(
        r.reverts.count(refusal) > 0,
        "no revert was refused with {refusal}: the race did not happen ({})",
        r.reverts
    );
}

#[test]
fn a_directory_swapped_for_a_link_out_while_reverting_writes_nothing_outside() {
    dir_race("race-dir", SHORT_ATTEMPTS);
}

#[test]
fn long_a_directory_swapped_for_a_link_out_while_reverting_writes_nothing_outside() {
    if !long_or_skip(util::this_test!()) {
        return;
    }
    dir_race("race-dir-long", long_attempts());
}

// --- The workspace root swapped for another directory -----------------------

const ROOT_FILES: [&str; 6] = [
    "f0.txt",
    "f1.txt",
    "f2.txt",
    "sub/g0.txt",
    "sub/n0.txt",
    "n1.txt",
];

fn root_race(name: &str, attempts: usize) {
    let base = tempfile::tempdir().unwrap();
    let arena = Arena {
        home: tempfile::tempdir().unwrap(),
        outside: base.path().join("other"),
        base,
        root_name: "w",
        files: ROOT_FILES.to_vec(),
    };
    let root = arena.root();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    for rel in ["f0.txt", "f1.txt", "f2.txt", "sub/g0.txt"] {
        std::fs::write(root.join(rel), format!("original {rel}\n")).unwrap();
    }
    // Another directory with the files as the session leaves them.
    for rel in ROOT_FILES {
        let p = arena.outside.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, setup_contents(rel)).unwrap();
    }

    let session = Store::new(arena.home.path()).session(name).unwrap();
    // Opened once: writes go through this capability on the real root,
    // wherever it is; reverts open the recorded root again by its path.
    let ws = Workspace::open(&root).unwrap();
    let recorded = ws.root().to_owned();
    for rel in ROOT_FILES {
        session
            .write(&ws, rel, setup_contents(rel).as_bytes(), "setup")
            .unwrap();
    }
    let access = Access {
        cli_dir: arena.base.path().to_owned(),
        cli_workspace: Some(recorded.clone()),
        cli_prefix: recorded.clone(),
        cli_writes: false,
        refusal: "workspace-moved",
    };
    let paths = SwapPaths {
        path: recorded.clone(),
        aside: recorded.with_file_name("w.aside"),
        target: arena.outside.clone(),
        relative: PathBuf::from("other"),
    };
    let r = race(&arena, &session, &ws, &access, "root", &paths, attempts);
    report(name, attempts, &r);
    // A `turnback revert` started while the root's name leads to the other
    // directory works in that one, where the session changed nothing.
    check_outcomes(&r, attempts, access.refusal, &["outside-workspace"], &[]);
    assert_eq!(Workspace::open(&root).unwrap().root(), recorded);
    check_after_race(&arena, &r);
}

#[test]
fn a_root_swapped_for_another_directory_while_reverting_writes_nothing_outside() {
    root_race("race-root", SHORT_ATTEMPTS);
}

#[test]
fn long_a_root_swapped_for_another_directory_while_reverting_writes_nothing_outside() {
    if !long_or_skip(util::this_test!()) {
        return;
    }
    root_race("race-root-long", long_attempts());
}

// ---------------------------------------------------------------------------
// Many processes, two sessions, one workspace.

const PROCESSES: usize = 8;
const OPS_PER_PROCESS: usize = 25;
const SHARED: [&str; 3] = ["shared0.txt", "shared1.txt", "shared2.txt"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    WriteShared,
    WritePrivate,
    Rm,
    Mv,
    Undo,
    Revert,
    Rewind,
}

/// One command of one process's loop.
#[derive(Debug)]
struct Planned {
    process: usize,
    step: usize,
    /// `A` or `B`.
    letter: char,
    op: Op,
    /// The message id, and (for a write) the contents without the newline.
    tag: String,
    /// The file(s): written, removed, moved (from, to) or reverted.
    paths: Vec<String>,
    /// For a rewind: the message rewound to.
    rewind_to: Option<String>,
}

impl Planned {
    fn contents(&self) -> String {
        format!("{}\n", self.tag)
    }

    fn session(&self) -> String {
        format!("stress-{}", self.letter)
    }
}

fn private(process: usize, name: &str) -> String {
    format!("p{process}/{name}")
}

fn plan_process(process: usize) -> Vec<Planned> {
    let letter = if process.is_multiple_of(2) { 'A' } else { 'B' };
    let mut rng = Rng::new(0x5EED + process as u64);
    let mut written: Vec<String> = Vec::new();
    // The private file written or moved to last: a move takes it, so that
    // moves mostly find their source.
    let mut last_private = 0;
    let mut out = Vec::new();
    for step in 1..=OPS_PER_PROCESS {
        let tag = format!("{letter}-p{process}-{step}");
        let own = [private(process, "a.txt"), private(process, "b.txt")];
        let any_file = |rng: &mut Rng| {
            if rng.below(2) == 0 {
                rng.pick(&SHARED).to_string()
            } else {
                rng.pick(&own).clone()
            }
        };
        let roll = rng.below(100);
        let (op, paths) = match roll {
            0..28 => (Op::WriteShared, vec![rng.pick(&SHARED).to_string()]),
            28..50 => {
                last_private = rng.below(2);
                (Op::WritePrivate, vec![own[last_private].clone()])
            }
            50..60 => (Op::Rm, vec![any_file(&mut rng)]),
            60..70 => {
                let from = last_private;
                last_private = 1 - from;
                (Op::Mv, vec![own[from].clone(), own[1 - from].clone()])
            }
            70..82 => (Op::Undo, vec![]),
            82..92 => (Op::Revert, vec![any_file(&mut rng)]),
            _ if written.is_empty() => (Op::Undo, vec![]),
            _ => (Op::Rewind, vec![]),
        };
        let rewind_to = (op == Op::Rewind).then(|| rng.pick(&written).clone());
        if matches!(op, Op::WriteShared | Op::WritePrivate) {
            written.push(tag.clone());
        }
        out.push(Planned {
            process,
            step,
            letter,
            op,
            tag,
            paths,
            rewind_to,
        });
    }
    out
}

/// Single-quoted for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The shell loop of one process: each command's JSON output, error and exit
/// code go to `log/<process>-<step>.{out,err,rc}`.
fn script(plan: &[Planned], log: &Path) -> String {
    let mut s = String::new();
    for p in plan {
        let cmd = match p.op {
            Op::WriteShared | Op::WritePrivate => format!(
                "printf '%s\\n' {tag} | \"$TB\" --json write {} --message {tag}",
                quote(&p.paths[0]),
                tag = quote(&p.tag)
            ),
            Op::Rm => format!(
                "\"$TB\" --json rm {} --message {}",
                quote(&p.paths[0]),
                quote(&p.tag)
            ),
            Op::Mv => format!(
                "\"$TB\" --json mv {} {} --message {}",
                quote(&p.paths[0]),
                quote(&p.paths[1]),
                quote(&p.tag)
            ),
            Op::Undo => "\"$TB\" --json undo".to_owned(),
            Op::Revert => format!("\"$TB\" --json revert {}", quote(&p.paths[0])),
            Op::Rewind => format!(
                "\"$TB\" --json rewind {}",
                quote(p.rewind_to.as_deref().unwrap())
            ),
        };
        let f = |ext: &str| {
            quote(
                log.join(format!("{}-{}.{ext}", p.process, p.step))
                    .to_str()
                    .unwrap(),
            )
        };
        s.push_str(&format!(
            "{cmd} >{} 2>{}; echo $? >{}\n",
            f("out"),
            f("err"),
            f("rc")
        ));
    }
    s
}

/// What one command did, read back from its log.
struct Done {
    rc: i32,
    out: Value,
    err: String,
}

fn read_done(log: &Path, p: &Planned) -> Done {
    let read = |ext: &str| {
        std::fs::read_to_string(log.join(format!("{}-{}.{ext}", p.process, p.step)))
            .unwrap_or_else(|e| panic!("{p:?}: no .{ext}: {e}"))
    };
    let rc: i32 = read("rc").trim().parse().unwrap();
    let out = if rc == 0 {
        serde_json::from_str(&read("out")).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    } else {
        Value::Null
    };
    Done {
        rc,
        out,
        err: read("err"),
    }
}

/// A change a command reported: the entry as `--json` printed it.
#[derive(Debug)]
struct Reported {
    /// Index into the plan.
    by: usize,
    path: String,
    after_exists: bool,
    after_sha: Option<String>,
}

#[test]
fn eight_processes_on_two_sessions_lose_no_entry_and_mix_no_afters() {
    let started = Instant::now();
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let log = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(wsdir.path()).unwrap();
    for f in SHARED {
        std::fs::write(root.join(f), format!("original {f}\n")).unwrap();
    }
    let plans: Vec<Vec<Planned>> = (0..PROCESSES).map(plan_process).collect();

    let mut children: Vec<Child> = plans
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(script(plan, log.path()))
                .current_dir(&root)
                .env("TB", util::bin())
                .env("TURNBACK_HOME", home.path())
                .env("TURNBACK_SESSION", plan[0].session())
                .env_remove("TURNBACK_WORKSPACE")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            sh.spawn()
                .unwrap_or_else(|e| panic!("spawn process {i}: {e}"))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    for (i, child) in children.iter_mut().enumerate() {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "process {i}: {status}");
                break;
            }
            if Instant::now() > deadline {
                for c in children.iter_mut() {
                    let _ = c.kill();
                }
                panic!("the processes did not finish in 180 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let ran = started.elapsed();

    // Read every command's outcome back.
    let all: Vec<&Planned> = plans.iter().flatten().collect();
    let mut made: BTreeMap<(String, u64), Reported> = BTreeMap::new();
    let mut taken: BTreeMap<(String, u64), usize> = BTreeMap::new();
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let mut problems: Vec<String> = Vec::new();
    for (n, p) in all.iter().enumerate() {
        let done = read_done(log.path(), p);
        let session = p.session();
        let kind = match done.rc {
            0 => "ok".to_owned(),
            3 => "refused".to_owned(),
            _ => error_kind(&done.err),
        };
        tally
            .entry(format!("{:?}", p.op))
            .or_default()
            .add(&kind, || done.err.clone());
        let allowed = [
            "ok",
            "refused",
            "nothing-to-undo",
            "no-change-to-file",
            "message-not-found",
            "file-not-found",
            "session-not-found",
        ];
        if !allowed.contains(&kind.as_str()) || (done.rc == 3) != (kind == "refused") {
            problems.push(format!("{p:?}: exit {} ({kind}): {}", done.rc, done.err));
        }
        if done.rc != 0 {
            continue;
        }
        let entries: Vec<&Value> = match p.op {
            Op::WriteShared | Op::WritePrivate | Op::Rm => vec![&done.out["entry"]],
            Op::Mv => done.out["entries"].as_array().unwrap().iter().collect(),
            Op::Undo | Op::Revert | Op::Rewind => {
                assert_eq!(done.out["session"], session.as_str(), "{p:?}");
                assert_eq!(done.out["applied"], true, "{p:?}");
                for f in done.out["files"].as_array().unwrap() {
                    for seq in f["entries"].as_array().unwrap() {
                        let seq = seq.as_u64().unwrap();
                        if let Some(other) = taken.insert((session.clone(), seq), n) {
                            problems.push(format!(
                                "{session} seq {seq} reverted twice: by {:?} and {p:?}",
                                all[other]
                            ));
                        }
                    }
                }
                vec![]
            }
        };
        assert_eq!(done.out["session"], session.as_str(), "{p:?}");
        for e in entries {
            let seq = e["seq"].as_u64().unwrap();
            let reported = Reported {
                by: n,
                path: e["path"].as_str().unwrap().to_owned(),
                after_exists: e["after"]["exists"].as_bool().unwrap(),
                after_sha: e["after"]["sha256"].as_str().map(str::to_owned),
            };
            if matches!(p.op, Op::WriteShared | Op::WritePrivate) {
                assert_eq!(
                    reported.after_sha.as_deref(),
                    Some(sha256_hex(p.contents().as_bytes()).as_str()),
                    "{p:?}: the reported after is not what was written"
                );
            }
            if let Some(other) = made.insert((session.clone(), seq), reported) {
                problems.push(format!(
                    "{session} seq {seq} reported by two commands: {:?} and {p:?}",
                    all[other.by]
                ));
            }
        }
    }

    // Every session opens and parses; check its entries against the reports.
    let store = Store::new(home.path());
    for letter in ['A', 'B'] {
        let session = format!("stress-{letter}");
        let own_writes: BTreeSet<String> = all
            .iter()
            .filter(|p| p.letter == letter)
            .filter(|p| matches!(p.op, Op::WriteShared | Op::WritePrivate))
            .map(|p| sha256_hex(p.contents().as_bytes()))
            .collect();
        let entries = match store.open_session(&session) {
            Ok(s) => s.entries().expect("the index parses"),
            Err(Error::SessionNotFound { .. }) if !made.keys().any(|(s, _)| *s == session) => {
                Vec::new()
            }
            Err(e) => panic!("{session} does not open: {e}"),
        };
        let seqs: BTreeSet<u64> = entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs.len(), entries.len(), "{session}: a seq twice");
        for ((s, seq), r) in made.iter().filter(|((s, _), _)| *s == session) {
            if !seqs.contains(seq) && !taken.contains_key(&(s.clone(), *seq)) {
                problems.push(format!(
                    "{s} seq {seq} lost: {:?} reported it ({}), no revert took it, it is not an entry",
                    all[r.by], r.path
                ));
            }
        }
        for e in &entries {
            let key = (session.clone(), e.seq);
            if e.in_flight.is_some() {
                problems.push(format!("{session} seq {} still in flight", e.seq));
            }
            if let Some(by) = taken.get(&key) {
                problems.push(format!(
                    "{session} seq {} is an entry, but {:?} reported reverting it",
                    e.seq, all[*by]
                ));
            }
            let Some(r) = made.get(&key) else {
                problems.push(format!(
                    "{session} seq {} ({}, message {}) is an entry no command reported",
                    e.seq, e.path, e.message_id
                ));
                continue;
            };
            let by = all[r.by];
            let after = e.after.as_ref();
            match after {
                None => problems.push(format!("{session} seq {}: no after", e.seq)),
                Some(a) if a.exists => {
                    if !a.sha256.as_ref().is_some_and(|h| own_writes.contains(h)) {
                        problems.push(format!(
                            "{session} seq {} ({}, by {by:?}): after {:?} is none of {session}'s writes",
                            e.seq, e.path, a.sha256
                        ));
                    }
                }
                Some(_) => {
                    let source = by.op == Op::Rm || (by.op == Op::Mv && e.path == by.paths[0]);
                    if !source {
                        problems.push(format!(
                            "{session} seq {} ({}, by {by:?}): absent after, not an rm or mv source",
                            e.seq, e.path
                        ));
                    }
                }
            }
            if let Some(a) = after
                && (a.exists != r.after_exists || a.sha256 != r.after_sha || e.path != r.path)
            {
                problems.push(format!(
                    "{session} seq {}: stored {} {a:?}, reported {r:?}",
                    e.seq, e.path
                ));
            }
            if e.message_id != by.tag {
                problems.push(format!(
                    "{session} seq {}: message {} but made by {by:?}",
                    e.seq, e.message_id
                ));
            }
        }
    }

    // Private files hold only their own process's writes.
    for (process, plan) in plans.iter().enumerate() {
        let mine: BTreeSet<String> = plan.iter().map(Planned::contents).collect();
        for name in ["a.txt", "b.txt"] {
            let p = root.join(private(process, name));
            if let Ok(text) = std::fs::read_to_string(&p)
                && !mine.contains(&text)
            {
                problems.push(format!("{} holds {text:?}", p.display()));
            }
        }
    }
    let temps = stray_temps(&root);
    if !temps.is_empty() {
        problems.push(format!("temporaries left: {temps:?}"));
    }

    eprintln!(
        "{PROCESSES} processes x {OPS_PER_PROCESS} commands ran in {ran:.1?} ({:.1?} with checks)",
        started.elapsed()
    );
    for (op, t) in &tally {
        eprintln!("  {op}: {t}");
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let succeeded = |op: &str| tally.get(op).map_or(0, |t| t.count("ok"));
    assert!(succeeded("WriteShared") + succeeded("WritePrivate") > 0);
    assert!(
        succeeded("Undo") + succeeded("Revert") + succeeded("Rewind") > 0,
        "no revert went through: {:?}",
        tally
            .iter()
            .map(|(k, t)| format!("{k}: {t}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(all.len(), tally.values().map(Tally::total).sum::<usize>());
}

// ---------------------------------------------------------------------------
// Lock order: processes taking overlapping sets of file locks in opposite
// orders.

/// The files every process of the lock-order test works on.
const ORDER_FILES: [&str; 4] = ["f0.txt", "f1.txt", "f2.txt", "f3.txt"];
const ORDER_PROCESSES: usize = 6;
const ORDER_STEPS: usize = 24;

/// One process's shell loop for the lock-order test: moves between two of
/// the shared files (both directions, so that two processes often want the
/// same pair the other way round), writes, and reverts that take several
/// files at once (undo of a move: its two sides; rewind: every file since a
/// message; redo). Each command's exit code and error go to
/// `log/<process>-<step>.{rc,err}`.
fn order_script(process: usize, log: &Path) -> String {
    let mut rng = Rng::new(0x10CC_0000 + process as u64);
    let mut written: Vec<String> = Vec::new();
    let mut s = String::new();
    for step in 0..ORDER_STEPS {
        let tag = format!("p{process}-{step}");
        let a = rng.below(ORDER_FILES.len());
        let b = (a + 1 + rng.below(ORDER_FILES.len() - 1)) % ORDER_FILES.len();
        let (from, to) = (ORDER_FILES[a], ORDER_FILES[b]);
        let cmd = match rng.below(100) {
            0..35 => format!("\"$TB\" --json mv {from} {to} --message {tag}"),
            35..55 => {
                written.push(tag.clone());
                format!("printf '%s\\n' {tag} | \"$TB\" --json write {from} --message {tag}")
            }
            55..70 => "\"$TB\" --json undo".to_owned(),
            70..85 if !written.is_empty() => {
                format!("\"$TB\" --json rewind {}", rng.pick(&written))
            }
            70..95 => "\"$TB\" --json redo".to_owned(),
            _ => format!("\"$TB\" --json revert {from}"),
        };
        let f = |ext: &str| {
            quote(
                log.join(format!("{process}-{step}.{ext}"))
                    .to_str()
                    .unwrap(),
            )
        };
        s.push_str(&format!(
            "{cmd} >/dev/null 2>{}; echo $? >{}\n",
            f("err"),
            f("rc")
        ));
    }
    s
}

/// ARCHITECTURE.md, "Lock order": a writer takes its file's lock, then the
/// session lock; a revert (and a move) takes the locks of all its files,
/// sorted by lock name, then the session lock; no one waits for a file lock
/// while holding a session lock. So there is no lock cycle. Six `turnback`
/// processes on three sessions (two each) move between four shared files in
/// both directions, write them, and undo, rewind and redo several at once.
/// Every process must finish (a watchdog kills them all after 120 s and
/// fails), and no command may end in `file-busy` or `session-busy`: a cycle
/// would hold each side until its bounded wait (10 s for a file) gave up, so
/// the floor is none. Every outcome must be one the operations explain.
#[test]
fn processes_locking_overlapping_files_in_opposite_orders_all_finish() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let log = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(wsdir.path()).unwrap();
    for f in ORDER_FILES {
        std::fs::write(root.join(f), format!("original {f}\n")).unwrap();
    }
    let started = Instant::now();
    let mut children: Vec<Child> = (0..ORDER_PROCESSES)
        .map(|p| {
            Command::new("sh")
                .arg("-c")
                .arg(order_script(p, log.path()))
                .current_dir(&root)
                .env("TB", util::bin())
                .env("TURNBACK_HOME", home.path())
                .env("TURNBACK_SESSION", format!("order-{}", p % 3))
                .env_remove("TURNBACK_WORKSPACE")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = started + Duration::from_secs(120);
    for (p, child) in children.iter_mut().enumerate() {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "process {p}: {status}");
                break;
            }
            if Instant::now() > deadline {
                // Kill them all (and their `turnback` children, which the
                // killed shells leave to finish alone) before failing.
                for c in children.iter_mut() {
                    let _ = c.kill();
                }
                panic!("the processes did not finish in 120 s: a lock cycle?");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let ran = started.elapsed();

    let mut tally = Tally::default();
    let allowed = [
        "ok",
        "refused",
        "file-not-found",
        "nothing-to-undo",
        "nothing-to-redo",
        "message-not-found",
        "no-change-to-file",
        "session-not-found",
    ];
    let mut problems = Vec::new();
    for p in 0..ORDER_PROCESSES {
        for step in 0..ORDER_STEPS {
            let read = |ext: &str| {
                std::fs::read_to_string(log.path().join(format!("{p}-{step}.{ext}")))
                    .unwrap_or_else(|e| panic!("process {p} step {step}: no .{ext}: {e}"))
            };
            let rc: i32 = read("rc").trim().parse().unwrap();
            let err = read("err");
            let kind = match rc {
                0 => "ok".to_owned(),
                3 => "refused".to_owned(),
                _ => error_kind(&err),
            };
            if !allowed.contains(&kind.as_str()) {
                problems.push(format!(
                    "process {p} step {step}: exit {rc} ({kind}): {err}"
                ));
            }
            tally.add(&kind, || err.clone());
        }
    }
    eprintln!(
        "{ORDER_PROCESSES} processes x {ORDER_STEPS} commands on overlapping files in {ran:.1?}: {tally}"
    );
    assert!(
        tally.count("file-busy") + tally.count("session-busy") == 0 && problems.is_empty(),
        "{problems:#?}"
    );
    assert_eq!(tally.total(), ORDER_PROCESSES * ORDER_STEPS);
    assert!(
        tally.count("ok") > ORDER_PROCESSES * ORDER_STEPS / 4,
        "{tally}"
    );
    assert!(stray_temps(&root).is_empty());
    // Every session opens and undoes to the end.
    let store = Store::new(home.path());
    for s in 0..3 {
        match store.open_session(&format!("order-{s}")) {
            Ok(session) => {
                let entries = session.entries().expect("the index parses");
                assert!(entries.iter().all(|e| e.in_flight.is_none()));
            }
            Err(Error::SessionNotFound { .. }) => {}
            Err(e) => panic!("order-{s} does not open: {e}"),
        }
    }
}
