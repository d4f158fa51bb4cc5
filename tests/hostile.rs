//! Hostile paths: a directory or a file swapped for a symbolic link after the
//! change, a workspace root replaced, paths that climb out, links that lead out,
//! and things that are not regular files. Each test checks the error variant and
//! that nothing on disk changed (by comparing tree digests before and after).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use turnback_store::{Entry, Error, RevertReport, Session, Store, Workspace};

use crate::util::{self, Env, dry, forced, plain, read_text, tree_digest};

/// Every way to revert `path` (or the change of `message`): undo, revert and
/// rewind, each plain, forced and as a dry run.
fn every_revert(
    s: &Session,
    ws: &Workspace,
    path: &str,
    message: &str,
) -> Vec<(String, turnback_store::Result<RevertReport>)> {
    let mut out = Vec::new();
    for (name, opts) in [("plain", plain()), ("force", forced()), ("dry-run", dry())] {
        out.push((format!("undo ({name})"), s.undo(opts)));
        out.push((format!("revert {path} ({name})"), s.revert(ws, path, opts)));
        out.push((
            format!("rewind {message} ({name})"),
            s.rewind(message, opts),
        ));
    }
    out
}

/// The path a refusal of `what` (one of [`every_revert`]) names: `reverted` for
/// a revert, `newest` (the path of the newest change) for undo and rewind.
fn path_refused<'a>(what: &str, reverted: &'a str, newest: &'a str) -> &'a str {
    if what.starts_with("revert") {
        reverted
    } else {
        newest
    }
}

/// write (of `contents`), remove and checkpoint of `path`, each of which must
/// fail: their errors, by name.
fn every_change(
    s: &Session,
    ws: &Workspace,
    path: impl AsRef<Path>,
    contents: &[u8],
) -> Vec<(&'static str, Error)> {
    let path = path.as_ref();
    vec![
        ("write", s.write(ws, path, contents, "m").unwrap_err()),
        ("remove", s.remove(ws, path, "m").unwrap_err()),
        ("checkpoint", s.checkpoint(ws, path, "m").unwrap_err()),
    ]
}

/// What a refused operation must leave alone: some trees (each named for the
/// failure message, and kept as its digest) and the session's entries.
struct Untouched<'a> {
    s: &'a Session,
    trees: Vec<(&'static str, &'a Path, BTreeMap<PathBuf, String>)>,
    entries: Vec<Entry>,
}

impl<'a> Untouched<'a> {
    /// Records the `trees` (name, root) and the entries of `s` as they are now.
    fn now(s: &'a Session, trees: &[(&'static str, &'a Path)]) -> Self {
        Untouched {
            s,
            trees: trees
                .iter()
                .map(|&(name, root)| (name, root, tree_digest(root)))
                .collect(),
            entries: s.entries().unwrap(),
        }
    }

    /// The digest recorded for the tree called `name`.
    fn digest(&self, name: &str) -> &BTreeMap<PathBuf, String> {
        let (_, _, digest) = self.trees.iter().find(|(n, _, _)| *n == name).unwrap();
        digest
    }

    /// Fails, naming `what`, if a tree or the entries are not as recorded.
    fn check(&self, what: &str) {
        for (name, root, before) in &self.trees {
            assert_eq!(&tree_digest(root), before, "{what}: {name} changed");
        }
        assert_eq!(
            self.s.entries().unwrap(),
            self.entries,
            "{what}: entries changed"
        );
    }
}

/// Runs `f` on another thread and fails the test if it takes more than 5 s (a
/// fifo opened for reading without `O_NONBLOCK` would block forever).
fn within_5s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what} did not return within 5 s (blocked on a fifo?)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// The names in a directory (not following anything, reading no file): safe on a
/// directory that holds a fifo, where `tree_digest` would block.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn is_link(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

