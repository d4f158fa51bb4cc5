//! Unit tests of `scan/baseline.rs`, kept apart so the module stays short.
use super::*;
use crate::Workspace;

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

/// `baselines/` planted as a symbolic link: a scan's beginning and a
/// prune refuse it with the store's typed error, and nothing is written
/// (or deleted) through it.
#[test]
fn a_link_planted_as_baselines_is_refused_by_a_scan_and_a_prune() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a"), "a\n").unwrap();
    // A directory that looks like a baseline, which a prune followed
    // through the link would delete.
    let victim = outside.path().join("0123456789abcdef0123456789abcdef");
    std::fs::create_dir(&victim).unwrap();
    std::os::unix::fs::symlink(outside.path(), home.path().join("baselines")).unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let w = Workspace::open(ws.path()).unwrap();
    let unsafe_store = |r: Result<_>| match r {
        Err(Error::UnsafeStore { path, reason }) => {
            assert_eq!(path, home.path().join("baselines"));
            assert_eq!(reason, crate::error::UnsafeReason::SymbolicLink);
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("followed the link"),
    };
    unsafe_store(s.begin_scan(&w, "m", None).map(|_| ()));
    unsafe_store(prune(&store, &[], false).map(|_| ()));
    let left: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(victim.is_dir());
}

/// The blobs of the one baseline in `home`.
fn blob_names(home: &Path) -> Vec<String> {
    let keys = baselines(home);
    assert_eq!(keys.len(), 1, "{keys:?}");
    let dir = BaselinePaths::new(home, &keys[0]).blobs;
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A file's older copy stays while an open scan's record names it (that
/// scan's commit copies from it), and goes at the first beginning after
/// that scan ended.
#[test]
fn an_old_copy_stays_while_an_open_scan_names_it() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let w = Workspace::open(ws.path()).unwrap();
    let store = Store::new(home.path());
    let one = store.session("one").unwrap();
    let two = store.session("two").unwrap();
    std::fs::write(ws.path().join("a"), "v1\n").unwrap();
    let first = one.begin_scan(&w, "m", None).unwrap();
    std::fs::write(ws.path().join("a"), "v2 longer\n").unwrap();
    // Past the file system's clock tick: a change in the tick two's
    // bracket began in would be shared with it, and one's undo refused.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let second = two.begin_scan(&w, "m", None).unwrap();
    assert_eq!(
        blob_names(home.path()).len(),
        2,
        "v1 is named by one's record"
    );
    let r = one.commit_scan(&first).unwrap();
    assert_eq!(r.changes.len(), 1, "{r:?}");
    two.commit_scan(&second).unwrap();
    let third = two.begin_scan(&w, "m", None).unwrap();
    two.commit_scan(&third).unwrap();
    // Nothing was stored by the third: only a change makes it look.
    std::fs::write(ws.path().join("b"), "b\n").unwrap();
    let fourth = two.begin_scan(&w, "m", None).unwrap();
    two.commit_scan(&fourth).unwrap();
    assert_eq!(blob_names(home.path()).len(), 2, "a's v2 and b");
    one.undo(crate::RevertOptions::default()).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a")).unwrap(),
        "v1\n"
    );
}

/// A beginning past its time budget copies nothing more; a change to a
/// file it did not copy is reported not backed up, and nothing recorded.
#[test]
fn a_beginning_out_of_time_copies_nothing_and_the_commit_says_so() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let w = Workspace::open(ws.path()).unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    std::fs::write(ws.path().join("a"), "a\n").unwrap();
    let opts = crate::ScanOptions {
        copy_budget: std::time::Duration::ZERO,
        ..Default::default()
    };
    let id = s.begin_scan_with(&w, "m", None, &opts).unwrap();
    assert!(blob_names(home.path()).is_empty());
    std::fs::write(ws.path().join("a"), "b\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    assert!(r.changes.is_empty(), "{r:?}");
    match &r.unrecorded[..] {
        [crate::Unrecorded::NoBackup { path, reason }] => {
            assert_eq!(path, "a");
            assert!(reason.contains("ran out of time"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// Under `max_baseline_bytes`, a beginning copies what fits and records
/// the rest as not copied; the baseline's blobs stay within the cap.
#[test]
fn a_beginning_copies_no_more_than_the_cap() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let w = Workspace::open(ws.path()).unwrap();
    let mut settings = crate::Settings::default();
    settings
        .max_baseline_bytes
        .set(64 << 10, crate::SettingSource::Flag("test"));
    let store = Store::new(home.path()).with_settings(settings);
    let s = store.session("s").unwrap();
    for i in 0..32 {
        std::fs::write(
            ws.path().join(format!("f{i}")),
            format!("{i}\n").repeat(2000),
        )
        .unwrap();
    }
    let id = s.begin_scan(&w, "m", None).unwrap();
    let (_, disk) = bytes_in(&BaselinePaths::new(home.path(), &baselines(home.path())[0]).blobs);
    assert!(disk <= 64 << 10, "{disk}");
    for i in 0..32 {
        std::fs::write(ws.path().join(format!("f{i}")), "x\n").unwrap();
    }
    let r = s.commit_scan(&id).unwrap();
    let copied = blob_names(home.path()).len();
    assert!(copied > 0);
    assert_eq!(
        (r.changes.len(), r.unrecorded.len()),
        (copied, 32 - copied),
        "{r:?}"
    );
    let u = store.baseline_usage().unwrap();
    assert_eq!(u.baselines, 1);
    assert!(u.bytes >= disk, "{u:?}");
}
