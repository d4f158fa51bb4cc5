//! Real processes: the built `turnback` binary run as separate processes, at the
//! same time, racing on one file, or killed with SIGKILL half way through a write.
//! The test process reads the results back through the library.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use turnback_store::{Entry, Error, FileState, Session};

use crate::util::{self, Env, Rng, forced, names_under, plain, read, read_text, sha256_hex};

// ---------------------------------------------------------------------------
// Helpers

/// `len` pseudo-random bytes from `seed`: contents no two seeds share.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// `sh -c script` in the workspace, with the binary as `$TB`, this home and
/// (when given) this session.
fn sh(env: &Env, session: Option<&str>, script: &str) -> Command {
    let mut c = env.command("sh", session);
    c.arg("-c").arg(script).env("TB", util::bin());
    c
}

/// A shell script that runs `body` once for each `i` from 1 to `n`, stopping at
/// the first failure.
fn shell_loop(n: usize, body: &str) -> String {
    let list: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    format!("set -e\nfor i in {}; do\n  {body}\ndone\n", list.join(" "))
}

/// Starts `cmd` (a shell loop of writes) with no input or output but its errors.
fn spawn_quiet(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `cmd` to the end with `stdin` as its standard input.
fn run(cmd: Command, stdin: &[u8]) -> Output {
    util::run_with_input(cmd, stdin)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `turnback write file --message msg` in `session`, contents on stdin; must succeed.
fn cli_write(env: &Env, session: &str, file: &str, contents: &[u8], msg: &str) {
    let mut c = env.cmd(Some(session));
    c.args(["write", file, "--message", msg]);
    let out = run(c, contents);
    assert!(
        out.status.success(),
        "turnback write {file}: {:?}\n{}",
        out.status,
        stderr(&out)
    );
}

/// `turnback revert file [extra...]` without a session: status and stderr/stdout.
fn cli_revert(env: &Env, file: &str, extra: &[&str]) -> Output {
    let mut c = env.cmd(None);
    c.arg("revert").arg(file).args(extra);
    run(c, b"")
}

/// `turnback revert file` without a session must succeed, say it used
/// `session`, and leave `file` holding `contents`.
fn cli_revert_using(env: &Env, file: &str, session: &str, contents: &str) {
    let out = cli_revert(env, file, &[]);
    assert!(out.status.success(), "{:?}\n{}", out.status, stderr(&out));
    assert!(
        stderr(&out).contains(&format!("using session {session}")),
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(read_text(env.path(file)), contents);
}

/// The message ids of a session's entries, oldest first.
fn message_ids(session: &Session) -> Vec<String> {
    session
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| e.message_id)
        .collect()
}

fn waited(child: Child, what: &str) -> Output {
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        stderr(&out)
    );
    out
}

fn hash_of(state: &FileState) -> Option<&str> {
    state.sha256.as_deref()
}

fn after_hash(e: &Entry) -> Option<&str> {
    e.after.as_ref().and_then(|a| a.sha256.as_deref())
}

/// The names in a session's blob directory.
fn blob_names(session: &Session) -> BTreeSet<String> {
    match std::fs::read_dir(session.dir().join("blobs")) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// Merges the entries of all sessions by time and checks they form one chain
/// from `initial`: each "before" is the previous "after". Returns the last
/// "after" and how often the chain passes from one session to another.
fn assert_one_chain(all: &mut [(String, Entry)], initial: &[u8]) -> (String, usize) {
    all.sort_by_key(|(_, e)| e.time);
    let mut expected_before = sha256_hex(initial);
    let mut switches = 0;
    for (k, (id, e)) in all.iter().enumerate() {
        assert_eq!(
            hash_of(&e.before),
            Some(expected_before.as_str()),
            "{id} entry {} ({}): its before is not the previous write's after",
            e.seq,
            e.message_id
        );
        expected_before = after_hash(e).unwrap().to_owned();
        if k > 0 && all[k - 1].0 != *id {
            switches += 1;
        }
    }
    (expected_before, switches)
}

// ---------------------------------------------------------------------------
// 1. Several processes, one session

/// Six shell loops, started at once, each run fifteen `turnback write`s of its
/// own files into one session. Half the files exist beforehand with the same
/// contents, so the processes also store one backup concurrently. Every write
/// must end up as exactly one entry: no index update lost to another process.
#[test]
fn concurrent_processes_appending_to_one_session_lose_no_entry() {
    const PROCS: usize = 6;
    const WRITES: usize = 15;
    let env = Env::new();
    let old: &[u8] = b"the same old contents\n";
    let name = |p: usize, i: usize| format!("f_{p}_{i}.txt");
    let contents = |p: usize, i: usize| format!("process {p} write {i}\n");
    for p in 0..PROCS {
        for i in (1..=WRITES).step_by(2) {
            std::fs::write(env.path(&name(p, i)), old).unwrap();
        }
    }
    let script = shell_loop(
        WRITES,
        "printf 'process %s write %s\\n' \"$P\" \"$i\" | \"$TB\" write \"f_${P}_$i.txt\" --message \"m-$P-$i\" >/dev/null",
    );
    let children: Vec<Child> = (0..PROCS)
        .map(|p| spawn_quiet(sh(&env, Some("shared"), &script).env("P", p.to_string())))
        .collect();
    for (p, child) in children.into_iter().enumerate() {
        waited(child, &format!("writer process {p}"));
    }

    let session = env.store().open_session("shared").unwrap();
    let entries = session.entries().unwrap();
    assert_eq!(entries.len(), PROCS * WRITES, "entries: {entries:#?}");
    let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=(PROCS * WRITES) as u64).collect::<Vec<_>>(),
        "seqs must be unique, dense and in order"
    );
    let root = env.workspace().root().to_owned();
    let mut seen: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for e in &entries {
        let rest = e.message_id.strip_prefix("m-").expect("message id");
        let (p, i) = rest.split_once('-').unwrap();
        let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
        assert_eq!(e.path, name(p, i), "entry {} path", e.seq);
        assert!(
            seen.insert((p, i), e.seq).is_none(),
            "two entries for {}",
            e.path
        );
        assert_eq!(e.version, 1, "{}: version", e.path);
        assert!(e.in_flight.is_none(), "{}: still in flight", e.path);
        assert_eq!(e.workspace.path, root);
        if i % 2 == 1 {
            assert!(e.before.exists, "{}: before", e.path);
            assert_eq!(hash_of(&e.before), Some(sha256_hex(old).as_str()));
            assert_eq!(e.before.size, old.len() as u64);
        } else {
            assert!(!e.before.exists, "{}: before should be absent", e.path);
        }
        let want = contents(p, i);
        let after = e.after.as_ref().expect("committed");
        assert!(after.exists);
        assert_eq!(
            after.sha256.as_deref(),
            Some(sha256_hex(want.as_bytes()).as_str())
        );
        assert_eq!(after.size, want.len() as u64);
    }
    // Each process's own writes are in its order.
    for p in 0..PROCS {
        let mine: Vec<u64> = (1..=WRITES).map(|i| seen[&(p, i)]).collect();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "process {p}: {mine:?}"
        );
    }
    // Every file has what was written, and nothing else is in the workspace.
    for p in 0..PROCS {
        for i in 1..=WRITES {
            let got = read_text(env.path(&name(p, i)));
            assert_eq!(got, contents(p, i));
        }
    }
    let expected_names: BTreeSet<PathBuf> = (0..PROCS)
        .flat_map(|p| (1..=WRITES).map(move |i| PathBuf::from(name(p, i))))
        .collect();
    assert_eq!(names_under(env.ws.path()), expected_names);
    assert!(util::stray_temps(env.ws.path()).is_empty());
    // One backup, stored once although 45 writes backed it up concurrently,
    // and no temporary of the blob store left behind.
    assert_eq!(blob_names(&session), BTreeSet::from([sha256_hex(old)]));
    assert_eq!(read(session.dir().join("blobs").join(sha256_hex(old))), old);

    // Another process sees the same log.
    let mut log = env.cmd(Some("shared"));
    log.args(["log", "--json"]);
    let out = run(log, b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["session"], "shared");
    let logged = v["entries"].as_array().unwrap();
    assert_eq!(logged.len(), entries.len());
    for (j, e) in logged.iter().zip(&entries) {
        assert_eq!(j["seq"], e.seq);
        assert_eq!(j["path"], e.path.as_str());
        assert_eq!(j["message_id"], e.message_id.as_str());
        assert_eq!(j["after"]["sha256"], after_hash(e).unwrap());
    }
}

