//! Byte-exact round trips: whatever a protected write or remove changed, undo,
//! revert and rewind put back exactly (contents, mode, absence, directories).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use turnback_store::{
    ConflictReason, Error, FileState, FileStatus, RevertAction, Session, Workspace,
};

use crate::util::{self, Env, forced, mode_of, plain, read, sha256_hex};

// ---------------------------------------------------------------- helpers

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    assert_eq!(mode_of(p), mode, "the test could not set mode {mode:o}");
}

/// The mode an ordinary new file gets under this process's umask.
fn umask_mode() -> u32 {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("probe");
    std::fs::write(&p, b"").unwrap();
    mode_of(&p)
}

/// Every byte value, then byte sequences that are not valid UTF-8.
fn binary_old() -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    v.extend_from_slice(&[
        0xff, 0xfe, 0x00, 0x00, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x90, 0x28, 0xbc,
        0x00,
    ]);
    v
}

/// Other binary contents of another length, NULs and invalid UTF-8 included.
fn binary_new() -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).rev().collect();
    v.extend_from_slice(b"\0\0\r\n\x80\xff\xfe\0");
    v.extend((0..1000u32).map(|i| (i.wrapping_mul(7) % 256) as u8));
    v
}

/// A reader that hands out at most `chunk` bytes per read, to cross buffer
/// boundaries at odd places.
struct Dribble<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.len().min(buf.len()).min(self.chunk);
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Kind, mode and exact bytes of everything under `root` (tree_digest shows
/// contents lossily; this does not).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File { mode: u32, bytes: Vec<u8> },
    Link(PathBuf),
}

fn exact_tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_owned();
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.is_symlink() {
                out.insert(rel, Node::Link(std::fs::read_link(&p).unwrap()));
            } else if md.is_dir() {
                out.insert(rel, Node::Dir);
                walk(root, &p, out);
            } else {
                out.insert(
                    rel,
                    Node::File {
                        mode: md.permissions().mode() & 0o7777,
                        bytes: read(&p),
                    },
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Both views of the workspace: the shared digest and the exact bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    digest: BTreeMap<PathBuf, String>,
    exact: BTreeMap<PathBuf, Node>,
}

fn snapshot(root: &Path) -> Snapshot {
    Snapshot {
        digest: util::tree_digest(root),
        exact: exact_tree(root),
    }
}

/// The paths that differ between two snapshots, described; empty when equal.
fn tree_diff(now: &Snapshot, expected: &Snapshot) -> Vec<String> {
    let keys: std::collections::BTreeSet<&PathBuf> =
        now.exact.keys().chain(expected.exact.keys()).collect();
    let show = |t: &Snapshot, k: &PathBuf| match t.exact.get(k) {
        None => "absent".to_string(),
        Some(Node::File { mode, bytes }) => format!(
            "file {mode:o}, {} bytes, sha256 {}",
            bytes.len(),
            &sha256_hex(bytes)[..12]
        ),
        Some(n) => format!("{n:?}"),
    };
    let mut out: Vec<String> = keys
        .into_iter()
        .filter(|k| now.exact.get(*k) != expected.exact.get(*k))
        .map(|k| {
            format!(
                "{}: is {}, expected {}",
                k.display(),
                show(now, k),
                show(expected, k)
            )
        })
        .collect();
    if out.is_empty() && now.digest != expected.digest {
        out.push(format!(
            "tree digests differ: {:?} vs {:?}",
            now.digest, expected.digest
        ));
    }
    out
}

/// Fails naming only the paths that differ (the full digests are long).
fn assert_same_tree(now: &Snapshot, expected: &Snapshot, what: &str) {
    let diff = tree_diff(now, expected);
    assert!(diff.is_empty(), "{what}: workspace differs: {diff:#?}");
    assert_eq!(now.digest, expected.digest, "{what}: tree digest differs");
}

// ---------------------------------------------------------------- binary

#[test]
fn binary_contents_survive_write_and_undo_byte_exactly() {
    let (env, s, ws) = Env::with_session("binary");
    let p = env.path("blob.bin");
    let (old, new) = (binary_old(), binary_new());
    assert!(std::str::from_utf8(&old).is_err() && std::str::from_utf8(&new).is_err());
    std::fs::write(&p, &old).unwrap();
    let mode = mode_of(&p);
    let owner = {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(&p).unwrap();
        (md.uid(), md.gid())
    };

    let e = s.write(&ws, "blob.bin", &new[..], "m1").unwrap();
    assert_eq!(read(&p), new);
    assert_eq!(mode_of(&p), mode);
    assert_eq!(e.path, "blob.bin");
    assert_eq!(e.message_id, "m1");
    assert_eq!(
        e.before,
        FileState {
            exists: true,
            sha256: Some(sha256_hex(&old)),
            size: old.len() as u64,
            mode: Some(mode),
            // A backup records the owner, for a restore to keep it.
            uid: Some(owner.0),
            gid: Some(owner.1),
            dir: false,
        }
    );
    assert_eq!(
        e.after,
        Some(FileState {
            exists: true,
            sha256: Some(sha256_hex(&new)),
            size: new.len() as u64,
            mode: Some(mode),
            uid: None,
            gid: None,
            dir: false,
        })
    );
    assert_eq!(s.entries().unwrap(), vec![e.clone()]);

    let r = s.undo(plain()).unwrap();
    assert!(r.applied);
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.files[0].path, "blob.bin");
    assert_eq!(r.files[0].seqs, vec![e.seq]);
    assert_eq!(
        r.files[0].action,
        RevertAction::Write {
            size: old.len() as u64
        }
    );
    assert_eq!(r.files[0].status, FileStatus::Safe);
    assert_eq!(read(&p), old, "undo must restore the old bytes exactly");
    assert_eq!(mode_of(&p), mode);
    assert!(s.entries().unwrap().is_empty());
    assert!(util::stray_temps(env.ws.path()).is_empty());
}

