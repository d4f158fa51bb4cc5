//! The scan bracket end to end on the library, in and outside git.

use std::path::Path;
use std::process::Command;

use crate::{RevertOptions, ScanChangeKind, Store, Workspace};

pub(super) fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{ok:?}");
}

/// True when git runs here; else the test's in-git half says it skipped.
pub(super) fn has_git() -> bool {
    let ok = Command::new("git").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: git is not installed, so the in-git half of this test did not run");
    }
    ok
}

/// A store home, a workspace directory, a session "s" of that store and
/// the workspace opened: what every test here starts from (the files are
/// made after; the workspace sees them).
pub(super) fn bed() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    crate::Session,
    Workspace,
) {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(home.path()).session("s").unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    (home, dir, s, ws)
}

pub(super) fn kinds(r: &crate::ScanReport) -> Vec<(String, ScanChangeKind)> {
    r.changes.iter().map(|c| (c.path.clone(), c.kind)).collect()
}

/// A bracket begun (watched or not) and the way to commit it: from another
/// handle of the session when it is not watched, as another process would.
enum Begun {
    Watched(Box<crate::WatchedScan>),
    Id(String),
}

fn begin(s: &crate::Session, ws: &Workspace, watched: bool, command: Option<&str>) -> Begun {
    if watched {
        let scan = s
            .begin_watched_scan(ws, "m1", command, &Default::default())
            .unwrap();
        assert!(scan.is_watched(), "Linux has a watcher");
        Begun::Watched(Box::new(scan))
    } else {
        Begun::Id(s.begin_scan(ws, "m1", command).unwrap())
    }
}

fn commit(s: &crate::Session, b: Begun) -> crate::ScanReport {
    match b {
        Begun::Watched(scan) => s.commit_watched_scan(*scan).unwrap(),
        Begun::Id(id) => s
            .store()
            .open_session(s.id())
            .unwrap()
            .commit_scan(&id)
            .unwrap(),
    }
}