// ---------------------------------------------------------------------------
// 2. A second process reverts what the first changed

/// Session agent-b (a `turnback write` process) changes notes.txt, then agent-a
/// (this process, through the library) changes it again, then agent-b changes
/// another file (so agent-b is the newest session overall). `turnback revert
/// notes.txt` without a session, run as a separate process, must pick agent-a
/// (which changed notes.txt last), say so, and restore agent-b's version; run
/// again it picks agent-b and restores the original.
#[test]
fn revert_from_another_process_finds_the_session_that_changed_the_file_last() {
    let env = Env::new();
    std::fs::write(env.path("notes.txt"), "original\n").unwrap();
    cli_write(&env, "agent-b", "notes.txt", b"by b\n", "b1");
    let a = env.session("agent-a");
    let ws = env.workspace();
    let a_entry = a.write(&ws, "notes.txt", &b"by a\n"[..], "a1").unwrap();
    assert_eq!(
        hash_of(&a_entry.before),
        Some(sha256_hex(b"by b\n").as_str())
    );
    cli_write(&env, "agent-b", "other.txt", b"other\n", "b2");
    let newest = env.store().sessions().unwrap();
    assert_eq!(newest.last().unwrap().id, "agent-b");

    cli_revert_using(&env, "notes.txt", "agent-a", "by b\n");
    assert!(
        a.entries().unwrap().is_empty(),
        "agent-a's entry is reverted"
    );
    let b = env.store().open_session("agent-b").unwrap();
    assert_eq!(message_ids(&b), ["b1", "b2"]);

    cli_revert_using(&env, "notes.txt", "agent-b", "original\n");
    assert_eq!(message_ids(&b), ["b2"]);
    assert_eq!(read_text(env.path("other.txt")), "other\n");

    // Nothing left to revert for notes.txt: an error, and nothing touched.
    let before = util::tree_digest(env.ws.path());
    let out = cli_revert(&env, "notes.txt", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no session has a change"),
        "{}",
        stderr(&out)
    );
    assert_eq!(util::tree_digest(env.ws.path()), before);
}