fn assert_unsafe_path(
    what: &str,
    r: turnback_store::Result<RevertReport>,
    path: &str,
    component: &str,
) {
    match r {
        Err(Error::UnsafePath {
            path: p,
            component: c,
            what: kind,
            ..
        }) => {
            assert_eq!(p, path, "{what}: the path named");
            assert_eq!(c, component, "{what}: the component named");
            assert_eq!(kind, "a symbolic link", "{what}");
        }
        other => panic!("{what}: expected UnsafePath for {path}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// A directory swapped for a symbolic link after the change.
// ---------------------------------------------------------------------------

/// Writes `d/f.txt` (existing: undo would overwrite) and `d/g.txt` (new: undo
/// would delete) through the session, then moves `d` out of the workspace.
fn change_in_d(env: &Env, s: &Session, ws: &Workspace, away: &Path) {
    fs::create_dir(env.path("d")).unwrap();
    fs::write(env.path("d/f.txt"), "original f\n").unwrap();
    s.write(ws, "d/f.txt", &b"changed f\n"[..], "m1").unwrap();
    s.write(ws, "d/g.txt", &b"created g\n"[..], "m2").unwrap();
    assert_eq!(s.entries().unwrap().len(), 2);
    fs::rename(env.path("d"), away.join("d")).unwrap();
}

#[test]
fn a_directory_swapped_for_a_link_out_of_the_workspace_is_refused() {
    let (env, s, ws) = Env::with_session("swap-out");
    let away = tempfile::tempdir().unwrap();
    change_in_d(&env, &s, &ws, away.path());

    // The outside directory holds files exactly as the session left them, so a
    // store that followed the link would find them "safe" and restore into it.
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("f.txt"), "changed f\n").unwrap();
    fs::write(outside.path().join("g.txt"), "created g\n").unwrap();
    symlink(outside.path(), env.path("d")).unwrap();

    let untouched = Untouched::now(
        &s,
        &[("outside", outside.path()), ("workspace", env.ws.path())],
    );
    for (what, r) in every_revert(&s, &ws, "d/f.txt", "m1") {
        assert_unsafe_path(&what, r, path_refused(&what, "d/f.txt", "d/g.txt"), "d");
        untouched.check(&what);
    }
    assert!(is_link(&env.path("d")));

    // Control: with the real directory back, the same undo goes through.
    fs::remove_file(env.path("d")).unwrap();
    fs::rename(away.path().join("d"), env.path("d")).unwrap();
    s.rewind("m1", plain()).unwrap();
    assert_eq!(read_text(env.path("d/f.txt")), "original f\n");
    assert!(!env.path("d/g.txt").exists());
    assert_eq!(&tree_digest(outside.path()), untouched.digest("outside"));
}

#[test]
fn a_directory_swapped_for_a_link_inside_the_workspace_is_refused_too() {
    let (env, s, ws) = Env::with_session("swap-in");
    let away = tempfile::tempdir().unwrap();
    change_in_d(&env, &s, &ws, away.path());

    // `d -> e`, and `e` is the very directory the change was made in: even then
    // the store refuses to write or delete through a link at restore time.
    fs::rename(away.path().join("d"), env.path("e")).unwrap();
    symlink("e", env.path("d")).unwrap();

    let untouched = Untouched::now(&s, &[("workspace", env.ws.path())]);
    for (what, r) in every_revert(&s, &ws, "d/f.txt", "m1") {
        assert_unsafe_path(&what, r, path_refused(&what, "d/f.txt", "d/g.txt"), "d");
        untouched.check(&what);
    }
    assert_eq!(read_text(env.path("e/f.txt")), "changed f\n");
    assert_eq!(read_text(env.path("e/g.txt")), "created g\n");
}

#[test]
fn a_missing_directory_swapped_for_a_link_cannot_recreate_a_deleted_file_outside() {
    // A remove through the session, then the directory becomes a link out: the
    // undo would recreate the file in the other directory.
    let (env, s, ws) = Env::with_session("swap-rm");
    fs::create_dir(env.path("d")).unwrap();
    fs::write(env.path("d/f.txt"), "keep me\n").unwrap();
    s.remove(&ws, "d/f.txt", "m1").unwrap();
    let away = tempfile::tempdir().unwrap();
    fs::rename(env.path("d"), away.path().join("d")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), env.path("d")).unwrap();

    let untouched = Untouched::now(
        &s,
        &[("outside", outside.path()), ("workspace", env.ws.path())],
    );
    assert_eq!(untouched.entries.len(), 1);
    for (what, r) in every_revert(&s, &ws, "d/f.txt", "m1") {
        assert_unsafe_path(&what, r, "d/f.txt", "d");
        untouched.check(&what);
    }
}

// ---------------------------------------------------------------------------
// The workspace root replaced.
// ---------------------------------------------------------------------------

/// Writes `f.txt` in `<base>/w`, moves `w` to `w.old`, lets `replace` put
/// something at `<base>/w`, then checks every revert says WorkspaceMoved and
/// leaves `<base>` (both directories, and `other`) exactly as it was.
fn root_replaced(id: &str, replace: impl FnOnce(&Path, &Path)) {
    let home = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let w = base.path().join("w");
    fs::create_dir(&w).unwrap();
    fs::write(w.join("f.txt"), "before\n").unwrap();
    let s = Store::new(home.path()).session(id).unwrap();
    let ws = Workspace::open(&w).unwrap();
    s.write(&ws, "f.txt", &b"after\n"[..], "m1").unwrap();
    s.write(&ws, "n.txt", &b"new\n"[..], "m2").unwrap();

    fs::rename(&w, base.path().join("w.old")).unwrap();
    // A directory with the files exactly as the session left them: a store that
    // trusted the path would restore into it.
    let other = base.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("f.txt"), "after\n").unwrap();
    fs::write(other.join("n.txt"), "new\n").unwrap();
    replace(&w, &other);

    let untouched = Untouched::now(&s, &[("something", base.path())]);
    for (what, r) in every_revert(&s, &ws, "f.txt", "m1") {
        match r {
            Err(Error::WorkspaceMoved { workspace, .. }) => {
                assert_eq!(workspace, ws.root(), "{what}")
            }
            other => panic!("{what}: expected WorkspaceMoved, got {other:?}"),
        }
        untouched.check(&what);
    }
    assert_eq!(
        fs::read_to_string(base.path().join("w.old/f.txt")).unwrap(),
        "after\n"
    );
}

