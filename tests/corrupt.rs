//! A damaged store: a corrupt, truncated, empty or newer `index.json`, an index
//! that names unsafe paths or non-hashes, a missing or corrupted backup, bad
//! session ids. Every case checks the error variant and that nothing was written,
//! created or deleted: not the index, not a backup, not a workspace file.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use turnback_store::{Error, RevertReport, Session, Store, Workspace};

use crate::util::{Env, dry, forced, plain, read, read_text, stray_temps, tree_digest};

/// A session with a few real changes: `a.txt` and `b.txt` changed (their old
/// contents are backups), `sub/c.txt` created.
fn with_changes(id: &str) -> (Env, Session, Workspace) {
    let (env, s, ws) = Env::with_session(id);
    fs::write(env.path("a.txt"), "a one\n").unwrap();
    fs::write(env.path("b.txt"), "b one\n").unwrap();
    s.write(&ws, "a.txt", &b"a two\n"[..], "m1").unwrap();
    s.write(&ws, "b.txt", &b"b two\n"[..], "m2").unwrap();
    s.write(&ws, "sub/c.txt", &b"c\n"[..], "m3").unwrap();
    assert_eq!(s.entries().unwrap().len(), 3);
    // Everything in index.json, the file these tests damage; the journal has
    // its own tests below.
    s.compact().unwrap();
    assert_eq!(fs::metadata(journal_path(&s)).unwrap().len(), 0);
    (env, s, ws)
}

fn index_path(s: &Session) -> PathBuf {
    s.dir().join("index.json")
}

fn journal_path(s: &Session) -> PathBuf {
    s.dir().join("journal.jsonl")
}

/// [`with_changes`], then two more writes that stay in the journal (two lines
/// each: the entry, then the landing that clears its in-flight mark).
fn with_journal(id: &str) -> (Env, Session, Workspace) {
    let (env, s, ws) = with_changes(id);
    s.write(&ws, "a.txt", &b"a three\n"[..], "m4").unwrap();
    s.write(&ws, "b.txt", &b"b three\n"[..], "m5").unwrap();
    let journal = fs::read_to_string(journal_path(&s)).unwrap();
    assert_eq!(journal.lines().count(), 4, "{journal}");
    (env, s, ws)
}

/// Everything a failed operation must leave alone.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    index: Option<Vec<u8>>,
    session_dir: BTreeMap<PathBuf, String>,
    workspace: BTreeMap<PathBuf, String>,
}

fn snapshot(env: &Env, s: &Session) -> Snapshot {
    Snapshot {
        index: fs::read(index_path(s)).ok(),
        session_dir: tree_digest(s.dir())
            .into_iter()
            .filter(|(k, _)| k != Path::new("index.json"))
            .collect(),
        workspace: tree_digest(env.ws.path()),
    }
}

fn assert_unchanged(what: &str, before: &Snapshot, env: &Env, s: &Session) {
    if let Some(diff) = changes(before, &snapshot(env, s)) {
        panic!("{what}: {diff}");
    }
}

