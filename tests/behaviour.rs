//! The safety check (refusals, already-reverted files, uncommitted entries), the
//! checkpoint bracket, the file lock, dry runs, the error variants and listings.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use turnback_store::{
    ChangedBy, Conflict, ConflictReason, Error, FileRevert, FileState, FileStatus, Options,
    RevertAction, RevertOptions, RevertReport, Store, TrackedFile, Workspace,
};

use crate::util::{self, Env, dry, forced, mode_of, plain, read, sha256_hex};

fn inode(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().ino()
}

/// The refusal's session and conflicts, or a panic naming what came instead.
fn refusal(r: turnback_store::Result<RevertReport>) -> (String, Vec<Conflict>) {
    match r {
        Err(e @ Error::Refused { .. }) => {
            assert!(e.is_refusal());
            match e {
                Error::Refused { session, conflicts } => (session, conflicts),
                _ => unreachable!(),
            }
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// ---------------------------------------------------------------- changed since

#[test]
fn a_file_edited_by_hand_since_refuses_undo_until_forced() {
    let (env, s, ws) = Env::with_session("hand");
    let p = env.path("f.txt");
    std::fs::write(&p, b"v0").unwrap();
    let e = s.write(&ws, "f.txt", &b"v1"[..], "m1").unwrap();
    std::fs::write(&p, b"edited by hand").unwrap();
    let ino = inode(&p);

    let (session, conflicts) = refusal(s.undo(plain()));
    assert_eq!(session, "hand");
    assert_eq!(
        conflicts,
        vec![Conflict {
            workspace: ws.root().to_owned(),
            path: "f.txt".into(),
            seq: e.seq,
            reason: ConflictReason::ChangedSince { by: None },
        }]
    );
    let msg = Error::Refused {
        session,
        conflicts: conflicts.clone(),
    }
    .to_string();
    assert!(msg.contains("f.txt"), "{msg}");
    assert_eq!(read(&p), b"edited by hand", "a refusal touches nothing");
    assert_eq!(inode(&p), ino);
    assert_eq!(s.entries().unwrap(), vec![e.clone()], "the entry stays");

    // revert of that file is refused the same way.
    let (_, c2) = refusal(s.revert(&ws, "f.txt", plain()));
    assert_eq!(c2, conflicts);

    let r = s.undo(forced()).unwrap();
    assert!(r.applied);
    assert_eq!(
        r.files[0].status,
        FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
    );
    assert_eq!(read(&p), b"v0");
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn a_file_changed_by_another_session_names_that_session_and_message() {
    let env = Env::new();
    let a = env.session("sess-a");
    let b = env.session("sess-b");
    let ws = env.workspace();
    let p = env.path("shared.rs");
    std::fs::write(&p, b"v0").unwrap();
    let ea = a.write(&ws, "shared.rs", &b"by A"[..], "msg-a").unwrap();
    let eb = b.write(&ws, "shared.rs", &b"by B"[..], "msg-b").unwrap();

    let (session, conflicts) = refusal(a.revert(&ws, "shared.rs", plain()));
    assert_eq!(session, "sess-a");
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "shared.rs");
    assert_eq!(conflicts[0].seq, ea.seq);
    assert_eq!(
        conflicts[0].reason,
        ConflictReason::ChangedSince {
            by: Some(ChangedBy {
                session: "sess-b".into(),
                message_id: "msg-b".into(),
                seq: eb.seq,
            })
        }
    );
    assert!(conflicts[0].to_string().contains("sess-b"));
    assert!(conflicts[0].to_string().contains("msg-b"));
    assert_eq!(read(&p), b"by B");
    assert_eq!(a.entries().unwrap().len(), 1);

    // B steps back first; then A's revert is safe.
    b.undo(plain()).unwrap();
    assert_eq!(read(&p), b"by A");
    let r = a.revert(&ws, "shared.rs", plain()).unwrap();
    assert_eq!(r.files[0].status, FileStatus::Safe);
    assert_eq!(read(&p), b"v0");
}

// ---------------------------------------------------------------- already reverted

#[test]
fn a_file_already_back_at_before_counts_as_done() {
    let (env, s, ws) = Env::with_session("done");
    let p = env.path("f.txt");
    std::fs::write(&p, b"original").unwrap();
    let e = s.write(&ws, "f.txt", &b"changed"[..], "m1").unwrap();
    std::fs::write(&p, b"original").unwrap();
    let ino = inode(&p);

    let r = s.undo(plain()).unwrap();
    assert!(r.applied);
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.files[0].seqs, vec![e.seq]);
    assert_eq!(r.files[0].status, FileStatus::AlreadyReverted);
    assert_eq!(read(&p), b"original");
    assert_eq!(inode(&p), ino, "the file was not rewritten");
    assert!(s.entries().unwrap().is_empty(), "the entry is gone");
}

#[test]
fn a_created_file_deleted_by_hand_and_a_removed_file_restored_by_hand_count_as_done() {
    let (env, s, ws) = Env::with_session("done2");
    s.write(&ws, "new.txt", &b"new"[..], "m1").unwrap();
    std::fs::write(env.path("old.txt"), b"keep").unwrap();
    s.remove(&ws, "old.txt", "m2").unwrap();
    std::fs::remove_file(env.path("new.txt")).unwrap();
    std::fs::write(env.path("old.txt"), b"keep").unwrap();
    let ino = inode(&env.path("old.txt"));

    let r = s.rewind("m1", plain()).unwrap();
    assert_eq!(r.files.len(), 2);
    assert!(
        r.files
            .iter()
            .all(|f| f.status == FileStatus::AlreadyReverted),
        "{r:?}"
    );
    assert!(!env.path("new.txt").exists());
    assert_eq!(inode(&env.path("old.txt")), ino);
    assert!(s.entries().unwrap().is_empty());
}

// ---------------------------------------------------------------- uncommitted

#[test]
fn a_checkpoint_dropped_without_commit_needs_force() {
    let (env, s, ws) = Env::with_session("pending");
    let p = env.path("f.txt");
    std::fs::write(&p, b"v0").unwrap();
    let seq = {
        let cp = s.checkpoint(&ws, "f.txt", "m1").unwrap();
        std::fs::write(&p, b"half written").unwrap();
        cp.seq()
    };
    let entries = s.entries().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].seq, seq);
    assert!(!entries[0].is_committed());
    assert_eq!(entries[0].after, None);

    let (_, conflicts) = refusal(s.undo(plain()));
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "f.txt");
    assert_eq!(conflicts[0].seq, seq);
    assert_eq!(conflicts[0].reason, ConflictReason::NeverCommitted);
    assert_eq!(read(&p), b"half written");
    assert_eq!(s.entries().unwrap().len(), 1);

    let r = s.undo(forced()).unwrap();
    assert_eq!(
        r.files[0].status,
        FileStatus::Conflict(ConflictReason::NeverCommitted)
    );
    assert_eq!(read(&p), b"v0");
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn an_uncommitted_checkpoint_of_a_new_file_needs_force_to_delete_it() {
    let (env, s, ws) = Env::with_session("pending-new");
    let p = env.path("new.txt");
    {
        let _cp = s.checkpoint(&ws, "new.txt", "m1").unwrap();
        std::fs::write(&p, b"made by the caller").unwrap();
    }
    let (_, conflicts) = refusal(s.undo(plain()));
    assert_eq!(conflicts[0].reason, ConflictReason::NeverCommitted);
    assert!(p.exists());
    let r = s.undo(forced()).unwrap();
    assert_eq!(r.files[0].action, RevertAction::Delete);
    assert!(!p.exists());
}