#[test]
fn binary_contents_survive_revert_of_a_file_written_twice() {
    let (env, s, ws) = Env::with_session("binary2");
    let p = env.path("x.bin");
    let (old, new) = (binary_old(), binary_new());
    std::fs::write(&p, &old).unwrap();
    let e1 = s.write(&ws, "x.bin", &new[..], "m1").unwrap();
    let e2 = s.write(&ws, "x.bin", &old[..], "m2").unwrap();
    assert_eq!(e2.before.sha256, e1.after.as_ref().unwrap().sha256);
    assert_eq!(e2.version, 2);
    // Undoing the newest change only goes back to the first write's bytes.
    s.revert(&ws, "x.bin", plain()).unwrap();
    assert_eq!(read(&p), new);
    s.revert(&ws, "x.bin", plain()).unwrap();
    assert_eq!(read(&p), old);
    assert!(s.entries().unwrap().is_empty());
}

// ---------------------------------------------------------------- modes

fn mode_round_trip(mode: u32) {
    let (env, s, ws) = Env::with_session("modes");
    let p = env.path("tool.sh");
    let old = b"#!/bin/sh\necho old\n".to_vec();
    std::fs::write(&p, &old).unwrap();
    set_mode(&p, mode);

    let e = s
        .write(&ws, "tool.sh", &b"#!/bin/sh\necho new\n"[..], "m1")
        .unwrap();
    assert_eq!(mode_of(&p), mode, "a write must keep the file's mode");
    assert_eq!(e.before.mode, Some(mode));
    assert_eq!(e.after.as_ref().unwrap().mode, Some(mode));
    assert_eq!(read(&p), b"#!/bin/sh\necho new\n");

    s.undo(plain()).unwrap();
    assert_eq!(read(&p), old);
    assert_eq!(mode_of(&p), mode, "undo must restore the mode");
}