/// What differs between two snapshots, in words, or `None`.
fn changes(before: &Snapshot, now: &Snapshot) -> Option<String> {
    let mut out = Vec::new();
    if now.index != before.index {
        out.push("index.json was rewritten".to_string());
    }
    for (name, b, n) in [
        ("session directory", &before.session_dir, &now.session_dir),
        ("workspace", &before.workspace, &now.workspace),
    ] {
        for (k, v) in n {
            match b.get(k) {
                None => out.push(format!("{name}: {} was created ({v})", k.display())),
                Some(old) if old != v => out.push(format!("{name}: {} changed", k.display())),
                Some(_) => {}
            }
        }
        for k in b.keys().filter(|k| !n.contains_key(*k)) {
            out.push(format!("{name}: {} was deleted", k.display()));
        }
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// Runs every operation of [`every_operation`], checks each error with `check`
/// and the disk after each one; collects every operation that changed something
/// (judging each against the disk as the previous one left it) and fails once,
/// listing them all.
fn every_operation_fails_untouched(
    env: &Env,
    s: &Session,
    ws: &Workspace,
    check: impl Fn(&str, &Error),
) {
    let mut before = snapshot(env, s);
    let mut failures = Vec::new();
    for (what, op) in every_operation(env, s, ws) {
        check(what, &op());
        let now = snapshot(env, s);
        if let Some(diff) = changes(&before, &now) {
            failures.push(format!("{what}: {diff}"));
            before = now;
        }
    }
    assert!(
        failures.is_empty(),
        "operations on a damaged index changed the disk:\n  {}",
        failures.join("\n  ")
    );
}

type Op<'a> = (&'static str, Box<dyn Fn() -> Error + 'a>);

/// Every operation a damaged index must stop, by name; each returns its error
/// when called (so the caller can check the disk after each one).
fn every_operation<'a>(env: &'a Env, s: &'a Session, ws: &'a Workspace) -> Vec<Op<'a>> {
    vec![
        ("entries", Box::new(|| s.entries().unwrap_err())),
        ("files", Box::new(|| s.files().unwrap_err())),
        (
            "write an existing file",
            Box::new(|| s.write(ws, "a.txt", &b"a three\n"[..], "m4").unwrap_err()),
        ),
        (
            "write a new file in new directories",
            Box::new(|| s.write(ws, "new/dir/x.txt", &b"x\n"[..], "m4").unwrap_err()),
        ),
        (
            "remove",
            Box::new(|| s.remove(ws, "b.txt", "m4").unwrap_err()),
        ),
        (
            "checkpoint",
            Box::new(|| s.checkpoint(ws, "sub/c.txt", "m4").map(|_| ()).unwrap_err()),
        ),
        ("undo", Box::new(|| s.undo(plain()).unwrap_err())),
        ("undo --force", Box::new(|| s.undo(forced()).unwrap_err())),
        ("undo --dry-run", Box::new(|| s.undo(dry()).unwrap_err())),
        (
            "revert",
            Box::new(|| s.revert(ws, "a.txt", plain()).unwrap_err()),
        ),
        (
            "revert --force",
            Box::new(|| s.revert(ws, "a.txt", forced()).unwrap_err()),
        ),
        ("rewind", Box::new(|| s.rewind("m1", plain()).unwrap_err())),
        (
            "rewind --force",
            Box::new(|| s.rewind("m1", forced()).unwrap_err()),
        ),
        (
            "reopen with session()",
            Box::new(|| env.store().session(s.id()).map(|_| ()).unwrap_err()),
        ),
        (
            "reopen with open_session()",
            Box::new(|| env.store().open_session(s.id()).map(|_| ()).unwrap_err()),
        ),
    ]
}

fn assert_corrupt_index(what: &str, err: &Error, s: &Session) {
    match err {
        Error::CorruptIndex { session, path, .. } => {
            assert_eq!(session, s.id(), "{what}: the session named");
            assert_eq!(path, &index_path(s), "{what}: the path named");
            let msg = err.to_string();
            assert!(
                msg.contains(s.id()) && msg.contains("index.json"),
                "{what}: {msg}"
            );
        }
        other => panic!("{what}: expected CorruptIndex, got {other:?}"),
    }
}

/// Damages the index with `bytes` and checks every operation refuses with
/// CorruptIndex and touches nothing.
fn corrupt_with(id: &str, damage: impl FnOnce(&[u8]) -> Vec<u8>) {
    let (env, s, ws) = with_changes(id);
    let good = read(index_path(&s));
    fs::write(index_path(&s), damage(&good)).unwrap();
    every_operation_fails_untouched(&env, &s, &ws, |what, err| {
        assert_corrupt_index(what, err, &s)
    });
    let before = snapshot(&env, &s);
    // The store still lists the session, with the problem, and changes nothing.
    let listed = env.store().sessions().unwrap();
    let me = listed.iter().find(|x| x.id == id).expect("listed");
    assert!(me.problem.is_some(), "{me:?}");
    assert_unchanged("sessions()", &before, &env, &s);
    // Control: with the good index back, everything works again.
    fs::write(index_path(&s), &good).unwrap();
    assert_eq!(s.entries().unwrap().len(), 3);
}

