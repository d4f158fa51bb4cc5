//! The catalogue of bad input: one test per item of the table in
//! `docs/RELIABILITY.md`, section 6 ("Nothing lost on bad input"), each named
//! after it (`bad_input_*`).
//!
//! Every test checks two things: the error is the documented [`Error`] variant,
//! naming the file or session concerned; and nothing is lost: the user's files,
//! `index.json` (byte for byte) and every backup are as they were, judged by
//! [`tree_digest`] of the workspace and the whole store home. Other modules
//! (`corrupt`, `hostile`, `behaviour`) cover several of these inputs in more
//! depth; this is the one place with exactly one test per input.
//!
//! The per-file lock is taken before a file is examined, and lock files are never
//! deleted (docs/FORMAT.md), so a refused path may leave a new, empty-of-meaning
//! file under `<home>/locks/`. That is the only change to the home the
//! comparison allows; everything that existed must be byte-identical.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use turnback_store::{ConflictReason, Error, FileStatus, Session, Store, Workspace};

use crate::util::{Env, forced, names_under, plain, read, sha256_hex, stray_temps, tree_digest};

// ---------------------------------------------------------------------------
// Nothing lost: what a failed operation must leave as it was.
// ---------------------------------------------------------------------------

/// The trees a refused operation must leave alone, each as its digest, and the
/// raw bytes of every file in the session directory (the digest shows contents
/// lossily as text; the index and the backups are compared byte for byte).
struct Frozen {
    trees: Vec<(String, PathBuf, BTreeMap<PathBuf, String>)>,
    home: PathBuf,
    raw: BTreeMap<PathBuf, Vec<u8>>,
}

impl Frozen {
    /// Records `home` (the store) and each of `trees` (name, root) as they are now.
    fn now(home: &Path, trees: &[(&str, &Path)]) -> Frozen {
        let mut all = vec![("store home".to_string(), home.to_owned(), tree_digest(home))];
        all.extend(
            trees
                .iter()
                .map(|(n, r)| (n.to_string(), r.to_path_buf(), tree_digest(r))),
        );
        Frozen {
            trees: all,
            home: home.to_owned(),
            raw: raw_files(home),
        }
    }

    /// Panics, naming `what` and every difference, unless nothing changed (new
    /// lock files under `<home>/locks/` aside).
    fn check(&self, what: &str) {
        self.check_but(what, None);
    }

    /// [`Frozen::check`], not counting a new file at `new_ok` (relative to its tree).
    fn check_but(&self, what: &str, new_ok: Option<&Path>) {
        let mut diffs = Vec::new();
        for (name, root, before) in &self.trees {
            let now = tree_digest(root);
            let is_home = root == &self.home;
            for (k, v) in &now {
                match before.get(k) {
                    None if is_home && k.starts_with("locks") => {}
                    None if Some(k.as_path()) == new_ok => {}
                    None => diffs.push(format!("{name}: {} was created ({v:.80})", k.display())),
                    Some(old) if old != v => diffs.push(format!("{name}: {} changed", k.display())),
                    Some(_) => {}
                }
            }
            for k in before.keys().filter(|k| !now.contains_key(*k)) {
                diffs.push(format!("{name}: {} was deleted", k.display()));
            }
        }
        let raw = raw_files(&self.home);
        for (k, bytes) in &self.raw {
            if raw.get(k) != Some(bytes) {
                diffs.push(format!("store home: the bytes of {} changed", k.display()));
            }
        }
        assert!(
            diffs.is_empty(),
            "{what} lost or changed something:\n  {}",
            diffs.join("\n  ")
        );
    }
}

/// The bytes of every `index.json`, journal and backup under `home`.
fn raw_files(home: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    names_under(home)
        .into_iter()
        .filter(|rel| {
            rel.ends_with("index.json")
                || rel.ends_with("journal.jsonl")
                || rel.parent().is_some_and(|p| p.ends_with("blobs"))
        })
        .filter_map(|rel| fs::read(home.join(&rel)).ok().map(|b| (rel, b)))
        .collect()
}

fn index_path(s: &Session) -> PathBuf {
    s.dir().join("index.json")
}

/// Fails unless `err`'s message mentions every one of `names`.
fn names_all(err: &Error, names: &[&str]) {
    let msg = err.to_string();
    for n in names {
        assert!(msg.contains(n), "the message does not name {n:?}: {msg}");
    }
}

/// One attempt at an operation, by name, returning its error (`None` if it
/// succeeded).
type Attempt<'a> = (String, Box<dyn Fn() -> Option<Error> + 'a>);

fn attempt<'a>(what: impl Into<String>, f: impl Fn() -> Option<Error> + 'a) -> Attempt<'a> {
    (what.into(), Box::new(f))
}

/// Runs each attempt in turn: each must fail with an error `check` accepts (and
/// whose message names the file or session) and leave everything `frozen` as it
/// was, judged right after that attempt.
fn each_refused(frozen: &Frozen, attempts: Vec<Attempt<'_>>, check: impl Fn(&str, &Error)) {
    for (what, run) in attempts {
        let err = run().unwrap_or_else(|| panic!("{what} was accepted"));
        check(&what, &err);
        frozen.check(&what);
    }
}

