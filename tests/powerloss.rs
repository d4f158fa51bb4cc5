//! Power loss, not only SIGKILL (issue 35): the store and the workspace on a
//! FUSE filesystem that forgets what was never synced (crates/turnback-powerloss).
//! For each operation (a write, an undo, a revert, a scan bracket, the hooks
//! of a Write), real `turnback` processes run it with the power cut when the
//! Nth fsync (of a file or of a directory) returns, for N = 1 up to the
//! operation's last sync; the filesystem is unmounted (the disk keeps only
//! what was synced) and mounted again, and then: every session opens and
//! recovers; every backup an entry names is there and hashes to its name;
//! each file the operation touched holds one whole version it held before;
//! no temporary is left in the workspace; undoing everything brings the
//! workspace back as it began. The write, undo and revert are also cut in
//! the random mode (a random subset of the unsynced changes reaches the
//! disk). Where FUSE cannot be used, each test says it skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use turnback_powerloss::{CutMode, PowerLoss};
use turnback_store::{Error, FileState, Session, Store};

use crate::util::{self, forced};

const SESSION: &str = "pl";
const CLAUDE: &str = "claude-code-2.1.332";

/// One step of an operation.
#[derive(Clone, Copy)]
enum Step {
    /// `turnback ARGS` with this standard input, as session `pl`.
    Cmd(&'static [&'static str], &'static [u8]),
    /// `turnback ARGS` with this standard input and these variables set.
    With(
        &'static [(&'static str, &'static str)],
        &'static [&'static str],
        &'static [u8],
    ),
    /// `turnback hook claude-code` with this recorded payload.
    Hook(&'static str),
    /// The agent's shell command (`sh -c`, in the workspace), never synced.
    Shell(&'static str),
    /// The agent's own write of a file in place, synced.
    AgentWrite(&'static str, &'static [u8]),
}

struct Scenario {
    name: &'static str,
    initial: &'static [(&'static str, &'static [u8])],
    /// Run to the end, then made durable, before the cut operation.
    before: &'static [Step],
    /// The operation the power is cut in.
    steps: &'static [Step],
    /// For each file the operation touches, the whole versions it may hold.
    versions: &'static [(&'static str, &'static [Option<&'static [u8]>])],
    /// Also cut in the random mode (only where every change to the
    /// workspace is turnback's own, synced before it is renamed into place).
    random: bool,
    /// Each file must hold what the last entry for it says it holds (or, with
    /// none, what it began with): a change that reached the disk is
    /// recorded. Not where a command's own unsynced writes may be lost after
    /// turnback recorded them (a scan bracket).
    recorded: bool,
    /// The operation may drop history (a pruned session, evicted entries):
    /// undoing everything then brings the workspace back to how it was after
    /// some step before, not as it began.
    forgets: bool,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "write",
        initial: &[("f.txt", b"old contents\n")],
        before: &[],
        steps: &[Step::Cmd(
            &["write", "f.txt", "--message", "m1"],
            b"new contents\n",
        )],
        versions: &[("f.txt", &[Some(b"old contents\n"), Some(b"new contents\n")])],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "second write",
        initial: &[("f.txt", b"v1\n")],
        before: &[Step::Cmd(&["write", "f.txt", "--message", "m0"], b"v2\n")],
        steps: &[Step::Cmd(&["write", "f.txt", "--message", "m1"], b"v3\n")],
        versions: &[("f.txt", &[Some(b"v1\n"), Some(b"v2\n"), Some(b"v3\n")])],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "two writes in a row",
        initial: &[("f.txt", b"v1\n")],
        before: &[],
        steps: &[
            Step::Cmd(&["write", "f.txt", "--message", "m0"], b"v2\n"),
            Step::Cmd(&["write", "f.txt", "--message", "m1"], b"v3\n"),
        ],
        versions: &[("f.txt", &[Some(b"v1\n"), Some(b"v2\n"), Some(b"v3\n")])],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "undo",
        initial: &[("f.txt", b"v1\n")],
        before: &[Step::Cmd(&["write", "f.txt", "--message", "m0"], b"v2\n")],
        steps: &[Step::Cmd(&["undo"], b"")],
        versions: &[("f.txt", &[Some(b"v1\n"), Some(b"v2\n")])],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "revert",
        initial: &[("f.txt", b"v1\n")],
        before: &[
            Step::Cmd(&["write", "f.txt", "--message", "m0"], b"v2\n"),
            Step::Cmd(&["write", "f.txt", "--message", "m1"], b"v3\n"),
        ],
        steps: &[Step::Cmd(&["revert", "f.txt", "--force"], b"")],
        versions: &[("f.txt", &[Some(b"v1\n"), Some(b"v2\n"), Some(b"v3\n")])],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "run (a scan bracket)",
        initial: &[("a.txt", b"a1\n"), ("c.txt", b"c1\n")],
        before: &[],
        steps: &[Step::Cmd(
            &[
                "run",
                "--message",
                "m1",
                "--",
                "sh",
                "-c",
                "echo a2 > a.txt && rm c.txt && mkdir -p d && echo b > d/b.txt",
            ],
            b"",
        )],
        // The shell's writes are never synced (and `>` empties a file
        // before it writes): what it left is whatever the disk kept of it.
        versions: &[
            ("a.txt", &[Some(b"a1\n"), Some(b"a2\n"), Some(b"")]),
            ("c.txt", &[Some(b"c1\n"), None]),
            ("d/b.txt", &[None, Some(b"b\n"), Some(b"")]),
        ],
        random: false,
        recorded: false,
        forgets: false,
    },
    Scenario {
        name: "hooks of a Write",
        initial: &[("hello.txt", b"hello\n")],
        before: &[],
        steps: &[
            Step::Hook("PreToolUse-Write.json"),
            Step::AgentWrite("hello.txt", b"hello\nworld\n"),
            Step::Hook("PostToolUse-Write.json"),
        ],
        // The agent writes in place: its file may be cut short.
        versions: &[(
            "hello.txt",
            &[Some(b"hello\n"), Some(b"hello\nworld\n"), Some(b"")],
        )],
        random: false,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "mv",
        initial: &[("a.txt", b"a1\n")],
        before: &[],
        steps: &[Step::Cmd(&["mv", "a.txt", "b.txt", "--message", "m1"], b"")],
        versions: &[
            ("a.txt", &[Some(b"a1\n"), None]),
            ("b.txt", &[None, Some(b"a1\n")]),
        ],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "rm",
        initial: &[("f.txt", b"v1\n")],
        before: &[],
        steps: &[Step::Cmd(&["rm", "f.txt", "--message", "m1"], b"")],
        versions: &[("f.txt", &[Some(b"v1\n"), None])],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "rewind",
        initial: &[("a.txt", b"a1\n"), ("b.txt", b"b1\n")],
        before: &[
            Step::Cmd(&["write", "a.txt", "--message", "m1"], b"a2\n"),
            Step::Cmd(&["write", "b.txt", "--message", "m2"], b"b2\n"),
            Step::Cmd(&["write", "a.txt", "--message", "m3"], b"a3\n"),
            Step::Cmd(&["rm", "b.txt", "--message", "m4"], b""),
        ],
        steps: &[Step::Cmd(&["rewind", "m1", "--force"], b"")],
        versions: &[
            ("a.txt", &[Some(b"a1\n"), Some(b"a2\n"), Some(b"a3\n")]),
            ("b.txt", &[Some(b"b1\n"), Some(b"b2\n"), None]),
        ],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "redo",
        initial: &[("a.txt", b"a1\n"), ("b.txt", b"b1\n")],
        before: &[
            Step::Cmd(&["write", "a.txt", "--message", "m1"], b"a2\n"),
            Step::Cmd(&["write", "b.txt", "--message", "m2"], b"b2\n"),
            Step::Cmd(&["undo", "2"], b""),
        ],
        steps: &[Step::Cmd(&["redo"], b"")],
        versions: &[
            ("a.txt", &[Some(b"a1\n"), Some(b"a2\n")]),
            ("b.txt", &[Some(b"b1\n"), Some(b"b2\n")]),
        ],
        random: true,
        recorded: true,
        forgets: false,
    },
    Scenario {
        name: "hooks of a Bash call",
        initial: &[("hello.txt", b"hello\n"), ("somefile", b"s\n")],
        before: &[],
        steps: &[
            Step::Hook("PreToolUse-Bash.json"),
            Step::Shell("sed -i 's/hello/HELLO/' hello.txt && rm somefile && echo x > created.txt"),
            Step::Hook("PostToolUse-Bash.json"),
        ],
        // The shell's writes are never synced: what it left is whatever the
        // disk kept of it (`sed -i` renames a whole new file into place).
        versions: &[
            ("hello.txt", &[Some(b"hello\n"), Some(b"HELLO\n")]),
            ("somefile", &[Some(b"s\n"), None]),
            ("created.txt", &[None, Some(b"x\n"), Some(b"")]),
        ],
        random: false,
        recorded: false,
        forgets: false,
    },
    Scenario {
        name: "prune",
        initial: &[("old.txt", b"o1\n"), ("f.txt", b"v1\n")],
        before: &[Step::With(
            &[("TURNBACK_SESSION", "old")],
            &["write", "old.txt", "--message", "m0"],
            b"o2\n",
        )],
        steps: &[Step::With(
            &[("TURNBACK_KEEP_SESSIONS", "0"), ("TURNBACK_KEEP_DAYS", "0")],
            &["prune"],
            b"",
        )],
        versions: &[("old.txt", &[Some(b"o2\n")]), ("f.txt", &[Some(b"v1\n")])],
        random: true,
        recorded: false,
        forgets: true,
    },
];