#[test]
fn a_damaged_journal_line_stops_everything_and_is_left_alone() {
    type Damage = fn(&mut Vec<String>);
    let damages: [(&str, Damage); 3] = [
        ("garbled", |lines| lines[1] = "{\"n\": oops".into()),
        ("a-line-missing", |lines| drop(lines.remove(1))),
        ("climbing", |lines| {
            let bad = lines[2].replace("\"path\":\"b.txt\"", "\"path\":\"../../etc/passwd\"");
            assert_ne!(bad, lines[2]);
            lines[2] = bad;
        }),
    ];
    for (id, damage) in damages {
        let (env, s, ws) = with_journal(id);
        let good = fs::read_to_string(journal_path(&s)).unwrap();
        let mut lines: Vec<String> = good.lines().map(str::to_owned).collect();
        damage(&mut lines);
        fs::write(journal_path(&s), lines.join("\n") + "\n").unwrap();
        every_operation_fails_untouched(&env, &s, &ws, |what, err| match err {
            Error::CorruptIndex { session, path, .. } => {
                assert_eq!(session, s.id(), "{id}: {what}: the session named");
                assert_eq!(path, &journal_path(&s), "{id}: {what}: the path named");
                assert!(
                    err.to_string().contains("journal.jsonl"),
                    "{id}: {what}: {err}"
                );
            }
            other => panic!("{id}: {what}: expected CorruptIndex, got {other:?}"),
        });
        // Control: with the good journal back, everything works again.
        fs::write(journal_path(&s), &good).unwrap();
        assert_eq!(s.entries().unwrap().len(), 5, "{id}");
    }
}

#[test]
fn a_torn_last_journal_line_is_a_change_that_never_happened() {
    let (env, s, ws) = with_journal("torn");
    let entries = s.entries().unwrap();
    let good = read(journal_path(&s));
    // A writer died part way through its line (never acknowledged).
    let mut torn = good.clone();
    torn.extend_from_slice(br#"{"n":7,"ops":[{"entry":{"seq":6,"mess"#);
    fs::write(journal_path(&s), &torn).unwrap();
    let other = env.store().open_session(s.id()).unwrap();
    assert_eq!(other.entries().unwrap(), entries);
    assert_eq!(read(journal_path(&s)), torn, "a reader cut the line off");
    // The next change cuts it off and appends a whole line after the last one.
    other.write(&ws, "a.txt", &b"a four\n"[..], "m6").unwrap();
    let now = read(journal_path(&s));
    assert!(now.starts_with(&good) && now.ends_with(b"\n"));
    for line in String::from_utf8(now).unwrap().lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
    assert_eq!(s.entries().unwrap().len(), entries.len() + 1);
    for _ in 0..6 {
        s.undo(plain()).unwrap();
    }
    assert_eq!(read(env.path("a.txt")), b"a one\n");
}

#[test]
fn a_garbage_index_stops_everything_and_is_left_alone() {
    corrupt_with("garbage", |_| {
        b"\x00\xffthis is not json at all {{{".to_vec()
    });
}

#[test]
fn a_truncated_index_stops_everything_and_is_left_alone() {
    corrupt_with("truncated", |good| good[..good.len() / 2].to_vec());
}

#[test]
fn an_empty_index_stops_everything_and_is_left_alone() {
    corrupt_with("empty", |_| Vec::new());
}

#[test]
fn an_index_of_the_wrong_shape_stops_everything() {
    corrupt_with("wrong-shape", |_| b"[]".to_vec());
    corrupt_with("no-entries", |_| br#"{"format": 1}"#.to_vec());
}

/// The index as JSON, changed by `edit`, written back.
fn edit_index(good: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(good).unwrap();
    edit(&mut v);
    serde_json::to_vec_pretty(&v).unwrap()
}

#[test]
fn an_entry_path_that_climbs_out_is_corrupt() {
    corrupt_with("climbing-path", |good| {
        edit_index(good, |v| v["entries"][0]["path"] = "../../etc/x".into())
    });
    corrupt_with("absolute-path", |good| {
        edit_index(good, |v| v["entries"][0]["path"] = "/etc/x".into())
    });
}

#[test]
fn an_entry_hash_that_is_not_a_hash_is_corrupt() {
    corrupt_with("not-a-hash", |good| {
        edit_index(good, |v| {
            assert_eq!(v["entries"][0]["before"]["exists"], true);
            v["entries"][0]["before"]["sha256"] = "../../../../etc/passwd".into();
        })
    });
    corrupt_with("short-hash", |good| {
        edit_index(good, |v| {
            v["entries"][1]["before"]["sha256"] = "abc123".into()
        })
    });
}

#[test]
fn a_newer_format_stops_everything_and_is_left_alone() {
    let (env, s, ws) = with_changes("newer");
    let good = read(index_path(&s));
    let newer = edit_index(&good, |v| {
        assert_eq!(v["format"], turnback_store::FORMAT_VERSION);
        v["format"] = (turnback_store::FORMAT_VERSION + 1).into();
        v["something_new"] = "from the future".into();
    });
    fs::write(index_path(&s), &newer).unwrap();
    every_operation_fails_untouched(&env, &s, &ws, |what, err| match err {
        Error::NewerFormat {
            session,
            path,
            found,
            supported,
        } => {
            assert_eq!(session, s.id(), "{what}");
            assert_eq!(path, &index_path(&s), "{what}");
            let v = turnback_store::FORMAT_VERSION;
            assert_eq!((*found, *supported), (v + 1, v), "{what}");
        }
        other => panic!("{what}: expected NewerFormat, got {other:?}"),
    });
    assert_eq!(read(index_path(&s)), newer);
}

// ---------------------------------------------------------------------------
// Missing or damaged backups.
// ---------------------------------------------------------------------------

fn blob_of(s: &Session, seq_index: usize) -> (String, PathBuf) {
    let e = &s.entries().unwrap()[seq_index];
    let hash = e.before.sha256.clone().expect("a backed-up file");
    let path = s.dir().join("blobs").join(&hash);
    assert!(path.is_file(), "{}", path.display());
    (hash, path)
}

type Revert<'a> = (
    String,
    Box<dyn Fn() -> turnback_store::Result<RevertReport> + 'a>,
);

/// The reverts that reach the newest change, to `path` by `message`: undo and
/// revert of `path`, plain and forced, and rewind of `message`.
fn reverts_of_newest<'a>(
    s: &'a Session,
    ws: &'a Workspace,
    path: &'a str,
    message: &'a str,
) -> Vec<Revert<'a>> {
    vec![
        ("undo".into(), Box::new(move || s.undo(plain()))),
        ("undo --force".into(), Box::new(move || s.undo(forced()))),
        (
            "revert".into(),
            Box::new(move || s.revert(ws, path, plain())),
        ),
        (
            "revert --force".into(),
            Box::new(move || s.revert(ws, path, forced())),
        ),
        (
            format!("rewind {message}"),
            Box::new(move || s.rewind(message, plain())),
        ),
    ]
}

