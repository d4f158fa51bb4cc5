//! Crash injection at every durable step. The binary the tests run is built with
//! the store's `failpoints` feature: `FAILPOINTS="P=return"` makes it abort (no
//! unwinding, no destructors) right after step P, `"P=2*off->return"` at its
//! third pass. For every crash point, every pass up to the third, and every kind
//! of operation, the real binary is run to that point and aborted; then the
//! session is opened again and must hold: the index parses; every backup an
//! entry or the redo history names exists and matches its hash; each file holds
//! one whole version; no temporary is left in the workspace; and undoing every
//! entry (forced where it was never committed) brings the workspace back exactly
//! as it was before the operations began.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use turnback_store::{CRASH_POINTS, Error, FileState, Session, Store};

use crate::util::{self, Env, forced};

const SESSION: &str = "crashy";

/// One operation to crash, after a setup done through the library.
struct Scenario {
    name: &'static str,
    /// Files before the setup.
    initial: &'static [(&'static str, &'static [u8])],
    /// Writes (path, contents; `None` removes) made before the crashing command.
    setup: &'static [(&'static str, Option<&'static [u8]>)],
    /// A command run (to its end) after the writes, before the crashing one.
    before: &'static [&'static str],
    /// The crashing command's arguments and standard input.
    args: &'static [&'static str],
    stdin: &'static [u8],
    /// For each file the command touches, the whole versions it may hold
    /// after a crash (`None`: absent).
    versions: &'static [(&'static str, &'static [Option<&'static [u8]>])],
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "write over an existing file",
        initial: &[("f.txt", b"old contents\n")],
        setup: &[],
        before: &[],
        args: &["write", "f.txt", "--message", "m1"],
        stdin: b"new contents\n",
        versions: &[("f.txt", &[Some(b"old contents\n"), Some(b"new contents\n")])],
    },
    Scenario {
        name: "write of a new file in new directories",
        initial: &[],
        setup: &[],
        before: &[],
        args: &["write", "d/e/f.txt", "--message", "m1"],
        stdin: b"fresh\n",
        versions: &[("d/e/f.txt", &[None, Some(b"fresh\n")])],
    },
    Scenario {
        name: "rm",
        initial: &[("gone.txt", b"bye\n")],
        setup: &[],
        before: &[],
        args: &["rm", "gone.txt", "--message", "m1"],
        stdin: b"",
        versions: &[("gone.txt", &[Some(b"bye\n"), None])],
    },
    Scenario {
        name: "mv",
        initial: &[("a.txt", b"moving\n")],
        setup: &[],
        before: &[],
        args: &["mv", "a.txt", "sub/b.txt", "--message", "m1"],
        stdin: b"",
        versions: &[
            ("a.txt", &[Some(b"moving\n"), None]),
            ("sub/b.txt", &[None, Some(b"moving\n")]),
        ],
    },
    Scenario {
        name: "undo of a write",
        initial: &[("f.txt", b"v1\n")],
        setup: &[("f.txt", Some(b"v2\n"))],
        before: &[],
        args: &["undo"],
        stdin: b"",
        versions: &[("f.txt", &[Some(b"v1\n"), Some(b"v2\n")])],
    },
    Scenario {
        name: "rewind of three files (an edit, a creation in a new directory, a removal)",
        initial: &[("a.txt", b"a1\n"), ("c.txt", b"c1\n")],
        setup: &[
            ("a.txt", Some(b"a2\n")),
            ("new/b.txt", Some(b"b\n")),
            ("c.txt", None),
        ],
        before: &[],
        args: &["rewind", "m0"],
        stdin: b"",
        versions: &[
            ("a.txt", &[Some(b"a1\n"), Some(b"a2\n")]),
            ("new/b.txt", &[None, Some(b"b\n")]),
            ("c.txt", &[Some(b"c1\n"), None]),
        ],
    },
    Scenario {
        name: "run of a shell command (an edit, a removal, a creation in a new directory)",
        initial: &[("a.txt", b"a1\n"), ("c.txt", b"c1\n")],
        setup: &[],
        before: &[],
        args: &[
            "run",
            "--message",
            "m1",
            "--",
            "sh",
            "-c",
            "echo a2 > a.txt && rm c.txt && mkdir -p d && echo b > d/b.txt",
        ],
        stdin: b"",
        versions: &[
            ("a.txt", &[Some(b"a1\n"), Some(b"a2\n")]),
            ("c.txt", &[Some(b"c1\n"), None]),
            ("d/b.txt", &[None, Some(b"b\n")]),
        ],
    },
    Scenario {
        name: "undo of a run that replaced a file by a directory and a directory by a file",
        initial: &[("f", b"file\n"), ("g/inner", b"inner\n")],
        setup: &[],
        before: &[
            "run",
            "--message",
            "m0",
            "--",
            "sh",
            "-c",
            "rm f && mkdir f && echo x > f/x && rm -r g && echo g > g",
        ],
        args: &["undo"],
        stdin: b"",
        versions: &[
            // A directory reads as nothing.
            ("f", &[Some(b"file\n"), None]),
            ("f/x", &[None, Some(b"x\n")]),
            ("g", &[Some(b"g\n"), None]),
            ("g/inner", &[None, Some(b"inner\n")]),
        ],
    },
    Scenario {
        name: "undo of a run that changed a file and its directory's mode",
        initial: &[("d/f", b"f\n"), ("d/e/g", b"g\n")],
        setup: &[],
        before: &[
            "run",
            "--message",
            "m0",
            "--",
            "sh",
            "-c",
            "echo y > d/f && chmod 700 d && chmod 711 d/e",
        ],
        args: &["undo"],
        stdin: b"",
        versions: &[
            ("d/f", &[Some(b"f\n"), Some(b"y\n")]),
            ("d/e/g", &[Some(b"g\n")]),
        ],
    },
    Scenario {
        name: "prune of a store whose one session is kept",
        initial: &[("f.txt", b"v1\n")],
        setup: &[("f.txt", Some(b"v2\n"))],
        before: &[],
        args: &["prune"],
        stdin: b"",
        versions: &[("f.txt", &[Some(b"v2\n")])],
    },
];