/// Random cuts that left a temporary no entry names (the known gap).
static STRAYS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// At most this many cut points an operation (spread evenly over its syncs).
const MAX_CUTS: u64 = 40;

/// Random cuts of an operation that never syncs.
const SEEDS: u64 = 20;

/// A scratch directory with the disk (`disk`), the disk as the operation
/// found it (`template`) and the mount point (`mnt`), mounted. One mount for
/// a whole scenario: its device number is the workspace's identity.
struct Rig {
    // Unmounted before the directory is removed (fields drop in order).
    fs: PowerLoss,
    root: tempfile::TempDir,
}

impl Rig {
    fn new() -> Rig {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("disk")).unwrap();
        std::fs::create_dir_all(root.path().join("mnt")).unwrap();
        let fs = PowerLoss::mount(&root.path().join("disk"), &root.path().join("mnt"))
            .unwrap_or_else(|e| panic!("mount: {e}"));
        Rig { fs, root }
    }
    fn disk(&self) -> PathBuf {
        self.root.path().join("disk")
    }
    fn template(&self) -> PathBuf {
        self.root.path().join("template")
    }
    fn mnt(&self) -> PathBuf {
        self.root.path().join("mnt")
    }
    fn home(&self) -> PathBuf {
        self.mnt().join("home")
    }
    fn ws(&self) -> PathBuf {
        self.mnt().join("ws")
    }
}