/// Runs each revert in turn and checks it fails with the error `check` accepts
/// and leaves the index, the backups, the entries and the workspace alone.
/// The first revert to read a damaged backup moves it aside (kept whole, never
/// deleted) so that the next backup of the same bytes writes it again: checks
/// that `first` fails with `BlobCorrupt` having done that and nothing else
/// (the workspace, the index and the entries as they were). The attempts after
/// it then change nothing at all.
fn first_attempt_moves_the_damaged_backup_aside(
    env: &Env,
    s: &Session,
    blob: &Path,
    first: impl FnOnce() -> turnback_store::Result<RevertReport>,
) {
    let damaged = read(blob);
    let entries = s.entries().unwrap();
    let (workspace, index) = (tree_digest(env.ws.path()), fs::read(index_path(s)).ok());
    match first() {
        Err(Error::BlobCorrupt {
            moved_to: Some(aside),
            ..
        }) => {
            assert_eq!(read(&aside), damaged, "kept aside as it was");
            assert!(aside.starts_with(s.dir().join("blobs")));
        }
        other => panic!("expected BlobCorrupt with the blob moved aside, got {other:?}"),
    }
    assert!(
        !blob.exists(),
        "the damaged blob is still trusted under its name"
    );
    assert_eq!(
        tree_digest(env.ws.path()),
        workspace,
        "the workspace changed"
    );
    assert_eq!(fs::read(index_path(s)).ok(), index, "index.json changed");
    assert_eq!(s.entries().unwrap(), entries, "entries changed");
    assert!(stray_temps(env.ws.path()).is_empty(), "stray temp");
}

