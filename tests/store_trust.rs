//! The store's trust boundary (issue 10): prune never takes a session that a
//! write just used or is using; a store planted or loosened by someone else is
//! refused; backups are private; a person's undo stays in their directory.
//! Real processes wherever the defect needs two of them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::util::{Env, read, read_text};

// ---------------------------------------------------------------------------
// Helpers

/// Runs `cmd` to the end with `stdin` as its standard input.
fn run(cmd: Command, stdin: &[u8]) -> Output {
    crate::util::run_with_input(cmd, stdin)
}

/// Starts `cmd` with piped standard input, output and errors.
fn spawn(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn turnback")
}

/// Writes `bytes` to the child's standard input and closes it. A command
/// that reads no input may be gone already.
fn feed(child: &mut Child, bytes: &[u8]) {
    let mut input = child.stdin.take().unwrap();
    match input.write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `turnback ARGS` in `env`'s workspace, as `session` when given.
fn tb(env: &Env, session: Option<&str>, args: &[&str]) -> Command {
    let mut c = env.cmd(session);
    c.args(args);
    c
}

/// `turnback ARGS` in `env`'s workspace (as `session`, when given), `stdin`
/// as its input; must succeed.
fn ok(env: &Env, session: Option<&str>, args: &[&str], stdin: &[u8]) -> Output {
    let out = run(tb(env, session, args), stdin);
    assert!(
        out.status.success(),
        "turnback {}: {}",
        args.join(" "),
        stderr(&out)
    );
    out
}

/// Makes session `id`'s files look last changed `days` ago.
fn age(dir: &Path, days: u64) {
    let t = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
    for p in [dir.join("index.json"), dir.join("journal.jsonl")] {
        if let Ok(f) = std::fs::File::open(&p) {
            f.set_modified(t).unwrap();
        }
    }
}

/// `n` sessions `old-000`, `old-001`, ... each with one write of its own file,
/// all older than the default retention; `old-000` the oldest. The default
/// prune keeps 20 of them.
fn old_sessions(env: &Env, n: usize) -> Vec<String> {
    let store = env.store();
    let ws = env.workspace();
    let ids: Vec<String> = (0..n).map(|i| format!("old-{i:03}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let s = store.session(id).unwrap();
        std::fs::write(env.path(&format!("f-{i}")), format!("first {i}\n")).unwrap();
        s.write(
            &ws,
            format!("f-{i}"),
            format!("second {i}\n").as_bytes(),
            "m",
        )
        .unwrap();
        age(s.dir(), 400 - i as u64);
    }
    ids
}

fn session_dir(env: &Env, id: &str) -> PathBuf {
    env.home.path().join("sessions").join(id)
}

/// Waits until `cond` holds, at most `limit`.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

// ---------------------------------------------------------------------------
// Item 2: prune and a write at the same time

/// Window (a): prune has decided which sessions are old, then a write to the
/// oldest runs to completion, then prune removes. The write must stay
/// undoable: the session changed since prune looked at it, so it is kept.
#[test]
fn prune_keeps_a_session_written_after_it_listed_the_sessions() {
    let env = Env::new();
    let ids = old_sessions(&env, 22);
    let oldest = &ids[0];
    let mut prune = env.cmd(None);
    prune
        .args(["prune"])
        .env("FAILPOINTS", "prune-listed=sleep(4000)");
    let mut prune = spawn(&mut prune);
    drop(prune.stdin.take());
    // Prune lists 22 sessions in well under this (even on a loaded machine),
    // then waits at the point.
    std::thread::sleep(Duration::from_millis(700));
    ok(
        &env,
        Some(oldest),
        &["write", "f-0", "-m", "late"],
        b"third 0\n",
    );
    assert!(
        prune.try_wait().unwrap().is_none(),
        "prune ended before the write did: the window was not hit"
    );
    let pruned = prune.wait_with_output().unwrap();
    assert!(pruned.status.success(), "prune: {}", stderr(&pruned));
    assert!(
        session_dir(&env, oldest).is_dir(),
        "prune removed the session a write had just changed"
    );
    ok(&env, Some(oldest), &["undo"], b"");
    assert_eq!(read(env.path("f-0")), b"second 0\n");
}

/// Window (b): a writer has stored its backup but not yet recorded its entry
/// when prune runs from start to end. The session and the backup must still
/// be there afterwards, and undo must bring the old contents back.
#[test]
fn prune_keeps_a_session_whose_writer_is_between_its_backup_and_its_entry() {
    let env = Env::new();
    let ids = old_sessions(&env, 22);
    let oldest = &ids[0];
    let blobs = session_dir(&env, oldest).join("blobs");
    let blob_count = || {
        std::fs::read_dir(&blobs)
            .map(|r| {
                r.flatten()
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .unwrap_or(0)
    };
    let before = blob_count();
    let mut writer = env.cmd(Some(oldest));
    writer
        .args(["write", "f-0", "-m", "late"])
        .env("FAILPOINTS", "backup-known=sleep(3000)");
    let mut writer = spawn(&mut writer);
    feed(&mut writer, b"third 0\n");
    assert!(
        wait_until(Duration::from_secs(5), || blob_count() > before),
        "the writer never stored its backup"
    );
    let pruned = ok(&env, None, &["prune"], b"");
    assert!(
        writer.try_wait().unwrap().is_none(),
        "the writer ended before prune did: the window was not hit ({})",
        String::from_utf8_lossy(&pruned.stdout)
    );
    let written = writer.wait_with_output().unwrap();
    assert!(written.status.success(), "write: {}", stderr(&written));
    assert_eq!(read(env.path("f-0")), b"third 0\n");
    let undo = run(tb(&env, Some(oldest), &["undo"]), b"");
    assert!(
        undo.status.success(),
        "the write cannot be undone: {}",
        stderr(&undo)
    );
    assert_eq!(read(env.path("f-0")), b"second 0\n");
}

/// The shape of the issue: 150 sessions past retention, a prune and writes to
/// the oldest ones at the same time. Every write that succeeded stays undoable.
#[test]
fn prune_among_many_old_sessions_loses_no_concurrent_write() {
    let env = Env::new();
    let ids = old_sessions(&env, 150);
    let mut prune = env.cmd(None);
    prune.args(["prune"]);
    let mut prune = spawn(&mut prune);
    drop(prune.stdin.take());
    let mut written = Vec::new();
    for (i, id) in ids.iter().enumerate().take(6) {
        let mut c = env.cmd(Some(id));
        c.args(["write", &format!("f-{i}"), "-m", "late"]);
        let out = run(c, format!("third {i}\n").as_bytes());
        if out.status.success() {
            written.push(i);
        }
    }
    let pruned = prune.wait_with_output().unwrap();
    assert!(pruned.status.success(), "prune: {}", stderr(&pruned));
    assert!(!written.is_empty(), "no write succeeded");
    for i in written {
        let id = &ids[i];
        let undo = run(tb(&env, Some(id), &["undo"]), b"");
        assert!(
            undo.status.success(),
            "the write to {id} cannot be undone: {}",
            stderr(&undo)
        );
        assert_eq!(
            read(env.path(&format!("f-{i}"))),
            format!("second {i}\n").as_bytes()
        );
    }
}

// ---------------------------------------------------------------------------
// Item 7 and decide-item (d): which session a person means in a directory

/// `turnback ARGS` run in `dir`, as `session` when given.
fn tb_in(env: &Env, dir: &Path, session: Option<&str>, args: &[&str]) -> Command {
    let mut c = tb(env, session, args);
    c.current_dir(dir);
    c
}

/// A parent directory (the workspace of `env`) holding `projA` and `projB`,
/// each with one file.
fn two_projects(env: &Env) -> (PathBuf, PathBuf) {
    let a = env.path("projA");
    let b = env.path("projB");
    for (dir, name) in [(&a, "a"), (&b, "b")] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), format!("{name} as it was\n")).unwrap();
    }
    (a, b)
}

/// A session working in the parent changed only `projB/b`; a person runs
/// `turnback undo` in `projA`. It must not touch `projB/b`: nothing changed
/// under `projA`, so there is no session to undo there.
#[test]
fn undo_in_a_subproject_does_not_revert_a_siblings_file() {
    let env = Env::new();
    let (proj_a, proj_b) = two_projects(&env);
    ok(
        &env,
        Some("parent"),
        &["write", "projB/b", "-m", "p1"],
        b"b by the agent\n",
    );
    let undo = run(tb_in(&env, &proj_a, None, &["--json", "undo"]), b"");
    assert_eq!(
        read(proj_b.join("b")),
        b"b by the agent\n",
        "projB/b was reverted"
    );
    assert_eq!(undo.status.code(), Some(1), "{}", stderr(&undo));
    assert!(
        stderr(&undo).contains("\"no-session\""),
        "{}",
        stderr(&undo)
    );
}

/// The same, with a session of `projA`'s own that changed `projA/a` before the
/// parent's session changed `projB/b`: undo in `projA` takes back `projA/a`.
#[test]
fn undo_in_a_subproject_picks_the_session_that_changed_a_file_there() {
    let env = Env::new();
    let (proj_a, proj_b) = two_projects(&env);
    let w = tb_in(&env, &proj_a, Some("own"), &["write", "a", "-m", "a1"]);
    let out = run(w, b"a by the agent\n");
    assert!(out.status.success(), "{}", stderr(&out));
    std::thread::sleep(Duration::from_millis(20));
    ok(
        &env,
        Some("parent"),
        &["write", "projB/b", "-m", "p1"],
        b"b by the agent\n",
    );
    let undo = run(tb_in(&env, &proj_a, None, &["undo"]), b"");
    assert!(undo.status.success(), "{}", stderr(&undo));
    assert!(
        stderr(&undo).contains("using session own"),
        "{}",
        stderr(&undo)
    );
    assert_eq!(
        read(proj_b.join("b")),
        b"b by the agent\n",
        "projB/b was reverted"
    );
    assert_eq!(read(proj_a.join("a")), b"a as it was\n");
}

/// Decide-item (d): `redo` without `--session` takes back the newest undo of
/// a change in this directory, whichever session made it, even when another
/// session changed something more recently.
#[test]
fn redo_picks_the_session_whose_undo_was_last() {
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "a0\n").unwrap();
    std::fs::write(env.path("b.txt"), "b0\n").unwrap();
    let pause = || std::thread::sleep(Duration::from_millis(20));
    ok(&env, Some("A"), &["write", "a.txt", "-m", "a1"], b"a1\n");
    pause();
    ok(&env, Some("B"), &["write", "b.txt", "-m", "b1"], b"b1\n");
    pause();
    ok(&env, Some("B"), &["undo"], b"");
    pause();
    ok(&env, Some("A"), &["undo"], b"");
    pause();
    // B changes something after A's undo: B has the newest change, A the
    // newest undo.
    ok(&env, Some("B"), &["write", "c.txt", "-m", "b2"], b"c\n");
    let redo = ok(&env, None, &["redo"], b"");
    assert!(
        stderr(&redo).contains("using session A"),
        "{}",
        stderr(&redo)
    );
    assert_eq!(read(env.path("a.txt")), b"a1\n", "A's undo was not redone");
    assert_eq!(read(env.path("b.txt")), b"b0\n", "B's undo was redone");
    // Now B's undo is the only one left to redo: the next redo takes it.
    let redo = ok(&env, None, &["redo"], b"");
    assert!(
        stderr(&redo).contains("using session B"),
        "{}",
        stderr(&redo)
    );
    assert_eq!(read(env.path("b.txt")), b"b1\n");
}

