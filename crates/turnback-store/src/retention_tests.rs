//! Unit tests of `retention.rs`, kept apart so the module stays short.
use super::*;
use crate::workspace::Workspace;

fn age(dir: &std::path::Path, days: u64) {
    let t = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
    for p in [
        dir.join("index.json"),
        dir.join("journal.jsonl"),
        dir.to_owned(),
    ] {
        if let Ok(f) = std::fs::File::open(&p) {
            f.set_modified(t).unwrap();
        }
    }
}

#[test]
fn keeps_recent_and_new_sessions_and_the_one_in_use() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let ws = Workspace::open(wsdir.path()).unwrap();
    for (i, days) in [(0, 100), (1, 90), (2, 80), (3, 1)] {
        let s = store.session(&format!("s{i}")).unwrap();
        s.write(&ws, format!("f{i}"), &b"x"[..], "m").unwrap();
        age(s.dir(), days);
    }
    let retention = Retention {
        keep_recent: 2,
        ..Retention::default()
    };
    let dry = store.prune(&retention, Some("s0"), true).unwrap();
    let ids = |r: &PruneReport| r.removed.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&dry), ["s1"]);
    assert_eq!(
        store.session_ids().unwrap().len(),
        4,
        "a dry run deletes nothing"
    );
    let real = store.prune(&retention, Some("s0"), false).unwrap();
    assert_eq!(ids(&real), ["s1"]);
    assert_eq!(real.kept, 3);
    assert_eq!(store.session_ids().unwrap(), ["s0", "s2", "s3"]);
}

#[test]
fn a_change_in_the_journal_counts_as_a_change() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let ws = Workspace::open(wsdir.path()).unwrap();
    let s = store.session("s").unwrap();
    s.write(&ws, "f", &b"x"[..], "m").unwrap();
    age(s.dir(), 100);
    // An open handle keeps its session in use (see the next test).
    drop(s);
    let retention = Retention {
        keep_recent: 0,
        ..Retention::default()
    };
    let removed = |dry| store.prune(&retention, None, dry).unwrap().removed.len();
    assert_eq!(removed(true), 1, "100 days old");
    // A change now lands in the journal; index.json keeps its old time.
    let s = store.session("s").unwrap();
    s.write(&ws, "f", &b"y"[..], "m").unwrap();
    drop(s);
    assert_eq!(removed(false), 0, "changed today");
    assert_eq!(store.session_ids().unwrap(), ["s"]);
}

#[test]
fn never_removes_a_session_that_a_handle_has_open() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let ws = Workspace::open(wsdir.path()).unwrap();
    let s = store.session("s").unwrap();
    s.write(&ws, "f", &b"x"[..], "m").unwrap();
    age(s.dir(), 100);
    let none = Retention {
        keep_recent: 0,
        ..Retention::default()
    };
    // Any clone holds the session; only when the last one goes may it go.
    let clone = s.clone();
    drop(s);
    assert!(store.prune(&none, None, false).unwrap().removed.is_empty());
    assert_eq!(store.session_ids().unwrap(), ["s"]);
    drop(clone);
    assert_eq!(store.prune(&none, None, false).unwrap().removed.len(), 1);
    assert!(store.session_ids().unwrap().is_empty());
}

#[test]
fn a_handle_that_locked_a_session_a_prune_renamed_away_starts_it_again() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let ws = Workspace::open(wsdir.path()).unwrap();
    store
        .session("s")
        .unwrap()
        .write(&ws, "f", &b"x"[..], "m")
        .unwrap();
    let dir = home.path().join("sessions/s");
    // A prune holds `live` and renames the session away while a handle
    // that opened `live` just before waits for its shared lock.
    let live = store.session_dir("s").live_path();
    let pruning = crate::lock::try_acquire(&live).unwrap().unwrap();
    let opener = {
        let store = store.clone();
        std::thread::spawn(move || store.open_session("s").unwrap())
    };
    std::thread::sleep(Duration::from_millis(200));
    std::fs::rename(&dir, home.path().join("sessions/.pruned-s")).unwrap();
    drop(pruning);
    let s = opener.join().unwrap();
    // Its lock was on the file renamed away: it holds nothing, and its
    // first change makes the session again, backup and entry together.
    std::fs::write(wsdir.path().join("g"), "old").unwrap();
    let e = s.write(&ws, "g", &b"new"[..], "m").unwrap();
    assert!(s.blobs().exists(e.before.sha256.as_deref().unwrap()));
    assert_eq!(s.entries().unwrap().len(), 1);
    s.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read(wsdir.path().join("g")).unwrap(), b"old");
}