fn each_fails_untouched(
    env: &Env,
    s: &Session,
    reverts: Vec<Revert<'_>>,
    check: impl Fn(&str, Error),
) {
    let entries = s.entries().unwrap();
    let before = snapshot(env, s);
    for (what, revert) in reverts {
        match revert() {
            Ok(r) => panic!("{what}: expected an error, got {r:?}"),
            Err(e) => check(&what, e),
        }
        assert_unchanged(&what, &before, env, s);
        assert_eq!(s.entries().unwrap(), entries, "{what}: entries changed");
        assert!(stray_temps(env.ws.path()).is_empty(), "{what}: stray temp");
    }
}

fn expect_blob_missing<'a>(
    s: &'a Session,
    path: &'a str,
    hash: &'a str,
) -> impl Fn(&str, Error) + 'a {
    move |what, err| match err {
        Error::BlobMissing {
            session,
            path: p,
            hash: h,
        } => {
            assert_eq!(session, s.id(), "{what}");
            assert_eq!(p, path, "{what}");
            assert_eq!(h, hash, "{what}");
        }
        other => panic!("{what}: expected BlobMissing, got {other:?}"),
    }
}

fn expect_blob_corrupt<'a>(
    s: &'a Session,
    path: &'a str,
    hash: &'a str,
) -> impl Fn(&str, Error) + 'a {
    move |what, err| match err {
        Error::BlobCorrupt {
            session,
            path: p,
            hash: h,
            actual,
            moved_to,
        } => {
            assert_eq!(session, s.id(), "{what}");
            assert_eq!(p, path, "{what}");
            assert_eq!(h, hash, "{what}");
            assert_ne!(actual, hash, "{what}");
            assert!(
                moved_to.is_some_and(|m| m.is_file()),
                "{what}: not kept aside"
            );
        }
        other => panic!("{what}: expected BlobCorrupt, got {other:?}"),
    }
}

#[test]
fn a_missing_backup_stops_the_undo_and_touches_nothing() {
    let (env, s, ws) = with_changes("blob-missing");
    // Make b.txt the newest change, so that undo reaches it.
    s.write(&ws, "b.txt", &b"b three\n"[..], "m4").unwrap();
    let (hash, blob) = blob_of(&s, 3);
    fs::remove_file(&blob).unwrap();
    let reverts = reverts_of_newest(&s, &ws, "b.txt", "m4");
    each_fails_untouched(&env, &s, reverts, expect_blob_missing(&s, "b.txt", &hash));
    assert_eq!(read_text(env.path("b.txt")), "b three\n");
}

#[test]
fn a_missing_backup_stops_a_whole_rewind_before_any_file_is_touched() {
    let (env, s, _ws) = with_changes("blob-missing-rewind");
    // Rewinding m2 restores sub/c.txt (a delete) and b.txt (from this backup).
    let (hash, blob) = blob_of(&s, 1);
    fs::remove_file(&blob).unwrap();
    let reverts: Vec<Revert> = vec![
        ("rewind m2".into(), Box::new(|| s.rewind("m2", plain()))),
        (
            "rewind m2 --force".into(),
            Box::new(|| s.rewind("m2", forced())),
        ),
        (
            "rewind m1 --force".into(),
            Box::new(|| s.rewind("m1", forced())),
        ),
    ];
    each_fails_untouched(&env, &s, reverts, expect_blob_missing(&s, "b.txt", &hash));
    assert_eq!(read_text(env.path("sub/c.txt")), "c\n");
    assert_eq!(read_text(env.path("a.txt")), "a two\n");
}

#[test]
fn a_corrupted_backup_stops_the_undo_and_touches_nothing() {
    let (env, s, ws) = with_changes("blob-corrupt");
    s.write(&ws, "b.txt", &b"b three\n"[..], "m4").unwrap();
    let (hash, blob) = blob_of(&s, 3);
    let good = read(&blob);
    assert_eq!(good, b"b two\n");
    // Same size, different bytes: only the hash can tell.
    fs::write(&blob, b"B TWO\n").unwrap();
    first_attempt_moves_the_damaged_backup_aside(&env, &s, &blob, || s.undo(plain()));
    let reverts = reverts_of_newest(&s, &ws, "b.txt", "m4");
    each_fails_untouched(&env, &s, reverts, expect_blob_corrupt(&s, "b.txt", &hash));
    assert_eq!(read_text(env.path("b.txt")), "b three\n");
    // Control: with the backup repaired the undo goes through.
    fs::write(&blob, &good).unwrap();
    s.undo(plain()).unwrap();
    assert_eq!(read_text(env.path("b.txt")), "b two\n");
}