fn every_change_kind(in_git: bool, watched: bool) {
    let (_home, dir, s, ws) = bed();
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
    let b = begin(&s, &ws, watched, Some("a command"));
    let id = s.open_scans().unwrap()[0].id.clone();
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
    let r = commit(&s, b);
    use ScanChangeKind::*;
    assert_eq!(
        kinds(&r),
        [
            ("edit".into(), Modified),
            ("from".into(), Deleted),
            ("gone".into(), Deleted),
            ("mode".into(), ModeChanged),
            ("new".into(), Created),
            ("new/dir".into(), Created),
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
    every_change_kind(false, false);
}

#[test]
fn every_change_kind_in_git() {
    if has_git() {
        every_change_kind(true, false);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn every_change_kind_watched_outside_git() {
    every_change_kind(false, true);
}

#[cfg(target_os = "linux")]
#[test]
fn every_change_kind_watched_in_git() {
    if has_git() {
        every_change_kind(true, true);
    }
}

#[test]
fn a_rollback_puts_everything_back_and_records_nothing() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("a"), "a\n").unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("a"), "half\n").unwrap();
    std::fs::create_dir(d.join("n")).unwrap();
    std::fs::write(d.join("n/b"), "b\n").unwrap();
    let r = s.rollback_scan(&id).unwrap();
    assert!(r.rolled_back);
    assert_eq!(r.changes.len(), 3, "a, n and n/b");
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a\n");
    assert!(!d.join("n").exists());
    assert!(s.entries().unwrap().is_empty());
    assert!(s.open_scans().unwrap().is_empty());
}

#[test]
fn a_later_edit_refuses_the_undo() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("a"), "a\n").unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("a"), "cmd\n").unwrap();
    s.commit_scan(&id).unwrap();
    std::fs::write(d.join("a"), "later\n").unwrap();
    let err = s.undo(RevertOptions::default()).unwrap_err();
    assert!(matches!(err, crate::Error::Refused { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "later\n");
}

/// Every name under `d` (not `.git`) with what it is: a directory and its
/// mode, or a file, its mode and its contents.
fn tree(d: &Path) -> Vec<(String, String)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut todo = vec![d.to_owned()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(d).unwrap().to_string_lossy().into_owned();
            if rel == ".git" {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            if md.is_dir() {
                out.push((rel, format!("dir {mode:o}")));
                todo.push(p);
            } else {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((rel, format!("file {mode:o} {text:?}")));
            }
        }
    }
    out.sort();
    out
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

/// A file replaced by a directory tree and a directory tree by a file, an
/// empty directory made and one removed (with an unusual mode): all found,
/// and undo, redo and undo again give each tree back exactly.
fn swaps_and_empty_dirs(in_git: bool, watched: bool) {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("f"), "file\n").unwrap();
    chmod(&d.join("f"), 0o640);
    std::fs::create_dir_all(d.join("g/h")).unwrap();
    std::fs::write(d.join("g/inner"), "inner\n").unwrap();
    std::fs::write(d.join("g/h/deep"), "deep\n").unwrap();
    chmod(&d.join("g"), 0o750);
    std::fs::create_dir(d.join("empty")).unwrap();
    chmod(&d.join("empty"), 0o700);
    if in_git {
        git(d, &["init", "-q"]);
        git(d, &["add", "."]);
        git(d, &["commit", "-qm", "i"]);
    }
    let start = tree(d);
    let b = begin(&s, &ws, watched, None);
    std::fs::remove_file(d.join("f")).unwrap();
    std::fs::create_dir_all(d.join("f/sub")).unwrap();
    std::fs::write(d.join("f/x"), "x\n").unwrap();
    std::fs::write(d.join("f/sub/y"), "y\n").unwrap();
    std::fs::remove_dir_all(d.join("g")).unwrap();
    std::fs::write(d.join("g"), "now a file\n").unwrap();
    std::fs::remove_dir(d.join("empty")).unwrap();
    std::fs::create_dir(d.join("made")).unwrap();
    let after = tree(d);
    let r = commit(&s, b);
    use ScanChangeKind::*;
    assert_eq!(
        kinds(&r),
        [
            ("empty".into(), Deleted),
            ("f".into(), Replaced),
            ("f/sub".into(), Created),
            ("f/sub/y".into(), Created),
            ("f/x".into(), Created),
            ("g".into(), Replaced),
            ("g/h".into(), Deleted),
            ("g/h/deep".into(), Deleted),
            ("g/inner".into(), Deleted),
            ("made".into(), Created),
        ]
    );
    let dirs: Vec<&str> = r
        .changes
        .iter()
        .filter(|c| c.directory)
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(dirs, ["empty", "f", "f/sub", "g/h", "made"]);
    s.undo(RevertOptions::default()).unwrap();
    assert_eq!(tree(d), start, "the undo gives the tree back");
    s.redo(RevertOptions::default()).unwrap();
    assert_eq!(tree(d), after, "the redo gives the command's tree back");
    s.undo(RevertOptions::default()).unwrap();
    assert_eq!(tree(d), start, "and the undo again");
}

#[test]
fn swaps_and_empty_directories_undo_and_redo_outside_git() {
    swaps_and_empty_dirs(false, false);
}

#[test]
fn swaps_and_empty_directories_undo_and_redo_in_git() {
    if has_git() {
        swaps_and_empty_dirs(true, false);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn swaps_and_empty_directories_watched_outside_git() {
    swaps_and_empty_dirs(false, true);
}

#[cfg(target_os = "linux")]
#[test]
fn swaps_and_empty_directories_watched_in_git() {
    if has_git() {
        swaps_and_empty_dirs(true, true);
    }
}

#[test]
fn a_file_does_not_go_back_over_a_directory_holding_what_the_command_did_not_make() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("f"), "file\n").unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::remove_file(d.join("f")).unwrap();
    std::fs::create_dir_all(d.join("f/sub")).unwrap();
    std::fs::write(d.join("f/sub/x"), "x\n").unwrap();
    s.commit_scan(&id).unwrap();
    // Someone's file, deep in the directory the command made.
    std::fs::write(d.join("f/sub/later"), "later\n").unwrap();
    let before = tree(d);
    for force in [false, true] {
        let opts = RevertOptions {
            force,
            ..RevertOptions::default()
        };
        match s.undo(opts) {
            Err(crate::Error::Refused { conflicts, .. }) => {
                assert_eq!(conflicts.len(), 1, "{conflicts:?}");
                assert_eq!(conflicts[0].path, "f");
                assert_eq!(
                    conflicts[0].reason,
                    crate::ConflictReason::NotEmpty {
                        found: "f/sub/later".into()
                    }
                );
            }
            other => panic!("force {force}: expected a refusal, got {other:?}"),
        }
        assert_eq!(tree(d), before, "force {force}: nothing touched");
    }
    assert_eq!(s.entries().unwrap().len(), 3);
    // Gone again, the undo goes through.
    std::fs::remove_file(d.join("f/sub/later")).unwrap();
    s.undo(RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), "file\n");
}