/// A file the session wrote and a person then changed by hand: `turnback
/// revert` from another process exits 3 and touches nothing (file, other files,
/// index); `--dry-run` reports it as changed since; `--force` restores it.
#[test]
fn revert_from_another_process_refuses_a_file_changed_by_hand() {
    let env = Env::new();
    std::fs::write(env.path("notes.txt"), "original\n").unwrap();
    let a = env.session("agent-a");
    let ws = env.workspace();
    a.write(&ws, "notes.txt", &b"by the agent\n"[..], "a1")
        .unwrap();
    std::fs::write(env.path("notes.txt"), "by hand\n").unwrap();
    let entries_before = a.entries().unwrap();
    let tree_before = util::tree_digest(env.ws.path());
    let blobs_before = blob_names(&a);

    let out = cli_revert(&env, "notes.txt", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("using session agent-a"), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(err.contains("notes.txt"), "{err}");
    assert!(err.contains("nothing was touched"), "{err}");
    assert_eq!(read_text(env.path("notes.txt")), "by hand\n");
    assert_eq!(util::tree_digest(env.ws.path()), tree_before);
    assert_eq!(a.entries().unwrap(), entries_before);
    assert_eq!(blob_names(&a), blobs_before);

    // The dry run is a check: its plan, and the refusal the real revert
    // gives, with exit code 3.
    let out = cli_revert(&env, "notes.txt", &["--dry-run", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"kind\":\"refused\""),
        "{}",
        stderr(&out)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["applied"], false);
    assert_eq!(v["files"][0]["path"], "notes.txt");
    assert_eq!(v["files"][0]["status"], "changed-since");
    assert_eq!(util::tree_digest(env.ws.path()), tree_before);
    assert_eq!(a.entries().unwrap(), entries_before);

    let out = cli_revert(&env, "notes.txt", &["--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read_text(env.path("notes.txt")), "original\n");
    assert!(a.entries().unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// 3. Two processes racing on one file

/// Two sessions, each a shell loop of twenty `turnback write`s of the same file
/// with contents naming the writer and the write. Every entry's "after" must be
/// its own writer's contents (the per-file lock spans backup to commit); merged
/// by time, the entries of both sessions form one chain (each "before" is the
/// previous "after"); the file ends as the newest entry's "after".
#[test]
fn two_processes_racing_on_one_file_each_record_their_own_after() {
    const WRITES: usize = 20;
    let env = Env::new();
    let initial: &[u8] = b"initial\n";
    std::fs::write(env.path("shared.txt"), initial).unwrap();
    let script = shell_loop(
        WRITES,
        "printf '%s-%s\\n' \"$W\" \"$i\" | \"$TB\" write shared.txt --message \"$W-$i\" >/dev/null",
    );
    let writers = ["A", "B"];
    let children: Vec<Child> = writers
        .iter()
        .map(|w| spawn_quiet(sh(&env, Some(&format!("session-{w}")), &script).env("W", w)))
        .collect();
    for (w, child) in writers.iter().zip(children) {
        waited(child, &format!("writer {w}"));
    }

    let mut all: Vec<(String, Entry)> = Vec::new();
    for w in writers {
        let id = format!("session-{w}");
        let s = env.store().open_session(&id).unwrap();
        let entries = s.entries().unwrap();
        assert_eq!(entries.len(), WRITES, "{id}: {entries:#?}");
        let own: BTreeSet<String> = (1..=WRITES)
            .map(|i| sha256_hex(format!("{w}-{i}\n").as_bytes()))
            .collect();
        for (k, e) in entries.iter().enumerate() {
            let i = k + 1;
            assert_eq!(e.message_id, format!("{w}-{i}"), "{id}: order");
            assert_eq!(e.path, "shared.txt");
            assert_eq!(e.version as usize, i, "{id}: version");
            assert!(e.is_committed() && e.in_flight.is_none(), "{id}: {e:?}");
            let after = after_hash(e).expect("after");
            assert!(
                own.contains(after),
                "{id} entry {}: after is not its own",
                e.seq
            );
            assert_eq!(
                after,
                sha256_hex(format!("{w}-{i}\n").as_bytes()),
                "{id} entry {}: after is not what this write wrote",
                e.seq
            );
            // Its backup is there and is what "before" says.
            let h = hash_of(&e.before).expect("the file always existed");
            let blob = read(s.dir().join("blobs").join(h));
            assert_eq!(sha256_hex(&blob), h);
        }
        all.extend(entries.into_iter().map(|e| (id.clone(), e)));
    }

    let (_, switches) = assert_one_chain(&mut all, initial);
    let (newest_id, newest) = all.last().unwrap();
    let now = read(env.path("shared.txt"));
    assert_eq!(
        sha256_hex(&now),
        after_hash(newest).unwrap(),
        "the file is not the newest entry's after ({newest_id} {})",
        newest.message_id
    );
    assert_eq!(
        String::from_utf8(now).unwrap(),
        format!("{}\n", newest.message_id)
    );
    assert!(util::stray_temps(env.ws.path()).is_empty());
    eprintln!("racing writers: {switches} switches between sessions in the chain");
}

// ---------------------------------------------------------------------------
// 4. SIGKILL mid-write

fn assert_killed_or_done(status: ExitStatus, what: &str) -> bool {
    match status.signal() {
        Some(9) => true,
        Some(s) => panic!("{what}: died of signal {s}"),
        None => {
            assert!(status.success(), "{what}: {status:?}");
            false
        }
    }
}

/// `turnback write big.bin` is killed while it is still reading its standard
/// input: the file keeps exactly its old contents, the session opens and lists
/// no entry, no temporary is left in the workspace, and the next write works.
#[test]
fn sigkill_while_reading_stdin_leaves_the_old_file_and_a_readable_session() {
    let env = Env::new();
    let old = pattern(1, 512 * 1024);
    let new = pattern(2, 4 * 1024 * 1024);
    std::fs::write(env.path("big.bin"), &old).unwrap();

    let mut c = env.cmd(Some("k"));
    c.args(["write", "big.bin", "--message", "m1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    // The pipe holds 64 KiB: once 3 MiB went in, the child is copying stdin.
    input
        .write_all(&new[..3 * 1024 * 1024])
        .expect("the writer reads its stdin");
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    drop(input);

    assert_eq!(read(env.path("big.bin")), old);
    let session = env.store().open_session("k").unwrap();
    assert!(session.entries().unwrap().is_empty());
    assert!(util::stray_temps(env.ws.path()).is_empty());
    assert_eq!(
        names_under(env.ws.path()),
        BTreeSet::from([PathBuf::from("big.bin")])
    );
    assert_eq!(read(env.path("big.bin")), old);

    // Nothing is left locked: the next writer goes through and backs up the old file.
    cli_write(&env, "k", "big.bin", b"small\n", "m2");
    let entries = session.entries().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].message_id, "m2");
    assert_eq!(hash_of(&entries[0].before), Some(sha256_hex(&old).as_str()));
    session.undo(plain()).unwrap();
    assert_eq!(read(env.path("big.bin")), old);
}

/// Where a kill landed, as the index on disk (`index.json` and the journal's
/// lines, [`raw_entries`]) showed it before anyone opened it.
#[derive(Debug, Default)]
struct Tally {
    /// Killed before the entry was recorded.
    no_entry: usize,
    /// Killed between recording the entry and clearing its in-flight mark.
    in_flight: usize,
    /// A named temporary of the write was in the workspace before recovery.
    temp_seen: usize,
    /// The write had finished (or was killed after clearing the mark).
    committed: usize,
    /// The file held the new contents after the kill.
    file_new: usize,
}

/// One version of a file, with its hash computed once (hashing megabytes in a
/// debug build is slow).
struct Version {
    bytes: Vec<u8>,
    hash: String,
}

impl Version {
    fn new(bytes: Vec<u8>) -> Version {
        let hash = sha256_hex(&bytes);
        Version { bytes, hash }
    }
}

/// The entries on disk, read raw (no lock, no recovery, not through the
/// store): `index.json`'s, with the lines of `journal.jsonl` after its
/// `journal` mark replayed on them (an entry added or replaced, dropped, or
/// landed: its in-flight mark cleared). Since the journal, `index.json` alone
/// is stale from a session's second change on: what a writer records is a
/// journal line. A torn last line (a writer caught in its `write`) is ignored,
/// as the store ignores it; damage before it fails the test.
fn raw_entries(env: &Env, id: &str) -> Vec<serde_json::Value> {
    let dir = env.home.path().join("sessions").join(id);
    let read = |name: &str| match std::fs::read(dir.join(name)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("{}: {e}", dir.join(name).display()),
    };
    let Some(snapshot) = read("index.json") else {
        assert!(
            read("journal.jsonl").is_none(),
            "a journal without index.json"
        );
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_slice(&snapshot)
        .unwrap_or_else(|e| panic!("{id}/index.json is torn: {e}"));
    let mut entries = v["entries"].as_array().cloned().unwrap_or_default();
    let mark = v["journal"].as_u64().unwrap_or(0);
    let journal = read("journal.jsonl").unwrap_or_default();
    let mut lines = journal.split_inclusive(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let parsed = line
            .ends_with(b"\n")
            .then(|| serde_json::from_slice::<serde_json::Value>(line).ok())
            .flatten();
        let Some(line) = parsed else {
            assert!(lines.peek().is_none(), "{id}: a damaged journal line");
            break; // torn: a change that never happened
        };
        if line["n"].as_u64().expect("n") <= mark {
            continue;
        }
        for op in line["ops"].as_array().expect("ops") {
            if let Some(entry) = op.get("entry") {
                entries.retain(|e| e["seq"] != entry["seq"]);
                entries.push(entry.clone());
            } else if let Some(seq) = op.get("drop_entry") {
                entries.retain(|e| e["seq"] != *seq);
            } else if let Some(seq) = op.get("landed") {
                for e in entries.iter_mut().filter(|e| e["seq"] == *seq) {
                    e["in_flight"] = serde_json::Value::Null;
                }
            }
        }
    }
    entries
}

/// The entry on disk still marked in flight, if any (read as [`raw_entries`]).
fn raw_in_flight(env: &Env, id: &str) -> Option<serde_json::Value> {
    let in_flight = |e: &serde_json::Value| e.get("in_flight").is_some_and(|f| !f.is_null());
    let mut found: Vec<_> = raw_entries(env, id).into_iter().filter(in_flight).collect();
    assert!(found.len() <= 1, "more than one entry in flight: {found:?}");
    found.pop()
}

/// After a writer of `file` (old → new) in session `id` was killed (or ended):
/// the file is one whole version; opening the session works and settles what the
/// writer left (no entry in flight, no temporary in the workspace); the session
/// has an entry exactly when the file holds the new version; a forced undo
/// succeeds or finds nothing to undo, and either way the file is then exactly
/// the old version again and the session empty.
fn check_after_kill(
    env: &Env,
    id: &str,
    file: &str,
    old: &Version,
    new: &Version,
    tally: &mut Tally,
    label: &str,
) {
    let raw = raw_entries(env, id);
    assert!(raw.len() <= 1, "{label}: {raw:?}");
    match raw.first() {
        None => tally.no_entry += 1,
        Some(e) if e.get("in_flight").is_some_and(|f| !f.is_null()) => tally.in_flight += 1,
        Some(_) => tally.committed += 1,
    }
    if !util::stray_temps(env.ws.path()).is_empty() {
        tally.temp_seen += 1;
    }

    let now = read(env.path(file));
    let is_new = now == new.bytes;
    assert!(
        now == old.bytes || is_new,
        "{label}: {file} holds {} bytes that are neither the old nor the new version",
        now.len()
    );
    if is_new {
        tally.file_new += 1;
    }

    let session = env
        .store()
        .open_session(id)
        .unwrap_or_else(|e| panic!("{label}: the session does not open: {e}"));
    let entries = session
        .entries()
        .unwrap_or_else(|e| panic!("{label}: entries: {e}"));
    assert_eq!(
        util::stray_temps(env.ws.path()),
        Vec::<PathBuf>::new(),
        "{label}: temporaries left in the workspace after opening"
    );
    assert_eq!(
        names_under(env.ws.path()),
        BTreeSet::from([PathBuf::from(file)]),
        "{label}"
    );
    assert!(
        entries.iter().all(|e| e.in_flight.is_none()),
        "{label}: opening left an entry in flight: {entries:?}"
    );
    if is_new {
        assert_eq!(entries.len(), 1, "{label}: the write happened: {entries:?}");
        assert_eq!(
            hash_of(&entries[0].before),
            Some(old.hash.as_str()),
            "{label}"
        );
        assert_eq!(after_hash(&entries[0]), Some(new.hash.as_str()), "{label}");
    } else {
        assert!(
            entries.is_empty(),
            "{label}: the file is at before, so the write never happened: {entries:?}"
        );
    }

    match session.undo(forced()) {
        Ok(report) => {
            assert!(
                is_new,
                "{label}: undid {report:?} though nothing was written"
            );
            assert!(report.applied);
            assert_eq!(report.files.len(), 1, "{label}: {report:?}");
            assert_eq!(report.files[0].seqs, vec![entries[0].seq]);
        }
        Err(Error::NothingToUndo { session: s }) => {
            assert_eq!(s, id);
            assert!(
                !is_new,
                "{label}: nothing to undo, yet the file was written"
            );
        }
        Err(e) => panic!("{label}: undo: {e}"),
    }
    assert!(
        read(env.path(file)) == old.bytes,
        "{label}: after the undo {file} is not the old version"
    );
    assert!(session.entries().unwrap().is_empty(), "{label}");
    assert_eq!(
        util::stray_temps(env.ws.path()),
        Vec::<PathBuf>::new(),
        "{label}"
    );
}

/// Starts `turnback write file` in session `id` with `stdin` (a file) as input.
fn spawn_writer(env: &Env, id: &str, file: &str, stdin: &Path) -> Child {
    let mut c = env.cmd(Some(id));
    c.args(["write", file, "--message", "w"])
        .stdin(std::fs::File::open(stdin).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().unwrap()
}

/// Fifteen writers of an 8 MiB file (from a 256 KiB one), each killed after a
/// pseudo-random delay: ten of 0 to 60 ms, five between 60 ms and a little more
/// than a whole write takes here (a debug build hashes slowly, so 60 ms is only
/// the start of a write). After each: `check_after_kill`.
#[test]
fn sigkill_at_random_moments_leaves_one_whole_version() {
    let env = Env::new();
    let inputs = tempfile::tempdir().unwrap();
    let old = Version::new(pattern(10, 256 * 1024));
    let new = Version::new(pattern(11, 8 * 1024 * 1024));
    let new_path = inputs.path().join("new.bin");
    std::fs::write(&new_path, &new.bytes).unwrap();
    std::fs::write(env.path("big.bin"), &old.bytes).unwrap();
    // The session exists before the first kill, which may come before the child
    // has created anything.
    drop(env.session("k"));
    let mut tally = Tally::default();

    // One whole write, to learn how long one takes here.
    let start = Instant::now();
    let child = spawn_writer(&env, "k", "big.bin", &new_path);
    waited(child, "an uninterrupted write");
    let whole = start.elapsed();
    check_after_kill(
        &env,
        "k",
        "big.bin",
        &old,
        &new,
        &mut tally,
        "uninterrupted",
    );
    assert_eq!(tally.file_new, 1);

    let mut rng = Rng::new(0x5EED_1234_ABCD_0001);
    let mut killed = 0;
    for round in 0..15 {
        let delay = if round % 3 == 2 {
            let upper = (whole.as_micros() as u64 * 12 / 10).max(60_000);
            Duration::from_micros(60_000 + rng.up_to(upper - 60_000))
        } else {
            Duration::from_micros(rng.up_to(60_000))
        };
        let mut child = spawn_writer(&env, "k", "big.bin", &new_path);
        std::thread::sleep(delay);
        child.kill().unwrap();
        let status = child.wait().unwrap();
        let label = format!("round {round} (killed after {delay:?})");
        if assert_killed_or_done(status, &label) {
            killed += 1;
        }
        check_after_kill(&env, "k", "big.bin", &old, &new, &mut tally, &label);
    }
    eprintln!("random kills: a whole write took {whole:?}; {killed} of 15 killed; {tally:?}");
}

/// Starts `turnback write file` in session `id` with `stdin` (a file) as
/// input and `FAILPOINTS` set to `failpoints`.
fn spawn_writer_with(env: &Env, id: &str, file: &str, stdin: &Path, failpoints: &str) -> Child {
    let mut c = env.cmd(Some(id));
    c.args(["write", file, "--message", "w"])
        .env("FAILPOINTS", failpoints)
        .stdin(std::fs::File::open(stdin).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().unwrap()
}

/// What shows on disk once a writer held at a crash point got there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reached {
    /// The journal holds the writer's entry, in flight; the new contents are
    /// still an unnamed temporary and the file is old.
    Recorded,
    /// And the temporary is linked under the name the entry records.
    TempLinked,
    /// And the temporary was renamed over the file: it holds the new contents.
    Replaced,
}

/// The crash points inside the in-flight window (from the entry's journal
/// line to the landing line that clears its mark), in the order a write passes
/// them, each with what shows once the writer is there.
const IN_FLIGHT_PAUSES: [(&str, Reached); 4] = [
    ("journal-synced", Reached::Recorded),
    ("ws-tmp-linked", Reached::TempLinked),
    ("ws-renamed", Reached::Replaced),
    ("ws-dir-synced", Reached::Replaced),
];

/// Writers held inside the in-flight window and killed there: the recovery
/// path proper. Each `turnback write` runs with `FAILPOINTS="P=sleep(30000)"`
/// for a crash point P of the window (`crash.rs`; `sleep` holds the process
/// there, it does not abort it), so it pauses right after that step. The test
/// watches what the store really writes (the journal line of the entry, the
/// temporary's recorded name, the file) until the writer is seen at P, then
/// kills it; a writer that ends before it is seen there fails the test. After
/// the kill, before anyone opens the session, the journal must still show the
/// entry in flight (the kill landed inside the window: asserted for every
/// round), and the outcomes, tallied from the journal, must be the ones P
/// leaves. Then `check_after_kill`: the next opener settles it.
#[test]
fn sigkill_while_the_entry_is_in_flight_is_settled_by_the_next_opener() {
    const PER_PAUSE: usize = 2;
    let env = Env::new();
    let inputs = tempfile::tempdir().unwrap();
    let old = Version::new(pattern(20, 64 * 1024));
    let new = Version::new(pattern(21, 256 * 1024));
    let new_path = inputs.path().join("new.bin");
    std::fs::write(&new_path, &new.bytes).unwrap();
    std::fs::write(env.path("f.bin"), &old.bytes).unwrap();
    // The session's first change writes index.json; every later one is a
    // journal line, as the entries of the writers below are.
    env.session("k").begin_turn("kills", None).unwrap();
    let mut tally = Tally::default();
    let (mut rounds, mut inside) = (0, 0);
    let mut reached_count: BTreeMap<&str, usize> = BTreeMap::new();
    for (point, reached) in IN_FLIGHT_PAUSES {
        for k in 0..PER_PAUSE {
            rounds += 1;
            let label = format!("held at {point} (#{k})");
            assert!(
                raw_in_flight(&env, "k").is_none(),
                "{label}: in flight before"
            );
            let failpoints = format!("{point}=sleep(30000)");
            let mut child = spawn_writer_with(&env, "k", "f.bin", &new_path, &failpoints);
            let deadline = Instant::now() + Duration::from_secs(20);
            let entry = loop {
                if let Some(e) = raw_in_flight(&env, "k") {
                    let there = match reached {
                        Reached::Recorded => true,
                        Reached::TempLinked => e["in_flight"]["temp"]
                            .as_str()
                            .is_some_and(|t| env.path(t).exists()),
                        Reached::Replaced => std::fs::read(env.path("f.bin"))
                            .is_ok_and(|b| b.len() == new.bytes.len() && b == new.bytes),
                    };
                    if there {
                        break e;
                    }
                }
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("{label}: the writer ended ({status}) before it was seen there");
                }
                assert!(Instant::now() < deadline, "{label}: not seen there in 20 s");
                std::thread::sleep(Duration::from_micros(200));
            };
            child.kill().unwrap();
            let status = child.wait().unwrap();
            assert_eq!(status.signal(), Some(9), "{label}: not killed: {status:?}");
            // Inside the window, as the disk says before anyone looks: the
            // entry is still in flight, nothing landed it.
            let still = raw_in_flight(&env, "k");
            assert_eq!(
                still.as_ref().map(|e| &e["seq"]),
                Some(&entry["seq"]),
                "{label}: the kill did not land inside the window"
            );
            inside += 1;
            *reached_count.entry(point).or_default() += 1;
            let before = (tally.temp_seen, tally.file_new);
            check_after_kill(&env, "k", "f.bin", &old, &new, &mut tally, &label);
            let temp_seen = tally.temp_seen > before.0;
            let file_new = tally.file_new > before.1;
            assert_eq!(
                file_new,
                reached == Reached::Replaced,
                "{label}: the file after the kill"
            );
            if reached == Reached::TempLinked {
                assert!(temp_seen, "{label}: the linked temporary was not there");
            }
        }
    }
    eprintln!(
        "in-flight kills: {inside} of {rounds} inside the window ({reached_count:?}); {tally:?}"
    );
    assert_eq!(inside, rounds, "every kill lands inside the window");
    assert_eq!(tally.in_flight, rounds, "{tally:?}");
    assert_eq!((tally.no_entry, tally.committed), (0, 0), "{tally:?}");
    assert_eq!(tally.file_new, 2 * PER_PAUSE, "{tally:?}");
    assert!(tally.temp_seen >= PER_PAUSE, "{tally:?}");
}

// ---------------------------------------------------------------------------
// 5. Writers creating files in one new directory at the same time

/// Four agents (four sessions) each write their own file into the same new
/// directories at the same moment: `d<k>/a/b/c/f<t>`. Each write must succeed,
/// and each new directory must be recorded as created by exactly one of them
/// (so that undoing that one removes it when it is empty, and no other does).
///
/// Threads released together by a barrier, not processes: processes reach the
/// directory walk with milliseconds of jitter and hit the few microseconds
/// between "not there" and "create it" only rarely, while threads do at once.
/// Session handles are `Send + Sync` and exclude each other exactly as
/// processes do, so the window is the same one processes race through.
#[test]
fn writers_creating_files_in_one_new_directory_at_once_all_succeed() {
    const WRITERS: usize = 4;
    const ROUNDS: usize = 30;
    let env = Env::new();
    let ws = env.workspace();
    let barrier = std::sync::Barrier::new(WRITERS);
    let results: Vec<Vec<(usize, Result<Entry, String>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|t| {
                let session = env.session(&format!("agent-{t}"));
                let (ws, barrier) = (&ws, &barrier);
                scope.spawn(move || {
                    (0..ROUNDS)
                        .map(|k| {
                            barrier.wait();
                            let path = format!("d{k}/a/b/c/f{t}");
                            let contents = format!("agent {t} round {k}\n");
                            let r = session
                                .write(ws, &path, contents.as_bytes(), &format!("m{k}"))
                                .map_err(|e| e.to_string());
                            (k, r)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let failures: Vec<String> = results
        .iter()
        .enumerate()
        .flat_map(|(t, rs)| {
            rs.iter().filter_map(move |(k, r)| {
                r.as_ref()
                    .err()
                    .map(|e| format!("agent-{t} d{k}/a/b/c/f{t}: {e}"))
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} writes into new directories failed, e.g.:\n{}",
        failures.len(),
        WRITERS * ROUNDS,
        failures[..failures.len().min(5)].join("\n")
    );
    for k in 0..ROUNDS {
        let mut created: Vec<String> = Vec::new();
        for (t, rs) in results.iter().enumerate() {
            let e = rs[k].1.as_ref().unwrap();
            created.extend(e.created_dirs.iter().cloned());
            let got = std::fs::read_to_string(env.path(&format!("d{k}/a/b/c/f{t}"))).unwrap();
            assert_eq!(got, format!("agent {t} round {k}\n"));
        }
        created.sort();
        let want: Vec<String> = ["", "/a", "/a/b", "/a/b/c"]
            .iter()
            .map(|s| format!("d{k}{s}"))
            .collect();
        assert_eq!(created, want, "round {k}: each new directory created once");
    }
    for t in 0..WRITERS {
        let s = env.store().open_session(&format!("agent-{t}")).unwrap();
        assert_eq!(s.entries().unwrap().len(), ROUNDS);
    }
    assert!(util::stray_temps(env.ws.path()).is_empty());
}

// ---------------------------------------------------------------------------
// 6. Two processes racing on one file, from nested workspaces

/// As `two_processes_racing_on_one_file_each_record_their_own_after`, but one
/// agent works in the repository root (`sub/shared.txt`) and the other in a
/// subdirectory of it (`--workspace` = `sub`, path `shared.txt`): the same real
/// file. The per-file lock must still serialize them, so no version of the
/// file is overwritten without a backup: every "after" but the last is some
/// entry's "before", and merged by time each "before" is the previous "after".
#[test]
fn two_processes_from_nested_workspaces_racing_on_one_file_lose_no_version() {
    const WRITES: usize = 20;
    let env = Env::new();
    std::fs::create_dir(env.path("sub")).unwrap();
    let initial: &[u8] = b"initial\n";
    std::fs::write(env.path("sub/shared.txt"), initial).unwrap();
    let script = shell_loop(
        WRITES,
        "printf '%s-%s\\n' \"$W\" \"$i\" | \"$TB\" write \"$F\" --message \"$W-$i\" >/dev/null",
    );
    let spawn = |w: &str, file: &str, cwd: PathBuf| {
        spawn_quiet(
            sh(&env, Some(&format!("session-{w}")), &script)
                .env("W", w)
                .env("F", file)
                .current_dir(cwd),
        )
    };
    let a = spawn("A", "sub/shared.txt", env.ws.path().to_owned());
    let b = spawn("B", "shared.txt", env.path("sub"));
    waited(a, "writer A (root workspace)");
    waited(b, "writer B (nested workspace)");

    let mut all: Vec<(String, Entry)> = Vec::new();
    for w in ["A", "B"] {
        let id = format!("session-{w}");
        let entries = env.store().open_session(&id).unwrap().entries().unwrap();
        assert_eq!(entries.len(), WRITES, "{id}");
        for (k, e) in entries.iter().enumerate() {
            assert_eq!(
                after_hash(e),
                Some(sha256_hex(format!("{w}-{}\n", k + 1).as_bytes()).as_str()),
                "{id} {}",
                e.message_id
            );
        }
        all.extend(entries.into_iter().map(|e| (id.clone(), e)));
    }
    let now = sha256_hex(&read(env.path("sub/shared.txt")));
    let backed_up: BTreeSet<&str> = all.iter().filter_map(|(_, e)| hash_of(&e.before)).collect();
    let lost: Vec<&str> = all
        .iter()
        .filter(|(_, e)| {
            let a = after_hash(e).unwrap();
            a != now && !backed_up.contains(a)
        })
        .map(|(_, e)| e.message_id.as_str())
        .collect();
    assert!(
        lost.is_empty(),
        "{} writes were overwritten by the other agent with no backup of them anywhere \
         (the two writers did not exclude each other): {lost:?}",
        lost.len()
    );
    let (last_after, _) = assert_one_chain(&mut all, initial);
    assert_eq!(now, last_after);
}