/// Sets the scenario up; returns the env and the workspace as it began.
fn set_up(s: &Scenario) -> (Env, BTreeMap<std::path::PathBuf, String>) {
    set_up_by(s, util::tree_digest)
}

/// [`set_up`], the workspace as it began told by `digest`.
fn set_up_by(
    s: &Scenario,
    digest: fn(&std::path::Path) -> BTreeMap<std::path::PathBuf, String>,
) -> (Env, BTreeMap<std::path::PathBuf, String>) {
    let env = Env::new();
    for (path, bytes) in s.initial {
        let p = env.path(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let start = digest(env.ws.path());
    let session = env.session(SESSION);
    let ws = env.workspace();
    for (i, (path, contents)) in s.setup.iter().enumerate() {
        let message = if i == 0 {
            "m0".to_owned()
        } else {
            format!("m0-{i}")
        };
        match contents {
            Some(bytes) => session.write(&ws, path, *bytes, &message).map(drop),
            None => session.remove(&ws, path, &message).map(drop),
        }
        .unwrap();
    }
    if !s.before.is_empty() {
        let out = Command::new(util::bin())
            .args(s.before)
            .current_dir(env.ws.path())
            .env("TURNBACK_HOME", env.home.path())
            .env("TURNBACK_SESSION", SESSION)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", s.name);
    }
    (env, start)
}

/// Runs the scenario's command with `FAILPOINTS`; true if it aborted there.
fn crash(env: &Env, s: &Scenario, failpoints: &str) -> bool {
    let mut child = Command::new(util::bin())
        .args(s.args)
        .current_dir(env.ws.path())
        .env("TURNBACK_HOME", env.home.path())
        .env("TURNBACK_SESSION", SESSION)
        .env("FAILPOINTS", failpoints)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    // A process that aborts before it reads its input (a crash point on the
    // backup thread) closes the pipe first: that is a crash there all the same.
    match child.stdin.take().unwrap().write_all(s.stdin) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    let out = child.wait_with_output().unwrap();
    match out.status.signal() {
        Some(6) => true,
        Some(sig) => panic!("{}: {failpoints}: killed by signal {sig}", s.name),
        None => {
            assert!(
                out.status.success(),
                "{}: {failpoints}: failed without crashing: {}",
                s.name,
                String::from_utf8_lossy(&out.stderr)
            );
            false
        }
    }
}

/// Every backup that an entry or the redo history names is there and whole.
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

fn check_after_crash(
    env: &Env,
    s: &Scenario,
    start: &BTreeMap<std::path::PathBuf, String>,
    what: &str,
) {
    // The session opens (settling what the dead process left half done) and its
    // index parses.
    let store = Store::new(env.home.path());
    let session = store
        .open_session(SESSION)
        .unwrap_or_else(|e| panic!("{what}: the session does not open: {e}"));
    session.entries().unwrap_or_else(|e| panic!("{what}: {e}"));
    // A scan bracket the dead process left open still has everything in
    // hand: committed now, its changes undo like the rest.
    for open in session.open_scans().unwrap() {
        session
            .commit_scan(&open.id)
            .unwrap_or_else(|e| panic!("{what}: committing the open scan: {e}"));
    }
    backups_verify(&session, what);
    // Each file holds one whole version.
    for (path, allowed) in s.versions {
        let now = std::fs::read(env.path(path)).ok();
        assert!(
            allowed.iter().any(|v| v.map(<[u8]>::to_vec) == now),
            "{what}: {path} holds {:?}, not a whole version",
            now.map(|b| String::from_utf8_lossy(&b).into_owned())
        );
    }
    assert_eq!(
        util::stray_temps(env.ws.path()),
        Vec::<std::path::PathBuf>::new(),
        "{what}: temporaries left"
    );
    // Everything undoes, back to the start.
    loop {
        match session.undo(forced()) {
            Ok(_) => {}
            Err(Error::NothingToUndo { .. }) => break,
            Err(e) => panic!("{what}: undo after the crash: {e}"),
        }
    }
    assert_eq!(
        &util::tree_digest(env.ws.path()),
        start,
        "{what}: undoing everything did not restore the start"
    );
    assert_eq!(
        util::stray_temps(env.ws.path()),
        Vec::<std::path::PathBuf>::new(),
        "{what}: temporaries left"
    );
}

#[test]
fn a_crash_after_any_durable_step_leaves_a_store_that_recovers() {
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut crashes = 0;
    for s in SCENARIOS {
        for point in CRASH_POINTS {
            for pass in 0..3 {
                let failpoints = match pass {
                    0 => format!("{point}=return"),
                    n => format!("{point}={n}*off->return"),
                };
                let (env, start) = set_up(s);
                if !crash(&env, s, &failpoints) {
                    break; // not reached this many times by this operation
                }
                crashes += 1;
                reached.insert(point);
                check_after_crash(&env, s, &start, &format!("{} at {failpoints}", s.name));
            }
        }
    }
    let missed: Vec<&&str> = CRASH_POINTS
        .iter()
        .filter(|p| !reached.contains(**p))
        .collect();
    assert!(
        missed.is_empty(),
        "crash points no scenario reached: {missed:?}"
    );
    eprintln!(
        "{crashes} crashes at {} crash points survived",
        reached.len()
    );
}

/// An undo that takes directories away and makes them again is all or
/// nothing across its files: aborted after any durable step, the next
/// session to open finds the whole tree as the command left it (the undo
/// not recorded, its entries still there) or as it was before (recorded).
#[test]
fn an_undo_of_swapped_trees_aborted_at_any_step_leaves_one_whole_tree() {
    one_whole_tree("undo of a run that replaced");
}

/// The same for directories whose modes the command changed: after recovery
/// every mode is the command's or every one is as before.
#[test]
fn an_undo_of_directory_modes_aborted_at_any_step_leaves_one_whole_tree() {
    one_whole_tree("undo of a run that changed a file and its directory's mode");
}

/// The workspace's tree, each directory with its mode.
fn with_modes(root: &std::path::Path) -> BTreeMap<std::path::PathBuf, String> {
    util::tree_digest(root)
        .into_iter()
        .map(|(p, what)| match what.as_str() {
            "dir" => {
                let mode = util::mode_of(&root.join(&p)) & 0o7777;
                (p, format!("dir {mode:o}"))
            }
            _ => (p, what),
        })
        .collect()
}

/// The scenario named `name`, aborted after each durable step: the next
/// session to open finds the tree wholly as the command left it or wholly
/// as it was before.
fn one_whole_tree(name: &str) {
    let s = SCENARIOS.iter().find(|s| s.name.starts_with(name)).unwrap();
    let mut crashes = 0;
    for point in CRASH_POINTS {
        for pass in 0..3 {
            let (env, start) = set_up_by(s, with_modes);
            let ran = with_modes(env.ws.path());
            assert_ne!(start, ran, "the command changed the tree");
            if !crash(&env, s, &format!("{point}={pass}*off->return")) {
                break;
            }
            crashes += 1;
            let what = format!("{point}, pass {pass}");
            let session = env.store().open_session(SESSION).unwrap();
            let entries = session.entries().unwrap();
            let now = with_modes(env.ws.path());
            if entries.is_empty() {
                assert_eq!(now, start, "{what}: the undo was recorded");
            } else {
                assert_eq!(now, ran, "{what}: the undo was not recorded");
            }
        }
    }
    assert!(crashes > 0);
}

#[test]
fn without_failpoints_the_scenarios_run_through() {
    for s in SCENARIOS {
        let (env, _) = set_up(s);
        assert!(!crash(&env, s, ""), "{}", s.name);
        let session = env.store().open_session(SESSION).unwrap();
        assert!(!session.entries().unwrap().is_empty() || !session.history().unwrap().is_empty());
    }
}

/// After a writer of `f.txt` died in the window between its synced entry
/// and its backup's rename: the names in the session's `blobs/` (asserting
/// that the entry did reach the journal).
fn after_the_window(env: &Env) -> Vec<String> {
    let dir = env.home.path().join(format!("sessions/{SESSION}"));
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    assert!(journal.contains("f.txt"), "no entry recorded: {journal}");
    std::fs::read_dir(dir.join("blobs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The paths of the session's entries, as the next opener (which settles)
/// sees them.
fn entry_paths(env: &Env) -> Vec<String> {
    let session = Store::new(env.home.path()).open_session(SESSION).unwrap();
    session
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| e.path)
        .collect()
}

/// The entry of a write is recorded while its backup is still being synced (on
/// another thread). A crash in that window, with the journal line on disk and
/// the backup not yet under its name, must leave a session whose entry goes:
/// the file was never touched.
#[test]
fn a_crash_after_the_entry_and_before_its_backup_is_durable_loses_nothing() {
    let s = &SCENARIOS[0];
    assert_eq!(s.name, "write over an existing file");
    let (env, start) = set_up(s);
    // A session with a snapshot already, so that the entry is a journal line.
    env.session(SESSION)
        .write(&env.workspace(), "other.txt", &b"other\n"[..], "m0")
        .unwrap();
    // The backup thread waits once it has handed over the backup's name (its
    // temporary written, not yet synced or renamed); the writer records the
    // entry, syncs it, and dies.
    let failpoints = "blob-hashed=sleep(1000);journal-synced=return";
    assert!(crash(&env, s, failpoints), "did not crash at {failpoints}");
    let blobs = after_the_window(&env);
    assert!(
        blobs.iter().any(|n| n.starts_with(".tmp-")),
        "the backup was not still a temporary: the window was not hit ({blobs:?})"
    );
    assert_eq!(
        entry_paths(&env),
        ["other.txt"],
        "the entry of a write that never happened stayed"
    );
    assert_eq!(util::read(env.path("f.txt")), b"old contents\n");
    check_after_crash(&env, s, &start, "crash between the entry and its backup");
}

/// The environment of [`library_write_in_a_child`]: the store home, the
/// workspace, then the file and its new contents.
const CHILD_WRITE: [&str; 4] = [
    "TURNBACK_FP_HOME",
    "TURNBACK_FP_WS",
    "TURNBACK_FP_FILE",
    "TURNBACK_FP_CONTENTS",
];

/// Not a test: the process [`crash_writing_through_the_library`] runs, a
/// `Session::write` (which records an entry even for the bytes the file
/// holds, unlike `turnback write`) under the crash points of `FAILPOINTS`.
#[test]
#[ignore = "run by crash_writing_through_the_library, in a process of its own"]
fn library_write_in_a_child() {
    let Ok(home) = std::env::var(CHILD_WRITE[0]) else {
        return;
    };
    let var = |i: usize| std::env::var(CHILD_WRITE[i]).unwrap();
    let ws = turnback_store::Workspace::open(var(1)).unwrap();
    let session = Store::new(home).session(SESSION).unwrap();
    session.write(&ws, var(2), var(3).as_bytes(), "m1").unwrap();
}

/// `Session::write(file, contents)` in `env`, in a process of its own with
/// `failpoints`: true when it crashed.
fn crash_writing_through_the_library(
    env: &Env,
    file: &str,
    contents: &str,
    failpoints: &str,
) -> bool {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "failpoints::library_write_in_a_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_WRITE[0], env.home.path())
        .env(CHILD_WRITE[1], env.ws.path())
        .env(CHILD_WRITE[2], file)
        .env(CHILD_WRITE[3], contents)
        .env("FAILPOINTS", failpoints)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    match out.status.signal() {
        Some(6) => true,
        Some(sig) => panic!("{failpoints}: killed by signal {sig}"),
        None => {
            assert!(
                out.status.success(),
                "{failpoints}: failed without crashing: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            false
        }
    }
}

/// The same window, for a write of the contents the file already holds (an
/// agent writing a file back unchanged): the file is at "before" and at
/// "after" both, so the file cannot tell whether the write happened. The
/// backup can: the file is replaced only once its backup is under its name,
/// so with the backup still a temporary the write never happened and its
/// entry must go. Kept, it named a backup that was never made: the retention
/// test's "backups gone" with a writer SIGKILLed in this window.
///
/// `turnback write` records no entry for such a write (nothing to undo), so
/// it never reaches the window: checked first. `Session::write` still records
/// one, and is crashed there, in a process of its own.
#[test]
fn a_crash_before_the_backup_of_a_write_of_unchanged_contents_keeps_no_entry_naming_it() {
    const SAME: Scenario = Scenario {
        name: "write of the contents the file holds",
        initial: &[("f.txt", b"same contents\n")],
        setup: &[],
        before: &[],
        args: &["write", "f.txt", "--message", "m1"],
        stdin: b"same contents\n",
        versions: &[("f.txt", &[Some(b"same contents\n")])],
    };
    let s = &SAME;
    let failpoints = "blob-hashed=sleep(1000);journal-synced=return";
    // The command line: no entry, so no journal line to crash after.
    let (env, start) = set_up(s);
    env.session(SESSION)
        .write(&env.workspace(), "other.txt", &b"other\n"[..], "m0")
        .unwrap();
    assert!(
        !crash(&env, s, failpoints),
        "turnback write recorded an entry"
    );
    assert_eq!(entry_paths(&env), ["other.txt"]);
    check_after_crash(&env, s, &start, "turnback write of unchanged contents");

    // The library, crashed in the window.
    let (env, start) = set_up(s);
    env.session(SESSION)
        .write(&env.workspace(), "other.txt", &b"other\n"[..], "m0")
        .unwrap();
    assert!(
        crash_writing_through_the_library(&env, "f.txt", "same contents\n", failpoints),
        "did not crash at {failpoints}"
    );
    let blobs = after_the_window(&env);
    let same = util::sha256_hex(b"same contents\n");
    assert!(
        blobs.iter().any(|n| n.starts_with(".tmp-")) && !blobs.contains(&same),
        "the backup was not still a temporary: the window was not hit ({blobs:?})"
    );
    assert_eq!(
        entry_paths(&env),
        ["other.txt"],
        "the entry of a write that never happened stayed, naming a backup never made"
    );
    check_after_crash(
        &env,
        s,
        &start,
        "crash before the backup of unchanged contents",
    );
}

/// A change that takes the journal past 64 KiB folds it into a new snapshot.
/// A crash at each step of that (the snapshot's temporary written, synced,
/// renamed, its directory synced; the journal not yet emptied) must lose
/// nothing: lines already in the snapshot are skipped, the rest replayed.
#[test]
fn a_crash_while_the_journal_is_folded_into_the_snapshot_loses_nothing() {
    let s = &SCENARIOS[0];
    assert_eq!(s.name, "write over an existing file");
    let points = [
        "index-tmp-written",
        "index-tmp-synced",
        "index-renamed",
        "index-dir-synced",
    ];
    for point in points {
        let (env, start) = set_up(s);
        let session = env.session(SESSION);
        let ws = env.workspace();
        let dir = env.home.path().join(format!("sessions/{SESSION}"));
        let journal_len = || std::fs::metadata(dir.join("journal.jsonl")).map_or(0, |m| m.len());
        // Fill the journal to within one entry line of the 64 KiB at which the
        // next change folds it in.
        let mut i = 0;
        while journal_len() < 64 * 1024 - 400 {
            let contents = format!("filler {i}\n");
            session
                .write(&ws, "filler.txt", contents.as_bytes(), &format!("m0-{i}"))
                .unwrap();
            i += 1;
        }
        let entries = session.entries().unwrap().len();
        assert!(
            crash(&env, s, &format!("{point}=return")),
            "{point}: the write did not fold the journal in"
        );
        let what = format!("crash at {point} while folding the journal in");
        let after = Store::new(env.home.path()).open_session(SESSION).unwrap();
        assert_eq!(after.entries().unwrap().len(), entries, "{what}");
        check_after_crash(&env, s, &start, &what);
    }
}