#[test]
fn a_root_replaced_by_a_new_directory_is_refused() {
    root_replaced("root-new-dir", |w, _| {
        fs::create_dir(w).unwrap();
        fs::write(w.join("f.txt"), "after\n").unwrap();
        fs::write(w.join("n.txt"), "new\n").unwrap();
    });
}

#[test]
fn a_root_replaced_by_a_link_to_another_directory_is_refused() {
    root_replaced("root-link", |w, other| symlink(other, w).unwrap());
}

#[test]
fn a_root_that_is_gone_is_refused() {
    root_replaced("root-gone", |_, _| {});
}

// ---------------------------------------------------------------------------
// Symbolic links at checkpoint time.
// ---------------------------------------------------------------------------

#[test]
fn a_link_to_a_file_inside_records_and_writes_the_real_file() {
    let (env, s, ws) = Env::with_session("claude-md");
    fs::write(env.path("AGENTS.md"), "v1\n").unwrap();
    symlink("AGENTS.md", env.path("CLAUDE.md")).unwrap();
    symlink(ws.root().join("AGENTS.md"), env.path("ABS.md")).unwrap();

    let e = s.write(&ws, "CLAUDE.md", &b"v2\n"[..], "m1").unwrap();
    assert_eq!(e.path, "AGENTS.md");
    assert_eq!(read_text(env.path("AGENTS.md")), "v2\n");
    assert!(is_link(&env.path("CLAUDE.md")), "the link was replaced");
    assert_eq!(
        fs::read_link(env.path("CLAUDE.md")).unwrap(),
        Path::new("AGENTS.md")
    );

    // An absolute link that points inside is resolved beneath the root.
    let e = s.write(&ws, "ABS.md", &b"v3\n"[..], "m2").unwrap();
    assert_eq!(e.path, "AGENTS.md");
    assert_eq!(read_text(env.path("AGENTS.md")), "v3\n");
    assert!(
        is_link(&env.path("ABS.md")),
        "the absolute link was replaced"
    );
    assert_eq!(
        fs::read_link(env.path("ABS.md")).unwrap(),
        ws.root().join("AGENTS.md")
    );

    // Undo restores the real file and leaves both links as they are.
    s.undo(plain()).unwrap();
    assert_eq!(read_text(env.path("AGENTS.md")), "v2\n");
    // Revert by the link's name finds the entry recorded under the real name.
    let r = s.revert(&ws, "CLAUDE.md", plain()).unwrap();
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.files[0].path, "AGENTS.md");
    assert_eq!(read_text(env.path("AGENTS.md")), "v1\n");
    assert!(is_link(&env.path("CLAUDE.md")));
    assert!(is_link(&env.path("ABS.md")));
    assert_eq!(
        names(env.ws.path()),
        ["ABS.md", "AGENTS.md", "CLAUDE.md"],
        "something was created or deleted"
    );
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn a_link_to_a_directory_inside_records_the_real_path() {
    let (env, s, ws) = Env::with_session("linked-dir");
    fs::create_dir(env.path("real")).unwrap();
    fs::write(env.path("real/f.txt"), "v1\n").unwrap();
    symlink("real", env.path("linked")).unwrap();
    let e = s.write(&ws, "linked/f.txt", &b"v2\n"[..], "m1").unwrap();
    assert_eq!(e.path, "real/f.txt");
    assert_eq!(read_text(env.path("real/f.txt")), "v2\n");
    assert!(is_link(&env.path("linked")));
    s.undo(plain()).unwrap();
    assert_eq!(read_text(env.path("real/f.txt")), "v1\n");
    assert!(is_link(&env.path("linked")));
}