/// A compressed backup (format 5) that no longer decodes, cut short or with
/// bytes changed, is `BlobCorrupt` naming it, like a raw one: moved aside,
/// the workspace and the index untouched; a diff refuses it too.
#[test]
fn a_damaged_compressed_backup_is_corrupt_and_touches_nothing() {
    let old: String = (0..400)
        .map(|i| format!("line {i} of a source file, which compresses well\n"))
        .collect();
    for (case, damage) in [
        (
            "cut",
            &(|b: &mut Vec<u8>| b.truncate(b.len() - 8)) as &dyn Fn(&mut Vec<u8>),
        ),
        ("flipped", &|b: &mut Vec<u8>| {
            let at = b.len() / 2;
            b[at] ^= 0x55;
        }),
    ] {
        let (env, s, ws) = Env::with_session(&format!("blob-packed-{case}"));
        fs::write(env.path("big.txt"), &old).unwrap();
        s.write(&ws, "big.txt", &b"new\n"[..], "m1").unwrap();
        let (hash, blob) = blob_of(&s, 0);
        let good = read(&blob);
        assert!(
            good.starts_with(b"\x5b\x2a\x4d\x18") && good.len() < old.len() / 4,
            "{case}: the backup is not compressed ({} bytes)",
            good.len()
        );
        let mut bad = good.clone();
        damage(&mut bad);
        fs::write(&blob, &bad).unwrap();
        match s.diff(None) {
            Err(Error::BlobCorrupt { hash: h, .. }) => assert_eq!(h, hash, "{case}"),
            other => panic!("{case}: diff of a damaged backup: {other:?}"),
        }
        if blob.exists() {
            first_attempt_moves_the_damaged_backup_aside(&env, &s, &blob, || s.undo(plain()));
        }
        let reverts = reverts_of_newest(&s, &ws, "big.txt", "m1");
        each_fails_untouched(&env, &s, reverts, expect_blob_corrupt(&s, "big.txt", &hash));
        assert_eq!(read_text(env.path("big.txt")), "new\n", "{case}");
        // Control: with the backup repaired the undo goes through.
        fs::write(&blob, &good).unwrap();
        s.undo(plain()).unwrap();
        assert_eq!(read_text(env.path("big.txt")), old, "{case}");
    }
}

/// A backup emptied or cut short (what a disk that lost its last writes
/// leaves) is corrupt when read for a diff, not a diff against what is left:
/// `diff` and `backup_contents` verify what they read, as an undo does.
#[test]
fn an_emptied_backup_is_corrupt_for_a_diff_too() {
    for (case, left) in [("emptied", 0), ("cut", 3)] {
        let (_env, s, _ws) = with_changes(&format!("blob-{case}"));
        let (hash, blob) = blob_of(&s, 1);
        let good = read(&blob);
        fs::write(&blob, &good[..left]).unwrap();
        match s.diff(None) {
            Err(Error::BlobCorrupt { hash: h, .. }) => assert_eq!(h, hash, "{case}"),
            other => panic!("{case}: diff of a damaged backup: {other:?}"),
        }
        assert!(!blob.exists(), "{case}: the damaged backup is moved aside");
        let e = &s.entries().unwrap()[1];
        let r = s.backup_contents(&e.path, &e.before);
        assert!(matches!(r, Err(Error::BlobCorrupt { .. })), "{case}: {r:?}");
        // Control: repaired, both read it.
        fs::write(&blob, &good).unwrap();
        assert_eq!(s.backup_contents(&e.path, &e.before).unwrap(), Some(good));
    }
}

#[test]
fn a_corrupted_backup_in_a_subdirectory_leaves_no_temporary_there() {
    let (env, s, ws) = Env::with_session("blob-corrupt-sub");
    fs::create_dir_all(env.path("deep/er")).unwrap();
    fs::write(env.path("deep/er/f.txt"), "old\n").unwrap();
    s.write(&ws, "deep/er/f.txt", &b"new contents\n"[..], "m1")
        .unwrap();
    let (_, blob) = blob_of(&s, 0);
    fs::write(&blob, b"OLD\n").unwrap();
    first_attempt_moves_the_damaged_backup_aside(&env, &s, &blob, || s.undo(forced()));
    let before = snapshot(&env, &s);
    let r = s.undo(forced());
    assert!(matches!(r, Err(Error::BlobCorrupt { .. })), "{r:?}");
    assert_unchanged("undo", &before, &env, &s);
    assert!(stray_temps(env.ws.path()).is_empty());
}