/// A session with two changes: `a.txt` changed (its old contents a backup, the
/// newest change) and `new.txt` created before it.
fn with_changes(id: &str) -> (Env, Session, Workspace) {
    let (env, s, ws) = Env::with_session(id);
    fs::write(env.path("a.txt"), "a one\n").unwrap();
    s.write(&ws, "new.txt", &b"created\n"[..], "m1").unwrap();
    s.write(&ws, "a.txt", &b"a two\n"[..], "m2").unwrap();
    assert_eq!(s.entries().unwrap().len(), 2);
    (env, s, ws)
}

/// Every kind of operation on a session.
fn every_operation<'a>(env: &'a Env, s: &'a Session, ws: &'a Workspace) -> Vec<Attempt<'a>> {
    vec![
        attempt("entries", || s.entries().err()),
        attempt("write", || {
            s.write(ws, "a.txt", &b"a three\n"[..], "m3").err()
        }),
        attempt("remove", || s.remove(ws, "a.txt", "m3").err()),
        attempt("checkpoint", || s.checkpoint(ws, "a.txt", "m3").err()),
        attempt("undo", || s.undo(plain()).err()),
        attempt("undo --force", || s.undo(forced()).err()),
        attempt("revert --force", || s.revert(ws, "a.txt", forced()).err()),
        attempt("rewind --force", || s.rewind("m1", forced()).err()),
        attempt("redo --force", || s.redo(forced()).err()),
        attempt("reopen", || env.store().open_session(s.id()).err()),
    ]
}

/// Runs every operation: each must fail with an error `check` accepts and leave
/// the store and the workspace exactly as they were.
fn every_operation_refused(env: &Env, s: &Session, ws: &Workspace, check: impl Fn(&str, &Error)) {
    let frozen = Frozen::now(env.home.path(), &[("workspace", env.ws.path())]);
    each_refused(&frozen, every_operation(env, s, ws), check);
}

// ---------------------------------------------------------------------------
// A corrupt or truncated index.json.
// ---------------------------------------------------------------------------

#[test]
fn bad_input_corrupt_index() {
    for (id, damage) in [
        (
            "garbage",
            (|_: &[u8]| b"\xff\x00{ not json".to_vec()) as fn(&[u8]) -> Vec<u8>,
        ),
        ("truncated", |good| good[..good.len() / 2].to_vec()),
    ] {
        let (env, s, ws) = with_changes(id);
        let good = read(index_path(&s));
        let damaged = damage(&good);
        fs::write(index_path(&s), &damaged).unwrap();
        every_operation_refused(&env, &s, &ws, |what, err| match err {
            Error::CorruptIndex { session, path, .. } => {
                assert_eq!(session, id, "{id}: {what}");
                assert_eq!(path, &index_path(&s), "{id}: {what}");
                names_all(err, &[id, &index_path(&s).display().to_string()]);
            }
            other => panic!("{id}: {what}: expected CorruptIndex, got {other:?}"),
        });
        assert_eq!(
            read(index_path(&s)),
            damaged,
            "{id}: the index was rewritten"
        );
        assert_eq!(fs::read_to_string(env.path("a.txt")).unwrap(), "a two\n");
        // The good index back: every backup is still there to undo with.
        fs::write(index_path(&s), &good).unwrap();
        s.undo(plain()).unwrap();
        assert_eq!(fs::read_to_string(env.path("a.txt")).unwrap(), "a one\n");
    }
}

// ---------------------------------------------------------------------------
// An index from a newer format.
// ---------------------------------------------------------------------------

#[test]
fn bad_input_index_from_a_newer_format() {
    let (env, s, ws) = with_changes("newer");
    let mut v: serde_json::Value = serde_json::from_slice(&read(index_path(&s))).unwrap();
    let current = turnback_store::FORMAT_VERSION;
    assert_eq!(v["format"], current);
    v["format"] = (current + 1).into();
    v["from_the_future"] = "a field this build does not know".into();
    let newer = serde_json::to_vec_pretty(&v).unwrap();
    fs::write(index_path(&s), &newer).unwrap();
    every_operation_refused(&env, &s, &ws, |what, err| match err {
        Error::NewerFormat {
            session,
            path,
            found,
            supported,
        } => {
            assert_eq!(session, "newer", "{what}");
            assert_eq!(path, &index_path(&s), "{what}");
            assert_eq!((*found, *supported), (current + 1, current), "{what}");
            names_all(err, &["newer", &index_path(&s).display().to_string()]);
        }
        other => panic!("{what}: expected NewerFormat, got {other:?}"),
    });
    assert_eq!(read(index_path(&s)), newer);
}

// ---------------------------------------------------------------------------
// A blob that is missing; a blob whose hash does not match.
// ---------------------------------------------------------------------------

/// The backup of `a.txt` (the newest change's "before"): its hash and path.
fn backup_of_a(s: &Session) -> (String, PathBuf) {
    let e = s.entries().unwrap().pop().unwrap();
    assert_eq!(e.path, "a.txt");
    let hash = e.before.sha256.unwrap();
    let path = s.dir().join("blobs").join(&hash);
    assert_eq!(read(&path), b"a one\n");
    (hash, path)
}

/// Every revert that reaches `a.txt`, plain and forced: each must fail.
fn reverts_of_a<'a>(s: &'a Session, ws: &'a Workspace) -> Vec<Attempt<'a>> {
    let mut out = Vec::new();
    for (name, opts) in [("", plain()), (" --force", forced())] {
        out.push(attempt(format!("undo{name}"), move || s.undo(opts).err()));
        out.push(attempt(format!("revert a.txt{name}"), move || {
            s.revert(ws, "a.txt", opts).err()
        }));
        // Two files, new.txt (a delete) first: checked as a whole, neither touched.
        out.push(attempt(format!("rewind m1{name}"), move || {
            s.rewind("m1", opts).err()
        }));
    }
    out
}