#[test]
fn a_link_to_a_file_outside_is_refused_and_records_nothing() {
    let (env, s, ws) = Env::with_session("link-out");
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    fs::write(&secret, "outside\n").unwrap();
    // One absolute link, one relative link that climbs out with `..`.
    symlink(&secret, env.path("abs.md")).unwrap();
    let up = PathBuf::from("..")
        .join(outside.path().file_name().unwrap())
        .join("secret.txt");
    symlink(&up, env.path("rel.md")).unwrap();
    assert_eq!(
        fs::canonicalize(env.path("rel.md")).unwrap(),
        fs::canonicalize(&secret).unwrap(),
        "the relative link must really point at the outside file"
    );

    let untouched = Untouched::now(
        &s,
        &[("outside", outside.path()), ("workspace", env.ws.path())],
    );
    assert!(untouched.entries.is_empty());
    for link in ["abs.md", "rel.md"] {
        for (op, err) in every_change(&s, &ws, link, b"pwned\n") {
            match err {
                Error::OutsideWorkspace { path, via_link, .. } => {
                    assert_eq!(path, Path::new(link), "{op} {link}");
                    if link == "abs.md" {
                        assert_eq!(via_link.as_deref(), Some(ws.root().join(link).as_path()));
                    }
                }
                other => panic!("{op} {link}: expected OutsideWorkspace, got {other:?}"),
            }
            untouched.check(&format!("{op} {link}"));
        }
    }
    assert_eq!(read_text(&secret), "outside\n");
}