/// FUSE can be used here, or the test says it skipped.
fn usable(test: &str) -> bool {
    if let Some(why) = turnback_powerloss::unavailable() {
        util::skip(test, &format!("FUSE cannot be used: {why}"));
        return false;
    }
    let probe = tempfile::tempdir().unwrap();
    let (disk, mnt) = (probe.path().join("disk"), probe.path().join("mnt"));
    std::fs::create_dir_all(&disk).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    match PowerLoss::mount(&disk, &mnt) {
        Ok(fs) => {
            fs.unmount().unwrap();
            true
        }
        Err(e) => {
            util::skip(test, &format!("FUSE cannot be mounted here: {e}"));
            false
        }
    }
}

fn command(rig: &Rig) -> Command {
    let mut c = Command::new(util::bin());
    c.current_dir(rig.ws())
        .env("TURNBACK_HOME", rig.home())
        .env("XDG_CONFIG_HOME", rig.root.path().join("xdg-config"))
        .env("TZ", "UTC")
        .env("TURNBACK_SESSION", SESSION)
        .env_remove("TURNBACK_KEEP_SESSIONS")
        .env_remove("TURNBACK_KEEP_DAYS")
        .env_remove("TURNBACK_MAX_ENTRIES")
        .env_remove("TURNBACK_MAX_BYTES")
        .env_remove("TURNBACK_WORKSPACE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CLAUDE_PID");
    c
}