/// Plants session `id` by hand, as someone who can write the store could:
/// one entry, the removal of `rel` under the workspace root `root`, whose
/// undo would write `contents` back there (the backup is planted too).
fn plant_session(env: &Env, id: &str, root: &Path, rel: &str, contents: &[u8]) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let dir = session_dir(env, id);
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    let hash = crate::util::sha256_hex(contents);
    std::fs::write(dir.join("blobs").join(&hash), contents).unwrap();
    for f in ["lock", "live"] {
        std::fs::write(dir.join(f), b"").unwrap();
    }
    let md = std::fs::metadata(root).unwrap();
    let index = serde_json::json!({
        "format": 3, "session": id, "journal": 0, "next_seq": 2,
        "entries": [{
            "seq": 1, "message_id": "planted",
            "workspace": { "path": root, "dev": md.dev(), "ino": md.ino() },
            "path": rel, "version": 1, "time": "2099-01-01T00:00:00Z",
            "before": { "exists": true, "sha256": hash, "size": contents.len(), "mode": 0o644 },
            "after": { "exists": false, "sha256": null, "size": 0, "mode": null },
        }],
    });
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    dir
}

/// A session planted with the workspace root `/` and the removal of a file in
/// `/tmp`: `turnback undo` run in an unrelated workspace must not pick it (it
/// changed nothing there) and creates nothing.
#[test]
fn undo_in_a_workspace_does_not_pick_a_planted_session_rooted_at_slash() {
    let env = Env::new();
    let name = format!("turnback-planted-{}", std::process::id());
    let outside = Path::new("/tmp").join(&name);
    let _ = std::fs::remove_file(&outside);
    plant_session(
        &env,
        "planted",
        Path::new("/"),
        &format!("tmp/{name}"),
        b"planted\n",
    );
    let undo = run(tb(&env, None, &["--json", "undo"]), b"");
    let created = outside.exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!created, "undo created {}", outside.display());
    assert_eq!(undo.status.code(), Some(1), "{}", stderr(&undo));
    assert!(
        stderr(&undo).contains("\"no-session\""),
        "{}",
        stderr(&undo)
    );
}