#[test]
fn an_uncommitted_checkpoint_whose_file_never_changed_counts_as_done() {
    let (env, s, ws) = Env::with_session("pending-same");
    std::fs::write(env.path("f"), b"same").unwrap();
    drop(s.checkpoint(&ws, "f", "m1").unwrap());
    let r = s.undo(plain()).unwrap();
    assert_eq!(r.files[0].status, FileStatus::AlreadyReverted);
    assert!(s.entries().unwrap().is_empty());
}

// ---------------------------------------------------------------- checkpoint bracket

#[test]
fn checkpoint_and_commit_record_the_file_as_written() {
    let (env, s, ws) = Env::with_session("bracket");
    let p = env.path("f.txt");
    std::fs::write(&p, b"v0").unwrap();
    let mode = mode_of(&p);

    let cp = s.checkpoint(&ws, "./f.txt", "m1").unwrap();
    assert_eq!(cp.path(), "f.txt");
    assert_eq!(cp.absolute_path(), ws.root().join("f.txt"));
    let pending = s.entries().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].seq, cp.seq());
    assert_eq!(pending[0].after, None);
    assert_eq!(
        pending[0].before.sha256.as_deref(),
        Some(sha256_hex(b"v0").as_str())
    );

    std::fs::write(&p, b"v1, written by the caller").unwrap();
    let e = cp.commit().unwrap();
    assert_eq!(
        e.after,
        Some(FileState {
            exists: true,
            sha256: Some(sha256_hex(b"v1, written by the caller")),
            size: 25,
            mode: Some(mode),
            uid: None,
            gid: None,
            dir: false,
        })
    );
    assert_eq!(s.entries().unwrap(), vec![e]);

    let r = s.undo(plain()).unwrap();
    assert_eq!(r.files[0].status, FileStatus::Safe);
    assert_eq!(read(&p), b"v0");
}