#[test]
fn bad_input_missing_blob() {
    let (env, s, ws) = with_changes("blob-missing");
    let (hash, blob) = backup_of_a(&s);
    fs::remove_file(&blob).unwrap();
    let frozen = Frozen::now(env.home.path(), &[("workspace", env.ws.path())]);
    each_refused(&frozen, reverts_of_a(&s, &ws), |what, err| match err {
        Error::BlobMissing {
            session,
            path,
            hash: h,
        } => {
            assert_eq!(
                (session.as_str(), path.as_str()),
                ("blob-missing", "a.txt"),
                "{what}"
            );
            assert_eq!(h, &hash, "{what}");
            names_all(err, &["blob-missing", "a.txt", &hash]);
        }
        other => panic!("{what}: expected BlobMissing, got {other:?}"),
    });
    assert!(
        stray_temps(env.ws.path()).is_empty(),
        "a temporary was left"
    );
    assert_eq!(fs::read_to_string(env.path("a.txt")).unwrap(), "a two\n");
    assert_eq!(
        fs::read_to_string(env.path("new.txt")).unwrap(),
        "created\n"
    );
}

#[test]
fn bad_input_blob_whose_hash_does_not_match() {
    let (env, s, ws) = with_changes("blob-corrupt");
    let (hash, blob) = backup_of_a(&s);
    // The same size, other bytes: only the hash can tell.
    fs::write(&blob, b"A ONE\n").unwrap();
    // The first revert to read it moves it aside, kept as it is, and touches
    // nothing else; from then on nothing at all changes.
    let workspace = tree_digest(env.ws.path());
    let aside = match s.undo(plain()) {
        Err(Error::BlobCorrupt {
            moved_to: Some(aside),
            ..
        }) => aside,
        other => panic!("expected BlobCorrupt, moved aside: {other:?}"),
    };
    assert!(!blob.exists());
    assert_eq!(tree_digest(env.ws.path()), workspace);
    let frozen = Frozen::now(env.home.path(), &[("workspace", env.ws.path())]);
    each_refused(&frozen, reverts_of_a(&s, &ws), |what, err| match err {
        Error::BlobCorrupt {
            session,
            path,
            hash: h,
            actual,
            moved_to,
        } => {
            assert!(
                moved_to.is_some(),
                "{what}: the damaged backup's place not named"
            );
            assert_eq!(
                (session.as_str(), path.as_str()),
                ("blob-corrupt", "a.txt"),
                "{what}"
            );
            assert_eq!(h, &hash, "{what}");
            assert_eq!(actual, &sha256_hex(b"A ONE\n"), "{what}");
            names_all(err, &["blob-corrupt", "a.txt", &hash]);
        }
        other => panic!("{what}: expected BlobCorrupt, got {other:?}"),
    });
    assert!(
        stray_temps(env.ws.path()).is_empty(),
        "a temporary was left"
    );
    assert_eq!(
        read(&aside),
        b"A ONE\n",
        "the damaged backup itself was kept (aside)"
    );
    assert_eq!(fs::read_to_string(env.path("a.txt")).unwrap(), "a two\n");
}

// ---------------------------------------------------------------------------
// A session id with `/` in it.
// ---------------------------------------------------------------------------

#[test]
fn bad_input_session_id_with_a_slash() {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("home");
    fs::create_dir(&home).unwrap();
    // What a climbing id would reach, beside and inside the home.
    fs::create_dir(base.path().join("victim")).unwrap();
    fs::write(base.path().join("victim/index.json"), "not the store's\n").unwrap();
    let store = Store::new(&home);
    let env = Env::new();
    let good = store.session("good").unwrap();
    good.write(&env.workspace(), "f.txt", &b"x\n"[..], "m1")
        .unwrap();

    let frozen = Frozen::now(base.path(), &[]);
    let ids = ["a/b", "../victim", "sessions/../../victim", "/abs", "good/"];
    let mut attempts = Vec::new();
    for id in ids {
        attempts.push(attempt(format!("session({id:?})"), || {
            store.session(id).err()
        }));
        attempts.push(attempt(format!("open_session({id:?})"), || {
            store.open_session(id).err()
        }));
    }
    each_refused(&frozen, attempts, |what, err| match err {
        Error::InvalidSessionId { id, reason } => {
            assert!(what.contains(&format!("({id:?})")), "{what}: names {id:?}");
            assert!(id.contains('/') && !reason.is_empty(), "{what}");
            names_all(err, &[&format!("{id:?}")]);
        }
        other => panic!("{what}: expected InvalidSessionId, got {other:?}"),
    });
}

// ---------------------------------------------------------------------------
// A path outside the workspace.
// ---------------------------------------------------------------------------