// ---------------------------------------------------------------------------
// Item 4: a store someone else can write cannot aim outside the workspace

/// True when this process can give files away (chown to another uid): it
/// runs as root, which owns what it creates.
fn can_chown() -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = tempfile::tempfile().unwrap();
    let root = probe.metadata().unwrap().uid() == 0;
    if !root {
        eprintln!("skipped: changing a file's owner needs root");
    }
    root
}

/// Runs `turnback --json ARGS` and returns its exit code and error object.
fn json_err(
    env: &Env,
    dir: Option<&Path>,
    session: Option<&str>,
    args: &[&str],
    stdin: &[u8],
) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let mut c = tb(env, session, &all);
    if let Some(d) = dir {
        c.current_dir(d);
    }
    let out = run(c, stdin);
    let err = stderr(&out);
    if out.status.success() {
        return (Some(0), serde_json::Value::Null);
    }
    let v: serde_json::Value = serde_json::from_str(err.trim()).unwrap_or_else(|e| {
        panic!(
            "turnback {}: stderr is not JSON ({e}): {err}",
            args.join(" ")
        )
    });
    (out.status.code(), v["error"].clone())
}

/// The lock name of a workspace file: SHA-256 of its absolute real path.
fn lock_name(env: &Env, rel: &str) -> PathBuf {
    let real = std::fs::canonicalize(env.ws.path()).unwrap().join(rel);
    let hash = crate::util::sha256_hex(real.as_os_str().as_encoded_bytes());
    env.home.path().join("locks").join(hash)
}