#[test]
fn checkpoint_and_commit_of_a_deletion_record_the_file_as_absent() {
    let (env, s, ws) = Env::with_session("bracket-rm");
    let p = env.path("doomed.txt");
    std::fs::write(&p, b"last words").unwrap();
    let cp = s.checkpoint(&ws, "doomed.txt", "m1").unwrap();
    std::fs::remove_file(&p).unwrap();
    let e = cp.commit().unwrap();
    assert_eq!(e.after, Some(FileState::absent()));
    let r = s.undo(plain()).unwrap();
    assert_eq!(r.files[0].status, FileStatus::Safe);
    assert_eq!(read(&p), b"last words");
}

#[test]
fn checkpoint_and_rollback_restore_the_file_and_drop_the_entry() {
    let (env, s, ws) = Env::with_session("rollback");
    let p = env.path("f.txt");
    std::fs::write(&p, b"v0").unwrap();
    let cp = s.checkpoint(&ws, "f.txt", "m1").unwrap();
    std::fs::write(&p, b"a failed write left this").unwrap();
    cp.rollback().unwrap();
    assert_eq!(read(&p), b"v0");
    assert!(s.entries().unwrap().is_empty());
}

#[test]
fn checkpoint_and_rollback_delete_a_file_that_did_not_exist() {
    let (env, s, ws) = Env::with_session("rollback-new");
    let cp = s.checkpoint(&ws, "fresh/dir/new.txt", "m1").unwrap();
    std::fs::create_dir_all(env.path("fresh/dir")).unwrap();
    std::fs::write(env.path("fresh/dir/new.txt"), b"partial").unwrap();
    cp.rollback().unwrap();
    assert!(!env.path("fresh/dir/new.txt").exists());
    assert!(
        !env.path("fresh").exists(),
        "directories missing at the checkpoint go too"
    );
    assert!(s.entries().unwrap().is_empty());

    // A rollback when nothing was written at all.
    let cp = s.checkpoint(&ws, "never.txt", "m2").unwrap();
    cp.rollback().unwrap();
    assert!(!env.path("never.txt").exists());
    assert!(s.entries().unwrap().is_empty());
    assert!(util::tree_digest(env.ws.path()).is_empty());
}

// ---------------------------------------------------------------- busy

