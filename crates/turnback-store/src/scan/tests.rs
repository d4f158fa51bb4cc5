//! The scan bracket end to end on the library, in and outside git.

use std::path::Path;
use std::process::Command;

use crate::{RevertOptions, ScanChangeKind, Store, Workspace};

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{ok:?}");
}

fn has_git() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

fn kinds(r: &crate::ScanReport) -> Vec<(String, ScanChangeKind)> {
    r.changes.iter().map(|c| (c.path.clone(), c.kind)).collect()
}

fn every_change_kind(in_git: bool) {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("keep"), "keep\n").unwrap();
    std::fs::write(d.join("edit"), "old\n").unwrap();
    std::fs::write(d.join("gone"), "gone\n").unwrap();
    std::fs::write(d.join("mode"), "mode\n").unwrap();
    std::fs::write(d.join("from"), "moved\n").unwrap();
    std::fs::write(d.join(".gitignore"), "ignored\n").unwrap();
    std::fs::write(d.join("ignored"), "i\n").unwrap();
    if in_git {
        git(d, &["init", "-q"]);
        git(d, &["add", "."]);
        git(d, &["commit", "-qm", "i"]);
        // Edited by hand after the commit: comes back to this, not to git's.
        std::fs::write(d.join("edit"), "by hand\n").unwrap();
    }
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m1", Some("a command")).unwrap();
    assert_eq!(s.open_scans().unwrap()[0].id, id);
    std::fs::write(d.join("edit"), "new\n").unwrap();
    std::fs::remove_file(d.join("gone")).unwrap();
    std::fs::set_permissions(
        d.join("mode"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::rename(d.join("from"), d.join("to")).unwrap();
    std::fs::create_dir_all(d.join("new/dir")).unwrap();
    std::fs::write(d.join("new/dir/file"), "made\n").unwrap();
    std::fs::write(d.join("ignored"), "changed, ignored\n").unwrap();
    let other = store.open_session("s").unwrap();
    let r = other.commit_scan(&id).unwrap();
    use ScanChangeKind::*;
    assert_eq!(
        kinds(&r),
        [
            ("edit".into(), Modified),
            ("from".into(), Deleted),
            ("gone".into(), Deleted),
            ("mode".into(), ModeChanged),
            ("new/dir/file".into(), Created),
            ("to".into(), Created),
        ]
    );
    assert!(s.open_scans().unwrap().is_empty());
    assert!(matches!(
        s.commit_scan(&id),
        Err(crate::Error::NoSuchScan { .. })
    ));
    s.undo(RevertOptions::default()).unwrap();
    let want_edit = if in_git { "by hand\n" } else { "old\n" };
    assert_eq!(std::fs::read_to_string(d.join("edit")).unwrap(), want_edit);
    assert_eq!(std::fs::read_to_string(d.join("gone")).unwrap(), "gone\n");
    assert_eq!(std::fs::read_to_string(d.join("from")).unwrap(), "moved\n");
    assert!(!d.join("to").exists());
    assert!(!d.join("new").exists(), "the directories it made go too");
    let mode = std::fs::metadata(d.join("mode")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o644
    );
    assert_eq!(
        std::fs::read_to_string(d.join("ignored")).unwrap(),
        "changed, ignored\n",
        "an ignored file is never restored"
    );
    s.redo(RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read_to_string(d.join("edit")).unwrap(), "new\n");
    assert!(d.join("new/dir/file").exists());
}

#[test]
fn every_change_kind_outside_git() {
    every_change_kind(false);
}

#[test]
fn every_change_kind_in_git() {
    if has_git() {
        every_change_kind(true);
    }
}

#[test]
fn a_rollback_puts_everything_back_and_records_nothing() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a"), "a\n").unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("a"), "half\n").unwrap();
    std::fs::create_dir(d.join("n")).unwrap();
    std::fs::write(d.join("n/b"), "b\n").unwrap();
    let r = s.rollback_scan(&id).unwrap();
    assert!(r.rolled_back);
    assert_eq!(r.changes.len(), 2);
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a\n");
    assert!(!d.join("n").exists());
    assert!(s.entries().unwrap().is_empty());
    assert!(s.open_scans().unwrap().is_empty());
}