/// A symbolic link planted in `<home>/locks/` where a file's lock goes: the
/// write is refused and the link's target is not written to.
#[test]
fn a_symlink_planted_as_a_lock_file_is_refused_and_its_target_untouched() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious");
    std::fs::write(&target, b"precious\n").unwrap();
    std::fs::write(env.path("f.txt"), b"old\n").unwrap();
    ok(&env, Some("s"), &["write", "g.txt", "-m", "m0"], b"g\n");
    let lock = lock_name(&env, "f.txt");
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let (code, e) = json_err(
        &env,
        None,
        Some("s"),
        &["write", "f.txt", "-m", "m1"],
        b"new\n",
    );
    assert_eq!(
        read_text(&target),
        "precious\n",
        "the link's target was written"
    );
    assert_eq!(read(env.path("f.txt")), b"old\n");
    assert_eq!(
        (code, e["kind"].as_str()),
        (Some(1), Some("unsafe-store")),
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(lock.to_str().unwrap()),
        "{e}"
    );
}

/// A store file (the session's journal) replaced by a symbolic link to a file
/// outside: the next write is refused and appends nothing there.
#[test]
fn a_store_file_that_is_a_symlink_is_refused() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere");
    std::fs::write(env.path("f.txt"), b"old\n").unwrap();
    ok(&env, Some("s"), &["write", "g.txt", "-m", "m0"], b"g\n");
    ok(&env, Some("s"), &["write", "g.txt", "-m", "m1"], b"g2\n");
    let journal = session_dir(&env, "s").join("journal.jsonl");
    std::fs::rename(&journal, &target).unwrap();
    std::os::unix::fs::symlink(&target, &journal).unwrap();
    let before = read_text(&target);
    let (code, e) = json_err(
        &env,
        None,
        Some("s"),
        &["write", "f.txt", "-m", "m2"],
        b"new\n",
    );
    assert_eq!(read_text(&target), before, "the link's target was written");
    assert_eq!(read(env.path("f.txt")), b"old\n");
    assert_eq!(
        (code, e["kind"].as_str()),
        (Some(1), Some("unsafe-store")),
        "{e}"
    );
}