#[test]
fn a_held_checkpoint_makes_another_writer_busy_until_commit() {
    let (env, holding, ws) = Env::with_session("holder-session-7");
    let p = env.path("f.txt");
    std::fs::write(&p, b"v0").unwrap();
    let cp = holding.checkpoint(&ws, "f.txt", "m1").unwrap();
    std::fs::write(&p, b"v1").unwrap();

    let impatient = Store::new(env.home.path()).with_options(Options {
        file_lock_timeout: Duration::from_millis(200),
        ..Default::default()
    });
    let root = env.ws.path().to_owned();
    let other = std::thread::scope(|sc| {
        sc.spawn(|| {
            let s = impatient.session("other").unwrap();
            let ws2 = Workspace::open(&root).unwrap();
            s.write(&ws2, "f.txt", &b"other"[..], "o1")
        })
        .join()
        .unwrap()
    });
    match other {
        Err(Error::FileBusy {
            path,
            holder,
            waited,
        }) => {
            assert_eq!(path, ws.root().join("f.txt"));
            let h = holder.expect("the holder wrote itself into the lock");
            assert!(h.contains("holder-session-7"), "holder: {h}");
            assert!(waited >= Duration::from_millis(150), "waited {waited:?}");
        }
        other => panic!("expected FileBusy, got {other:?}"),
    }
    assert_eq!(read(&p), b"v1", "the busy writer touched nothing");
    let other_session = impatient.session("other").unwrap();
    assert!(other_session.entries().unwrap().is_empty());

    cp.commit().unwrap();
    let r = std::thread::scope(|sc| {
        sc.spawn(|| {
            let ws2 = Workspace::open(&root).unwrap();
            other_session.write(&ws2, "f.txt", &b"other"[..], "o1")
        })
        .join()
        .unwrap()
    });
    r.unwrap();
    assert_eq!(read(&p), b"other");
}

// ---------------------------------------------------------------- dry run

#[test]
fn dry_runs_touch_nothing_and_report_the_plan() {
    let (env, s, ws) = Env::with_session("dry");
    let root = ws.root().to_owned();
    std::fs::write(env.path("f1"), b"a0").unwrap();
    std::fs::write(env.path("f2"), b"b0").unwrap();
    let e1 = s.write(&ws, "f1", &b"a1"[..], "m1").unwrap();
    let e2 = s.write(&ws, "f2", &b"b1"[..], "m1").unwrap();
    let e3 = s.write(&ws, "new.txt", &b"n"[..], "m2").unwrap();
    let e4 = s.write(&ws, "f1", &b"a2!"[..], "m2").unwrap();
    std::fs::write(env.path("f2"), b"b-hand").unwrap();

    let tree = util::tree_digest(env.ws.path());
    let entries = s.entries().unwrap();
    let unchanged = |what: &str| {
        assert_eq!(
            util::tree_digest(env.ws.path()),
            tree,
            "{what} touched files"
        );
        assert_eq!(s.entries().unwrap(), entries, "{what} changed entries");
    };
    // The plan as (workspace, path, seqs, action, status); `target` is checked
    // on its own below.
    let fr = |path: &str, seqs: Vec<u64>, action, status| {
        (root.clone(), path.to_string(), seqs, action, status)
    };
    let plan = |files: &[FileRevert]| -> Vec<_> {
        files
            .iter()
            .map(|f| {
                (
                    f.workspace.clone(),
                    f.path.clone(),
                    f.seqs.clone(),
                    f.action.clone(),
                    f.status.clone(),
                )
            })
            .collect()
    };

    let r = s.undo(dry()).unwrap();
    unchanged("undo --dry-run");
    assert!(!r.applied);
    assert_eq!(r.session, "dry");
    assert_eq!(
        plan(&r.files),
        vec![fr(
            "f1",
            vec![e4.seq],
            RevertAction::Write { size: 2 },
            FileStatus::Safe
        )]
    );

    let r = s.revert(&ws, "f2", dry()).unwrap();
    unchanged("revert --dry-run");
    assert!(!r.applied);
    assert_eq!(
        plan(&r.files),
        vec![fr(
            "f2",
            vec![e2.seq],
            RevertAction::Write { size: 2 },
            FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
        )]
    );

    let r = s.rewind("m1", dry()).unwrap();
    unchanged("rewind --dry-run");
    assert!(!r.applied);
    // Each file goes back to the "before" of its oldest entry in the rewind.
    assert_eq!(r.files[0].target, e1.before);
    assert_eq!(r.files[1].target, e3.before);
    assert_eq!(r.files[2].target, e2.before);
    assert_eq!(
        plan(&r.files),
        vec![
            fr(
                "f1",
                vec![e4.seq, e1.seq],
                RevertAction::Write { size: 2 },
                FileStatus::Safe
            ),
            fr(
                "new.txt",
                vec![e3.seq],
                RevertAction::Delete,
                FileStatus::Safe
            ),
            fr(
                "f2",
                vec![e2.seq],
                RevertAction::Write { size: 2 },
                FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
            ),
        ]
    );

    // Forced dry runs touch nothing either.
    let r = s
        .rewind(
            "m1",
            RevertOptions {
                force: true,
                dry_run: true,
            },
        )
        .unwrap();
    unchanged("rewind --dry-run --force");
    assert!(!r.applied);
    assert_eq!(r.files.len(), 3);

    // And the real rewind is refused for the file edited by hand.
    let (_, c) = refusal(s.rewind("m1", plain()));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].path, "f2");
    unchanged("a refused rewind");
}