#[test]
fn an_executable_keeps_mode_0755_through_write_and_undo() {
    mode_round_trip(0o755);
}

#[test]
fn a_private_file_keeps_mode_0600_through_write_and_undo() {
    mode_round_trip(0o600);
}

#[test]
fn a_mode_change_by_hand_is_a_conflict_and_a_forced_undo_restores_the_recorded_mode() {
    // A chmod since the write is a change a revert would destroy (issue 10):
    // refused, then forced, undo restores the recorded contents and mode.
    let (env, s, ws) = Env::with_session("chmod");
    let p = env.path("run");
    std::fs::write(&p, b"old").unwrap();
    set_mode(&p, 0o750);
    s.write(&ws, "run", &b"new"[..], "m1").unwrap();
    set_mode(&p, 0o644);
    assert!(matches!(s.undo(plain()), Err(Error::Refused { .. })));
    assert_eq!((read(&p).as_slice(), mode_of(&p)), (&b"new"[..], 0o644));
    let r = s.undo(forced()).unwrap();
    assert!(matches!(
        r.files[0].status,
        FileStatus::Conflict(ConflictReason::ChangedSince { .. })
    ));
    assert_eq!(read(&p), b"old");
    assert_eq!(mode_of(&p), 0o750);
    // Redo puts back the mode the undo found, too.
    s.redo(forced()).unwrap();
    assert_eq!((read(&p).as_slice(), mode_of(&p)), (&b"new"[..], 0o644));
}

#[test]
fn a_new_file_gets_the_umask_mode() {
    let (env, s, ws) = Env::with_session("newmode");
    let expected = umask_mode();
    let e = s.write(&ws, "fresh.txt", &b"fresh\n"[..], "m1").unwrap();
    let p = env.path("fresh.txt");
    assert_eq!(mode_of(&p), expected);
    assert_eq!(e.before, FileState::absent());
    assert_eq!(e.after.as_ref().unwrap().mode, Some(expected));
    assert!(e.created_dirs.is_empty());
}

#[test]
fn empty_files_are_present_not_absent() {
    let (env, s, ws) = Env::with_session("empty");
    let p = env.path("empty");
    let empty_sha = sha256_hex(b"");

    // Empty before: undo gives back an empty file, not no file.
    std::fs::write(&p, b"").unwrap();
    let e = s.write(&ws, "empty", &b"filled"[..], "m1").unwrap();
    assert!(e.before.exists);
    assert_eq!(e.before.size, 0);
    assert_eq!(e.before.sha256.as_deref(), Some(empty_sha.as_str()));
    s.undo(plain()).unwrap();
    assert_eq!(read(&p), b"");

    // Empty after: the write really empties it, and undo refills it.
    std::fs::write(&p, b"full").unwrap();
    let e = s.write(&ws, "empty", std::io::empty(), "m2").unwrap();
    assert_eq!(
        e.after.as_ref().unwrap().sha256.as_deref(),
        Some(empty_sha.as_str())
    );
    assert_eq!(read(&p), b"");
    s.undo(plain()).unwrap();
    assert_eq!(read(&p), b"full");

    // An empty file removed comes back empty.
    std::fs::write(&p, b"").unwrap();
    s.remove(&ws, "empty", "m3").unwrap();
    assert!(!p.exists());
    s.undo(plain()).unwrap();
    assert_eq!(read(&p), b"");
}

// ---------------------------------------------------------------- deletes and creates