/// A session planted with another directory as its workspace: `turnback undo
/// --session` run here refuses (exit 3) before anything is created there.
#[test]
fn undo_of_a_session_whose_workspace_is_unrelated_is_refused() {
    let env = Env::new();
    let other = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(other.path()).unwrap();
    plant_session(&env, "planted", &root, "x", b"planted\n");
    let (code, e) = json_err(&env, None, Some("planted"), &["undo"], b"");
    assert!(!root.join("x").exists(), "undo created a file outside");
    assert_eq!(
        (code, e["kind"].as_str()),
        (Some(3), Some("outside-scope")),
        "{e}"
    );
    let message = e["message"].as_str().unwrap();
    assert!(message.contains(root.to_str().unwrap()), "{e}");
    assert!(e["hint"].as_str().unwrap().contains("--workspace"), "{e}");
    // From its own workspace (or a parent or child of it) it goes through.
    let (code, e) = json_err(
        &env,
        None,
        Some("planted"),
        &["undo", "--dry-run", "--workspace", root.to_str().unwrap()],
        b"",
    );
    assert_eq!(code, Some(0), "{e}");
}

/// A store home, or a session in it, owned by another user: refused, and
/// nothing touched.
#[test]
fn a_store_owned_by_another_user_is_refused() {
    if !can_chown() {
        return;
    }
    let env = Env::new();
    std::fs::write(env.path("f.txt"), b"old\n").unwrap();
    ok(&env, Some("s"), &["write", "f.txt", "-m", "m1"], b"new\n");
    let session = session_dir(&env, "s");
    for (what, dir) in [
        ("session", session.clone()),
        ("home", env.home.path().to_owned()),
    ] {
        std::os::unix::fs::chown(&dir, Some(1234), None).unwrap();
        for args in [&["undo"][..], &["write", "f.txt", "-m", "m2"]] {
            let (code, e) = json_err(&env, None, Some("s"), args, b"newer\n");
            assert_eq!(
                (code, e["kind"].as_str()),
                (Some(1), Some("unsafe-store")),
                "{what} owned by uid 1234, {args:?}: {e}"
            );
            let message = e["message"].as_str().unwrap();
            assert!(
                message.contains("1234") && message.contains(dir.to_str().unwrap()),
                "{e}"
            );
            assert_eq!(read(env.path("f.txt")), b"new\n", "{what}, {args:?}");
        }
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
    }
    // A store file owned by another user is refused too.
    let index = session.join("index.json");
    std::os::unix::fs::chown(&index, Some(1234), None).unwrap();
    let (code, e) = json_err(&env, None, Some("s"), &["undo"], b"");
    assert_eq!(
        (code, e["kind"].as_str()),
        (Some(1), Some("unsafe-store")),
        "{e}"
    );
    assert_eq!(read(env.path("f.txt")), b"new\n");
}