#[test]
fn bad_input_path_outside_the_workspace() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("ws");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("inside.txt"), "inside\n").unwrap();
    fs::write(base.path().join("sibling.txt"), "outside\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = Store::new(home.path()).session("outside").unwrap();
    let ws = Workspace::open(&root).unwrap();
    s.write(&ws, "inside.txt", &b"changed\n"[..], "m1").unwrap();
    let real_base = fs::canonicalize(base.path()).unwrap();

    let frozen = Frozen::now(home.path(), &[("the workspace's parent", base.path())]);
    let paths: [PathBuf; 4] = [
        "../sibling.txt".into(),
        "../new.txt".into(),
        "sub/../../sibling.txt".into(),
        real_base.join("sibling.txt"),
    ];
    for p in &paths {
        let (s, ws) = (&s, &ws);
        let attempts = vec![
            attempt("write", move || s.write(ws, p, &b"pwned\n"[..], "m2").err()),
            attempt("remove", move || s.remove(ws, p, "m2").err()),
            attempt("checkpoint", move || s.checkpoint(ws, p, "m2").err()),
            attempt("revert --force", move || s.revert(ws, p, forced()).err()),
        ];
        each_refused(&frozen, attempts, |what, err| match err {
            Error::OutsideWorkspace {
                path,
                workspace,
                via_link,
            } => {
                assert_eq!(path, p, "{what}");
                assert_eq!(workspace, ws.root(), "{what}");
                assert_eq!(via_link, &None, "{what}");
                names_all(
                    err,
                    &[&p.display().to_string(), &ws.root().display().to_string()],
                );
            }
            other => panic!(
                "{what} {}: expected OutsideWorkspace, got {other:?}",
                p.display()
            ),
        });
    }
}

// ---------------------------------------------------------------------------
// A path through a symbolic link.
// ---------------------------------------------------------------------------

/// write, remove and checkpoint of `path`, each of which must fail.
fn changes_of<'a>(s: &'a Session, ws: &'a Workspace, path: &'a str) -> Vec<Attempt<'a>> {
    vec![
        attempt(format!("write {path}"), move || {
            s.write(ws, path, &b"pwned\n"[..], "m9").err()
        }),
        attempt(format!("remove {path}"), move || {
            s.remove(ws, path, "m9").err()
        }),
        attempt(format!("checkpoint {path}"), move || {
            s.checkpoint(ws, path, "m9").err()
        }),
    ]
}

fn is_link(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn bad_input_path_through_a_symlink() {
    // 1. At checkpoint time, a link that leads outside the workspace.
    let (env, s, ws) = with_changes("through-link");
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    symlink(outside.path().join("secret.txt"), env.path("to-secret.txt")).unwrap();
    symlink(outside.path(), env.path("out-dir")).unwrap();
    let frozen = Frozen::now(
        env.home.path(),
        &[("workspace", env.ws.path()), ("outside", outside.path())],
    );
    for (path, link) in [
        ("to-secret.txt", "to-secret.txt"),
        ("out-dir/secret.txt", "out-dir"),
        ("out-dir/new.txt", "out-dir"),
    ] {
        each_refused(&frozen, changes_of(&s, &ws, path), |what, err| match err {
            Error::OutsideWorkspace {
                path: p, via_link, ..
            } => {
                assert_eq!(p, Path::new(path), "{what}");
                assert_eq!(
                    via_link.as_deref(),
                    Some(ws.root().join(link).as_path()),
                    "{what}"
                );
                names_all(err, &[path, "symbolic link"]);
            }
            other => panic!("{what}: expected OutsideWorkspace, got {other:?}"),
        });
    }

    // 2. At restore time, a directory swapped for a link since the change: even
    // a link to a place that holds the files exactly as the session left them.
    fs::create_dir(env.path("d")).unwrap();
    fs::write(env.path("d/f.txt"), "original\n").unwrap();
    s.write(&ws, "d/f.txt", &b"changed\n"[..], "m4").unwrap();
    let away = tempfile::tempdir().unwrap();
    fs::rename(env.path("d"), away.path().join("d")).unwrap();
    let decoy = tempfile::tempdir().unwrap();
    fs::write(decoy.path().join("f.txt"), "changed\n").unwrap();
    symlink(decoy.path(), env.path("d")).unwrap();
    let frozen = Frozen::now(
        env.home.path(),
        &[
            ("workspace", env.ws.path()),
            ("the link's target", decoy.path()),
            ("the real directory, moved away", away.path()),
        ],
    );
    let attempts = vec![
        attempt("undo", || s.undo(plain()).err()),
        attempt("undo --force", || s.undo(forced()).err()),
        attempt("revert d/f.txt --force", || {
            s.revert(&ws, "d/f.txt", forced()).err()
        }),
        attempt("rewind m4 --force", || s.rewind("m4", forced()).err()),
    ];
    each_refused(&frozen, attempts, |what, err| match err {
        Error::UnsafePath {
            path,
            workspace,
            component,
            what: kind,
        } => {
            assert_eq!(
                (path.as_str(), component.as_str()),
                ("d/f.txt", "d"),
                "{what}"
            );
            assert_eq!(workspace, ws.root(), "{what}");
            assert_eq!(*kind, "a symbolic link", "{what}");
            names_all(err, &["d/f.txt", "symbolic link"]);
        }
        other => panic!("{what}: expected UnsafePath, got {other:?}"),
    });
    assert!(is_link(&env.path("d")));
    // The real directory back: the same undo goes through, from the kept backup.
    fs::remove_file(env.path("d")).unwrap();
    fs::rename(away.path().join("d"), env.path("d")).unwrap();
    s.undo(plain()).unwrap();
    assert_eq!(
        fs::read_to_string(env.path("d/f.txt")).unwrap(),
        "original\n"
    );
}

// ---------------------------------------------------------------------------
// A non-regular file.
// ---------------------------------------------------------------------------

/// Runs `f` on another thread; fails if it takes more than 5 s (an open of a
/// fifo for reading would block until a writer came).
fn within_5s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within 5 s"),
    }
}