#[test]
fn a_later_edit_refuses_the_undo() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a"), "a\n").unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("a"), "cmd\n").unwrap();
    s.commit_scan(&id).unwrap();
    std::fs::write(d.join("a"), "later\n").unwrap();
    let err = s.undo(RevertOptions::default()).unwrap_err();
    assert!(matches!(err, crate::Error::Refused { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "later\n");
}

#[test]
fn a_directory_replaced_by_a_file_is_recorded_and_its_undo_refused_untouched() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("g")).unwrap();
    std::fs::write(d.join("g/inner"), "inner\n").unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::remove_dir_all(d.join("g")).unwrap();
    std::fs::write(d.join("g"), "now a file\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    use ScanChangeKind::*;
    assert_eq!(
        kinds(&r),
        [("g".into(), Created), ("g/inner".into(), Deleted)]
    );
    assert!(s.undo(RevertOptions::default()).is_err());
    assert_eq!(
        std::fs::read_to_string(d.join("g")).unwrap(),
        "now a file\n"
    );
}

#[test]
fn a_file_replaced_by_a_directory_is_recorded_and_its_undo_refused_untouched() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("f"), "file\n").unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::remove_file(d.join("f")).unwrap();
    std::fs::create_dir(d.join("f")).unwrap();
    std::fs::write(d.join("f/x"), "x\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    use ScanChangeKind::*;
    assert_eq!(kinds(&r), [("f".into(), Deleted), ("f/x".into(), Created)]);
    // The revert machinery restores files, not directories: the undo stops
    // before touching anything, and the backup stays for the person.
    assert!(s.undo(RevertOptions::default()).is_err());
    assert_eq!(std::fs::read_to_string(d.join("f/x")).unwrap(), "x\n");
    assert_eq!(s.entries().unwrap().len(), 2);
}

#[test]
fn a_file_over_the_size_limit_is_reported_not_backed_up() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("big"), "0123456789abcdef").unwrap();
    std::fs::write(d.join("small"), "s").unwrap();
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let opts = crate::ScanOptions { size_limit: 8 };
    let id = s.begin_scan_with(&ws, "m", None, &opts).unwrap();
    std::fs::write(d.join("big"), "fedcba9876543210").unwrap();
    std::fs::write(d.join("small"), "t").unwrap();
    let r = s.commit_scan(&id).unwrap();
    assert_eq!(kinds(&r), [("small".into(), ScanChangeKind::Modified)]);
    assert_eq!(
        r.unrecorded,
        [crate::Unrecorded::TooBig {
            path: "big".into(),
            size: 16
        }]
    );
    assert_eq!(
        s.entries().unwrap().len(),
        1,
        "no entry pretends to restore it"
    );
}

#[test]
fn a_submodule_is_out_of_scope_at_begin_and_at_commit() {
    if !has_git() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sub = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(sub.path().join("s.txt"), "s\n").unwrap();
    git(sub.path(), &["init", "-q"]);
    git(sub.path(), &["add", "."]);
    git(sub.path(), &["commit", "-qm", "s"]);
    std::fs::write(d.join("top"), "t\n").unwrap();
    git(d, &["init", "-q"]);
    git(
        d,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            sub.path().to_str().unwrap(),
            "sub",
        ],
    );
    git(d, &["add", "."]);
    git(d, &["commit", "-qm", "i"]);
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("sub/s.txt"), "changed in the submodule\n").unwrap();
    std::fs::write(d.join("top"), "changed\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    assert_eq!(kinds(&r), [("top".into(), ScanChangeKind::Modified)]);
}