/// A sessions directory its group may write: refused, and the hint says how
/// to fix it.
#[test]
fn a_group_writable_store_directory_is_refused_with_a_hint() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    std::fs::write(env.path("f.txt"), b"old\n").unwrap();
    ok(&env, Some("s"), &["write", "f.txt", "-m", "m1"], b"new\n");
    let sessions = env.home.path().join("sessions");
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o770)).unwrap();
    let (code, e) = json_err(&env, None, Some("s"), &["undo"], b"");
    assert_eq!(
        (code, e["kind"].as_str()),
        (Some(1), Some("unsafe-store")),
        "{e}"
    );
    assert!(e["message"].as_str().unwrap().contains("writable"), "{e}");
    let hint = e["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!("chmod go-w {}", sessions.display())),
        "{e}"
    );
    assert_eq!(read(env.path("f.txt")), b"new\n");
    // Text output: the same error and hint.
    let out = run(tb(&env, Some("s"), &["undo"]), b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("hint: chmod go-w"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------
// Item 5: backups are private

/// Every directory and file under `root` with its permission bits.
fn modes_under(root: &Path) -> Vec<(PathBuf, bool, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = vec![(root.to_owned(), true, crate::util::mode_of(root))];
    for rel in crate::util::names_under(root) {
        let p = root.join(&rel);
        let md = std::fs::symlink_metadata(&p).unwrap();
        out.push((rel, md.is_dir(), md.permissions().mode() & 0o7777));
    }
    out
}

/// The paths under `root` whose mode is not 0700 (directories) or 0600 (files).
fn not_private(root: &Path) -> Vec<String> {
    modes_under(root)
        .into_iter()
        .filter(|(_, dir, mode)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(p, _, mode)| format!("{} {mode:o}", p.display()))
        .collect()
}

/// Sets every directory under `root` (and `root`) to `dir_mode` and every
/// file to `file_mode`: a store as an older turnback left it under umask 022.
fn set_modes(root: &Path, dir_mode: u32, file_mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    for (rel, dir, _) in modes_under(root) {
        let mode = if dir { dir_mode } else { file_mode };
        std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// A store made by a build that used the umask (0755 directories, 0644 files,
/// so that any user could read the backup of a 0600 `.env`): one command makes
/// every directory 0700 and every file 0600, and says so.
#[test]
fn an_existing_readable_store_is_made_private_by_the_next_command() {
    let env = Env::new();
    std::fs::write(env.path(".env"), b"SECRET=1\n").unwrap();
    ok(
        &env,
        Some("s"),
        &["write", ".env", "-m", "m1"],
        b"SECRET=2\n",
    );
    let home = env.home.path();
    set_modes(home, 0o755, 0o644);
    let out = ok(
        &env,
        Some("s"),
        &["write", ".env", "-m", "m2"],
        b"SECRET=3\n",
    );
    assert_eq!(
        not_private(home),
        Vec::<String>::new(),
        "still readable by others"
    );
    let err = stderr(&out);
    for dir in [
        home.to_owned(),
        home.join("sessions"),
        session_dir(&env, "s"),
        session_dir(&env, "s").join("blobs"),
        home.join("locks"),
    ] {
        let note = format!("note: made {}", dir.display());
        assert!(
            err.lines().any(|l| l.starts_with(&note)
                && l.contains("(was 755)")
                && l.ends_with("backups were readable by other users")),
            "no note for {}:\n{err}",
            dir.display()
        );
    }
    // Once private, nothing more to say.
    let again = ok(
        &env,
        Some("s"),
        &["write", ".env", "-m", "m3"],
        b"SECRET=4\n",
    );
    assert_eq!(stderr(&again), "");
    // With --json, standard error stays for errors only, and the store is
    // made private all the same.
    set_modes(home, 0o755, 0o644);
    let quiet = ok(&env, Some("s"), &["--json", "undo"], b"");
    assert_eq!(stderr(&quiet), "");
    serde_json::from_slice::<serde_json::Value>(&quiet.stdout).unwrap();
    assert_eq!(
        not_private(home),
        Vec::<String>::new(),
        "still readable by others"
    );
}

/// A store made from nothing is private throughout: every directory 0700 and
/// every file 0600, whatever the umask lets through.
#[test]
fn a_fresh_store_is_private_throughout() {
    let env = Env::new();
    let home = env.home.path().join("fresh/home");
    std::fs::write(env.path("a.txt"), b"a\n").unwrap();
    let run_here = |args: &[&str], stdin: &[u8]| {
        let mut c = tb(&env, Some("s"), args);
        c.env("TURNBACK_HOME", &home);
        let out = run(c, stdin);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    run_here(&["turn", "--prompt", "p"], b"");
    run_here(&["write", "a.txt", "-m", "m1"], b"a2\n");
    run_here(&["write", "new/dir/b.txt", "-m", "m2"], b"b\n");
    run_here(&["mv", "a.txt", "c.txt", "-m", "m3"], b"");
    run_here(&["undo"], b"");
    run_here(&["undo"], b"");
    let id = run_here(&["checkpoint", "a.txt", "-m", "m4"], b"");
    run_here(&["rollback", id.trim()], b"");
    run_here(&["rm", "a.txt", "-m", "m5"], b"");
    run_here(&["rewind", "m1"], b"");
    run_here(&["redo"], b"");
    assert_eq!(
        not_private(&home),
        Vec::<String>::new(),
        "readable by others"
    );
}

// ---------------------------------------------------------------------------
// Decide-items (b) and (c): the store inside the workspace; a relative home

/// The store home inside the workspace (`TURNBACK_HOME=<ws>/.store`): a write,
/// rm, mv or checkpoint of a store file (an index, a backup) is refused, and
/// the store stays exactly as it was.
#[test]
fn changes_to_files_inside_the_store_are_refused() {
    let env = Env::new();
    let home = env.path(".store");
    let cmd = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let mut c = tb(&env, Some("s"), &all);
        c.env("TURNBACK_HOME", &home);
        c
    };
    std::fs::write(env.path("f.txt"), b"old\n").unwrap();
    let out = run(cmd(&["write", "f.txt", "-m", "m1"]), b"new\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let blob = format!(
        ".store/sessions/s/blobs/{}",
        crate::util::sha256_hex(b"old\n")
    );
    let index = ".store/sessions/s/index.json";
    let before = crate::util::tree_digest(&home);
    for args in [
        &["write", index, "-m", "m2"][..],
        &["write", &blob, "-m", "m2"],
        &["write", ".store/sessions/s/new-file", "-m", "m2"],
        &["rm", index, "-m", "m2"],
        &["mv", &blob, "elsewhere", "-m", "m2"],
        &["mv", "f.txt", ".store/f.txt", "-m", "m2"],
        &["checkpoint", index, "-m", "m2"],
    ] {
        let out = run(cmd(args), b"garbage\n");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("\"inside-store\""), "{args:?}: {err}");
        let without_locks: std::collections::BTreeMap<_, _> = crate::util::tree_digest(&home)
            .into_iter()
            .filter(|(p, _)| !p.starts_with("locks"))
            .collect();
        let before: std::collections::BTreeMap<_, _> = before
            .iter()
            .filter(|(p, _)| !p.starts_with("locks"))
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect();
        assert_eq!(without_locks, before, "{args:?}: the store changed");
    }
    // The store still works: the first write undoes.
    let out = run(cmd(&["undo"]), b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(env.path("f.txt")), b"old\n");
}

/// Decide-item (c): a relative `--home` is made absolute once, against the
/// directory the command started in, and works with `--workspace` elsewhere.
#[test]
fn a_relative_home_is_made_absolute_at_start() {
    let env = Env::new();
    let start = tempfile::tempdir().unwrap();
    let start = std::fs::canonicalize(start.path()).unwrap();
    std::fs::write(env.path("f.txt"), b"old\n").unwrap();
    let ws = env.ws.path().to_str().unwrap().to_owned();
    let cmd = |args: &[&str]| {
        let mut all = vec!["--home", "rel/store", "--workspace", &ws];
        all.extend_from_slice(args);
        let mut c = tb(&env, Some("s"), &all);
        c.current_dir(&start).env_remove("TURNBACK_HOME");
        c
    };
    let file = env.path("f.txt");
    let out = run(
        cmd(&["write", file.to_str().unwrap(), "-m", "m1"]),
        b"new\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        start.join("rel/store/sessions/s").is_dir(),
        "the store is not at the start directory"
    );
    assert_eq!(read(&file), b"new\n");
    // Errors name the store by its absolute path.
    let mut c = cmd(&["--json", "log"]);
    c.env("TURNBACK_SESSION", "nosuch");
    let out = run(c, b"");
    let absolute = start.join("rel/store");
    assert!(
        stderr(&out).contains(&format!("not found in {}", absolute.display())),
        "{}",
        stderr(&out)
    );
    let out = run(cmd(&["undo"]), b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(env.path("f.txt")), b"old\n");
}