#[test]
fn never_removes_a_session_whose_index_is_damaged_or_whose_lock_is_held() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let a = store.session("damaged").unwrap();
    std::fs::create_dir_all(a.dir()).unwrap();
    std::fs::write(a.dir().join("index.json"), b"{").unwrap();
    age(a.dir(), 400);
    let b = store.session("busy").unwrap();
    std::fs::create_dir_all(b.dir()).unwrap();
    std::fs::write(
        b.dir().join("index.json"),
        br#"{"format":1,"session":"busy","next_seq":1,"entries":[]}"#,
    )
    .unwrap();
    age(b.dir(), 400);
    let _held = b.lock_session(Mode::Exclusive).unwrap();
    let none = Retention {
        keep_recent: 0,
        ..Retention::default()
    };
    let r = store.prune(&none, None, false).unwrap();
    assert!(r.removed.is_empty(), "{r:?}");
    assert_eq!(store.session_ids().unwrap(), ["busy", "damaged"]);
}

#[test]
fn with_no_handle_open_every_unnamed_backup_and_temporary_goes_at_once() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let ws = Workspace::open(wsdir.path()).unwrap();
    let s = store.session("s").unwrap();
    std::fs::write(wsdir.path().join("f"), "one").unwrap();
    s.write(&ws, "f", &b"two"[..], "m").unwrap();
    let blobs = s.dir().join("blobs");
    // What killed processes leave: a backup never named, a backup's
    // temporary, the snapshot's temporary.
    std::fs::write(blobs.join("b".repeat(64)), "orphan").unwrap();
    std::fs::write(blobs.join(".tmp-0123456789abcdef"), "half").unwrap();
    std::fs::write(s.dir().join("index.json.tmp"), "{").unwrap();
    // Open, it keeps them (a writer may be about to name a fresh one).
    let r = store.prune(&Retention::default(), None, false).unwrap();
    assert_eq!(r.blobs_removed, 0);
    drop(s);
    let r = store.prune(&Retention::default(), None, false).unwrap();
    assert_eq!((r.blobs_removed, r.blob_bytes), (2, 10));
    let left: Vec<_> = std::fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let (one, _) = crate::hash::hash_reader(&mut &b"one"[..]).unwrap();
    assert_eq!(left, [one]);
    assert!(!home.path().join("sessions/s/index.json.tmp").exists());
    let s = store.session("s").unwrap();
    s.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read(wsdir.path().join("f")).unwrap(), b"one");
}