#[test]
fn bad_input_non_regular_file() {
    let (env, s, ws) = with_changes("non-regular");
    fs::create_dir_all(env.path("dir/inner")).unwrap();
    fs::write(env.path("dir/inner/keep.txt"), "keep\n").unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(env.path("sock")).unwrap();
    let frozen = Frozen::now(env.home.path(), &[("workspace", env.ws.path())]);
    for (path, kind) in [
        ("dir", "directory"),
        ("dir/inner", "directory"),
        ("sock", "socket"),
    ] {
        each_refused(&frozen, changes_of(&s, &ws, path), |what, err| match err {
            Error::NotRegularFile { path: p, kind: k } => {
                assert!(p.ends_with(path), "{what}: names {}", p.display());
                assert_eq!(*k, kind, "{what}");
                names_all(err, &[path, kind]);
            }
            other => panic!("{what}: expected NotRegularFile({kind}), got {other:?}"),
        });
    }

    // A fifo, without blocking (the digest would read it, so names only).
    let fifo = env.path("pipe");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let names = names_under(env.ws.path());
    let home = tree_digest(env.home.path());
    let entries = s.entries().unwrap();
    for op in ["write", "remove", "checkpoint"] {
        let (s2, root) = (s.clone(), env.ws.path().to_owned());
        let err = within_5s(op, move || {
            let ws = Workspace::open(root).unwrap();
            match op {
                "write" => s2.write(&ws, "pipe", &b"x"[..], "m3").err(),
                "remove" => s2.remove(&ws, "pipe", "m3").err(),
                _ => s2.checkpoint(&ws, "pipe", "m3").err(),
            }
        });
        match err {
            Some(Error::NotRegularFile { kind: "fifo", .. }) => {}
            other => panic!("{op} pipe: expected NotRegularFile(fifo), got {other:?}"),
        }
        assert_eq!(names_under(env.ws.path()), names, "{op} pipe");
        let now = tree_digest(env.home.path());
        assert!(
            home.iter().all(|(k, v)| now.get(k) == Some(v)),
            "{op} pipe changed the store"
        );
        assert_eq!(s.entries().unwrap(), entries, "{op} pipe recorded");
    }
}

// ---------------------------------------------------------------------------
// A file that vanished.
// ---------------------------------------------------------------------------

/// The file the session wrote was deleted by hand before the undo. Documented
/// (docs/FORMAT.md, Reverts): a file already at its target counts as done, so a
/// file the session *created* and someone deleted is "already reverted"; a file
/// that existed before is not at its "after" any more, so it is "changed since"
/// and the undo is refused, touching nothing, until forced, which brings it back
/// from the backup that was kept.
#[test]
fn bad_input_file_that_vanished() {
    let (env, s, ws) = with_changes("vanished");
    let blobs_before = tree_digest(&s.dir().join("blobs"));

    // a.txt existed before the session changed it; then it was deleted by hand.
    fs::remove_file(env.path("a.txt")).unwrap();
    let frozen = Frozen::now(env.home.path(), &[("workspace", env.ws.path())]);
    let newest = s.entries().unwrap().pop().unwrap();
    let attempts = vec![
        attempt("undo", || s.undo(plain()).err()),
        attempt("revert a.txt", || s.revert(&ws, "a.txt", plain()).err()),
        attempt("rewind m2", || s.rewind("m2", plain()).err()),
    ];
    each_refused(&frozen, attempts, |what, err| match err {
        Error::Refused { session, conflicts } => {
            assert_eq!(session, "vanished", "{what}");
            assert_eq!(conflicts.len(), 1, "{what}: {conflicts:?}");
            let c = &conflicts[0];
            assert_eq!((c.path.as_str(), c.seq), ("a.txt", newest.seq), "{what}");
            assert_eq!(
                c.reason,
                ConflictReason::ChangedSince { by: None },
                "{what}"
            );
            assert!(err.is_refusal());
            names_all(err, &["vanished", "a.txt", "changed since"]);
        }
        other => panic!("{what}: expected Refused, got {other:?}"),
    });
    assert!(
        !env.path("a.txt").exists(),
        "a refused undo recreated the file"
    );
    // Removing a vanished file: there is nothing to remove, nothing is recorded.
    let err = s.remove(&ws, "a.txt", "m3").unwrap_err();
    match &err {
        Error::FileNotFound { path } => assert_eq!(path, &ws.root().join("a.txt")),
        other => panic!("remove: expected FileNotFound, got {other:?}"),
    }
    names_all(&err, &["a.txt"]);
    frozen.check("remove of the vanished file");
    // Nothing was lost: forced, the undo brings the file back from its backup.
    let r = s.undo(forced()).unwrap();
    assert_eq!(
        r.files[0].status,
        FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
    );
    assert_eq!(fs::read_to_string(env.path("a.txt")).unwrap(), "a one\n");

    // new.txt was created by the session; then it was deleted by hand: the undo
    // finds it already at its target, drops the entry and writes nothing.
    fs::remove_file(env.path("new.txt")).unwrap();
    let ws_before = tree_digest(env.ws.path());
    let r = s.undo(plain()).unwrap();
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.files[0].path, "new.txt");
    assert_eq!(r.files[0].status, FileStatus::AlreadyReverted);
    assert_eq!(
        tree_digest(env.ws.path()),
        ws_before,
        "the workspace changed"
    );
    assert!(s.entries().unwrap().is_empty());
    let blobs_now = tree_digest(&s.dir().join("blobs"));
    assert!(
        blobs_before
            .iter()
            .all(|(k, v)| blobs_now.get(k) == Some(v)),
        "a backup was deleted or changed"
    );
}