#[test]
fn paths_that_climb_out_are_refused_and_create_nothing() {
    let home = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let w = base.path().join("ws");
    fs::create_dir_all(w.join("a")).unwrap();
    fs::create_dir(base.path().join("outside")).unwrap();
    fs::write(base.path().join("x"), "sibling of the workspace\n").unwrap();
    let s = Store::new(home.path()).session("climb").unwrap();
    let ws = Workspace::open(&w).unwrap();
    let abs_outside = fs::canonicalize(base.path())
        .unwrap()
        .join("outside/new.txt");
    let abs_existing = fs::canonicalize(base.path()).unwrap().join("x");

    let untouched = Untouched::now(&s, &[("the workspace's parent", base.path())]);
    assert!(untouched.entries.is_empty());
    let paths: Vec<PathBuf> = vec![
        "../x".into(),
        "a/../../x".into(),
        "nope/../../x".into(),
        "../outside/new.txt".into(),
        "a/../../outside/new.txt".into(),
        abs_outside,
        abs_existing,
    ];
    for p in &paths {
        for (op, err) in every_change(&s, &ws, p, b"pwned\n") {
            match err {
                Error::OutsideWorkspace { path, .. } => assert_eq!(&path, p, "{op}"),
                other => panic!(
                    "{op} {}: expected OutsideWorkspace, got {other:?}",
                    p.display()
                ),
            }
            untouched.check(&format!("{op} {}", p.display()));
        }
    }
}

// ---------------------------------------------------------------------------
// Things that are not regular files.
// ---------------------------------------------------------------------------

/// write, remove and checkpoint of `path` on another thread, each bounded to 5 s.
fn ops_off_thread(home: &Path, id: &str, root: &Path, path: &str) -> Vec<(String, Error)> {
    let mut out = Vec::new();
    for op in ["write", "remove", "checkpoint"] {
        let (home, id, root, path) = (
            home.to_owned(),
            id.to_owned(),
            root.to_owned(),
            path.to_owned(),
        );
        let what = format!("{op} {path}");
        let err = within_5s(&what, move || {
            let s = Store::new(home).session(&id).unwrap();
            let ws = Workspace::open(root).unwrap();
            match op {
                "write" => s.write(&ws, &path, &b"x"[..], "m").map(|_| ()),
                "remove" => s.remove(&ws, &path, "m").map(|_| ()),
                _ => s.checkpoint(&ws, &path, "m").map(|c| c.rollback().unwrap()),
            }
        });
        out.push((what, err.expect_err("a non-regular file was accepted")));
    }
    out
}

#[test]
fn a_fifo_is_refused_without_blocking_and_records_nothing() {
    let env = Env::new();
    let s = env.session("fifo");
    let fifo = env.path("pipe");
    mkfifo(&fifo);
    symlink("pipe", env.path("to-pipe")).unwrap();
    let listing = names(env.ws.path());
    for path in ["pipe", "to-pipe"] {
        for (what, err) in ops_off_thread(env.home.path(), "fifo", env.ws.path(), path) {
            assert!(
                matches!(err, Error::NotRegularFile { kind: "fifo", .. }),
                "{what}: expected NotRegularFile(fifo), got {err:?}"
            );
            assert!(s.entries().unwrap().is_empty(), "{what} recorded");
            assert_eq!(names(env.ws.path()), listing, "{what}");
            assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        }
    }
}

#[test]
fn a_socket_is_refused_and_records_nothing() {
    let env = Env::new();
    let s = env.session("socket");
    let _listener = std::os::unix::net::UnixListener::bind(env.path("sock")).unwrap();
    let untouched = Untouched::now(&s, &[("workspace", env.ws.path())]);
    assert!(untouched.entries.is_empty());
    for (what, err) in ops_off_thread(env.home.path(), "socket", env.ws.path(), "sock") {
        assert!(
            matches!(err, Error::NotRegularFile { kind: "socket", .. }),
            "{what}: expected NotRegularFile(socket), got {err:?}"
        );
        untouched.check(&what);
    }
    assert!(
        fs::symlink_metadata(env.path("sock"))
            .unwrap()
            .file_type()
            .is_socket()
    );
}