#[test]
fn a_removed_file_comes_back_with_its_bytes_and_mode() {
    let (env, s, ws) = Env::with_session("remove");
    let p = env.path("gone.bin");
    let old = binary_old();
    std::fs::write(&p, &old).unwrap();
    set_mode(&p, 0o640);

    let e = s.remove(&ws, "gone.bin", "m1").unwrap();
    assert!(!p.exists());
    assert_eq!(e.before.sha256.as_deref(), Some(sha256_hex(&old).as_str()));
    assert_eq!(e.before.size, old.len() as u64);
    assert_eq!(e.before.mode, Some(0o640));
    assert_eq!(e.after, Some(FileState::absent()));

    let r = s.undo(plain()).unwrap();
    assert_eq!(
        r.files[0].action,
        RevertAction::Write {
            size: old.len() as u64
        }
    );
    assert_eq!(read(&p), old);
    assert_eq!(mode_of(&p), 0o640);
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn a_removed_executable_comes_back_by_revert() {
    let (env, s, ws) = Env::with_session("remove-x");
    let p = env.path("bin/tool");
    std::fs::create_dir(env.path("bin")).unwrap();
    std::fs::write(&p, b"#!/bin/sh\nexit 0\n").unwrap();
    set_mode(&p, 0o755);
    s.remove(&ws, "bin/tool", "m1").unwrap();
    s.revert(&ws, "bin/tool", plain()).unwrap();
    assert_eq!(read(&p), b"#!/bin/sh\nexit 0\n");
    assert_eq!(mode_of(&p), 0o755);
}

#[test]
fn a_removed_file_whose_directory_was_deleted_since_comes_back_with_it() {
    let (env, s, ws) = Env::with_session("remove-dir");
    std::fs::create_dir_all(env.path("d/e")).unwrap();
    std::fs::write(env.path("d/e/f.txt"), b"keep me").unwrap();
    s.remove(&ws, "d/e/f.txt", "m1").unwrap();
    std::fs::remove_dir_all(env.path("d")).unwrap();
    s.undo(plain()).unwrap();
    assert_eq!(read(env.path("d/e/f.txt")), b"keep me");
}

#[test]
fn a_created_file_goes_away() {
    let (env, s, ws) = Env::with_session("create");
    let before = snapshot(env.ws.path());
    let e = s.write(&ws, "new.txt", &b"brand new\n"[..], "m1").unwrap();
    assert_eq!(e.before, FileState::absent());
    assert!(env.path("new.txt").exists());

    let r = s.undo(plain()).unwrap();
    assert_eq!(r.files[0].action, RevertAction::Delete);
    assert_eq!(r.files[0].status, FileStatus::Safe);
    assert!(!env.path("new.txt").exists());
    assert_same_tree(&snapshot(env.ws.path()), &before, "after undo of a create");
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn undo_of_a_file_in_new_directories_removes_them_too() {
    let (env, s, ws) = Env::with_session("nested");
    let e = s.write(&ws, "a/b/c.txt", &b"deep\n"[..], "m1").unwrap();
    assert_eq!(e.created_dirs, vec!["a".to_string(), "a/b".to_string()]);
    assert_eq!(read(env.path("a/b/c.txt")), b"deep\n");

    s.undo(plain()).unwrap();
    assert!(
        !env.path("a").exists(),
        "undo must remove the directories it created"
    );
    assert!(util::tree_digest(env.ws.path()).is_empty());
}

#[test]
fn undo_keeps_a_created_directory_that_holds_another_file() {
    let (env, s, ws) = Env::with_session("nested-keep");
    s.write(&ws, "a/b/c.txt", &b"deep\n"[..], "m1").unwrap();
    std::fs::write(env.path("a/mine.txt"), b"by hand").unwrap();

    s.undo(plain()).unwrap();
    assert!(!env.path("a/b").exists(), "a/b is empty: it goes");
    assert!(env.path("a").is_dir(), "a holds another file: it stays");
    assert_eq!(read(env.path("a/mine.txt")), b"by hand");
}

#[test]
fn undo_removes_only_the_directories_the_write_created() {
    let (env, s, ws) = Env::with_session("nested-some");
    std::fs::create_dir(env.path("a")).unwrap();
    let e = s.write(&ws, "a/b/c.txt", &b"deep\n"[..], "m1").unwrap();
    assert_eq!(e.created_dirs, vec!["a/b".to_string()]);
    s.undo(plain()).unwrap();
    assert!(!env.path("a/b").exists());
    assert!(
        env.path("a").is_dir(),
        "a existed before: it stays, even empty"
    );
}

// ---------------------------------------------------------------- history and rewind

enum Op {
    Write(&'static str, Vec<u8>),
    Remove(&'static str),
}

fn history() -> Vec<(&'static str, Vec<Op>)> {
    use Op::*;
    let t = |s: &str| s.as_bytes().to_vec();
    let mut reversed = binary_old();
    reversed.reverse();
    vec![
        (
            "m1",
            vec![
                Write("README.md", t("readme v1\n")),
                Write("src/lib.rs", t("lib v1\n")),
                Write("src/lib.rs", t("lib v2\n")),
            ],
        ),
        (
            "m2",
            vec![
                Write("src/deep/x.rs", t("x v1\n")),
                Remove("old.txt"),
                Write("bin/run.sh", t("#!/bin/sh\necho 2\n")),
            ],
        ),
        (
            "m3",
            vec![
                Write("src/lib.rs", t("lib v3\n")),
                Write("data.bin", binary_new()),
                Remove("README.md"),
            ],
        ),
        (
            "m4",
            vec![
                Write("README.md", t("readme v4\n")),
                Write("old.txt", t("old, reborn\n")),
                Write("src/deep/nested/y.rs", t("y v1\n")),
            ],
        ),
        (
            "m5",
            vec![
                Remove("src/lib.rs"),
                Write("data.bin", reversed),
                Remove("src/deep/nested/y.rs"),
                Write("bin/run.sh", t("#!/bin/sh\necho 5\n")),
            ],
        ),
    ]
}

/// Sets up the starting files, plays the history, and returns each message id
/// with the workspace as it was just before that message, plus the final state.
fn play_history(
    env: &Env,
    s: &Session,
    ws: &Workspace,
) -> (Vec<(&'static str, Snapshot)>, Snapshot) {
    std::fs::write(env.path("README.md"), b"readme v0\n").unwrap();
    set_mode(&env.path("README.md"), 0o644);
    std::fs::create_dir(env.path("bin")).unwrap();
    std::fs::write(env.path("bin/run.sh"), b"#!/bin/sh\necho 0\n").unwrap();
    set_mode(&env.path("bin/run.sh"), 0o755);
    std::fs::write(env.path("data.bin"), binary_old()).unwrap();
    set_mode(&env.path("data.bin"), 0o600);
    std::fs::write(env.path("old.txt"), b"old\n").unwrap();
    set_mode(&env.path("old.txt"), 0o640);

    let mut before = Vec::new();
    for (msg, ops) in history() {
        before.push((msg, snapshot(env.ws.path())));
        for op in ops {
            match op {
                Op::Write(p, bytes) => {
                    s.write(ws, p, &bytes[..], msg).unwrap();
                    assert_eq!(read(env.path(p)), bytes);
                }
                Op::Remove(p) => {
                    s.remove(ws, p, msg).unwrap();
                    assert!(!env.path(p).exists());
                }
            }
        }
    }
    (before, snapshot(env.ws.path()))
}

#[test]
fn rewind_to_each_message_restores_the_workspace_before_it() {
    // Every message is checked (in a fresh workspace each) before failing, so a
    // failure lists all the messages whose rewind went wrong.
    let messages: Vec<&str> = history().iter().map(|(m, _)| *m).collect();
    let mut failures: Vec<String> = Vec::new();
    for (k, msg) in messages.iter().enumerate() {
        let env = Env::new();
        let s = env.session("history");
        let ws = env.workspace();
        let (before, _) = play_history(&env, &s, &ws);
        let all = s.entries().unwrap();
        let first = all.iter().find(|e| e.message_id == *msg).unwrap().seq;

        let r = s.rewind(msg, plain()).unwrap();
        assert!(r.applied);
        assert!(
            r.files.iter().all(|f| !f.status.is_conflict()),
            "rewind {msg}: {r:?}"
        );
        for d in tree_diff(&snapshot(env.ws.path()), &before[k].1) {
            failures.push(format!("rewind to {msg}: {d}"));
        }
        let left: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
        let expected: Vec<u64> = all
            .iter()
            .filter(|e| e.seq < first)
            .map(|e| e.seq)
            .collect();
        if left != expected {
            failures.push(format!(
                "rewind to {msg}: entries left {left:?}, expected {expected:?}"
            ));
        }
        let temps = util::stray_temps(env.ws.path());
        if !temps.is_empty() {
            failures.push(format!("rewind to {msg}: stray temporaries {temps:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn rewinding_progressively_from_the_newest_message_walks_back_through_every_state() {
    let (env, s, ws) = Env::with_session("history");
    let (before, _) = play_history(&env, &s, &ws);
    for (msg, expected) in before.iter().rev() {
        let r = s.rewind(msg, plain()).unwrap();
        assert!(r.applied);
        assert_same_tree(
            &snapshot(env.ws.path()),
            expected,
            &format!("progressive rewind to {msg}"),
        );
        assert!(
            s.entries()
                .unwrap()
                .iter()
                .all(|e| e.message_id.as_str() < *msg)
        );
    }
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn undo_one_entry_at_a_time_walks_back_to_the_start() {
    let (env, s, ws) = Env::with_session("history");
    let (before, _) = play_history(&env, &s, &ws);
    while !s.entries().unwrap().is_empty() {
        s.undo(plain()).unwrap();
    }
    assert_same_tree(
        &snapshot(env.ws.path()),
        &before[0].1,
        "undo of every entry",
    );
}

#[test]
fn rewind_removes_a_directory_the_message_created_even_when_a_later_message_wrote_deeper_in_it() {
    // m1 creates src/ (for src/lib.rs), m2 creates src/deep/ (for x.rs), m3
    // changes src/lib.rs again. Rewinding m1 must leave no src/ behind, whatever
    // order the files are restored in.
    let (env, s, ws) = Env::with_session("dirs");
    let before = snapshot(env.ws.path());
    s.write(&ws, "src/lib.rs", &b"v1"[..], "m1").unwrap();
    s.write(&ws, "src/deep/x.rs", &b"x"[..], "m2").unwrap();
    s.write(&ws, "src/lib.rs", &b"v2"[..], "m3").unwrap();
    s.rewind("m1", plain()).unwrap();
    assert!(s.entries().unwrap().is_empty());
    assert_same_tree(&snapshot(env.ws.path()), &before, "rewind to m1");
}

// ---------------------------------------------------------------- size

#[test]
fn a_five_mib_file_round_trips_byte_exactly() {
    let (env, s, ws) = Env::with_session("big");
    let p = env.path("big.dat");
    const N: usize = 5 * 1024 * 1024;
    let old: Vec<u8> = (0..N).map(|i| (i * 31 + i / 4093) as u8).collect();
    let new: Vec<u8> = (0..N + 17)
        .map(|i| (i * 7 + i / 65_521 + 3) as u8)
        .collect();
    std::fs::write(&p, &old).unwrap();

    let e = s
        .write(
            &ws,
            "big.dat",
            Dribble {
                data: &new,
                chunk: 100_003,
            },
            "m1",
        )
        .unwrap();
    assert_eq!(e.before.size, N as u64);
    assert_eq!(e.before.sha256.as_deref(), Some(sha256_hex(&old).as_str()));
    let after = e.after.as_ref().unwrap();
    assert_eq!(after.size, new.len() as u64);
    assert_eq!(after.sha256.as_deref(), Some(sha256_hex(&new).as_str()));
    assert!(read(&p) == new, "written bytes differ");

    s.undo(plain()).unwrap();
    assert!(read(&p) == old, "restored bytes differ");
}