// ---------------------------------------------------------------------------
// A workspace root that moved.
// ---------------------------------------------------------------------------

#[test]
fn bad_input_workspace_root_that_moved() {
    let home = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let w = base.path().join("w");
    fs::create_dir(&w).unwrap();
    fs::write(w.join("f.txt"), "before\n").unwrap();
    let s = Store::new(home.path()).session("moved").unwrap();
    let ws = Workspace::open(&w).unwrap();
    s.write(&ws, "f.txt", &b"after\n"[..], "m1").unwrap();
    s.write(&ws, "n.txt", &b"new\n"[..], "m2").unwrap();
    // The project moved away, and another directory took its place holding the
    // files exactly as the session left them: restoring into it would look safe.
    fs::rename(&w, base.path().join("w.moved")).unwrap();
    fs::create_dir(&w).unwrap();
    fs::write(w.join("f.txt"), "after\n").unwrap();
    fs::write(w.join("n.txt"), "new\n").unwrap();

    let frozen = Frozen::now(home.path(), &[("the workspace's parent", base.path())]);
    let attempts = vec![
        attempt("undo", || s.undo(plain()).err()),
        attempt("undo --force", || s.undo(forced()).err()),
        attempt("revert f.txt --force", || {
            s.revert(&ws, "f.txt", forced()).err()
        }),
        attempt("rewind m1 --force", || s.rewind("m1", forced()).err()),
    ];
    each_refused(&frozen, attempts, |what, err| match err {
        Error::WorkspaceMoved { workspace, reason } => {
            assert_eq!(workspace, ws.root(), "{what}");
            assert!(!reason.is_empty());
            names_all(err, &[&ws.root().display().to_string(), "moved"]);
        }
        other => panic!("{what}: expected WorkspaceMoved, got {other:?}"),
    });
    assert_eq!(
        fs::read_to_string(base.path().join("w.moved/f.txt")).unwrap(),
        "after\n"
    );
}

// ---------------------------------------------------------------------------
// A disk that is full.
// ---------------------------------------------------------------------------

/// Set in the child this test starts under `unshare -rm` when it may not mount.
const UNSHARED: &str = "TURNBACK_CATALOGUE_UNSHARED";

/// A tiny tmpfs, unmounted on drop.
struct TinyFs {
    dir: tempfile::TempDir,
}

impl TinyFs {
    fn mount(kib: u64) -> Result<TinyFs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k,mode=0755")])
            .arg("turnback-full")
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(TinyFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

const PAGE: u64 = 4096;

/// Fills the filesystem of `dir` with `dir/filler` until it is full, then gives
/// back `leave` bytes (whole pages). Returns the filler's path.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let chunk = vec![0x5a_u8; 64 * 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::StorageFull => break,
            Err(e) => panic!("filling {}: {e}", dir.display()),
        }
    }
    let full = f.metadata().unwrap().len();
    assert!(
        full >= leave,
        "the filesystem is smaller than {leave} bytes"
    );
    f.set_len(full - leave).unwrap();
    path
}

/// Fails unless `err` is an I/O error of a full disk whose path satisfies `at`.
fn assert_disk_full(what: &str, err: &Error, at: impl Fn(&Path) -> bool) {
    match err {
        Error::Io { path, source, .. } => {
            assert_eq!(source.kind(), io::ErrorKind::StorageFull, "{what}: {err}");
            assert_eq!(source.raw_os_error(), Some(28), "{what}: ENOSPC");
            assert!(at(path), "{what}: names {}", path.display());
            names_all(err, &[&path.display().to_string()]);
        }
        other => panic!("{what}: expected Io(StorageFull), got {other:?}"),
    }
}

/// No `.tmp-*` backup temporary and no `index.json.tmp` in the session.
fn no_store_temps(s: &Session) -> Vec<PathBuf> {
    names_under(s.dir())
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(".tmp-") || n.ends_with(".tmp")
        })
        .collect()
}

