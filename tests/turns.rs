//! Turns, redo, renames and the stale-read guard: a generated multi-turn session
//! rewound to the start of every turn, redo after each kind of undo, a rename
//! chain undone step by step, the classification of a previewed rewind, and the
//! guard across two handles of one session.
//!
//! Workspaces are compared whole: [`snap`] is `util::tree_digest` (kinds,
//! modes, contents) with each file's exact bytes added by hash, since the digest
//! shows binary contents lossily.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use turnback_store::{
    ChangedBy, Conflict, ConflictReason, DiffBody, Entry, Error, FileRevert, FileStatus,
    RevertAction, RevertReport, Session, Store, Turn, Workspace,
};

use crate::util::{self, Env, dry, forced, plain, read, sha256_hex};

// ---------------------------------------------------------------- helpers

type Snapshot = BTreeMap<PathBuf, String>;

/// The whole workspace: `util::tree_digest`, each file's SHA-256 added.
fn snap(root: &Path) -> Snapshot {
    util::tree_digest(root)
        .into_iter()
        .map(|(rel, kind)| {
            let kind = if kind.starts_with("file ") {
                format!("{kind} sha256 {}", sha256_hex(&read(root.join(&rel))))
            } else {
                kind
            };
            (rel, kind)
        })
        .collect()
}

/// Fails naming only the paths that differ.
#[track_caller]
fn assert_tree(now: &Snapshot, expected: &Snapshot, what: &str) {
    if now == expected {
        return;
    }
    let keys: BTreeSet<&PathBuf> = now.keys().chain(expected.keys()).collect();
    let shorten = |v: Option<&String>| match v {
        None => "absent".to_string(),
        Some(s) if s.len() > 120 => format!("{}...{}", &s[..60], &s[s.len() - 50..]),
        Some(s) => s.clone(),
    };
    let diff: Vec<String> = keys
        .into_iter()
        .filter(|k| now.get(*k) != expected.get(*k))
        .map(|k| {
            format!(
                "{}: is {}, expected {}",
                k.display(),
                shorten(now.get(k)),
                shorten(expected.get(k))
            )
        })
        .collect();
    panic!("{what}: the workspace differs: {diff:#?}");
}

/// Writes a file by hand (as an editor would), making its directories.
fn put(env: &Env, rel: &str, bytes: &[u8]) {
    let p = env.path(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, bytes).unwrap();
}

/// Writes a file by hand with a mode.
fn put_mode(env: &Env, rel: &str, bytes: &[u8], mode: u32) {
    put(env, rel, bytes);
    std::fs::set_permissions(env.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Binary contents: NULs, invalid UTF-8, all byte values.
fn binary(salt: u8) -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).map(|b| b.wrapping_add(salt)).collect();
    v.extend_from_slice(&[0, 0, 0xff, 0xfe, 0xc3, 0x28, salt]);
    v
}

fn numbers(turns: &[Turn]) -> Vec<u32> {
    turns.iter().map(|t| t.number).collect()
}

/// Each file of a report by path.
fn by_path(r: &RevertReport) -> BTreeMap<&str, &FileRevert> {
    let map: BTreeMap<&str, &FileRevert> = r.files.iter().map(|f| (f.path.as_str(), f)).collect();
    assert_eq!(map.len(), r.files.len(), "a file twice in {r:#?}");
    map
}