// ---------------------------------------------------------------- all or nothing

#[test]
fn rewind_checks_every_file_before_touching_any() {
    let (env, s, ws) = Env::with_session("atomic");
    std::fs::write(env.path("first"), b"1-old").unwrap();
    std::fs::write(env.path("second"), b"2-old").unwrap();
    s.write(&ws, "first", &b"1-new"[..], "m1").unwrap();
    s.write(&ws, "second", &b"2-new"[..], "m1").unwrap();
    s.write(&ws, "third/new.txt", &b"3"[..], "m2").unwrap();
    // The older file is edited: a revert that restored newest first without
    // checking all files first would already have restored "third" and "second".
    std::fs::write(env.path("first"), b"1-hand").unwrap();
    let tree = util::tree_digest(env.ws.path());
    let inodes = (
        inode(&env.path("second")),
        inode(&env.path("third/new.txt")),
    );
    let entries = s.entries().unwrap();

    let (_, conflicts) = refusal(s.rewind("m1", plain()));
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "first");
    assert!(matches!(
        conflicts[0].reason,
        ConflictReason::ChangedSince { .. }
    ));
    assert_eq!(read(env.path("first")), b"1-hand");
    assert_eq!(read(env.path("second")), b"2-new", "second was touched");
    assert_eq!(read(env.path("third/new.txt")), b"3", "third was touched");
    assert_eq!(
        (
            inode(&env.path("second")),
            inode(&env.path("third/new.txt"))
        ),
        inodes
    );
    assert_eq!(util::tree_digest(env.ws.path()), tree);
    assert_eq!(s.entries().unwrap(), entries);
}

// ---------------------------------------------------------------- errors

#[test]
fn nothing_to_undo_no_change_to_file_and_unknown_message_are_their_own_errors() {
    let (env, s, ws) = Env::with_session("errs");

    match s.undo(plain()) {
        Err(Error::NothingToUndo { session }) => assert_eq!(session, "errs"),
        other => panic!("expected NothingToUndo, got {other:?}"),
    }
    match s.undo(dry()) {
        Err(Error::NothingToUndo { .. }) => {}
        other => panic!("expected NothingToUndo for a dry run, got {other:?}"),
    }

    std::fs::write(env.path("touched.txt"), b"0").unwrap();
    s.write(&ws, "touched.txt", &b"1"[..], "m1").unwrap();
    // Another session's file is not this session's change.
    env.session("someone-else")
        .write(&ws, "theirs.txt", &b"x"[..], "t1")
        .unwrap();
    let tree = util::tree_digest(env.ws.path());

    for path in ["never.txt", "theirs.txt"] {
        match s.revert(&ws, path, plain()) {
            Err(Error::NoChangeToFile { session, path: p }) => {
                assert_eq!(session, "errs");
                assert_eq!(p, PathBuf::from(path));
            }
            other => panic!("expected NoChangeToFile for {path}, got {other:?}"),
        }
    }
    match s.rewind("no-such-message", plain()) {
        Err(Error::MessageNotFound {
            session,
            message_id,
        }) => {
            assert_eq!(session, "errs");
            assert_eq!(message_id, "no-such-message");
        }
        other => panic!("expected MessageNotFound, got {other:?}"),
    }
    match s.rewind("t1", dry()) {
        Err(Error::MessageNotFound { .. }) => {}
        other => panic!("another session's message is not this one's: {other:?}"),
    }
    assert_eq!(
        util::tree_digest(env.ws.path()),
        tree,
        "errors touch nothing"
    );
    assert_eq!(s.entries().unwrap().len(), 1);

    s.undo(plain()).unwrap();
    assert!(matches!(s.undo(plain()), Err(Error::NothingToUndo { .. })));
    assert!(matches!(
        s.revert(&ws, "touched.txt", plain()),
        Err(Error::NoChangeToFile { .. })
    ));
}