#[test]
fn deletes_only_old_unreferenced_backups() {
    let home = tempfile::tempdir().unwrap();
    let wsdir = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    let ws = Workspace::open(wsdir.path()).unwrap();
    let s = store.session("s").unwrap();
    std::fs::write(wsdir.path().join("f"), "one").unwrap();
    std::fs::write(wsdir.path().join("g"), "gold").unwrap();
    s.write(&ws, "f", &b"two"[..], "m").unwrap();
    s.write(&ws, "g", &b"lead"[..], "m").unwrap();
    // Undone and redone: the undo kept "lead" for redo, and after the redo
    // both "gold" and "lead" are named by the entry again.
    s.undo(crate::RevertOptions::default()).unwrap();
    s.redo(crate::RevertOptions::default()).unwrap();
    // A write whose contents never arrive leaves its backup ("hat") named by
    // nothing.
    std::fs::write(wsdir.path().join("h"), "hat").unwrap();
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("closed"))
        }
    }
    let err = s.write(&ws, "h", Broken, "m").unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Io, "{err}");
    let blobs = s.dir().join("blobs");
    let old = SystemTime::now() - Duration::from_secs(7200);
    for e in std::fs::read_dir(&blobs).unwrap() {
        std::fs::File::open(e.unwrap().path())
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let r = store.prune(&Retention::default(), None, false).unwrap();
    assert_eq!((r.blobs_removed, r.blob_bytes), (1, 3));
    s.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read(wsdir.path().join("g")).unwrap(), b"gold");
    s.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read(wsdir.path().join("f")).unwrap(), b"one");
}

/// The baselines in `home`, by key.
fn baselines(home: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(home.join("baselines")) else {
        return Vec::new();
    };
    let mut keys: Vec<String> = read
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    keys.sort();
    keys
}

/// A prune drops the baseline of a workspace no kept session uses, and
/// keeps one a kept session has changes in or a scan open on; a scan there
/// afterwards builds it again.
#[test]
fn a_prune_drops_a_baseline_no_kept_session_uses() {
    let home = tempfile::tempdir().unwrap();
    let one = tempfile::tempdir().unwrap();
    let ws1 = Workspace::open(one.path()).unwrap();
    let store = Store::new(home.path());
    let old = store.session("s").unwrap();
    std::fs::write(one.path().join("a"), "a\n").unwrap();
    let id = old.begin_scan(&ws1, "m", None).unwrap();
    std::fs::write(one.path().join("a"), "b\n").unwrap();
    old.commit_scan(&id).unwrap();
    let two = tempfile::tempdir().unwrap();
    let ws2 = Workspace::open(two.path()).unwrap();
    std::fs::write(two.path().join("c"), "c\n").unwrap();
    let open = store.session("open").unwrap();
    let scan = open.begin_scan(&ws2, "m", None).unwrap();
    let both = baselines(home.path());
    assert_eq!(both.len(), 2, "{both:?}");
    // Only "old" goes (no handle has it open), and with it the baseline of
    // the workspace only it had changes in.
    drop(old);
    let everything = crate::Retention {
        keep_recent: 0,
        keep_for: std::time::Duration::ZERO,
        blob_grace: std::time::Duration::ZERO,
    };
    let dry = store.prune(&everything, None, true).unwrap();
    assert_eq!(dry.baselines_removed, 1, "{dry:?}");
    assert!(dry.baseline_bytes > 0, "{dry:?}");
    assert_eq!(baselines(home.path()), both, "a dry run deletes nothing");
    let r = store.prune(&everything, None, false).unwrap();
    assert_eq!(r.removed.len(), 1, "{r:?}");
    assert_eq!(r.baselines_removed, 1, "{r:?}");
    let left = baselines(home.path());
    assert_eq!(left.len(), 1, "the open scan's baseline stays: {left:?}");
    // Committed, its changes keep it.
    std::fs::write(two.path().join("c"), "d\n").unwrap();
    open.commit_scan(&scan).unwrap();
    let r = store.prune(&everything, None, false).unwrap();
    assert_eq!(r.baselines_removed, 0, "{r:?}");
    assert_eq!(baselines(home.path()), left);
    open.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(
        std::fs::read_to_string(two.path().join("c")).unwrap(),
        "c\n"
    );
    // A scan of the first workspace builds its baseline again.
    let again = store.session("again").unwrap();
    let id = again.begin_scan(&ws1, "m", None).unwrap();
    std::fs::write(one.path().join("a"), "c\n").unwrap();
    again.commit_scan(&id).unwrap();
    assert_eq!(baselines(home.path()).len(), 2);
    again.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(
        std::fs::read_to_string(one.path().join("a")).unwrap(),
        "b\n"
    );
}