/// Runs one step; true if it succeeded. A process the cut left waiting is
/// killed after a while (it fails).
fn step(rig: &Rig, step: Step) -> bool {
    let (mut cmd, stdin) = match step {
        Step::Cmd(args, stdin) => {
            let mut c = command(rig);
            c.args(args);
            (c, stdin.to_vec())
        }
        Step::With(vars, args, stdin) => {
            let mut c = command(rig);
            c.args(args).envs(vars.iter().copied());
            (c, stdin.to_vec())
        }
        Step::Shell(script) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script).current_dir(rig.ws());
            (c, Vec::new())
        }
        Step::Hook(fixture) => {
            let text = std::fs::read_to_string(crate::hooks::fixtures().join(CLAUDE).join(fixture))
                .unwrap();
            let text = text.replace("/home/dev/project", rig.ws().to_str().unwrap());
            let mut c = command(rig);
            c.args(["hook", "claude-code"])
                .env_remove("TURNBACK_SESSION");
            (c, text.into_bytes())
        }
        Step::AgentWrite(path, bytes) => {
            use std::io::Write;
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(rig.ws().join(path))
                .and_then(|mut f| {
                    f.write_all(bytes)?;
                    f.sync_all()
                });
            return written.is_ok();
        }
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        let _ = input.write_all(&stdin);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            if !status.success() {
                use std::io::Read;
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                eprintln!("{status}: {err}");
            }
            return status.success();
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn copy_tree(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let out = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "cp -a: {out:?}");
}

