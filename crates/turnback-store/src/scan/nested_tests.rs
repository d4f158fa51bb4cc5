//! Scans of git repositories with nested ones: a submodule and an embedded
//! repository stay out of a bracket's scope.

use crate::{ScanChangeKind, Store, Workspace};

use super::tests::{git, has_git, kinds};

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

/// A repository added as a gitlink without `.gitmodules` (an embedded one):
/// the beginning walks while git reads its index, so it lists the gitlink's
/// files, and must drop them once the index names it.
#[test]
fn an_embedded_repository_is_out_of_scope_though_the_walk_ran_before_the_index_was_read() {
    if !has_git() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/s.txt"), "s\n").unwrap();
    git(&d.join("sub"), &["init", "-q"]);
    git(&d.join("sub"), &["add", "."]);
    git(&d.join("sub"), &["commit", "-qm", "s"]);
    std::fs::write(d.join("top"), "t\n").unwrap();
    git(d, &["init", "-q"]);
    git(d, &["-c", "advice.addEmbeddedRepo=false", "add", "."]);
    git(d, &["commit", "-qm", "i"]);
    assert!(!d.join(".gitmodules").exists());
    let store = Store::new(home.path());
    let s = store.session("s").unwrap();
    let ws = Workspace::open(d).unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("sub/s.txt"), "changed in the embedded repository\n").unwrap();
    std::fs::write(d.join("sub/new.txt"), "new\n").unwrap();
    std::fs::write(d.join("top"), "changed\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    assert_eq!(kinds(&r), [("top".into(), ScanChangeKind::Modified)]);
}