/// The conflicts of a refusal, by path.
#[track_caller]
fn refused(r: turnback_store::Result<RevertReport>) -> BTreeMap<String, Conflict> {
    match r {
        Err(Error::Refused { conflicts, .. }) => {
            conflicts.into_iter().map(|c| (c.path.clone(), c)).collect()
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// ---------------------------------------------------------------- a generated session

/// splitmix64: a small deterministic generator, so a failure replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

const SEED: u64 = 0x7475_726e_6261_636b;
const TURNS: u32 = 8;
/// A turn in which the agent changed nothing.
const EMPTY_TURN: u32 = 5;

/// The files the generated agent works on; no name is a directory of another.
const POOL: &[&str] = &[
    "a.txt",
    "b.bin",
    "c.txt",
    "src/main.rs",
    "src/lib/util.rs",
    "src/lib/deep/x.rs",
    "docs/readme.md",
    "new/one/two/n.txt",
    "tmp/t.dat",
];

#[derive(Clone, Copy, Debug)]
enum Op {
    Write,
    Remove,
    Rename,
    RenameOnto,
}

/// What the generated session did, to show the scenario covers each case.
#[derive(Default, Debug)]
struct Coverage {
    writes: usize,
    creates: usize,
    binary_writes: usize,
    empty_writes: usize,
    dirs_created: usize,
    removes: usize,
    renames: usize,
    renames_onto_existing: usize,
    renames_into_new_dir: usize,
}

/// What [`play`] saw.
struct Played {
    /// `starts[n - 1]`: the workspace when turn `n` began.
    starts: Vec<Snapshot>,
    /// The workspace at the end.
    end: Snapshot,
    /// For each turn, the entries it made and the distinct files they change.
    per_turn: Vec<(usize, usize)>,
    coverage: Coverage,
}

fn contents(rng: &mut Rng, label: &str) -> Vec<u8> {
    match rng.below(8) {
        0 => Vec::new(),
        1 | 2 => {
            let n = 1 + rng.below(300);
            (0..n).map(|_| rng.next() as u8).chain([0, 0xff]).collect()
        }
        _ => {
            let lines = 1 + rng.below(6);
            (0..lines)
                .map(|i| format!("{label} line {i} {:x}\n", rng.next() % 4096))
                .collect::<String>()
                .into_bytes()
        }
    }
}

fn present(env: &Env) -> Vec<&'static str> {
    POOL.iter()
        .copied()
        .filter(|p| env.path(p).is_file())
        .collect()
}

/// Plays the generated session: files before it, two changes before any turn
/// (turn 0), then [`TURNS`] turns of writes, removes and renames (one turn
/// empty). Deterministic: every call does the same.
fn play(env: &Env, s: &Session, ws: &Workspace) -> Played {
    put_mode(env, "a.txt", b"alpha\n", 0o644);
    put_mode(env, "b.bin", &binary(0), 0o755);
    put_mode(env, "src/main.rs", b"fn main() {}\n", 0o600);
    put_mode(env, "docs/readme.md", b"# readme\n", 0o640);

    let mut rng = Rng(SEED);
    let mut cov = Coverage::default();
    let mut starts = Vec::new();
    let mut per_turn = Vec::new();
    let root = env.ws.path();

    let step = |op: Op, turn: u32, i: usize, rng: &mut Rng, cov: &mut Coverage| {
        let msg = format!("t{turn}-m{i}");
        let have = present(env);
        // Fall back to a write where the operation is not possible.
        let op = match op {
            Op::Remove if have.len() < 2 => Op::Write,
            Op::Rename | Op::RenameOnto if have.is_empty() => Op::Write,
            Op::RenameOnto if have.len() < 2 => Op::Rename,
            op => op,
        };
        let made: Vec<Entry> = match op {
            Op::Write => {
                let path = rng.pick(POOL);
                let bytes = contents(rng, &msg);
                cov.writes += 1;
                cov.creates += usize::from(!env.path(path).exists());
                cov.binary_writes += usize::from(bytes.contains(&0));
                cov.empty_writes += usize::from(bytes.is_empty());
                let e = s.write(ws, path, &bytes[..], &msg).unwrap();
                assert_eq!(read(env.path(path)), bytes);
                cov.dirs_created += usize::from(!e.created_dirs.is_empty());
                vec![e]
            }
            Op::Remove => {
                let path = rng.pick(&have);
                cov.removes += 1;
                let e = s.remove(ws, path, &msg).unwrap();
                assert!(!env.path(path).exists());
                vec![e]
            }
            Op::Rename | Op::RenameOnto => {
                let from = rng.pick(&have);
                let targets: Vec<&str> = POOL
                    .iter()
                    .copied()
                    .filter(|p| *p != from && env.path(p).is_file() == matches!(op, Op::RenameOnto))
                    .collect();
                let to = if targets.is_empty() {
                    rng.pick(
                        &POOL
                            .iter()
                            .copied()
                            .filter(|p| *p != from)
                            .collect::<Vec<_>>(),
                    )
                } else {
                    rng.pick(&targets)
                };
                let moved = read(env.path(from));
                cov.renames += 1;
                cov.renames_onto_existing += usize::from(env.path(to).exists());
                let es = s.rename(ws, from, to, &msg).unwrap();
                assert_eq!(es.len(), 2);
                assert_eq!((es[0].path.as_str(), es[1].path.as_str()), (from, to));
                assert_eq!(
                    es[0].group,
                    Some(es[0].seq),
                    "a rename's entries share a group"
                );
                assert_eq!(es[1].group, Some(es[0].seq));
                assert!(!env.path(from).exists());
                assert_eq!(read(env.path(to)), moved);
                cov.renames_into_new_dir += usize::from(!es[1].created_dirs.is_empty());
                es
            }
        };
        for e in &made {
            assert_eq!(e.turn, turn, "entry {} of {msg}", e.seq);
            assert_eq!(e.message_id, msg);
        }
        made
    };

    for i in 0..2 {
        step(Op::Write, 0, i, &mut rng, &mut cov);
    }
    for turn in 1..=TURNS {
        starts.push(snap(root));
        let n = s
            .begin_turn(&format!("prompt {turn}"), Some(u64::from(turn) * 10))
            .unwrap();
        assert_eq!(n, turn);
        let mut made = Vec::new();
        if turn != EMPTY_TURN {
            let mut ops = vec![Op::Write, Op::Write, Op::Remove, Op::Rename, Op::RenameOnto];
            for _ in 0..rng.below(4) {
                ops.push([Op::Write, Op::Remove, Op::Rename, Op::RenameOnto][rng.below(4)]);
            }
            rng.shuffle(&mut ops);
            for (i, op) in ops.into_iter().enumerate() {
                made.extend(step(op, turn, i, &mut rng, &mut cov));
            }
        }
        let files: BTreeSet<&str> = made.iter().map(|e| e.path.as_str()).collect();
        per_turn.push((made.len(), files.len()));
    }
    Played {
        starts,
        end: snap(root),
        per_turn,
        coverage: cov,
    }
}

/// A fresh workspace and session with the generated scenario played.
fn generated() -> (Env, Session, Workspace, Played) {
    let (env, s, ws) = Env::with_session("generated");
    let played = play(&env, &s, &ws);
    (env, s, ws, played)
}

/// After `rewind_to_turn(n)`: the workspace as turn `n` began, only the turns
/// before `n` and only their entries.
#[track_caller]
fn assert_rewound(
    env: &Env,
    s: &Session,
    n: u32,
    played: &Played,
    all_turns: &[Turn],
    all_entries: &[Entry],
) {
    assert_tree(
        &snap(env.ws.path()),
        &played.starts[n as usize - 1],
        &format!("rewound to turn {n}"),
    );
    assert_eq!(s.turn_bounds().unwrap(), all_turns[..n as usize - 1]);
    let kept: Vec<Entry> = all_entries.iter().filter(|e| e.turn < n).cloned().collect();
    assert_eq!(
        s.entries().unwrap(),
        kept,
        "entries after rewinding to turn {n}"
    );
    assert!(s.entries().unwrap().iter().all(|e| e.turn < n));
    let summaries = s.turns().unwrap();
    assert_eq!(
        summaries.iter().map(|t| t.turn.number).collect::<Vec<_>>(),
        (1..n).collect::<Vec<_>>()
    );
}

/// The generated session covers each kind of change, and its turns count
/// what each did.
fn check_generated(s: &Session, played: &Played) {
    let c = &played.coverage;
    assert!(
        c.creates > 0
            && c.binary_writes > 0
            && c.empty_writes > 0
            && c.dirs_created > 0
            && c.removes >= TURNS as usize - 1
            && c.renames_onto_existing >= TURNS as usize - 1
            && c.renames_into_new_dir > 0
            && c.renames > c.renames_onto_existing,
        "the scenario misses a case: {c:?}"
    );
    let bounds = s.turn_bounds().unwrap();
    assert_eq!(numbers(&bounds), (1..=TURNS).collect::<Vec<_>>());
    for t in &bounds {
        assert_eq!(t.prompt, format!("prompt {}", t.number));
        assert_eq!(t.conversation_index, Some(u64::from(t.number) * 10));
    }
    let summaries = s.turns().unwrap();
    let counts: Vec<(usize, usize)> = summaries.iter().map(|t| (t.entries, t.files)).collect();
    assert_eq!(counts, played.per_turn);
    assert_eq!(played.per_turn[EMPTY_TURN as usize - 1], (0, 0));
    let entries = s.entries().unwrap();
    assert_eq!(entries.iter().filter(|e| e.turn == 0).count(), 2);
    // Every turn changed the workspace, except the empty one.
    for n in 1..TURNS as usize {
        let changed = played.starts[n] != played.starts[n - 1];
        assert_eq!(changed, n != EMPTY_TURN as usize, "turn {n}");
    }
    // Each turn start is a different workspace from the end.
    for (i, start) in played.starts.iter().enumerate() {
        assert_ne!(start, &played.end, "turn {} start", i + 1);
    }
}

/// Copies the tree `from` into the existing directory `to` (files keep their
/// modes).
fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let md = std::fs::symlink_metadata(&src).unwrap();
        if md.is_dir() {
            std::fs::create_dir(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            assert!(md.is_file(), "{} is not a file", src.display());
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Empties the directory `dir`, keeping it (a workspace root keeps its identity).
fn clear_dir(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
}

#[test]
fn rewinding_to_each_turn_in_a_fresh_copy_gives_that_turns_start() {
    // The scenario is played once; each turn is rewound in a copy of its store
    // home, with the workspace put back (in place: the root keeps its identity)
    // to how the scenario left it. The original home is never changed.
    let (env, s, _ws, played) = generated();
    check_generated(&s, &played);
    let all_turns = s.turn_bounds().unwrap();
    let all_entries = s.entries().unwrap();
    let saved = tempfile::tempdir().unwrap();
    copy_tree(env.ws.path(), saved.path());
    for n in 1..=TURNS {
        let home = tempfile::tempdir().unwrap();
        copy_tree(env.home.path(), home.path());
        clear_dir(env.ws.path());
        copy_tree(saved.path(), env.ws.path());
        assert_tree(&snap(env.ws.path()), &played.end, "the copy");
        let s = Store::new(home.path()).session("generated").unwrap();
        let ws = env.workspace();
        assert_eq!(s.entries().unwrap(), all_entries, "the copy");
        assert_eq!(s.turn_bounds().unwrap(), all_turns, "the copy");

        // A dry run first: every file is as the session left it.
        let preview = s.rewind_to_turn(n, dry()).unwrap();
        assert!(!preview.applied);
        assert!(
            preview
                .files
                .iter()
                .all(|f| matches!(f.status, FileStatus::Safe | FileStatus::AlreadyReverted)),
            "{preview:#?}"
        );
        assert_tree(&snap(env.ws.path()), &played.end, "after a dry run");

        let report = s.rewind_to_turn(n, plain()).unwrap();
        assert!(report.applied);
        assert_eq!(
            preview.files, report.files,
            "the dry run's plan was not the one applied"
        );
        assert_rewound(&env, &s, n, &played, &all_turns, &all_entries);

        let history = s.history().unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].kind, "rewind-turn");
        assert_eq!(numbers(&history[0].turns), (n..=TURNS).collect::<Vec<_>>());
        let taken: Vec<Entry> = all_entries
            .iter()
            .filter(|e| e.turn >= n)
            .cloned()
            .collect();
        assert_eq!(history[0].entries, taken);

        // A new turn after the rewind gets a new number, and its changes belong to it.
        let next = s.begin_turn("after the rewind", None).unwrap();
        assert_eq!(next, TURNS + 1);
        let e = s.write(&ws, "after.txt", &b"later\n"[..], "late").unwrap();
        assert_eq!(e.turn, TURNS + 1);
    }
}

#[test]
fn rewinding_to_each_turn_then_redoing_comes_back_to_the_end() {
    let (env, s, _ws, played) = generated();
    let all_turns = s.turn_bounds().unwrap();
    let all_entries = s.entries().unwrap();
    for n in 1..=TURNS {
        s.rewind_to_turn(n, plain()).unwrap();
        assert_rewound(&env, &s, n, &played, &all_turns, &all_entries);
        let r = s.redo(plain()).unwrap();
        assert!(r.applied);
        assert_tree(
            &snap(env.ws.path()),
            &played.end,
            &format!("redo of the rewind to turn {n}"),
        );
        assert_eq!(s.entries().unwrap(), all_entries, "redo of turn {n}");
        assert_eq!(s.turn_bounds().unwrap(), all_turns, "redo of turn {n}");
        assert!(s.history().unwrap().is_empty());
    }
    assert!(matches!(s.redo(plain()), Err(Error::NothingToRedo { .. })));
    for bad in [0, TURNS + 1] {
        let err = s.rewind_to_turn(bad, plain()).unwrap_err();
        assert!(
            matches!(err, Error::TurnNotFound { turn, .. } if turn == bad),
            "{err}"
        );
    }
    assert_tree(&snap(env.ws.path()), &played.end, "after unknown turns");
}

#[test]
fn rewinding_turn_by_turn_then_redoing_each_comes_back_in_order() {
    let (env, s, _ws, played) = generated();
    let all_turns = s.turn_bounds().unwrap();
    let all_entries = s.entries().unwrap();
    for n in (1..=TURNS).rev() {
        s.rewind_to_turn(n, plain()).unwrap();
        assert_rewound(&env, &s, n, &played, &all_turns, &all_entries);
    }
    assert_eq!(s.history().unwrap().len(), TURNS as usize);
    // Each redo takes back the newest rewind: the one to turn 1 first.
    for n in 1..=TURNS {
        s.redo(plain()).unwrap();
        if n < TURNS {
            assert_rewound(&env, &s, n + 1, &played, &all_turns, &all_entries);
        }
    }
    assert_tree(&snap(env.ws.path()), &played.end, "after every redo");
    assert_eq!(s.entries().unwrap(), all_entries);
    assert_eq!(s.turn_bounds().unwrap(), all_turns);
    assert!(matches!(s.redo(plain()), Err(Error::NothingToRedo { .. })));
}

// ---------------------------------------------------------------- redo

/// A session with changes before any turn and in three turns: edits, a new file
/// in new directories, a removal, a rename into a new directory, binary
/// contents and a rename onto an existing file.
fn redo_scene() -> (Env, Session, Workspace) {
    let (env, s, ws) = Env::with_session("redo");
    put_mode(&env, "keep.txt", b"keep\n", 0o644);
    put_mode(&env, "edit.txt", b"v0\n", 0o640);
    put_mode(&env, "gone.txt", b"bye\n", 0o600);
    put_mode(&env, "bin.dat", &binary(1), 0o755);
    s.write(&ws, "edit.txt", &b"v0, before any turn\n"[..], "m0")
        .unwrap();
    s.begin_turn("one", Some(1)).unwrap();
    s.write(&ws, "edit.txt", &b"v1\n"[..], "m1").unwrap();
    s.write(&ws, "new/deep/made.txt", &b"made\n"[..], "m1")
        .unwrap();
    s.begin_turn("two", Some(3)).unwrap();
    s.remove(&ws, "gone.txt", "m2").unwrap();
    s.rename(&ws, "keep.txt", "moved/keep.txt", "m2").unwrap();
    s.write(&ws, "bin.dat", &binary(2)[..], "m2").unwrap();
    s.begin_turn("three", Some(5)).unwrap();
    s.write(&ws, "edit.txt", &b"v2\n"[..], "m3").unwrap();
    s.rename(&ws, "new/deep/made.txt", "bin.dat", "m3").unwrap();
    (env, s, ws)
}

type Undo = fn(&Session, &Workspace) -> turnback_store::Result<RevertReport>;

#[test]
fn redo_after_each_kind_of_undo_puts_back_exactly_what_it_took() {
    let kinds: [(&str, &str, Undo); 6] = [
        ("undo", "the newest step, a rename onto a file", |s, _| {
            s.undo(plain())
        }),
        ("revert", "a rename into a new directory", |s, ws| {
            s.revert(ws, "moved/keep.txt", plain())
        }),
        ("revert", "a removal", |s, ws| {
            s.revert(ws, "gone.txt", plain())
        }),
        ("rewind", "from a message on", |s, _| {
            s.rewind("m2", plain())
        }),
        ("rewind-turn", "to turn 2", |s, _| {
            s.rewind_to_turn(2, plain())
        }),
        ("rewind-turn", "to turn 1", |s, _| {
            s.rewind_to_turn(1, plain())
        }),
    ];
    for (kind, what, undo) in kinds {
        let what = format!("{kind} of {what}");
        let (env, s, ws) = redo_scene();
        let root = env.ws.path();
        let before = snap(root);
        let entries = s.entries().unwrap();
        let bounds = s.turn_bounds().unwrap();

        let first = undo(&s, &ws).unwrap();
        assert!(first.applied && !first.files.is_empty(), "{what}");
        let after = snap(root);
        assert_ne!(after, before, "{what} changed nothing");
        let undone_entries = s.entries().unwrap();
        let undone_bounds = s.turn_bounds().unwrap();
        let history = s.history().unwrap();
        assert_eq!(history.len(), 1, "{what}");
        assert_eq!(history[0].kind, kind);
        let mut rest = undone_entries.clone();
        rest.extend(history[0].entries.iter().cloned());
        rest.sort_by_key(|e| e.seq);
        assert_eq!(rest, entries, "{what}: the record holds what was taken");

        let redone = s.redo(plain()).unwrap();
        assert!(redone.applied);
        let paths = |r: &RevertReport| -> BTreeSet<String> {
            r.files.iter().map(|f| f.path.clone()).collect()
        };
        assert_eq!(paths(&redone), paths(&first), "{what}: files redone");
        assert_tree(&snap(root), &before, &format!("redo of {what}"));
        assert_eq!(s.entries().unwrap(), entries, "{what}: entries after redo");
        assert_eq!(s.turn_bounds().unwrap(), bounds, "{what}: turns after redo");
        assert!(s.history().unwrap().is_empty());

        // The same undo again does the same.
        undo(&s, &ws).unwrap();
        assert_tree(&snap(root), &after, &format!("{what}, a second time"));
        assert_eq!(s.entries().unwrap(), undone_entries);
        assert_eq!(s.turn_bounds().unwrap(), undone_bounds);
        s.redo(plain()).unwrap();
        assert_tree(&snap(root), &before, &format!("second redo of {what}"));
        assert_eq!(s.entries().unwrap(), entries);
        assert!(matches!(s.redo(plain()), Err(Error::NothingToRedo { .. })));
        assert_tree(&snap(root), &before, &format!("{what}: nothing to redo"));
    }
}

#[test]
fn nothing_to_redo_is_its_own_error() {
    let (env, s, ws) = Env::with_session("empty");
    let err = s.redo(plain()).unwrap_err();
    assert!(
        matches!(&err, Error::NothingToRedo { session } if session == "empty"),
        "{err}"
    );
    assert!(matches!(s.redo(dry()), Err(Error::NothingToRedo { .. })));
    s.write(&ws, "f", &b"x"[..], "m").unwrap();
    assert!(matches!(s.redo(forced()), Err(Error::NothingToRedo { .. })));
    assert_eq!(read(env.path("f")), b"x");
    assert!(s.history().unwrap().is_empty());
}

#[test]
fn redo_refuses_a_file_changed_by_hand_since_the_undo_until_forced() {
    let (env, s, _ws) = redo_scene();
    let root = env.ws.path();
    let before = snap(root);
    let entries = s.entries().unwrap();
    // Undo the rename of new/deep/made.txt onto bin.dat.
    s.undo(plain()).unwrap();
    assert_eq!(read(env.path("bin.dat")), binary(2));
    assert!(env.path("new/deep/made.txt").is_file());
    put(&env, "bin.dat", b"edited by hand\n");
    let hand = snap(root);
    let undone_entries = s.entries().unwrap();
    let history = s.history().unwrap();

    let conflicts = refused(s.redo(plain()));
    assert_eq!(conflicts.keys().collect::<Vec<_>>(), ["bin.dat"]);
    assert_eq!(
        conflicts["bin.dat"].reason,
        ConflictReason::ChangedSince { by: None }
    );
    assert_tree(&snap(root), &hand, "a refused redo");
    assert_eq!(s.entries().unwrap(), undone_entries);
    assert_eq!(s.history().unwrap(), history);

    let plan = s.redo(dry()).unwrap();
    assert!(!plan.applied);
    let files = by_path(&plan);
    assert_eq!(
        files.keys().copied().collect::<Vec<_>>(),
        ["bin.dat", "new/deep/made.txt"]
    );
    assert_eq!(
        files["bin.dat"].status,
        FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
    );
    assert_eq!(files["new/deep/made.txt"].status, FileStatus::Safe);
    assert_eq!(files["new/deep/made.txt"].action, RevertAction::Delete);
    // Each file's diff: the file now against what the redo puts back.
    for f in &plan.files {
        let d = s.revert_diff(f).unwrap();
        assert_eq!(d.old, state_of(&env.path(&f.path)), "{}: old side", f.path);
        assert_eq!(d.new, f.target, "{}: new side", f.path);
        assert_ne!(d.body, DiffBody::Same, "{}", f.path);
    }
    assert_eq!(
        files["bin.dat"].target.sha256,
        Some(sha256_hex(b"made\n")),
        "redo puts back what the undo found"
    );
    assert_tree(&snap(root), &hand, "a dry-run redo");

    let r = s.redo(forced()).unwrap();
    assert!(r.applied);
    assert_tree(&snap(root), &before, "a forced redo");
    // The entries come back, and one more: the redo's overwrite of the hand
    // edit, backed up (issue 10), so that undo can bring the edit back.
    let now = s.entries().unwrap();
    assert_eq!(now[..entries.len()], entries[..]);
    let [overwrite] = &now[entries.len()..] else {
        panic!("not one entry for the overwrite: {now:?}");
    };
    assert_eq!(overwrite.message_id, turnback_store::REDO_OVERWRITE_MESSAGE);
    assert_eq!(overwrite.path, "bin.dat");
    assert_eq!(
        overwrite.before.sha256,
        Some(sha256_hex(b"edited by hand\n"))
    );
    assert!(s.history().unwrap().is_empty());
    s.undo(plain()).unwrap();
    assert_eq!(read(env.path("bin.dat")), b"edited by hand\n");
    assert!(
        !env.path("new/deep/made.txt").exists(),
        "the rename stays redone"
    );
}

#[test]
fn two_undos_then_two_redos_come_back_in_order() {
    let (env, s, _ws) = redo_scene();
    let root = env.ws.path();
    let (s0, e0) = (snap(root), s.entries().unwrap());
    s.undo(plain()).unwrap();
    let (s1, e1) = (snap(root), s.entries().unwrap());
    s.undo(plain()).unwrap();
    let (s2, e2) = (snap(root), s.entries().unwrap());
    assert!(s0 != s1 && s1 != s2 && s0 != s2);
    assert!(e0.len() > e1.len() && e1.len() > e2.len());
    assert_eq!(s.history().unwrap().len(), 2);

    s.redo(plain()).unwrap();
    assert_tree(&snap(root), &s1, "first redo");
    assert_eq!(s.entries().unwrap(), e1);
    s.redo(plain()).unwrap();
    assert_tree(&snap(root), &s0, "second redo");
    assert_eq!(s.entries().unwrap(), e0);
    assert!(matches!(s.redo(plain()), Err(Error::NothingToRedo { .. })));
    assert_tree(&snap(root), &s0, "nothing to redo");
}

#[test]
fn redo_puts_back_the_empty_directory_an_undo_removed() {
    // d/ is made by a write, then emptied by a rename: the workspace ends with an
    // empty d/. Rewinding removes d/ (the session made it); redo must bring the
    // workspace back whole, d/ included.
    let (env, s, ws) = Env::with_session("dirs");
    let root = env.ws.path();
    s.write(&ws, "d/e/f", &b"f\n"[..], "m1").unwrap();
    s.rename(&ws, "d/e/f", "g", "m2").unwrap();
    assert!(env.path("d/e").is_dir());
    let before = snap(root);
    s.rewind("m1", plain()).unwrap();
    assert!(!env.path("d").exists(), "the session's directories go");
    assert!(!env.path("g").exists());
    s.redo(plain()).unwrap();
    assert_tree(&snap(root), &before, "redo of a rewind that removed d/e");
}

#[test]
fn redo_leaves_alone_a_file_the_undo_found_already_reverted_by_hand() {
    // f is put back to its "before" by hand, then the session is rewound: the
    // rewind finds f already done and touches nothing of it, so redo must not
    // touch it either. With `backed_up`, the contents the session left in f
    // happen to be in the store (another file held them); that must not matter.
    for backed_up in [false, true] {
        let (env, s, ws) = Env::with_session("hand-reverted");
        let root = env.ws.path();
        put(&env, "f", b"v0\n");
        if backed_up {
            put(&env, "g", b"v2\n");
            s.write(&ws, "g", &b"other\n"[..], "m0").unwrap();
        }
        s.write(&ws, "f", &b"v1\n"[..], "m1").unwrap();
        s.write(&ws, "f", &b"v2\n"[..], "m1").unwrap();
        s.write(&ws, "h", &b"h\n"[..], "m1").unwrap();
        put(&env, "f", b"v0\n");
        let before = snap(root);
        let r = s.rewind("m1", plain()).unwrap();
        assert_eq!(by_path(&r)["f"].status, FileStatus::AlreadyReverted);
        assert!(!env.path("h").exists());
        s.redo(plain()).unwrap();
        assert_tree(
            &snap(root),
            &before,
            &format!("redo, the session's contents of f backed up: {backed_up}"),
        );
    }
}

// ---------------------------------------------------------------- renames

#[test]
fn a_rename_chain_across_turns_undoes_step_by_step() {
    let (env, s, ws) = Env::with_session("chain");
    let root = env.ws.path();
    put_mode(&env, "a", b"alpha\n", 0o640);
    put(&env, "other", b"untouched\n");
    let s0 = snap(root);

    assert_eq!(s.begin_turn("rename a to b", None).unwrap(), 1);
    let es = s.rename(&ws, "a", "b", "m1").unwrap();
    assert_eq!(es.len(), 2);
    assert_eq!((es[0].path.as_str(), es[1].path.as_str()), ("a", "b"));
    assert_eq!(es[0].group, Some(es[0].seq));
    assert_eq!(es[1].group, Some(es[0].seq));
    assert!(es.iter().all(|e| e.turn == 1));
    assert!(!es[0].after.as_ref().unwrap().exists);
    assert_eq!(es[1].after.as_ref(), Some(&es[0].before));
    assert_eq!(s.entries().unwrap(), es);
    let s1 = snap(root);

    assert_eq!(s.begin_turn("rename b to c and edit it", None).unwrap(), 2);
    s.rename(&ws, "b", "c", "m2").unwrap();
    let s2a = snap(root);
    s.write(&ws, "c", &b"alpha\nbeta\n"[..], "m2b").unwrap();
    let s2 = snap(root);

    assert_eq!(s.begin_turn("move c into a new dir", None).unwrap(), 3);
    let es = s.rename(&ws, "c", "dir/d", "m3").unwrap();
    assert_eq!(es[1].created_dirs, ["dir"]);
    let s3 = snap(root);
    assert_eq!(read(env.path("dir/d")), b"alpha\nbeta\n");
    assert_eq!(util::mode_of(&env.path("dir/d")), 0o640);
    let summaries = s.turns().unwrap();
    let counts: Vec<(usize, usize)> = summaries.iter().map(|t| (t.entries, t.files)).collect();
    assert_eq!(counts, [(2, 2), (3, 2), (2, 2)]);

    let expected = [
        (&s2, "dir/ goes"),
        (&s2a, "the edit"),
        (&s1, "b to c"),
        (&s0, "a to b"),
    ];
    for (state, what) in expected {
        s.undo(plain()).unwrap();
        assert_tree(&snap(root), state, &format!("undo of {what}"));
    }
    assert!(!env.path("dir").exists());
    assert!(s.entries().unwrap().is_empty());
    assert!(matches!(s.undo(plain()), Err(Error::NothingToUndo { .. })));

    // Redo brings the chain back, directory and all.
    for (state, what) in [
        (&s1, "a to b"),
        (&s2a, "b to c"),
        (&s2, "the edit"),
        (&s3, "dir/d"),
    ] {
        s.redo(plain()).unwrap();
        assert_tree(&snap(root), state, &format!("redo of {what}"));
    }
    // Reverting the new name takes the whole rename back, and so does a rewind.
    let r = s.revert(&ws, "dir/d", plain()).unwrap();
    assert_eq!(
        by_path(&r).keys().copied().collect::<Vec<_>>(),
        ["c", "dir/d"]
    );
    assert_tree(&snap(root), &s2, "revert of dir/d");
    s.redo(plain()).unwrap();
    s.rewind_to_turn(2, plain()).unwrap();
    assert_tree(&snap(root), &s1, "rewind to turn 2");
}

#[test]
fn undoing_a_rename_onto_an_existing_file_restores_both() {
    let (env, s, ws) = Env::with_session("onto");
    let root = env.ws.path();
    put_mode(&env, "x", &binary(7), 0o755);
    put_mode(&env, "sub/y", b"the y that was\n", 0o600);
    let before = snap(root);
    let es = s.rename(&ws, "x", "sub/y", "m").unwrap();
    assert!(es[1].before.exists, "the overwritten file is backed up");
    assert!(es[1].created_dirs.is_empty());
    assert!(!env.path("x").exists());
    assert_eq!(read(env.path("sub/y")), binary(7));
    assert_eq!(util::mode_of(&env.path("sub/y")), 0o755);
    let after = snap(root);

    s.undo(plain()).unwrap();
    assert_tree(&snap(root), &before, "undo of a rename onto a file");
    s.redo(plain()).unwrap();
    assert_tree(&snap(root), &after, "redo of a rename onto a file");
    s.revert(&ws, "x", plain()).unwrap();
    assert_tree(&snap(root), &before, "revert of the old name");
}

#[test]
fn undoing_a_rename_refuses_when_either_side_changed_by_hand() {
    let (env, s, ws) = Env::with_session("renamed");
    let root = env.ws.path();
    put(&env, "p", b"P\n");
    let before = snap(root);
    let es = s.rename(&ws, "p", "q/r", "m").unwrap();
    let moved = snap(root);
    let entries = s.entries().unwrap();

    // The new name edited by hand.
    put(&env, "q/r", b"edited\n");
    let hand = snap(root);
    let plan = s.undo(dry()).unwrap();
    assert!(!plan.applied);
    let files = by_path(&plan);
    assert_eq!(files.keys().copied().collect::<Vec<_>>(), ["p", "q/r"]);
    assert_eq!(
        files["q/r"].status,
        FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
    );
    assert_eq!(files["q/r"].action, RevertAction::Delete);
    assert_eq!(files["q/r"].seqs, [es[1].seq]);
    assert_eq!(files["p"].status, FileStatus::Safe);
    assert_eq!(files["p"].action, RevertAction::Write { size: 2 });
    assert_eq!(files["p"].seqs, [es[0].seq]);
    let conflicts = refused(s.undo(plain()));
    assert_eq!(conflicts.keys().collect::<Vec<_>>(), ["q/r"]);
    assert_eq!(conflicts["q/r"].seq, es[1].seq);
    assert_eq!(
        conflicts["q/r"].reason,
        ConflictReason::ChangedSince { by: None }
    );
    assert_eq!(refused(s.revert(&ws, "p", plain())).len(), 1);
    assert_tree(&snap(root), &hand, "a refused undo of a rename");
    assert_eq!(s.entries().unwrap(), entries);

    // Put back by hand, then the old name made again by hand.
    put(&env, "q/r", b"P\n");
    assert_tree(&snap(root), &moved, "put back by hand");
    put(&env, "p", b"a new p\n");
    let hand = snap(root);
    let plan = s.undo(dry()).unwrap();
    let files = by_path(&plan);
    assert_eq!(
        files["p"].status,
        FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
    );
    assert_eq!(files["q/r"].status, FileStatus::Safe);
    let conflicts = refused(s.undo(plain()));
    assert_eq!(conflicts.keys().collect::<Vec<_>>(), ["p"]);
    assert_eq!(refused(s.revert(&ws, "q/r", plain())).len(), 1);
    assert_tree(&snap(root), &hand, "a refused undo of a rename");
    assert_eq!(s.entries().unwrap(), entries);

    // Forced, it restores; redo gives back what the force overwrote.
    s.undo(forced()).unwrap();
    assert_tree(&snap(root), &before, "a forced undo of a rename");
    s.redo(plain()).unwrap();
    assert_tree(&snap(root), &hand, "redo of a forced undo");
}

#[test]
fn renaming_a_missing_file_records_nothing() {
    let (env, s, ws) = Env::with_session("missing");
    let root = env.ws.path();
    put(&env, "here", b"here\n");
    s.write(&ws, "here", &b"changed\n"[..], "m0").unwrap();
    let before = snap(root);
    let entries = s.entries().unwrap();

    let err = s.rename(&ws, "missing", "newdir/x", "m").unwrap_err();
    match &err {
        Error::FileNotFound { path } => assert_eq!(path, &ws.root().join("missing")),
        other => panic!("expected FileNotFound, got {other:?}"),
    }
    let err = s.rename(&ws, "nodir/missing", "here", "m").unwrap_err();
    assert!(matches!(err, Error::FileNotFound { .. }), "{err}");
    match s.rename(&ws, "here", "./here", "m") {
        Err(Error::Io { op, path, source }) => {
            assert_eq!((op, path), ("move", ws.root().join("here")));
            assert!(source.to_string().contains("same file"), "{source}");
        }
        other => panic!("a file renamed onto itself: {other:?}"),
    }
    assert_tree(&snap(root), &before, "failed renames");
    assert!(!env.path("newdir").exists());
    assert_eq!(s.entries().unwrap(), entries);
    assert!(s.history().unwrap().is_empty());
}

// ---------------------------------------------------------------- previews

/// The state of the file at `p` now, as the store describes it.
fn state_of(p: &Path) -> turnback_store::FileState {
    match std::fs::read(p) {
        Ok(bytes) => turnback_store::FileState {
            exists: true,
            sha256: Some(sha256_hex(&bytes)),
            size: bytes.len() as u64,
            mode: Some(util::mode_of(p)),
            uid: None,
            gid: None,
            dir: false,
        },
        Err(_) => turnback_store::FileState::absent(),
    }
}

#[test]
fn a_previewed_rewind_classifies_each_file_and_diffs_it_against_its_target() {
    let env = Env::new();
    let ws = env.workspace();
    let s = env.session("me");
    let other = env.session("other");
    let root = env.ws.path();
    for name in ["hand", "other", "back", "safe", "cp"] {
        put(
            &env,
            &format!("{name}.txt"),
            format!("{name} 0\n").as_bytes(),
        );
    }
    let mut seq = BTreeMap::new();
    for name in ["hand", "other", "back", "safe", "created"] {
        let path = format!("{name}.txt");
        let e = s
            .write(&ws, &path, format!("{name} 1\n").as_bytes(), "m1")
            .unwrap();
        seq.insert(path, e.seq);
    }
    {
        let cp = s.checkpoint(&ws, "cp.txt", "m2").unwrap();
        seq.insert("cp.txt".to_string(), cp.seq());
        put(&env, "cp.txt", b"cp half written\n");
        drop(cp); // never committed, as a writer that died
    }
    put(&env, "hand.txt", b"hand by hand\n");
    let theirs = other
        .write(&ws, "other.txt", &b"other 2\n"[..], "o1")
        .unwrap();
    put(&env, "back.txt", b"back 0\n");

    let before = snap(root);
    let entries = s.entries().unwrap();
    let plan = s.rewind("m1", dry()).unwrap();
    assert!(!plan.applied);
    let files = by_path(&plan);
    let status: BTreeMap<&str, FileStatus> =
        files.iter().map(|(p, f)| (*p, f.status.clone())).collect();
    let by_other = ChangedBy {
        session: "other".into(),
        message_id: "o1".into(),
        seq: theirs.seq,
    };
    assert_eq!(
        status,
        BTreeMap::from([
            ("back.txt", FileStatus::AlreadyReverted),
            (
                "cp.txt",
                FileStatus::Conflict(ConflictReason::NeverCommitted)
            ),
            ("created.txt", FileStatus::Safe),
            (
                "hand.txt",
                FileStatus::Conflict(ConflictReason::ChangedSince { by: None })
            ),
            (
                "other.txt",
                FileStatus::Conflict(ConflictReason::ChangedSince {
                    by: Some(by_other.clone())
                })
            ),
            ("safe.txt", FileStatus::Safe),
        ])
    );
    for (path, f) in &files {
        assert_eq!(f.seqs, [seq[*path]], "{path}");
        assert_eq!(f.workspace, ws.root());
        if *path == "created.txt" {
            assert_eq!(f.action, RevertAction::Delete);
            assert_eq!(f.target, turnback_store::FileState::absent());
        } else {
            let name = path.trim_end_matches(".txt");
            let was = format!("{name} 0\n");
            assert_eq!(
                f.action,
                RevertAction::Write {
                    size: was.len() as u64
                },
                "{path}"
            );
            assert_eq!(f.target.sha256, Some(sha256_hex(was.as_bytes())), "{path}");
        }
    }
    // Newest change first.
    let order: Vec<u64> = plan.files.iter().map(|f| f.seqs[0]).collect();
    assert!(order.windows(2).all(|w| w[0] > w[1]), "{order:?}");
    assert_tree(&snap(root), &before, "a dry-run rewind");
    assert_eq!(s.entries().unwrap(), entries);
    assert!(s.history().unwrap().is_empty());

    // Each file's diff: the file now (old side) against its target (new side).
    for f in &plan.files {
        let d = s.revert_diff(f).unwrap();
        let p = env.path(&f.path);
        assert_eq!(d.path, f.path);
        assert_eq!(d.workspace, ws.root());
        assert_eq!(d.old, state_of(&p), "{}: old side", f.path);
        assert_eq!(d.new, f.target, "{}: new side", f.path);
        if f.status == FileStatus::AlreadyReverted {
            assert_eq!(d.body, DiffBody::Same, "{}", f.path);
            continue;
        }
        let DiffBody::Text {
            insertions,
            deletions,
            unified,
        } = &d.body
        else {
            panic!("{}: text expected, got {:?}", f.path, d.body)
        };
        let now = String::from_utf8(read(&p)).unwrap();
        let new_name = if f.target.exists {
            format!("b/{}", f.path)
        } else {
            "/dev/null".into()
        };
        assert!(
            unified.starts_with(&format!("--- a/{}\n+++ {new_name}\n", f.path)),
            "{unified}"
        );
        assert!(
            unified.contains(&format!("\n-{now}")),
            "{}: {unified}",
            f.path
        );
        if f.target.exists {
            let name = f.path.trim_end_matches(".txt");
            assert!(unified.contains(&format!("\n+{name} 0\n")), "{unified}");
            assert_eq!((*insertions, *deletions), (1, 1), "{}", f.path);
        } else {
            assert_eq!((*insertions, *deletions), (0, 1), "{}", f.path);
        }
    }
    assert_tree(&snap(root), &before, "diffs of a plan");

    // For real, the same three files refuse it and nothing is touched.
    let conflicts = refused(s.rewind("m1", plain()));
    let reasons: BTreeMap<&str, ConflictReason> = conflicts
        .iter()
        .map(|(p, c)| (p.as_str(), c.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        BTreeMap::from([
            ("cp.txt", ConflictReason::NeverCommitted),
            ("hand.txt", ConflictReason::ChangedSince { by: None }),
            (
                "other.txt",
                ConflictReason::ChangedSince { by: Some(by_other) }
            ),
        ])
    );
    assert_tree(&snap(root), &before, "a refused rewind");
    assert_eq!(s.entries().unwrap(), entries);
}

// ---------------------------------------------------------------- the read guard

#[test]
fn the_read_guard_holds_across_two_handles_of_one_session() {
    let env = Env::new();
    let ws = env.workspace();
    let root = ws.root().to_owned();
    put(&env, "notes.txt", b"one\n");
    let file = root.join("notes.txt");
    // Two handles, each through its own Store, as two processes of one agent.
    let first = env.session("agent");
    let second = env.session("agent");
    let not_read = |r: turnback_store::Result<()>| matches!(r, Err(Error::NotRead { session, path }) if session == "agent" && path == file);
    let changed = |r: turnback_store::Result<()>| matches!(r, Err(Error::ChangedSinceRead { session, path }) if session == "agent" && path == file);

    assert!(not_read(second.check_write(&ws, "notes.txt")));
    first.note_read(&ws, "notes.txt").unwrap();
    second.check_write(&ws, "notes.txt").unwrap();
    // Named another way, it is the same file.
    second.check_write(&ws, &file).unwrap();
    second.check_write(&ws, "./sub/../notes.txt").unwrap();
    first.check_write(&ws, "notes.txt").unwrap();

    put(&env, "notes.txt", b"two\n");
    assert!(changed(second.check_write(&ws, "notes.txt")));
    assert!(changed(first.check_write(&ws, "notes.txt")));
    second.note_read(&ws, "notes.txt").unwrap();
    first.check_write(&ws, "notes.txt").unwrap();

    // Contents count, not times: the same size and time, other bytes, is a change...
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    put(&env, "notes.txt", b"TWO\n");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert!(changed(second.check_write(&ws, "notes.txt")));
    // ...and a new time on the same bytes is not.
    first.note_read(&ws, "notes.txt").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    second.check_write(&ws, "notes.txt").unwrap();

    // A write through one handle counts as reading for the other.
    put(&env, "notes.txt", b"three\n");
    assert!(changed(first.check_write(&ws, "notes.txt")));
    first.note_read(&ws, "notes.txt").unwrap();
    first.write(&ws, "notes.txt", &b"four\n"[..], "w1").unwrap();
    second.check_write(&ws, "notes.txt").unwrap();

    // Another session's write is a change for this one, not for the writer.
    let someone = env.session("someone-else");
    assert!(matches!(
        someone.check_write(&ws, "notes.txt"),
        Err(Error::NotRead { .. })
    ));
    someone.note_read(&ws, "notes.txt").unwrap();
    someone
        .write(&ws, "notes.txt", &b"five\n"[..], "x1")
        .unwrap();
    assert!(changed(first.check_write(&ws, "notes.txt")));
    assert!(changed(second.check_write(&ws, "notes.txt")));
    someone.check_write(&ws, "notes.txt").unwrap();

    // A file that does not exist may always be created; one deleted by hand too.
    second.check_write(&ws, "brand/new.txt").unwrap();
    std::fs::remove_file(&file).unwrap();
    first.check_write(&ws, "notes.txt").unwrap();
}