// ---------------------------------------------------------------- listings

#[test]
fn entries_and_files_list_what_the_session_did() {
    let env = Env::new();
    let other_ws_dir = tempfile::tempdir().unwrap();
    let s = env.session("lister");
    let ws = env.workspace();
    let ws2 = Workspace::open(other_ws_dir.path()).unwrap();
    std::fs::write(env.path("b"), b"b0").unwrap();

    s.write(&ws, "a", &b"a1"[..], "m1").unwrap();
    s.write(&ws, "b", &b"b1"[..], "m1").unwrap();
    s.write(&ws, "a", &b"a2"[..], "m2").unwrap();
    s.remove(&ws, "b", "m3").unwrap();
    s.write(&ws2, "z/z.txt", &b"z"[..], "m3").unwrap();

    let es = s.entries().unwrap();
    let summary: Vec<(u64, &str, &str, u32)> = es
        .iter()
        .map(|e| (e.seq, e.message_id.as_str(), e.path.as_str(), e.version))
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, "m1", "a", 1),
            (2, "m1", "b", 1),
            (3, "m2", "a", 2),
            (4, "m3", "b", 2),
            (5, "m3", "z/z.txt", 1),
        ]
    );
    for e in &es[..4] {
        assert_eq!(e.workspace.path, ws.root());
        assert_eq!(e.absolute_path(), ws.root().join(&e.path));
        assert!(e.is_committed());
        assert!(e.in_flight.is_none());
    }
    assert_eq!(es[4].workspace.path, ws2.root());
    assert!(es[0].time <= es[4].time);
    assert_eq!(es[0].before, FileState::absent());
    assert!(es[2].before.same_contents(es[0].after.as_ref().unwrap()));
    assert!(es[3].before.same_contents(es[1].after.as_ref().unwrap()));
    assert_eq!(es[3].after, Some(FileState::absent()));
    assert_eq!(es[4].created_dirs, vec!["z".to_string()]);

    let mut expected = vec![
        TrackedFile {
            workspace: ws.root().to_owned(),
            path: "a".into(),
        },
        TrackedFile {
            workspace: ws.root().to_owned(),
            path: "b".into(),
        },
        TrackedFile {
            workspace: ws2.root().to_owned(),
            path: "z/z.txt".into(),
        },
    ];
    expected.sort();
    assert_eq!(s.files().unwrap(), expected);
}

#[test]
fn store_sessions_lists_ids_counts_and_workspaces() {
    let env = Env::new();
    let other_ws_dir = tempfile::tempdir().unwrap();
    let store = env.store();
    assert!(store.sessions().unwrap().is_empty());
    let ws = env.workspace();
    let ws2 = Workspace::open(other_ws_dir.path()).unwrap();

    // A session on disk with no entries (all undone, say): a session opened
    // without a change is not written to disk, so make its directory by hand.
    std::fs::create_dir_all(store.home().join("sessions/s-empty")).unwrap();
    let one = store.session("s-one").unwrap();
    let two = store.session("s-two").unwrap();
    // Noise: its backup takes its 4 KiB on disk, compressed or not.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(env.path("big"), noise).unwrap();
    one.write(&ws, "big", &b"small"[..], "m1").unwrap();
    one.write(&ws2, "x", &b"x"[..], "m2").unwrap();
    two.write(&ws, "y", &b"y"[..], "m1").unwrap();
    one.write(&ws, "z", &b"z"[..], "m3").unwrap();

    let list = store.sessions().unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s-empty", "s-two", "s-one"], "newest change last");
    assert_eq!(store.session_ids().unwrap(), ["s-empty", "s-one", "s-two"]);

    let by_id = |id: &str| list.iter().find(|s| s.id == id).unwrap();
    let e = by_id("s-empty");
    assert_eq!(
        (e.entries, e.last_change, e.problem.is_none()),
        (0, None, true)
    );
    assert!(e.workspaces.is_empty());

    let o = by_id("s-one");
    assert_eq!(o.entries, 3);
    assert_eq!(
        o.workspaces,
        vec![ws.root().to_owned(), ws2.root().to_owned()]
    );
    assert!(o.bytes >= 4096, "s-one keeps the 4 KiB backup: {}", o.bytes);
    assert!(o.problem.is_none(), "{:?}", o.problem);
    assert_eq!(
        o.last_change,
        one.entries().unwrap().iter().map(|e| e.time).max()
    );

    let t = by_id("s-two");
    assert_eq!(t.entries, 1);
    assert_eq!(t.workspaces, vec![ws.root().to_owned()]);

    // An undo is reflected in the counts.
    one.undo(plain()).unwrap();
    let o = store
        .sessions()
        .unwrap()
        .into_iter()
        .find(|s| s.id == "s-one")
        .unwrap();
    assert_eq!(o.entries, 2);
}