/// The disk as the operation finds it: the initial files and the steps
/// before, all synced. Returns the workspace as it began, then as each step
/// before left it.
fn set_up(rig: &Rig, s: &Scenario) -> Vec<BTreeMap<PathBuf, String>> {
    std::fs::create_dir_all(rig.home()).unwrap();
    for (path, bytes) in s.initial {
        let p = rig.ws().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let mut starts = vec![util::tree_digest(&rig.ws())];
    for &st in s.before {
        assert!(
            step(rig, st),
            "{}: a step before the operation failed",
            s.name
        );
        starts.push(util::tree_digest(&rig.ws()));
    }
    rig.fs.power_cycle().unwrap();
    copy_tree(&rig.disk(), &rig.template());
    starts
}

/// Runs the operation from the template with the power cut at sync `cut`
/// (none: no cut; 0: once it is over), then boots again from what the disk kept. Returns the
/// syncs it made and whether it was cut.
fn trial(rig: &Rig, s: &Scenario, cut: Option<u64>, mode: CutMode) -> (u64, bool) {
    copy_tree(&rig.template(), &rig.disk());
    rig.fs.reload().unwrap();
    rig.fs.set_mode(mode);
    match cut {
        Some(0) => {}
        Some(n) => rig.fs.cut_at_sync(n),
        None => {}
    }
    for &st in s.steps {
        let ok = step(rig, st);
        if rig.fs.is_cut() {
            break;
        }
        assert!(ok, "{}: a step failed with the power on", s.name);
    }
    if cut == Some(0) {
        // Cut once the operation is over: what it never synced is lost.
        rig.fs.cut();
    }
    let (syncs, was_cut) = (rig.fs.syncs(), rig.fs.is_cut());
    rig.fs.power_cycle().unwrap();
    (syncs, was_cut)
}

/// Every backup an entry or the redo history names is there and whole.
fn backups_verify(session: &Session, what: &str) {
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut add = |s: &FileState| named.extend(s.sha256.clone());
    for e in session.entries().unwrap() {
        add(&e.before);
    }
    for r in session.history().unwrap() {
        r.entries.iter().for_each(|e| add(&e.before));
        r.files
            .iter()
            .filter_map(|f| f.overwritten.as_ref())
            .for_each(&mut add);
        r.files.iter().for_each(|f| add(&f.restored));
    }
    for hash in named {
        let blob = session.dir().join("blobs").join(&hash);
        let bytes = std::fs::read(&blob)
            .unwrap_or_else(|e| panic!("{what}: backup {hash} is missing: {e}"));
        assert_eq!(
            util::sha256_hex(&bytes),
            hash,
            "{what}: backup {hash} is damaged"
        );
    }
}

/// Checks what the disk kept.
fn check(rig: &Rig, s: &Scenario, starts: &[BTreeMap<PathBuf, String>], what: &str, random: bool) {
    let store = Store::new(rig.home());
    let ids = store
        .session_ids()
        .unwrap_or_else(|e| panic!("{what}: the store does not list its sessions: {e}"));
    let mut sessions = Vec::new();
    for id in &ids {
        let session = store
            .open_session(id)
            .unwrap_or_else(|e| panic!("{what}: session {id} does not open: {e}"));
        session.entries().unwrap_or_else(|e| panic!("{what}: {e}"));
        for open in session.open_scans().unwrap() {
            session
                .commit_scan(&open.id)
                .unwrap_or_else(|e| panic!("{what}: committing the open scan: {e}"));
        }
        backups_verify(&session, what);
        sessions.push(session);
    }
    for (path, allowed) in s.versions {
        let now = std::fs::read(rig.ws().join(path)).ok();
        assert!(
            allowed.iter().any(|v| v.map(<[u8]>::to_vec) == now),
            "{what}: {path} holds {:?}, not a whole version",
            now.map(|b| String::from_utf8_lossy(&b).into_owned())
        );
    }
    if s.recorded {
        for (path, _) in s.versions {
            let last = sessions
                .iter()
                .flat_map(|session| session.entries().unwrap())
                .filter(|e| e.path == *path)
                .max_by_key(|e| e.seq);
            let now = std::fs::read(rig.ws().join(path)).ok();
            let now_hash = now.as_deref().map(util::sha256_hex);
            match last {
                Some(e) => {
                    if let Some(after) = &e.after {
                        assert_eq!(
                            now_hash, after.sha256,
                            "{what}: {path} is not what its last entry (#{} {}) says",
                            e.seq, e.message_id
                        );
                    }
                }
                None => {
                    let initial = s
                        .initial
                        .iter()
                        .find(|(p, _)| p == path)
                        .map(|(_, b)| b.to_vec());
                    assert_eq!(now, initial, "{what}: {path} changed, and no entry says so");
                }
            }
        }
    }
    let strays = util::stray_temps(&rig.ws());
    if random && !strays.is_empty() {
        // A known gap (docs/RELIABILITY.md): where the filesystem has no
        // O_TMPFILE (this one, macOS, NFS), a write names its temporary
        // before the synced journal line that names it; a disk that kept the
        // name but not the line leaves a temporary no one removes. It holds
        // new contents only: nothing is lost. Counted, then removed.
        eprintln!("{what}: known gap: a temporary no entry names: {strays:?}");
        STRAYS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for p in &strays {
            std::fs::remove_file(rig.ws().join(p)).unwrap();
        }
    } else {
        assert_eq!(strays, Vec::<PathBuf>::new(), "{what}: temporaries left");
    }
    for session in &sessions {
        loop {
            match session.undo(forced()) {
                Ok(_) => {}
                Err(Error::NothingToUndo { .. }) => break,
                Err(e) => panic!("{what}: undo after the cut: {e}"),
            }
        }
    }
    let end = util::tree_digest(&rig.ws());
    if s.forgets {
        assert!(
            starts.contains(&end),
            "{what}: undoing everything left the workspace as it never was: {end:?}"
        );
    } else {
        assert_eq!(
            end, starts[0],
            "{what}: undoing everything did not bring the workspace back"
        );
    }
}

/// Cuts `s` at every sync (at most [`MAX_CUTS`] of them, evenly spread),
/// strict and (where the scenario allows) random; returns the cuts made.
fn cut_everywhere(s: &Scenario) -> u64 {
    let rig = Rig::new();
    let starts = set_up(&rig, s);
    let (total, cut) = trial(&rig, s, None, CutMode::Strict);
    assert!(!cut, "{}: cut with no cut asked", s.name);
    check(
        &rig,
        s,
        &starts,
        &format!("{} run to its end", s.name),
        false,
    );
    let stride = total.div_ceil(MAX_CUTS);
    let mut cuts = 0;
    let mut modes = vec![CutMode::Strict];
    if s.random {
        modes.push(CutMode::Random(0));
    }
    if total <= 1 {
        // An operation that (nearly) never syncs (a prune) is also cut once
        // it is over, in the random mode with many seeds.
        for seed in 1..=SEEDS {
            for mode in [CutMode::Strict, CutMode::Random(seed * 7919)] {
                if mode == CutMode::Strict && seed > 1 {
                    continue;
                }
                let (_, was_cut) = trial(&rig, s, Some(0), mode);
                assert!(was_cut, "{}: never cut", s.name);
                cuts += 1;
                let what = format!("{} cut once it was over ({mode:?})", s.name);
                check(&rig, s, &starts, &what, mode != CutMode::Strict);
            }
        }
        if total == 0 {
            modes.clear();
        }
    }
    for mode in modes {
        let mut n = 1;
        while n <= total {
            let mode = match mode {
                CutMode::Random(_) => CutMode::Random(n * 7919),
                m => m,
            };
            let (_, was_cut) = trial(&rig, s, Some(n), mode);
            assert!(was_cut, "{}: sync {n} of {total} never came", s.name);
            cuts += 1;
            let what = format!("{} cut at sync {n} of {total} ({mode:?})", s.name);
            check(&rig, s, &starts, &what, mode != CutMode::Strict);
            n += stride;
        }
    }
    eprintln!("{}: {cuts} cuts over {total} syncs survived", s.name);
    cuts
}

fn scenario(name: &str) -> &'static Scenario {
    SCENARIOS.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn a_write_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_write_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("write"));
    }
}

