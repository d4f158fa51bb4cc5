//! The watched commit against a whole walk: after random shell changes of
//! every kind, the candidates and directory changes found where the watch
//! saw something happen are exactly those a walk of the whole workspace
//! finds, on the same record.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::tests::{git, has_git};
use super::watch::{Live, Touched};
use super::{changes, dirs};
use crate::{Store, Workspace};

use crate::test_rng::Rng;

/// Every file, link and directory under `root` but `.git` and the ignore
/// file (a change to it sends the commit walking: `watch.rs`'s tests).
fn entries(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    let mut todo = vec![PathBuf::new()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(root.join(&d)).unwrap() {
            let e = e.unwrap();
            let rel = d.join(e.file_name());
            if rel == Path::new(".git") || rel == Path::new(".gitignore") {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                dirs.push(rel.clone());
                todo.push(rel);
            } else {
                files.push(rel);
            }
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// One random shell change in `root` (`outside`: a directory on the same
/// file system, outside the workspace); what it did, for a failure message.
fn change(rng: &mut Rng, root: &Path, outside: &Path, n: usize) -> String {
    let (files, dirs) = entries(root);
    let pick = |rng: &mut Rng, v: &[PathBuf]| v.get(rng.below(v.len().max(1))).cloned();
    let dir = pick(rng, &dirs).unwrap_or_default();
    let file = pick(rng, &files);
    let fresh = format!("n{n}");
    let p = |rel: &Path| root.join(rel);
    let what = rng.below(15);
    match (what, file) {
        (0, Some(f)) if !p(&f).is_symlink() => {
            let mut text = std::fs::read(p(&f)).unwrap_or_default();
            text.extend_from_slice(b"more\n");
            std::fs::write(p(&f), text).unwrap();
            format!("append {f:?}")
        }
        (1, Some(f)) => {
            std::fs::remove_file(p(&f)).unwrap();
            format!("rm {f:?}")
        }
        (2, Some(f)) if !p(&f).is_symlink() => {
            let mode = std::fs::metadata(p(&f)).unwrap().permissions().mode();
            std::fs::set_permissions(p(&f), PermissionsExt::from_mode(mode ^ 0o111)).unwrap();
            format!("chmod {f:?}")
        }
        (3, Some(f)) => {
            let to = dir.join(&fresh);
            std::fs::rename(p(&f), p(&to)).unwrap();
            format!("mv {f:?} {to:?}")
        }
        (4, Some(f)) if !p(&f).is_symlink() => {
            std::fs::remove_file(p(&f)).unwrap();
            std::fs::create_dir_all(p(&f).join("in")).unwrap();
            std::fs::write(p(&f).join("in/x"), "x").unwrap();
            format!("file {f:?} to a tree")
        }
        (5, Some(f)) if !p(&f).is_symlink() => {
            let f = std::fs::File::options().write(true).open(p(&f)).unwrap();
            f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
            "touch".into()
        }
        (6, _) if !dir.as_os_str().is_empty() => {
            std::fs::remove_dir_all(p(&dir)).unwrap();
            format!("rm -r {dir:?}")
        }
        (7, _) if !dir.as_os_str().is_empty() => {
            std::fs::remove_dir_all(p(&dir)).unwrap();
            std::fs::write(p(&dir), "now a file").unwrap();
            format!("tree {dir:?} to a file")
        }
        (8, _) if !dir.as_os_str().is_empty() => {
            let mode = std::fs::metadata(p(&dir)).unwrap().permissions().mode();
            std::fs::set_permissions(p(&dir), PermissionsExt::from_mode(mode ^ 0o020)).unwrap();
            format!("chmod {dir:?}")
        }
        (9, _) if !dir.as_os_str().is_empty() => {
            // Moved to a new name at the top (never into itself).
            std::fs::rename(p(&dir), root.join(&fresh)).unwrap();
            format!("mv {dir:?} {fresh}")
        }
        (10, _) if !dir.as_os_str().is_empty() => {
            std::fs::rename(p(&dir), outside.join(&fresh)).unwrap();
            format!("mv {dir:?} out")
        }
        (11, _) => {
            let from = outside.join(format!("in{n}"));
            std::fs::create_dir_all(from.join("sub")).unwrap();
            std::fs::write(from.join("sub/y"), "y").unwrap();
            std::fs::rename(&from, p(&dir.join(&fresh))).unwrap();
            format!("mv a tree into {dir:?}")
        }
        (12, _) => {
            std::os::unix::fs::symlink("../elsewhere", p(&dir.join(&fresh))).unwrap();
            format!("ln -s in {dir:?}")
        }
        (13, _) => {
            let d = dir.join(&fresh).join("deep");
            std::fs::create_dir_all(p(&d)).unwrap();
            std::fs::write(p(&d).join("z.rs"), "z").unwrap();
            std::fs::write(p(&d).join("z.tmp"), "ignored").unwrap();
            format!("mkdir -p {d:?}")
        }
        _ => {
            let f = dir.join(format!("{fresh}.{}", ["rs", "tmp"][rng.below(2)]));
            std::fs::write(p(&f), "new").unwrap();
            format!("new file {f:?}")
        }
    }
}

/// One random bracket; true when the walk found something changed.
fn same_as_a_walk(seed: u64, in_git: bool) -> bool {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "*.tmp\nbuild/\n").unwrap();
    for d in ["a/b/c", "a/d", "e", "build/out"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in [
        "top.rs",
        "a/1.rs",
        "a/b/2.rs",
        "a/b/c/3.rs",
        "a/d/4.rs",
        "e/5.rs",
        "e/x.tmp",
    ] {
        std::fs::write(root.join(f), f).unwrap();
    }
    std::fs::write(root.join("build/out/tracked"), "tracked though ignored").unwrap();
    if in_git {
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        git(root, &["add", "-f", "build/out/tracked"]);
        git(root, &["commit", "-qm", "i"]);
    }
    // Past the file system's clock tick: nothing is racy by chance, but in
    // every other bracket a file stamped later than the beginning (racy, as
    // one written in its clock tick: the commit looks at it always).
    std::thread::sleep(std::time::Duration::from_millis(30));
    if seed.is_multiple_of(2) {
        let late = std::fs::File::create(root.join("a/late.rs")).unwrap();
        let soon = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        late.set_modified(soon).unwrap();
    }
    let s = Store::new(home.path()).session("s").unwrap();
    let ws = Workspace::open(root).unwrap();
    let scan = s
        .begin_watched_scan(&ws, "m", None, &Default::default())
        .unwrap();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut done = Vec::new();
    for n in 0..1 + rng.below(8) {
        done.push(change(&mut rng, root, outside.path(), n));
    }
    if in_git && rng.below(2) == 0 && root.join("build/out/tracked").is_file() {
        std::fs::write(root.join("build/out/tracked"), "changed").unwrap();
        done.push("write the tracked file git's ignore covers".into());
    }
    let Live {
        mut watch,
        header,
        body,
    } = scan.live.expect("watched");
    let record = super::record::Record {
        header: header.clone(),
        files: body.to_files().unwrap(),
    };
    assert_eq!(record.files.iter().any(|f| f.racy), seed.is_multiple_of(2));
    let events = watch.drain().unwrap();
    let touched =
        Touched::from_events(events.clone()).unwrap_or_else(|| panic!("{events:?} {done:?}"));
    let skip = HashSet::new();
    let (now_w, watched) = changes::compare_touched(&header, &body, &touched, &skip).unwrap();
    let dirs_w = dirs::compare(&header, &now_w, root, |d| touched.covers(d));
    let (now_a, walked) = changes::compare(&record, &skip).unwrap();
    let dirs_a = dirs::compare(&header, &now_a, root, |_| true);
    let show = |c: &[changes::Candidate]| -> Vec<(String, Option<super::walk::Stat>)> {
        c.iter().map(|c| (c.path.clone(), c.now)).collect()
    };
    let why = format!("seed {seed}, git {in_git}: {done:?}");
    assert_eq!(show(&watched), show(&walked), "{why}");
    assert_eq!(dirs_w.made, dirs_a.made, "{why}");
    assert_eq!(dirs_w.removed, dirs_a.removed, "{why}");
    assert_eq!(dirs_w.moded, dirs_a.moded, "{why}");
    // And the commit itself goes through.
    s.commit_scan(&record.header.id).unwrap();
    !walked.is_empty() || !dirs_a.made.is_empty() || !dirs_a.removed.is_empty()
}

#[test]
fn a_watched_commit_finds_what_a_walk_finds_outside_git() {
    let changed = (1..=40).filter(|seed| same_as_a_walk(*seed, false)).count();
    assert!(changed > 20, "most brackets change something: {changed}");
}

#[test]
fn a_watched_commit_finds_what_a_walk_finds_in_git() {
    if has_git() {
        let changed = (1..=25).filter(|seed| same_as_a_walk(*seed, true)).count();
        assert!(changed > 12, "most brackets change something: {changed}");
    }
}

/// A workspace with `near/a.rs` and `far/linked.rs`, the latter a hard link
/// of a file outside it; returns the outside path.
fn linked_workspace(root: &Path, outside: &Path) -> PathBuf {
    std::fs::create_dir_all(root.join("near")).unwrap();
    std::fs::create_dir_all(root.join("far")).unwrap();
    std::fs::write(root.join("near/a.rs"), "a").unwrap();
    let out = outside.join("o.rs");
    std::fs::write(&out, "linked").unwrap();
    std::fs::hard_link(&out, root.join("far/linked.rs")).unwrap();
    std::fs::write(root.join(".gitignore"), "*.tmp\n").unwrap();
    // Past the clock tick: neither file is racy, so only where the commit
    // looks decides what it finds.
    std::thread::sleep(std::time::Duration::from_millis(30));
    out
}

/// The paths a report found changed.
fn found(r: &crate::ScanReport) -> Vec<&str> {
    r.changes.iter().map(|c| c.path.as_str()).collect()
}

#[test]
fn a_watched_commit_looks_only_where_its_watch_saw_something() {
    // A write through a hard link from outside the workspace is the one
    // change no watch of the workspace sees (the module doc says so): a
    // commit that found it walked, whatever it was asked.
    let home = tempfile::tempdir().unwrap();
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = dir.path();
    let out = linked_workspace(root, outside.path());
    let s = Store::new(home.path()).session("s").unwrap();
    let ws = Workspace::open(root).unwrap();

    let scan = s
        .begin_watched_scan(&ws, "m1", None, &Default::default())
        .unwrap();
    assert!(scan.is_watched());
    std::fs::write(root.join("near/a.rs"), "a, changed").unwrap();
    std::fs::write(&out, "linked, changed from outside").unwrap();
    let watched = s.commit_watched_scan(scan).unwrap();
    assert_eq!(found(&watched), ["near/a.rs"], "{watched:?}");

    // The same two changes in a bracket ended as another process ends one
    // (no watch there): the walk finds both.
    let scan = s.begin_scan(&ws, "m2", None).unwrap();
    std::fs::write(root.join("near/a.rs"), "a, changed again").unwrap();
    std::fs::write(&out, "linked, changed from outside again").unwrap();
    let walked = s.commit_scan(&scan).unwrap();
    assert_eq!(found(&walked), ["far/linked.rs", "near/a.rs"], "{walked:?}");

    // A watched bracket whose watch cannot say where (an ignore file was
    // written): the commit walks, and finds both.
    let scan = s
        .begin_watched_scan(&ws, "m3", None, &Default::default())
        .unwrap();
    std::fs::write(root.join("near/a.rs"), "a, a third time").unwrap();
    std::fs::write(&out, "linked, a third time").unwrap();
    std::fs::write(root.join(".gitignore"), "*.tmp\n*.bak\n").unwrap();
    let fell_back = s.commit_watched_scan(scan).unwrap();
    assert_eq!(
        found(&fell_back),
        [".gitignore", "far/linked.rs", "near/a.rs"],
        "{fell_back:?}"
    );
}