/// The store home on a full filesystem: a write whose backup does not fit, an
/// undo whose backup (for redo) does not fit, a write whose journal line does
/// not fit.
/// Returns the temporaries a failure left in the store (checked by the caller
/// once the rest has run, so that one finding does not hide the others).
fn store_home_full(tiny: &Path) -> Vec<PathBuf> {
    let home = tiny.join("home");
    fs::create_dir(&home).unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let s = Store::new(&home).session("full-store").unwrap();
    let ws = Workspace::open(wsdir.path()).unwrap();
    let small = wsdir.path().join("small.txt");
    let big = wsdir.path().join("big.bin");
    // Noise: a backup of it takes its 256 KiB compressed or not.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let big_contents: Vec<u8> = (0..256 * 1024u32)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    fs::write(&small, "small old\n").unwrap();
    let long_message = "m".repeat(6000);
    s.write(&ws, "small.txt", &b"small new\n"[..], &long_message)
        .unwrap();
    s.write(&ws, "small.txt", &b"small old\n"[..], "m2")
        .unwrap();
    s.write(&ws, "big.bin", &big_contents[..], "m3").unwrap();
    assert!(read(index_path(&s)).len() as u64 > PAGE);
    let entries = s.entries().unwrap();

    // Room for small things (a lock's note), none for a 256 KiB backup.
    fill(tiny, 16 * PAGE);
    let frozen = Frozen::now(&home, &[("workspace", wsdir.path())]);
    let blobs = s.dir().join("blobs");

    // 1. A write whose backup of the old contents does not fit.
    let err = s.write(&ws, "big.bin", &b"tiny\n"[..], "m4").unwrap_err();
    assert_disk_full("write (backup)", &err, |p| p.starts_with(&blobs));
    frozen.check("write whose backup does not fit");
    assert_eq!(read(&big), big_contents);
    assert_eq!(s.entries().unwrap(), entries, "an entry was recorded");
    assert_eq!(
        no_store_temps(&s),
        Vec::<PathBuf>::new(),
        "stray temp in the store"
    );
    assert!(
        stray_temps(wsdir.path()).is_empty(),
        "stray temp in the workspace"
    );

    // 2. An undo (a delete of big.bin) whose backup of what it deletes, kept
    // for redo, does not fit.
    let err = s.undo(plain()).unwrap_err();
    assert_disk_full("undo (backup for redo)", &err, |p| p.starts_with(&blobs));
    frozen.check("undo whose backup for redo does not fit");
    assert_eq!(read(&big), big_contents, "the undo deleted the file anyway");
    assert_eq!(s.entries().unwrap(), entries);
    assert_eq!(
        no_store_temps(&s),
        Vec::<PathBuf>::new(),
        "stray temp in the store"
    );

    // 3. A write whose backup fits (one page) but whose journal line does not:
    // its long message id needs more than the page left free. The part of the
    // line that got in is cut off again.
    let filler = fill(tiny, PAGE);
    assert_eq!(filler, tiny.join("filler"));
    let frozen = Frozen::now(&home, &[("workspace", wsdir.path())]);
    let err = s
        .write(
            &ws,
            "small.txt",
            &b"small third\n"[..],
            &"m".repeat(3 * PAGE as usize),
        )
        .unwrap_err();
    assert_disk_full("write (journal)", &err, |p| {
        p == s.dir().join("journal.jsonl")
    });
    frozen.check("write whose journal line does not fit");
    assert_eq!(read(&small), b"small old\n");
    assert_eq!(s.entries().unwrap(), entries, "an entry was recorded");
    assert!(
        stray_temps(wsdir.path()).is_empty(),
        "stray temp in the workspace"
    );
    let left = no_store_temps(&s);

    // Room again: the session works, and every change it recorded undoes.
    fs::remove_file(&filler).unwrap();
    s.write(&ws, "big.bin", &b"tiny\n"[..], "m4").unwrap();
    for _ in 0..4 {
        s.undo(plain()).unwrap();
    }
    assert!(!big.exists());
    assert_eq!(read(&small), b"small old\n");
    assert_eq!(no_store_temps(&s), Vec::<PathBuf>::new());
    left
}