#[test]
fn latest_session_for_names_the_last_session_to_change_the_file() {
    let env = Env::new();
    let store = env.store();
    let ws = env.workspace();
    let (s1, s2, s3) = (
        store.session("first").unwrap(),
        store.session("second").unwrap(),
        store.session("third").unwrap(),
    );
    assert_eq!(store.latest_session_for(&ws, "f").unwrap(), None);

    s1.write(&ws, "f", &b"1"[..], "m").unwrap();
    assert_eq!(
        store.latest_session_for(&ws, "f").unwrap().as_deref(),
        Some("first")
    );
    s2.write(&ws, "f", &b"2"[..], "m").unwrap();
    s3.write(&ws, "f", &b"3"[..], "m").unwrap();
    s1.write(&ws, "g", &b"g"[..], "m").unwrap();
    assert_eq!(
        store.latest_session_for(&ws, "f").unwrap().as_deref(),
        Some("third")
    );
    assert_eq!(
        store
            .latest_session_for(&ws, ws.root().join("f"))
            .unwrap()
            .as_deref(),
        Some("third"),
        "an absolute path names the same file"
    );
    assert_eq!(
        store.latest_session_for(&ws, "g").unwrap().as_deref(),
        Some("first")
    );
    assert_eq!(store.latest_session_for(&ws, "nope").unwrap(), None);

    // Once third's change is undone, second's is the latest.
    s3.undo(plain()).unwrap();
    assert_eq!(read(env.path("f")), b"2");
    assert_eq!(
        store.latest_session_for(&ws, "f").unwrap().as_deref(),
        Some("second")
    );
}

#[test]
fn undo_takes_the_newest_entry_each_time() {
    let (env, s, ws) = Env::with_session("newest");
    std::fs::write(env.path("f1"), b"f1-0").unwrap();
    let e1 = s.write(&ws, "f1", &b"f1-1"[..], "m1").unwrap();
    let e2 = s.write(&ws, "f2", &b"f2-1"[..], "m2").unwrap();
    let e3 = s.write(&ws, "f1", &b"f1-2"[..], "m3").unwrap();

    let r = s.undo(plain()).unwrap();
    assert_eq!(r.files.len(), 1);
    assert_eq!(
        (r.files[0].path.as_str(), r.files[0].seqs.clone()),
        ("f1", vec![e3.seq])
    );
    assert_eq!(read(env.path("f1")), b"f1-1");
    assert_eq!(read(env.path("f2")), b"f2-1");

    let r = s.undo(plain()).unwrap();
    assert_eq!(
        (r.files[0].path.as_str(), r.files[0].seqs.clone()),
        ("f2", vec![e2.seq])
    );
    assert!(!env.path("f2").exists());
    assert_eq!(read(env.path("f1")), b"f1-1");

    let r = s.undo(plain()).unwrap();
    assert_eq!(
        (r.files[0].path.as_str(), r.files[0].seqs.clone()),
        ("f1", vec![e1.seq])
    );
    assert_eq!(read(env.path("f1")), b"f1-0");
    assert!(s.entries().unwrap().is_empty());
}