#[test]
fn a_made_directory_holding_an_ignored_file_stays_and_the_undo_goes_on() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(d.join("a"), "a\n").unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::create_dir(d.join("logs")).unwrap();
    std::fs::write(d.join("logs/run.log"), "log\n").unwrap();
    std::fs::write(d.join("a"), "b\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    use ScanChangeKind::*;
    assert_eq!(
        kinds(&r),
        [("a".into(), Modified), ("logs".into(), Created)]
    );
    let kept = crate::RevertAction::KeepDirectory {
        holding: "logs/run.log".into(),
    };
    let preview = s
        .undo(RevertOptions {
            dry_run: true,
            ..RevertOptions::default()
        })
        .unwrap();
    let action = |r: &crate::RevertReport, path: &str| {
        let f = r.files.iter().find(|f| f.path == path).unwrap();
        f.action.clone()
    };
    assert_eq!(action(&preview, "logs"), kept, "the preview says it stays");
    let r = s.undo(RevertOptions::default()).unwrap();
    assert_eq!(action(&r, "logs"), kept, "reported kept, not deleted");
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a\n");
    assert_eq!(
        std::fs::read_to_string(d.join("logs/run.log")).unwrap(),
        "log\n",
        "an ignored file is never deleted, nor its directory"
    );
    // A rollback says so too, with what the change was.
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::create_dir_all(d.join("more/deep")).unwrap();
    std::fs::write(d.join("more/deep/x.log"), "log\n").unwrap();
    std::fs::write(d.join("more/made"), "made\n").unwrap();
    std::fs::remove_file(d.join("a")).unwrap();
    let r = s.rollback_scan(&id).unwrap();
    let seen: Vec<_> = r
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.kind, c.directory, c.kept.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("a", Deleted, false, None),
            ("more", Created, true, Some("more/deep")),
            ("more/deep", Created, true, Some("more/deep/x.log")),
            ("more/made", Created, false, None),
        ]
    );
    assert!(!d.join("more/made").exists());
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a\n");
}

#[test]
fn a_rollback_of_swaps_puts_the_tree_back_and_records_nothing() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("f"), "file\n").unwrap();
    std::fs::create_dir(d.join("g")).unwrap();
    std::fs::write(d.join("g/inner"), "inner\n").unwrap();
    chmod(&d.join("g"), 0o711);
    let start = tree(d);
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::remove_file(d.join("f")).unwrap();
    std::fs::create_dir(d.join("f")).unwrap();
    std::fs::write(d.join("f/x"), "x\n").unwrap();
    std::fs::remove_dir_all(d.join("g")).unwrap();
    std::fs::write(d.join("g"), "g\n").unwrap();
    s.rollback_scan(&id).unwrap();
    assert_eq!(tree(d), start);
    assert!(s.entries().unwrap().is_empty());
}