/// The workspace on a full filesystem: a write whose new contents do not fit,
/// an undo whose restored contents do not fit, a rewind of two files of which
/// only the first fits.
fn workspace_full(tiny: &Path) {
    let root = tiny.join("ws");
    fs::create_dir(&root).unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = Store::new(home.path()).session("full-ws").unwrap();
    let ws = Workspace::open(&root).unwrap();
    let f = root.join("f.txt");
    let g = root.join("g.txt");
    let old: Vec<u8> = (0..12 * 1024u32).map(|i| (i % 253) as u8).collect();
    fs::write(&f, &old).unwrap();
    fs::write(&g, "g old\n").unwrap();
    s.write(&ws, "f.txt", &b"v2, small\n"[..], "m1").unwrap();
    let entries = s.entries().unwrap();

    fill(tiny, PAGE);
    let frozen = Frozen::now(home.path(), &[("workspace", &root)]);

    // 1. New contents that do not fit: the file keeps its old contents exactly.
    let big = vec![b'x'; 256 * 1024];
    let err = s.write(&ws, "f.txt", &big[..], "m2").unwrap_err();
    assert_disk_full("write (new contents)", &err, |p| {
        p == ws.root().join("f.txt")
    });
    assert_eq!(read(&f), b"v2, small\n");
    assert!(stray_temps(&root).is_empty(), "stray temp in the workspace");
    assert_eq!(s.entries().unwrap(), entries, "an entry was recorded");
    // The backup of the old contents was made before the new ones failed: an
    // unreferenced blob of exactly those bytes may stay (pruning collects it).
    // Anything else new or changed in the store is a loss.
    let blob = s.dir().join("blobs").join(sha256_hex(b"v2, small\n"));
    if blob.exists() {
        assert_eq!(read(&blob), b"v2, small\n");
        fs::remove_file(&blob).unwrap();
    }
    frozen.check("write whose new contents do not fit");

    // 2. An undo whose restored contents (12 KiB) do not fit.
    let err = s.undo(plain()).unwrap_err();
    assert_disk_full("undo (restored contents)", &err, |p| {
        p == ws.root().join("f.txt")
    });
    assert_eq!(read(&f), b"v2, small\n");
    assert!(stray_temps(&root).is_empty(), "stray temp in the workspace");
    assert_eq!(s.entries().unwrap(), entries);
    frozen.check("undo whose restored contents do not fit");

    // The next operation settles whatever is in flight: still no new entry.
    s.begin_turn("after the disk filled", None).unwrap();
    assert_eq!(s.entries().unwrap(), entries, "an entry was left behind");
    assert_eq!(
        no_store_temps(&s),
        Vec::<PathBuf>::new(),
        "stray temp in the store"
    );

    // 3. A rewind of two files, newest first: g.txt fits (one page), f.txt
    // (12 KiB) does not. The new contents of every file are made (a chunk of
    // up to 64 files at a time) before any file is replaced, so the rewind
    // fails with nothing touched: no file, no entry, no record.
    s.write(&ws, "g.txt", &b"g new\n"[..], "m2").unwrap();
    let entries = s.entries().unwrap();
    let history = s.history().unwrap();
    let err = s.rewind("m1", plain()).unwrap_err();
    assert_disk_full("rewind (second file)", &err, |p| {
        p == ws.root().join("f.txt")
    });
    assert_eq!(read(&g), b"g new\n", "g.txt, made but not put in place");
    assert_eq!(read(&f), b"v2, small\n", "f.txt, which did not fit");
    assert!(stray_temps(&root).is_empty(), "stray temp in the workspace");
    assert_eq!(s.entries().unwrap(), entries, "an entry was taken");
    assert_eq!(s.history().unwrap(), history, "a revert was recorded");

    // 4. Past one chunk an I/O error part way cannot be foreseen: 64 files
    // (one page each to restore, their agent versions empty) are put back,
    // then f.txt's 12 KiB do not fit. What was restored stays restored, the
    // index drops exactly its entries and records it for redo, so the index
    // matches the files and nothing is lost (revert.rs, `apply`).
    let many: Vec<String> = (0..64).map(|i| format!("h{i:02}.txt")).collect();
    fs::remove_file(tiny.join("filler")).unwrap();
    for h in &many {
        fs::write(root.join(h), "h old\n").unwrap();
        s.write(&ws, h, &b""[..], "m3").unwrap();
    }
    let before_rewind = s.entries().unwrap();
    fill(tiny, (64 + 2) * PAGE);
    let err = s.rewind("m1", plain()).unwrap_err();
    assert_disk_full("rewind (second chunk)", &err, |p| {
        p == ws.root().join("f.txt")
    });
    for h in &many {
        assert_eq!(read(root.join(h)), b"h old\n", "{h}, in the first chunk");
    }
    assert_eq!(read(&g), b"g new\n", "g.txt, in the chunk that failed");
    assert_eq!(read(&f), b"v2, small\n", "f.txt, which did not fit");
    assert!(stray_temps(&root).is_empty(), "stray temp in the workspace");
    let left: Vec<String> = s.entries().unwrap().into_iter().map(|e| e.path).collect();
    assert_eq!(
        left,
        ["f.txt", "g.txt"],
        "only the first chunk's entries are taken"
    );
    let record = s
        .history()
        .unwrap()
        .pop()
        .expect("the part done is recorded");
    assert_eq!(record.entries.len(), 64);
    assert_eq!(record.files.len(), 64);
    assert!(record.files.iter().all(|f| f.path.starts_with('h')));

    // Room again: redo puts the 64 changes back, and the rewind goes through.
    fs::remove_file(tiny.join("filler")).unwrap();
    s.redo(plain()).unwrap();
    assert_eq!(s.entries().unwrap(), before_rewind);
    for h in &many {
        assert_eq!(read(root.join(h)), b"", "{h} redone");
    }
    s.rewind("m1", plain()).unwrap();
    assert_eq!(read(&f), old);
    assert_eq!(read(&g), b"g old\n");
    for h in &many {
        assert_eq!(read(root.join(h)), b"h old\n");
    }
    assert!(s.entries().unwrap().is_empty());
}

/// A disk that is full, for real: a 1 MiB tmpfs, filled. Mounting needs
/// privilege; without it the test runs itself again in a user and mount
/// namespace (`unshare -rm`), and fails, saying why, if that is not possible
/// either. It never passes without having filled a disk.
#[test]
fn bad_input_disk_full() {
    let mounted = TinyFs::mount(1024).and_then(|a| TinyFs::mount(1024).map(|b| (a, b)));
    let (store_fs, ws_fs) = match mounted {
        Ok(pair) => pair,
        Err(why) if std::env::var_os(UNSHARED).is_some() => {
            panic!("cannot mount a tmpfs even in a user namespace: {why}")
        }
        Err(why) => return run_unshared(&why),
    };
    let left = store_home_full(store_fs.path());
    workspace_full(ws_fs.path());
    assert!(
        left.is_empty(),
        "a write that failed for a full disk left {left:?} in the session directory \
         (docs/FORMAT.md: index.json.tmp is left only by a crash)"
    );
}

/// This test again, in a new user and mount namespace where it may mount.
fn run_unshared(why: &str) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args(["-r", "-m", "--"])
        .arg(&exe)
        .args(["--exact", "catalogue::bad_input_disk_full", "--nocapture"])
        .env(UNSHARED, "1")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("cannot fill a disk: {why}; and unshare cannot run: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "cannot fill a disk here: {why}; run under `unshare -rm` it failed \
         ({}):\n{stdout}\n{stderr}",
        out.status
    );
}