#[test]
fn a_second_write_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_second_write_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("second write"));
    }
}

#[test]
fn two_writes_in_a_row_cut_at_any_sync_lose_nothing() {
    if usable("powerloss::two_writes_in_a_row_cut_at_any_sync_lose_nothing") {
        cut_everywhere(scenario("two writes in a row"));
    }
}

#[test]
fn an_undo_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::an_undo_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("undo"));
    }
}

#[test]
fn a_revert_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_revert_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("revert"));
    }
}

#[test]
fn a_scan_bracket_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_scan_bracket_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("run (a scan bracket)"));
    }
}

#[test]
fn the_hooks_of_a_write_cut_at_any_sync_lose_nothing() {
    if usable("powerloss::the_hooks_of_a_write_cut_at_any_sync_lose_nothing") {
        cut_everywhere(scenario("hooks of a Write"));
    }
}

#[test]
fn a_rename_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_rename_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("mv"));
    }
}

#[test]
fn a_removal_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_removal_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("rm"));
    }
}

#[test]
fn a_rewind_across_files_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_rewind_across_files_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("rewind"));
    }
}

#[test]
fn a_redo_cut_at_any_sync_loses_nothing() {
    if usable("powerloss::a_redo_cut_at_any_sync_loses_nothing") {
        cut_everywhere(scenario("redo"));
    }
}

#[test]
fn the_hooks_of_a_bash_call_cut_at_any_sync_lose_nothing() {
    if usable("powerloss::the_hooks_of_a_bash_call_cut_at_any_sync_lose_nothing") {
        cut_everywhere(scenario("hooks of a Bash call"));
    }
}

#[test]
fn a_prune_cut_at_any_sync_leaves_a_session_whole_or_gone() {
    if usable("powerloss::a_prune_cut_at_any_sync_leaves_a_session_whole_or_gone") {
        cut_everywhere(scenario("prune"));
    }
}