#[test]
fn a_directory_is_refused_and_records_nothing() {
    let (env, s, ws) = Env::with_session("dir");
    fs::create_dir_all(env.path("sub/inner")).unwrap();
    fs::write(env.path("sub/inner/f.txt"), "keep\n").unwrap();
    let untouched = Untouched::now(&s, &[("workspace", env.ws.path())]);
    assert!(untouched.entries.is_empty());
    let root = ws.root().to_owned();
    let paths: Vec<PathBuf> = vec![
        "sub".into(),
        "sub/".into(),
        "sub/inner".into(),
        ".".into(),
        "sub/..".into(),
        root.clone(),
        root.join("sub"),
    ];
    for p in &paths {
        for (op, err) in every_change(&s, &ws, p, b"x") {
            assert!(
                matches!(
                    err,
                    Error::NotRegularFile {
                        kind: "directory",
                        ..
                    }
                ),
                "{op} {}: expected NotRegularFile(directory), got {err:?}",
                p.display()
            );
            untouched.check(&format!("{op} {}", p.display()));
            assert!(util::stray_temps(env.ws.path()).is_empty());
        }
    }
}

#[test]
fn a_file_replaced_by_a_fifo_after_the_change_is_refused_without_blocking() {
    let (env, s, ws) = Env::with_session("became-fifo");
    fs::write(env.path("f.txt"), "before\n").unwrap();
    s.write(&ws, "f.txt", &b"after\n"[..], "m1").unwrap();
    fs::remove_file(env.path("f.txt")).unwrap();
    mkfifo(&env.path("f.txt"));
    let entries = s.entries().unwrap();
    let listing = names(env.ws.path());
    for opts in [plain(), forced()] {
        let s2 = s.clone();
        let r = within_5s("undo of a fifo", move || s2.undo(opts));
        assert!(
            matches!(r, Err(Error::NotRegularFile { kind: "fifo", .. })),
            "{opts:?}: expected NotRegularFile(fifo), got {r:?}"
        );
        assert_eq!(s.entries().unwrap(), entries);
        assert_eq!(names(env.ws.path()), listing);
        assert!(
            fs::symlink_metadata(env.path("f.txt"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }
}

// ---------------------------------------------------------------------------
// The file itself replaced by a symbolic link after the change.
// ---------------------------------------------------------------------------

fn file_replaced_by_link(id: &str, target_outside: bool) {
    let env = Env::new();
    let s = env.session(id);
    let ws = env.workspace();
    fs::write(env.path("f.txt"), "before\n").unwrap();
    s.write(&ws, "f.txt", &b"after\n"[..], "m1").unwrap();
    s.write(&ws, "n.txt", &b"new\n"[..], "m2").unwrap();

    // The targets hold what the session left, so following the link would look safe.
    let outside = tempfile::tempdir().unwrap();
    let dir = if target_outside {
        outside.path().to_owned()
    } else {
        fs::create_dir(env.path("t")).unwrap();
        ws.root().join("t")
    };
    fs::write(dir.join("f.txt"), "after\n").unwrap();
    fs::write(dir.join("n.txt"), "new\n").unwrap();
    for name in ["f.txt", "n.txt"] {
        fs::remove_file(env.path(name)).unwrap();
        if target_outside {
            symlink(dir.join(name), env.path(name)).unwrap();
        } else {
            symlink(Path::new("t").join(name), env.path(name)).unwrap();
        }
    }

    let untouched = Untouched::now(
        &s,
        &[("outside", outside.path()), ("workspace", env.ws.path())],
    );
    for (what, r) in every_revert(&s, &ws, "f.txt", "m1") {
        let path = path_refused(&what, "f.txt", "n.txt");
        assert_unsafe_path(&what, r, path, path);
        untouched.check(&what);
    }
    assert!(is_link(&env.path("f.txt")) && is_link(&env.path("n.txt")));
    assert_eq!(read_text(dir.join("f.txt")), "after\n");
    assert_eq!(read_text(dir.join("n.txt")), "new\n");
}

#[test]
fn a_file_replaced_by_a_link_inside_is_refused() {
    file_replaced_by_link("file-link-in", false);
}

#[test]
fn a_file_replaced_by_a_link_outside_is_refused() {
    file_replaced_by_link("file-link-out", true);
}