/// A rollback that would have to put a file back where the command made a
/// directory, which now holds a file the scan did not record (an ignored
/// one), refuses before it records or touches anything, as an undo does;
/// the scan stays open, and rolls back once the file is gone.
#[test]
fn a_rollback_over_a_directory_holding_an_unrecorded_file_refuses_up_front() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(d.join("a"), "a\n").unwrap();
    std::fs::write(d.join("f"), "file\n").unwrap();
    let start = tree(d);
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("a"), "b\n").unwrap();
    std::fs::remove_file(d.join("f")).unwrap();
    std::fs::create_dir_all(d.join("f/sub")).unwrap();
    std::fs::write(d.join("f/x"), "x\n").unwrap();
    std::fs::write(d.join("f/sub/run.log"), "log\n").unwrap();
    let held = tree(d);
    match s.rollback_scan(&id) {
        Err(crate::Error::Refused { conflicts, .. }) => {
            assert_eq!(conflicts.len(), 1, "{conflicts:?}");
            assert_eq!(conflicts[0].path, "f");
            assert_eq!(
                conflicts[0].reason,
                crate::ConflictReason::NotEmpty {
                    found: "f/sub/run.log".into()
                }
            );
            assert!(conflicts[0].to_string().contains("f/sub/run.log"));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(tree(d), held, "nothing touched");
    assert!(s.entries().unwrap().is_empty(), "nothing recorded");
    assert_eq!(s.open_scans().unwrap().len(), 1, "the scan stays open");
    std::fs::remove_file(d.join("f/sub/run.log")).unwrap();
    s.rollback_scan(&id).unwrap();
    assert_eq!(tree(d), start);
    assert!(s.open_scans().unwrap().is_empty());
}

/// A `chmod` of a directory is a change of its own: found, undone, redone;
/// one that shuts its owner out is the step's last entry (an undo opens it
/// first, a redo closes it after writing inside).
#[test]
fn a_directory_chmod_is_recorded_undone_and_redone() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::create_dir_all(d.join("open/inner")).unwrap();
    std::fs::create_dir(d.join("shut")).unwrap();
    std::fs::write(d.join("shut/f"), "f\n").unwrap();
    chmod(&d.join("open/inner"), 0o700);
    chmod(&d.join("shut"), 0o755);
    let start = tree(d);
    let id = s.begin_scan(&ws, "m", None).unwrap();
    chmod(&d.join("open/inner"), 0o755);
    chmod(&d.join("open"), 0o750);
    std::fs::write(d.join("shut/f"), "g\n").unwrap();
    chmod(&d.join("shut"), 0o555);
    let after = tree(d);
    let r = s.commit_scan(&id).unwrap();
    use ScanChangeKind::*;
    assert_eq!(
        kinds(&r),
        [
            ("open".into(), ModeChanged),
            ("open/inner".into(), ModeChanged),
            ("shut".into(), ModeChanged),
            ("shut/f".into(), Modified),
        ]
    );
    assert!(
        r.changes
            .iter()
            .all(|c| c.directory == (c.path != "shut/f"))
    );
    let seq = |p: &str| r.changes.iter().find(|c| c.path == p).unwrap().seq;
    assert!(
        seq("open") < seq("open/inner"),
        "path order among the files"
    );
    assert!(seq("shut/f") < seq("shut"), "a directory shut goes last");
    let entries = s.entries().unwrap();
    let shut = entries.iter().find(|e| e.path == "shut").unwrap();
    assert_eq!(shut.before, crate::FileState::directory(Some(0o755)));
    assert_eq!(shut.after, Some(crate::FileState::directory(Some(0o555))));
    s.undo(RevertOptions::default()).unwrap();
    assert_eq!(tree(d), start, "the undo puts every mode back");
    s.redo(RevertOptions::default()).unwrap();
    assert_eq!(tree(d), after, "the redo does the chmods again");
    s.undo(RevertOptions::default()).unwrap();
    assert_eq!(tree(d), start);
}

#[test]
fn a_scan_record_of_format_1_still_commits() {
    // Its directories are names only: one the command removed comes back
    // with the default mode.
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::create_dir(d.join("e")).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    let path = s.session_dir().scan_paths(&id).0;
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(head).unwrap();
    header["format"] = 1.into();
    header["dirs"] = serde_json::json!(["e"]);
    std::fs::write(&path, format!("{header}\n{rest}")).unwrap();
    std::fs::remove_dir(d.join("e")).unwrap();
    let r = s.commit_scan(&id).unwrap();
    assert_eq!(kinds(&r), [("e".into(), ScanChangeKind::Deleted)]);
    s.undo(RevertOptions::default()).unwrap();
    assert!(d.join("e").is_dir());
}

#[test]
fn a_file_over_the_size_limit_is_reported_not_backed_up() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("big"), "0123456789abcdef").unwrap();
    std::fs::write(d.join("small"), "s").unwrap();
    let opts = crate::ScanOptions {
        size_limit: 8,
        ..Default::default()
    };
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