/// A rewind is checked as a whole before anything is touched (docs/FORMAT.md,
/// "Reverts": "every file is checked before any is touched"; lib docs: "a missing or damaged
/// backup ... nothing is overwritten or deleted"): a damaged backup of one file
/// must not leave the rewind half done, with the other files already restored.
#[test]
fn a_rewind_with_one_corrupted_backup_touches_no_file() {
    let (env, s, _ws) = with_changes("rewind-corrupt");
    // Newest first: sub/c.txt (delete) and b.txt are restored before a.txt (m1),
    // so damage a.txt's backup.
    let (hash, blob) = blob_of(&s, 0);
    fs::write(&blob, b"A ONE\n").unwrap();
    first_attempt_moves_the_damaged_backup_aside(&env, &s, &blob, || s.rewind("m1", plain()));
    let reverts: Vec<Revert> = vec![("rewind m1".into(), Box::new(|| s.rewind("m1", plain())))];
    each_fails_untouched(&env, &s, reverts, expect_blob_corrupt(&s, "a.txt", &hash));
}

// ---------------------------------------------------------------------------
// Session ids.
// ---------------------------------------------------------------------------

#[test]
fn a_bad_session_id_is_refused_and_creates_nothing() {
    let home = tempfile::tempdir().unwrap();
    // A sibling that a climbing id would reach.
    let store = Store::new(home.path().join("home"));
    fs::create_dir(store.home()).unwrap();
    let long = "x".repeat(129);
    let bad = [
        "a/b",
        "..",
        ".",
        ".x",
        "",
        "../escape",
        "a/../b",
        "/abs",
        "a b",
        "a\0b",
        "é",
        long.as_str(),
    ];
    let before = tree_digest(home.path());
    for id in bad {
        for (op, r) in [
            ("session", store.session(id).map(|_| ())),
            ("open_session", store.open_session(id).map(|_| ())),
        ] {
            match r {
                Err(Error::InvalidSessionId { id: got, .. }) => assert_eq!(got, id, "{op}"),
                other => panic!("{op}({id:?}): expected InvalidSessionId, got {other:?}"),
            }
            assert_eq!(
                tree_digest(home.path()),
                before,
                "{op}({id:?}) created something"
            );
        }
        match turnback_store::validate_session_id(id) {
            Err(Error::InvalidSessionId { id: got, .. }) => assert_eq!(got, id),
            other => panic!("validate_session_id({id:?}): {other:?}"),
        }
    }
    // Control: a good id is accepted right beside them, and its session is
    // on disk from its first change (not before: a failed call leaves nothing).
    let s = store.session("ok.id_1-2").unwrap();
    assert!(!store.home().join("sessions/ok.id_1-2").exists());
    let wsdir = tempfile::tempdir().unwrap();
    let ws = turnback_store::Workspace::open(wsdir.path()).unwrap();
    s.write(&ws, "f", &b"x"[..], "m").unwrap();
    assert!(store.home().join("sessions/ok.id_1-2").is_dir());
}

#[test]
fn opening_a_missing_session_is_not_found_and_creates_nothing() {
    let env = Env::new();
    let store = env.store();
    let before = tree_digest(env.home.path());
    match store.open_session("never-was") {
        Err(Error::SessionNotFound { session, home }) => {
            assert_eq!(session, "never-was");
            assert_eq!(home, env.home.path());
        }
        other => panic!("expected SessionNotFound, got {other:?}"),
    }
    assert_eq!(tree_digest(env.home.path()), before);
    // Also with other sessions present.
    env.session("exists");
    let before = tree_digest(env.home.path());
    assert!(matches!(
        store.open_session("never-was"),
        Err(Error::SessionNotFound { .. })
    ));
    assert_eq!(tree_digest(env.home.path()), before);
    assert!(!Path::new(&env.home.path().join("sessions/never-was")).exists());
}
