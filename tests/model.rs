//! A model of the store, checked against the real one under random operation
//! sequences (`proptest-state-machine`).
//!
//! The model is plain data: the workspace's files (contents and mode) and
//! directories, the session's entries as a stack (each with its before and
//! after), its turns, its redo history, and the entries of a second session
//! that writes the same files. Each operation is applied to the model, which
//! predicts the outcome (success, a report with each file's status, or an error
//! down to the conflicts of a refusal), and then to a real store on a temporary
//! workspace. After every step the two must agree on:
//!
//! - the workspace: every file's bytes and mode, every directory, and no stray
//!   `.turnback-*` temporary (nor a store temporary in the home, but for the
//!   backup temporaries `blobs/.tmp-*` that a crashed writer left, which only
//!   pruning removes);
//! - `Session::entries()`: seq, message id, path, version, turn, group, before
//!   and after (contents, size, mode), created directories, nothing in flight;
//! - `Session::turn_bounds()`, `Session::history()` (kind, entries, turns, files
//!   with what each revert found and restored, directories it removed) and the
//!   other session's entries.
//!
//! The operations: the agent's `write`, `remove` and `rename`; a checkpoint
//! around a write by hand, then commit, rollback or abandon (a process that
//! died, leaving the entry uncommitted), and a later `commit`/`rollback` by
//! number; `undo`, `revert(path)`, `rewind(message)`, `rewind_to_turn(n)` and
//! `redo`, each plain, forced or as a dry run; `begin_turn`; the person editing,
//! deleting or chmod-ing a file by hand; another session writing or removing a
//! file; "reopen" (every handle dropped, the store, session and workspace
//! opened again from disk); and a crash: a `turnback write` process (the built
//! binary, as `failpoints.rs` runs it) aborted at a crash point the model
//! picks among those the write passes, then everything reopened, which
//! settles what it left. The model predicts what recovery leaves from where
//! the point is: before the entry is recorded, nothing; between the entry and
//! the rename over the file, nothing but a sequence number used up (the entry
//! is dropped, the directories it made removed); after the rename, the whole
//! write. Refusals are predicted from the files as they are, with the session
//! and message the store names as the changer.
//!
//! A default run is 64 cases of up to 30 steps, about 1,000 operations (it
//! prints the count with `--nocapture`): some 4 s in a debug build on tmpfs,
//! 10 to 15 s on a disk, where the store's fsyncs dominate. For a longer run
//! set `PROPTEST_CASES`, which proptest reads (and `TMPDIR=/dev/shm` to go
//! faster):
//!
//! ```text
//! PROPTEST_CASES=5000 cargo test --test tests -- model:: --nocapture
//! ```
//!
//! Failures are not persisted to `proptest-regressions/`
//! (`failure_persistence: None`): a shrunk failing case is kept here as a
//! regular `#[test]` that replays its exact sequence with [`replay`], as
//! `a_scripted_sequence_matches_the_model` does.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::{Config, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};
use turnback_store::{
    ChangedBy, ConflictReason, Entry, Error, FileState, FileStatus, REDO_OVERWRITE_MESSAGE,
    RevertAction, RevertOptions, RevertRecord, RevertReport, Session, Store, Workspace,
};

use crate::util::{names_under, sha256_hex, stray_temps};

/// The files operations touch; no path is a directory of another.
const PATHS: [&str; 5] = ["a", "b", "d/x", "d/y", "d/e/z"];
/// The message ids of the agent's changes (few, so that rewinds find them).
const MSGS: [&str; 4] = ["m0", "m1", "m2", "m3"];
/// Modes the person sets by hand.
const MODES: [u32; 3] = [0o600, 0o644, 0o755];
/// The session under test, and the other one that writes the same files.
const MAIN: &str = "agent";
const OTHER: &str = "other";
/// The message id of every change of the other session.
const OTHER_MSG: &str = "o";
/// Steps per case.
const MAX_STEPS: usize = 30;
/// Cases of a default run.
const DEFAULT_CASES: u32 = 64;

thread_local! {
    /// Operations applied to real stores by this thread (the counter of a run).
    static OPS: Cell<u64> = const { Cell::new(0) };
    /// Cases (fresh stores) started by this thread.
    static CASES: Cell<u64> = const { Cell::new(0) };
    /// `turnback write` processes aborted at a crash point by this thread.
    static CRASHES: Cell<u64> = const { Cell::new(0) };
}

/// The mode of a file created with 0o666 (the umask applied), as both the store
/// and `std::fs::write` create new files.
fn default_mode() -> u32 {
    static MODE: OnceLock<u32> = OnceLock::new();
    *MODE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("probe");
        std::fs::write(&p, "").unwrap();
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777
    })
}

/// Every contents the strategies make, by hash, to show a backup by its text.
fn known_contents() -> &'static BTreeMap<String, String> {
    static KNOWN: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let mut all = vec![String::new()];
        for len in 1..=2 {
            let mut next = Vec::new();
            for s in all.iter().filter(|s| s.len() == len - 1) {
                for c in ['a', 'b'] {
                    next.push(format!("{s}{c}"));
                }
            }
            all.extend(next);
        }
        all.into_iter()
            .map(|s| (sha256_hex(s.as_bytes()), s))
            .collect()
    })
}

// ---------------------------------------------------------------------------
// Operations.

/// What the person does to a file by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Writes these bytes (creating the directories on the way).
    Put(String),
    /// Deletes the file, if there is one.
    Delete,
    /// Sets the mode, if there is a file.
    Chmod(u32),
}

/// How a checkpoint ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Commit,
    Rollback,
    /// The handle is dropped without either: the entry stays uncommitted.
    Abandon,
}

/// How a revert runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Plain,
    Force,
    Dry,
}

impl How {
    fn opts(self) -> RevertOptions {
        RevertOptions {
            force: self == How::Force,
            dry_run: self == How::Dry,
        }
    }
}

/// One step. Arguments that depend on the state (`pick`) are resolved by the
/// model, so every step applies to any state and shrinking keeps sequences valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Write {
        path: &'static str,
        data: String,
        msg: &'static str,
    },
    Remove {
        path: &'static str,
        msg: &'static str,
    },
    Rename {
        from: &'static str,
        to: &'static str,
        msg: &'static str,
    },
    /// `checkpoint`, the person's edit, then the end.
    Checkpoint {
        path: &'static str,
        edit: Edit,
        end: End,
        msg: &'static str,
    },
    /// `Session::commit` of an uncommitted entry (picked among them).
    CommitPending {
        pick: u8,
    },
    /// `Session::rollback_with` of an uncommitted entry (picked among them).
    RollbackPending {
        pick: u8,
        how: How,
    },
    Undo {
        how: How,
    },
    Revert {
        path: &'static str,
        how: How,
    },
    Rewind {
        msg: &'static str,
        how: How,
    },
    /// `rewind_to_turn(pick % (next turn + 1))`: also turns never begun or
    /// rewound away, and 0 (entries before any turn belong to it, but it is
    /// not a turn).
    RewindTurn {
        pick: u8,
        how: How,
    },
    BeginTurn,
    Redo {
        how: How,
    },
    /// The person, by hand.
    Person {
        path: &'static str,
        edit: Edit,
    },
    /// The other session writes (`Some`) or removes (`None`) a file.
    Other {
        path: &'static str,
        data: Option<String>,
    },
    /// Every handle dropped; store, session and workspace opened again.
    Reopen,
    /// `turnback write path` (contents `data`) in the session, aborted at a
    /// crash point ([`Model::crash_points`], picked among them), then every
    /// handle dropped and opened again.
    Crash {
        path: &'static str,
        data: String,
        msg: &'static str,
        pick: u8,
    },
}

fn path() -> impl Strategy<Value = &'static str> {
    prop::sample::select(PATHS.to_vec())
}

fn msg() -> impl Strategy<Value = &'static str> {
    prop::sample::select(MSGS.to_vec())
}

fn data() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!['a', 'b']), 0..3)
        .prop_map(|v| v.into_iter().collect())
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => data().prop_map(Edit::Put),
        1 => Just(Edit::Delete),
        1 => prop::sample::select(MODES.to_vec()).prop_map(Edit::Chmod),
    ]
}

fn how() -> impl Strategy<Value = How> {
    prop_oneof![5 => Just(How::Plain), 3 => Just(How::Force), 1 => Just(How::Dry)]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![2 => Just(End::Commit), 2 => Just(End::Rollback), 1 => Just(End::Abandon)]
}

/// One of `likely` most of the time (when there are any), else any of `all`.
fn mostly<T: Clone + fmt::Debug + 'static>(likely: Vec<T>, all: &[T]) -> BoxedStrategy<T> {
    let any = prop::sample::select(all.to_vec());
    if likely.is_empty() {
        any.boxed()
    } else {
        prop_oneof![3 => prop::sample::select(likely), 1 => any].boxed()
    }
}

/// The next step, weighted by the state so that most steps do something (the
/// steps that fail, like an undo with nothing to undo, stay possible).
fn op(m: &Model) -> BoxedStrategy<Op> {
    let existing: Vec<&'static str> = m.files.keys().copied().collect();
    let changed: Vec<&'static str> = m
        .entries
        .iter()
        .map(|e| e.path)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let touched: Vec<&'static str> = changed
        .iter()
        .chain(&existing)
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let messages: Vec<&'static str> = m
        .entries
        .iter()
        .map(|e| e.msg)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let turns: Vec<u8> = m.turns.iter().map(|t| *t as u8).collect();
    let pending = m.entries.iter().any(|e| e.after.is_none());
    let when = |cond: bool, yes: u32| if cond { yes } else { 1 };
    let arms: Vec<(u32, BoxedStrategy<Op>)> = vec![
        (
            6,
            (path(), data(), msg())
                .prop_map(|(path, data, msg)| Op::Write { path, data, msg })
                .boxed(),
        ),
        (
            2,
            (mostly(existing.clone(), &PATHS), msg())
                .prop_map(|(path, msg)| Op::Remove { path, msg })
                .boxed(),
        ),
        (
            2,
            (mostly(existing, &PATHS), path(), msg())
                .prop_filter("a rename needs two names", |(f, t, _)| f != t)
                .prop_map(|(from, to, msg)| Op::Rename { from, to, msg })
                .boxed(),
        ),
        (
            3,
            (path(), edit(), end(), msg())
                .prop_map(|(path, edit, end, msg)| Op::Checkpoint {
                    path,
                    edit,
                    end,
                    msg,
                })
                .boxed(),
        ),
        (
            when(pending, 3),
            any::<u8>()
                .prop_map(|pick| Op::CommitPending { pick })
                .boxed(),
        ),
        (
            when(pending, 3),
            (any::<u8>(), how())
                .prop_map(|(pick, how)| Op::RollbackPending { pick, how })
                .boxed(),
        ),
        (
            when(!m.entries.is_empty(), 4),
            how().prop_map(|how| Op::Undo { how }).boxed(),
        ),
        (
            when(!m.entries.is_empty(), 3),
            (mostly(changed.clone(), &PATHS), how())
                .prop_map(|(path, how)| Op::Revert { path, how })
                .boxed(),
        ),
        (
            when(!m.entries.is_empty(), 2),
            (mostly(messages, &MSGS), how())
                .prop_map(|(msg, how)| Op::Rewind { msg, how })
                .boxed(),
        ),
        (
            when(!m.turns.is_empty(), 2),
            (mostly(turns, &[0, 1, 2, 3, 4, 5, 6]), how())
                .prop_map(|(pick, how)| Op::RewindTurn { pick, how })
                .boxed(),
        ),
        (2, Just(Op::BeginTurn).boxed()),
        (
            when(!m.history.is_empty(), 4),
            how().prop_map(|how| Op::Redo { how }).boxed(),
        ),
        (
            4,
            (mostly(touched.clone(), &PATHS), edit())
                .prop_map(|(path, edit)| Op::Person { path, edit })
                .boxed(),
        ),
        (
            3,
            (mostly(touched, &PATHS), prop::option::weighted(0.8, data()))
                .prop_map(|(path, data)| Op::Other { path, data })
                .boxed(),
        ),
        (1, Just(Op::Reopen).boxed()),
        (
            2,
            (path(), data(), msg(), any::<u8>())
                .prop_map(|(path, data, msg, pick)| Op::Crash {
                    path,
                    data,
                    msg,
                    pick,
                })
                .boxed(),
        ),
    ];
    Union::new_weighted(arms).boxed()
}

// ---------------------------------------------------------------------------
// Expectations: what a step returns, in a form both sides produce.

/// Who the store names as the changer of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct By {
    session: String,
    message_id: String,
    seq: u64,
}

/// A file's status in a revert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Safe,
    AlreadyReverted,
    ChangedSince(Option<By>),
    NeverCommitted,
}

impl Status {
    fn is_conflict(&self) -> bool {
        matches!(self, Status::ChangedSince(_) | Status::NeverCommitted)
    }
}

/// One file of a revert report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportFile {
    path: String,
    seqs: Vec<u64>,
    status: Status,
    target: String,
}

/// One conflict of a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpConflict {
    path: String,
    seq: u64,
    reason: Status,
}

/// The errors the model predicts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    Refused(Vec<ExpConflict>),
    NothingToUndo,
    NothingToRedo,
    NoChangeToFile,
    MessageNotFound,
    TurnNotFound,
    FileNotFound,
    NoSuchEntry,
    AlreadyCommitted,
}

/// What a step returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Success with nothing more to compare (or a step that returns nothing).
    Done,
    Turn(u32),
    Report {
        applied: bool,
        files: Vec<ReportFile>,
    },
    Fail(Failure),
}

// ---------------------------------------------------------------------------
// The model.

/// A file's state: absent, or its bytes and mode.
type St = Option<(Vec<u8>, u32)>;

/// The same file (or both absent): contents and mode, as the store compares
/// them (`FileState::same_state`): a chmod alone is a change.
fn same(a: &St, b: &St) -> bool {
    a == b
}

/// A state as the checks print it.
fn show_st(st: &St) -> String {
    match st {
        None => "absent".into(),
        Some((bytes, mode)) => format!(
            "{:?}/{}@{:o}",
            String::from_utf8_lossy(bytes),
            bytes.len(),
            mode
        ),
    }
}

/// A real state printed as [`show_st`] prints the model's.
fn show(fs: &FileState) -> String {
    if !fs.exists {
        assert_eq!(fs, &FileState::absent(), "an absent state with details");
        return "absent".into();
    }
    let hash = fs.sha256.as_deref().expect("a present state has a hash");
    let text = known_contents()
        .get(hash)
        .map_or_else(|| format!("#{hash}"), |t| format!("{t:?}"));
    format!(
        "{text}/{}@{:o}",
        fs.size,
        fs.mode.expect("a present state has a mode")
    )
}

#[derive(Clone, Debug)]
struct MEntry {
    seq: u64,
    msg: &'static str,
    path: &'static str,
    version: u32,
    before: St,
    /// `None` until committed.
    after: Option<St>,
    created_dirs: Vec<String>,
    turn: u32,
    group: Option<u64>,
    /// Creation order across both sessions (the store compares times).
    stamp: u64,
}

#[derive(Clone, Debug)]
struct MFile {
    path: &'static str,
    overwritten: St,
    restored: St,
}

#[derive(Clone, Debug)]
struct MRecord {
    kind: &'static str,
    entries: Vec<MEntry>,
    turns: Vec<u32>,
    files: Vec<MFile>,
    removed_dirs: Vec<String>,
}

#[derive(Clone, Debug)]
struct OtherEntry {
    seq: u64,
    path: &'static str,
    after: St,
    stamp: u64,
}

/// An entry about to be recorded.
struct Draft {
    path: &'static str,
    before: St,
    after: Option<St>,
    created_dirs: Vec<String>,
}

/// A file's part of a revert (as `revert.rs` plans it).
struct Plan {
    path: &'static str,
    seqs: Vec<u64>,
    target: St,
    expected: Option<St>,
    created_dirs: Vec<String>,
    status: Status,
}

/// The reference model: see the module comment.
#[derive(Clone)]
pub struct Model {
    files: BTreeMap<&'static str, (Vec<u8>, u32)>,
    dirs: BTreeSet<String>,
    entries: Vec<MEntry>,
    next_seq: u64,
    turns: Vec<u32>,
    next_turn: u32,
    history: Vec<MRecord>,
    other: Vec<OtherEntry>,
    other_next_seq: u64,
    stamp: u64,
    /// What the last step must return.
    expect: Expect,
    /// The entry number the last commit/rollback by number resolved to.
    seq_arg: u64,
    /// The turn the last rewind to a turn resolved to.
    turn_arg: u32,
    /// The crash point the last crash resolved to.
    crash_at: &'static str,
    /// The session's `index.json` is on disk for certain (a change was
    /// recorded): its next change is a journal line, which passes the
    /// journal's crash points.
    snapshot: bool,
}

/// What a crash at a point of a write leaves once recovery settled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crashed {
    /// Killed before the entry was recorded: nothing.
    Nothing,
    /// After the entry, before the rename: the entry is dropped (the file is
    /// at "before"), but its sequence number stays used.
    SeqUsed,
    /// After the rename: the write happened, and its entry stays.
    Written,
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: BTreeMap<_, _> = self
            .files
            .iter()
            .map(|(p, (b, m))| (*p, show_st(&Some((b.clone(), *m)))))
            .collect();
        f.debug_struct("Model")
            .field("files", &files)
            .field("entries", &self.entries.len())
            .field("turns", &self.turns)
            .field("history", &self.history.len())
            .finish_non_exhaustive()
    }
}

fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = path[at..].find('/') {
        out.push(path[..at + i].to_owned());
        at += i + 1;
    }
    out
}

fn depth(d: &str) -> usize {
    d.matches('/').count()
}

impl Model {
    /// A workspace holding `files` (default mode), before any session.
    pub fn new(files: BTreeMap<&'static str, String>) -> Model {
        let mut m = Model {
            files: BTreeMap::new(),
            dirs: BTreeSet::new(),
            entries: Vec::new(),
            next_seq: 1,
            turns: Vec::new(),
            next_turn: 1,
            history: Vec::new(),
            other: Vec::new(),
            other_next_seq: 1,
            stamp: 0,
            expect: Expect::Done,
            seq_arg: 0,
            turn_arg: 0,
            crash_at: "",
            snapshot: false,
        };
        for (p, d) in files {
            m.put(p, Some((d.into_bytes(), default_mode())));
        }
        m
    }

    fn state(&self, path: &str) -> St {
        self.files.get(path).cloned()
    }

    fn missing_dirs(&self, path: &str) -> Vec<String> {
        ancestors(path)
            .into_iter()
            .filter(|d| !self.dirs.contains(d))
            .collect()
    }

    /// Creates the missing directories of `path`; returns them, outermost first.
    fn ensure_dirs(&mut self, path: &str) -> Vec<String> {
        let missing = self.missing_dirs(path);
        self.dirs.extend(missing.iter().cloned());
        missing
    }

    /// Sets a file's state; a present one gets its directories.
    fn put(&mut self, path: &'static str, st: St) {
        match st {
            Some(s) => {
                self.ensure_dirs(path);
                self.files.insert(path, s);
            }
            None => {
                self.files.remove(path);
            }
        }
    }

    fn is_empty_dir(&self, d: &str) -> bool {
        let prefix = format!("{d}/");
        !self.files.keys().any(|f| f.starts_with(&prefix))
            && !self.dirs.iter().any(|x| x.starts_with(&prefix))
    }

    /// `Workspace::remove_empty_dirs`: innermost first; returns those removed,
    /// outermost first.
    fn remove_empty_dirs(&mut self, dirs: &[String]) -> Vec<String> {
        let mut removed = Vec::new();
        for d in dirs.iter().rev() {
            if self.dirs.contains(d) && self.is_empty_dir(d) {
                self.dirs.remove(d);
                removed.push(d.clone());
            }
        }
        removed.reverse();
        removed
    }

    fn current_turn(&self) -> u32 {
        self.turns.last().copied().unwrap_or(0)
    }

    fn next_stamp(&mut self) -> u64 {
        self.stamp += 1;
        self.stamp
    }

    /// `Session::record`: one step's entries, grouped when more than one.
    fn record(&mut self, msg: &'static str, drafts: Vec<Draft>) -> Vec<u64> {
        self.snapshot = true;
        let group = (drafts.len() > 1).then_some(self.next_seq);
        let turn = self.current_turn();
        let mut seqs = Vec::new();
        for d in drafts {
            let version = 1 + self.entries.iter().filter(|e| e.path == d.path).count() as u32;
            let stamp = self.next_stamp();
            let seq = self.next_seq;
            self.next_seq += 1;
            self.entries.push(MEntry {
                seq,
                msg,
                path: d.path,
                version,
                before: d.before,
                after: d.after,
                created_dirs: d.created_dirs,
                turn,
                group,
                stamp,
            });
            seqs.push(seq);
        }
        seqs
    }

    fn entry_mut(&mut self, seq: u64) -> &mut MEntry {
        self.entries.iter_mut().find(|e| e.seq == seq).unwrap()
    }

    /// A write through a session: the new mode is the old file's, or the
    /// default for a new one. Returns the before, after and created directories.
    fn write_through(&mut self, path: &'static str, data: &str) -> (St, St, Vec<String>) {
        let before = self.state(path);
        let created = self.ensure_dirs(path);
        let mode = before.as_ref().map_or(default_mode(), |(_, m)| *m);
        let after = Some((data.as_bytes().to_vec(), mode));
        self.put(path, after.clone());
        (before, after, created)
    }

    /// The person's edit.
    fn person(&mut self, path: &'static str, edit: &Edit) {
        match edit {
            Edit::Put(data) => {
                let mode = self.files.get(path).map_or(default_mode(), |(_, m)| *m);
                self.put(path, Some((data.as_bytes().to_vec(), mode)));
            }
            Edit::Delete => self.put(path, None),
            Edit::Chmod(mode) => {
                if let Some((_, m)) = self.files.get_mut(path) {
                    *m = *mode;
                }
            }
        }
    }

    /// `find_changer`: the newest entry of either session whose after is the
    /// file as it is now.
    fn find_changer(&self, path: &str, now: &St) -> Option<By> {
        let mine = self
            .entries
            .iter()
            .filter(|e| e.path == path && e.after.as_ref().is_some_and(|a| same(a, now)))
            .map(|e| (e.stamp, MAIN, e.msg, e.seq));
        let theirs = self
            .other
            .iter()
            .filter(|e| e.path == path && same(&e.after, now))
            .map(|e| (e.stamp, OTHER, OTHER_MSG, e.seq));
        mine.chain(theirs)
            .max_by_key(|c| c.0)
            .map(|(_, session, msg, seq)| By {
                session: session.into(),
                message_id: msg.into(),
                seq,
            })
    }

    fn with_group(&self, e: &MEntry) -> Vec<u64> {
        match e.group {
            Some(g) => self
                .entries
                .iter()
                .filter(|x| x.group == Some(g))
                .map(|x| x.seq)
                .collect(),
            None => vec![e.seq],
        }
    }

    /// Groups the selected entries by file, newest first.
    fn plan(&self, seqs: &[u64]) -> Vec<Plan> {
        let mut selected: Vec<&MEntry> = self
            .entries
            .iter()
            .filter(|e| seqs.contains(&e.seq))
            .collect();
        selected.sort_by_key(|e| Reverse(e.seq));
        let mut plans: Vec<Plan> = Vec::new();
        for e in selected {
            match plans.iter_mut().find(|p| p.path == e.path) {
                Some(p) => {
                    p.seqs.push(e.seq);
                    p.target = e.before.clone();
                    p.created_dirs = e.created_dirs.clone();
                }
                None => plans.push(Plan {
                    path: e.path,
                    seqs: vec![e.seq],
                    target: e.before.clone(),
                    expected: e.after.clone(),
                    created_dirs: e.created_dirs.clone(),
                    status: Status::Safe,
                }),
            }
        }
        plans
    }

    fn classify(&self, plans: &mut [Plan]) {
        for p in plans.iter_mut() {
            let now = self.state(p.path);
            p.status = if same(&now, &p.target) {
                Status::AlreadyReverted
            } else {
                match &p.expected {
                    None => Status::NeverCommitted,
                    Some(a) if same(&now, a) => Status::Safe,
                    Some(_) => Status::ChangedSince(self.find_changer(p.path, &now)),
                }
            };
        }
    }

    fn report(plans: &[Plan], applied: bool) -> Expect {
        Expect::Report {
            applied,
            files: plans
                .iter()
                .map(|p| ReportFile {
                    path: p.path.into(),
                    seqs: p.seqs.clone(),
                    status: p.status.clone(),
                    target: show_st(&p.target),
                })
                .collect(),
        }
    }

    fn refusal(plans: &[Plan], how: How) -> Option<Expect> {
        let conflicts: Vec<ExpConflict> = plans
            .iter()
            .filter(|p| p.status.is_conflict())
            .map(|p| ExpConflict {
                path: p.path.into(),
                seq: p.seqs.first().copied().unwrap_or(0),
                reason: p.status.clone(),
            })
            .collect();
        (!conflicts.is_empty() && how != How::Force)
            .then_some(Expect::Fail(Failure::Refused(conflicts)))
    }

    /// Undo, revert, rewind, rewind to a turn (`turns_from`), or a rollback
    /// (`kind` `None`: not recorded).
    fn revert(
        &mut self,
        seqs: &[u64],
        how: How,
        kind: Option<&'static str>,
        turns_from: Option<u32>,
    ) -> Expect {
        let mut plans = self.plan(seqs);
        self.classify(&mut plans);
        if how == How::Dry {
            return Self::report(&plans, false);
        }
        if let Some(refused) = Self::refusal(&plans, how) {
            return refused;
        }
        let mut files = Vec::new();
        for p in &plans {
            let overwritten = if p.status == Status::AlreadyReverted {
                p.target.clone()
            } else {
                let now = self.state(p.path);
                self.put(p.path, p.target.clone());
                now
            };
            files.push(MFile {
                path: p.path,
                overwritten,
                restored: p.target.clone(),
            });
        }
        let taken: Vec<u64> = plans.iter().flat_map(|p| p.seqs.clone()).collect();
        let entries: Vec<MEntry> = self
            .entries
            .iter()
            .filter(|e| taken.contains(&e.seq))
            .cloned()
            .collect();
        self.entries.retain(|e| !taken.contains(&e.seq));
        let mut turns = Vec::new();
        if let Some(n) = turns_from {
            turns = self.turns.iter().copied().filter(|t| *t >= n).collect();
            self.turns.retain(|t| *t < n);
        }
        let mut dirs: Vec<String> = plans
            .iter()
            .filter(|p| p.target.is_none())
            .flat_map(|p| p.created_dirs.clone())
            .collect();
        dirs.sort_by(|a, b| (depth(a), a).cmp(&(depth(b), b)));
        dirs.dedup();
        let removed_dirs = self.remove_empty_dirs(&dirs);
        if let Some(kind) = kind
            && (!entries.is_empty() || !turns.is_empty())
        {
            self.history.push(MRecord {
                kind,
                entries,
                turns,
                files,
                removed_dirs,
            });
        }
        Self::report(&plans, true)
    }

    fn redo(&mut self, how: How) -> Expect {
        let Some(rec) = self.history.last().cloned() else {
            return Expect::Fail(Failure::NothingToRedo);
        };
        let mut plans: Vec<Plan> = rec
            .files
            .iter()
            .map(|f| {
                let mut seqs: Vec<u64> = rec
                    .entries
                    .iter()
                    .filter(|e| e.path == f.path)
                    .map(|e| e.seq)
                    .collect();
                seqs.sort_by_key(|s| Reverse(*s));
                Plan {
                    path: f.path,
                    seqs,
                    target: f.overwritten.clone(),
                    expected: Some(f.restored.clone()),
                    created_dirs: Vec::new(),
                    status: Status::Safe,
                }
            })
            .collect();
        self.classify(&mut plans);
        if how == How::Dry {
            return Self::report(&plans, false);
        }
        if let Some(refused) = Self::refusal(&plans, how) {
            return refused;
        }
        for d in &rec.removed_dirs {
            self.ensure_dirs(&format!("{d}/x"));
        }
        let found: BTreeMap<&str, St> =
            plans.iter().map(|p| (p.path, self.state(p.path))).collect();
        for p in &plans {
            if p.status != Status::AlreadyReverted {
                self.put(p.path, p.target.clone());
            }
        }
        self.history.pop();
        for e in rec.entries {
            let at = self.entries.partition_point(|x| x.seq < e.seq);
            self.entries.insert(at, e);
        }
        let at = rec
            .turns
            .first()
            .map_or(self.turns.len(), |t| self.turns.partition_point(|x| x < t));
        self.turns.splice(at..at, rec.turns);
        // A forced redo records what it overwrote as a change of its own, from
        // what it found to what it wrote: undo brings the hand edit back.
        let overwrites: Vec<Draft> = plans
            .iter()
            .filter(|p| matches!(p.status, Status::ChangedSince(_)))
            .map(|p| Draft {
                path: p.path,
                before: found[p.path].clone(),
                after: Some(p.target.clone()),
                created_dirs: Vec::new(),
            })
            .collect();
        if !overwrites.is_empty() {
            self.record(REDO_OVERWRITE_MESSAGE, overwrites);
        }
        Self::report(&plans, true)
    }

    /// `Session::rollback_with`: refused when a change to the file was
    /// recorded since the checkpoint (this session's later entries first, else
    /// the other session's newest since), unless forced; forced, it takes this
    /// session's later entries to the file along and is recorded for redo.
    fn rollback(&mut self, seq: u64, how: How) -> Expect {
        let cp = self.entry_mut(seq).clone();
        let later: Vec<&MEntry> = self
            .entries
            .iter()
            .filter(|e| e.seq > seq && e.path == cp.path)
            .collect();
        let by = match later.last() {
            Some(e) => Some(By {
                session: MAIN.into(),
                message_id: e.msg.into(),
                seq: e.seq,
            }),
            None => self
                .other
                .iter()
                .filter(|e| e.path == cp.path && e.stamp > cp.stamp)
                .max_by_key(|e| e.stamp)
                .map(|e| By {
                    session: OTHER.into(),
                    message_id: OTHER_MSG.into(),
                    seq: e.seq,
                }),
        };
        let mut seqs = vec![seq];
        seqs.extend(later.iter().map(|e| e.seq));
        if how == How::Dry {
            return self.revert(&seqs, How::Dry, None, None);
        }
        if let (Some(by), false) = (&by, how == How::Force) {
            return Expect::Fail(Failure::Refused(vec![ExpConflict {
                path: cp.path.into(),
                seq,
                reason: Status::ChangedSince(Some(by.clone())),
            }]));
        }
        let kind = by.is_some().then_some("rollback");
        self.revert(&seqs, How::Force, kind, None)
    }

    /// Commit or rollback by number: an uncommitted entry if there is one.
    fn pick_uncommitted(&mut self, pick: u8) -> Result<u64, Failure> {
        let pending: Vec<u64> = self
            .entries
            .iter()
            .filter(|e| e.after.is_none())
            .map(|e| e.seq)
            .collect();
        if !pending.is_empty() {
            self.seq_arg = pending[pick as usize % pending.len()];
            Ok(self.seq_arg)
        } else if let Some(last) = self.entries.last() {
            self.seq_arg = last.seq;
            Err(Failure::AlreadyCommitted)
        } else {
            self.seq_arg = 999;
            Err(Failure::NoSuchEntry)
        }
    }

    /// The crash points a `turnback write` of `path` passes, in order (their
    /// first pass), with what a crash there leaves. Only points whose place
    /// relative to the entry's record is certain: the backup thread's later
    /// points run while the entry is recorded, in either order.
    fn crash_points(&self, path: &str) -> Vec<(&'static str, Crashed)> {
        use Crashed::*;
        let missing = !self.missing_dirs(path).is_empty();
        let mut points = Vec::new();
        if self.files.contains_key(path) {
            // The backup's temporary written and hashed: the writer records
            // its entry only once told the backup's name, just after.
            points.push(("blob-written", Nothing));
        }
        // Missing directories are recorded (an entry in flight) before they
        // are made, and the new contents are made after them.
        let made_after_record = if missing { SeqUsed } else { Nothing };
        if missing {
            points.extend([("ws-mkdir", SeqUsed), ("ws-mkdir-synced", SeqUsed)]);
        }
        points.extend([
            ("ws-tmp-written", made_after_record),
            ("ws-tmp-synced", made_after_record),
        ]);
        if self.snapshot {
            // The entry's journal line (the first change of a session writes
            // index.json instead, through other points).
            points.extend([("journal-written", SeqUsed), ("journal-synced", SeqUsed)]);
        }
        points.extend([
            ("ws-tmp-linked", SeqUsed),
            ("ws-renamed", Written),
            ("ws-dir-synced", Written),
        ]);
        points
    }

    /// The crash point `pick` resolves to for a write of `data` to `path`,
    /// and what a crash there leaves.
    fn crash(&self, path: &str, data: &str, pick: u8) -> (&'static str, Crashed) {
        let points = self.crash_points(path);
        let (point, crashed) = points[pick as usize % points.len()];
        // New contents the file already has: recovery finds the file at
        // "after" as much as at "before", and keeps the entry
        // (`settle_in_flight` asks "after" first).
        let unchanged = self
            .files
            .get(path)
            .is_some_and(|(bytes, _)| bytes == data.as_bytes());
        match crashed {
            Crashed::SeqUsed if unchanged => (point, Crashed::Written),
            other => (point, other),
        }
    }

    fn step(&mut self, op: &Op) -> Expect {
        match op {
            Op::Write { path, data, msg } => {
                let (before, after, created_dirs) = self.write_through(path, data);
                self.record(
                    msg,
                    vec![Draft {
                        path,
                        before,
                        after: Some(after),
                        created_dirs,
                    }],
                );
                Expect::Done
            }
            Op::Remove { path, msg } => {
                let before = self.state(path);
                if before.is_none() {
                    return Expect::Fail(Failure::FileNotFound);
                }
                self.put(path, None);
                self.record(
                    msg,
                    vec![Draft {
                        path,
                        before,
                        after: Some(None),
                        created_dirs: Vec::new(),
                    }],
                );
                Expect::Done
            }
            Op::Rename { from, to, msg } => {
                let moved = self.state(from);
                if moved.is_none() {
                    return Expect::Fail(Failure::FileNotFound);
                }
                let before_to = self.state(to);
                let created_dirs = self.ensure_dirs(to);
                self.put(from, None);
                self.put(to, moved.clone());
                let drafts = vec![
                    Draft {
                        path: from,
                        before: moved.clone(),
                        after: Some(None),
                        created_dirs: Vec::new(),
                    },
                    Draft {
                        path: to,
                        before: before_to,
                        after: Some(moved),
                        created_dirs,
                    },
                ];
                self.record(msg, drafts);
                Expect::Done
            }
            Op::Checkpoint {
                path,
                edit,
                end,
                msg,
            } => {
                let before = self.state(path);
                let created_dirs = self.missing_dirs(path);
                let seq = self.record(
                    msg,
                    vec![Draft {
                        path,
                        before,
                        after: None,
                        created_dirs,
                    }],
                )[0];
                self.person(path, edit);
                match end {
                    End::Commit => {
                        let now = self.state(path);
                        self.entry_mut(seq).after = Some(now);
                    }
                    End::Rollback => {
                        self.revert(&[seq], How::Force, None, None);
                    }
                    End::Abandon => {}
                }
                Expect::Done
            }
            Op::CommitPending { pick } => match self.pick_uncommitted(*pick) {
                Ok(seq) => {
                    let path = self.entry_mut(seq).path;
                    let now = self.state(path);
                    self.entry_mut(seq).after = Some(now);
                    Expect::Done
                }
                Err(f) => Expect::Fail(f),
            },
            Op::RollbackPending { pick, how } => match self.pick_uncommitted(*pick) {
                Ok(seq) => self.rollback(seq, *how),
                Err(f) => Expect::Fail(f),
            },
            Op::Undo { how } => match self.entries.last() {
                Some(last) => {
                    let seqs = self.with_group(last);
                    self.revert(&seqs, *how, Some("undo"), None)
                }
                None => Expect::Fail(Failure::NothingToUndo),
            },
            Op::Revert { path, how } => match self.entries.iter().rev().find(|e| e.path == *path) {
                Some(newest) => {
                    let seqs = self.with_group(newest);
                    self.revert(&seqs, *how, Some("revert"), None)
                }
                None => Expect::Fail(Failure::NoChangeToFile),
            },
            Op::Rewind { msg, how } => match self.entries.iter().find(|e| e.msg == *msg) {
                Some(first) => {
                    let first = first.seq;
                    let seqs: Vec<u64> = self
                        .entries
                        .iter()
                        .filter(|e| e.seq >= first)
                        .map(|e| e.seq)
                        .collect();
                    self.revert(&seqs, *how, Some("rewind"), None)
                }
                None => Expect::Fail(Failure::MessageNotFound),
            },
            Op::RewindTurn { pick, how } => {
                let n = u32::from(*pick) % (self.next_turn + 1);
                self.turn_arg = n;
                if !self.turns.contains(&n) {
                    return Expect::Fail(Failure::TurnNotFound);
                }
                let seqs: Vec<u64> = self
                    .entries
                    .iter()
                    .filter(|e| e.turn >= n)
                    .map(|e| e.seq)
                    .collect();
                self.revert(&seqs, *how, Some("rewind-turn"), Some(n))
            }
            Op::BeginTurn => {
                self.snapshot = true;
                let n = self.next_turn;
                self.next_turn += 1;
                self.turns.push(n);
                Expect::Turn(n)
            }
            Op::Redo { how } => self.redo(*how),
            Op::Person { path, edit } => {
                self.person(path, edit);
                Expect::Done
            }
            Op::Other { path, data } => {
                let after = match data {
                    Some(d) => self.write_through(path, d).1,
                    None if self.state(path).is_none() => {
                        return Expect::Fail(Failure::FileNotFound);
                    }
                    None => {
                        self.put(path, None);
                        None
                    }
                };
                let stamp = self.next_stamp();
                self.other.push(OtherEntry {
                    seq: self.other_next_seq,
                    path,
                    after,
                    stamp,
                });
                self.other_next_seq += 1;
                Expect::Done
            }
            Op::Reopen => Expect::Done,
            Op::Crash {
                path,
                data,
                msg,
                pick,
            } => {
                let (point, crashed) = self.crash(path, data, *pick);
                self.crash_at = point;
                match crashed {
                    Crashed::Nothing => {}
                    Crashed::SeqUsed => {
                        self.next_seq += 1;
                        self.snapshot = true;
                    }
                    Crashed::Written => {
                        let (before, after, created_dirs) = self.write_through(path, data);
                        self.record(
                            msg,
                            vec![Draft {
                                path,
                                before,
                                after: Some(after),
                                created_dirs,
                            }],
                        );
                    }
                }
                Expect::Done
            }
        }
    }
}

/// The state machine: the model as proptest-state-machine's reference.
pub struct Reference;

impl ReferenceStateMachine for Reference {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        prop::collection::btree_map(path(), data(), 0..=3)
            .prop_map(Model::new)
            .boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Op> {
        op(state)
    }

    fn apply(mut state: Model, op: &Op) -> Model {
        state.expect = state.step(op);
        state
    }
}

// ---------------------------------------------------------------------------
// The real store.

/// A real store home and workspace, with both sessions open.
pub struct Real {
    home: tempfile::TempDir,
    dir: tempfile::TempDir,
    session: Session,
    other: Session,
    ws: Workspace,
    /// Backup temporaries (`blobs/.tmp-*`, relative to the home) that crashed
    /// writers left: nothing but pruning removes them, and nothing else may
    /// leave one.
    crash_temps: BTreeSet<std::path::PathBuf>,
}

impl Real {
    fn reopen(self, model: &Model) -> Real {
        let Real {
            home,
            dir,
            session,
            other,
            ws,
            crash_temps,
        } = self;
        drop((session, other, ws));
        let store = Store::new(home.path());
        let session = match store.open_session(MAIN) {
            Ok(s) => s,
            Err(Error::SessionNotFound { .. }) => {
                assert!(
                    model.entries.is_empty() && model.turns.is_empty() && model.history.is_empty(),
                    "the session is gone from disk but the model has entries, turns or history"
                );
                store.session(MAIN).unwrap()
            }
            Err(e) => panic!("reopening the session: {e}"),
        };
        let other = store.session(OTHER).unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        Real {
            home,
            dir,
            session,
            other,
            ws,
            crash_temps,
        }
    }

    /// Runs `turnback write path` (contents `data`) in the session as a child
    /// process that aborts at crash point `point` (its first pass), and
    /// notes the backup temporaries it left. The write must abort there.
    fn crash_write(&mut self, path: &str, data: &str, msg: &str, point: &str) {
        use std::io::Write;
        use std::os::unix::process::ExitStatusExt;
        let mut child = std::process::Command::new(crate::util::bin())
            .args(["write", path, "--message", msg])
            .current_dir(self.dir.path())
            .env("TURNBACK_HOME", self.home.path())
            .env("TURNBACK_SESSION", MAIN)
            .env_remove("TURNBACK_WORKSPACE")
            .env("FAILPOINTS", format!("{point}=return"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn turnback");
        // A writer that aborts before it reads its input closes the pipe.
        let _ = child.stdin.take().unwrap().write_all(data.as_bytes());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.signal(),
            Some(6),
            "turnback write {path} did not abort at {point}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        CRASHES.with(|c| c.set(c.get() + 1));
        self.crash_temps
            .extend(store_temps(self.home.path()).into_iter().filter(|p| {
                p.parent().and_then(Path::file_name) == Some("blobs".as_ref())
                    && p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(".tmp-")
            }));
    }
}

/// The store's temporaries under `home` (relative to it): `.tmp-*` and `*.tmp`.
fn store_temps(home: &Path) -> BTreeSet<std::path::PathBuf> {
    names_under(home)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(".tmp-") || name.ends_with(".tmp")
        })
        .collect()
}

/// The person's edit, on the real workspace.
fn hand_edit(root: &Path, path: &str, edit: &Edit) {
    let p = root.join(path);
    match edit {
        Edit::Put(data) => {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, data).unwrap();
        }
        Edit::Delete => match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("delete {}: {e}", p.display()),
        },
        Edit::Chmod(mode) => {
            if p.exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
            }
        }
    }
}

fn by(b: &ChangedBy) -> By {
    By {
        session: b.session.clone(),
        message_id: b.message_id.clone(),
        seq: b.seq,
    }
}

fn failure(e: Error) -> Failure {
    match e {
        Error::Refused { session, conflicts } => {
            assert_eq!(session, MAIN, "a refusal names the session");
            Failure::Refused(
                conflicts
                    .iter()
                    .map(|c| ExpConflict {
                        path: c.path.clone(),
                        seq: c.seq,
                        reason: match &c.reason {
                            ConflictReason::ChangedSince { by: b } => {
                                Status::ChangedSince(b.as_ref().map(by))
                            }
                            ConflictReason::NeverCommitted => Status::NeverCommitted,
                        },
                    })
                    .collect(),
            )
        }
        Error::NothingToUndo { .. } => Failure::NothingToUndo,
        Error::NothingToRedo { .. } => Failure::NothingToRedo,
        Error::NoChangeToFile { .. } => Failure::NoChangeToFile,
        Error::MessageNotFound { .. } => Failure::MessageNotFound,
        Error::TurnNotFound { .. } => Failure::TurnNotFound,
        Error::FileNotFound { .. } => Failure::FileNotFound,
        Error::NoSuchEntry { .. } => Failure::NoSuchEntry,
        Error::AlreadyCommitted { .. } => Failure::AlreadyCommitted,
        other => panic!("an error the model does not predict: {other}"),
    }
}

fn done<T>(r: turnback_store::Result<T>) -> Expect {
    match r {
        Ok(_) => Expect::Done,
        Err(e) => Expect::Fail(failure(e)),
    }
}

fn reported(r: turnback_store::Result<RevertReport>) -> Expect {
    let r = match r {
        Ok(r) => r,
        Err(e) => return Expect::Fail(failure(e)),
    };
    assert_eq!(r.session, MAIN);
    Expect::Report {
        applied: r.applied,
        files: r
            .files
            .iter()
            .map(|f| {
                match f.action {
                    RevertAction::Write { size } => {
                        assert!(f.target.exists && f.target.size == size, "{f:?}")
                    }
                    RevertAction::Delete => assert!(!f.target.exists, "{f:?}"),
                }
                ReportFile {
                    path: f.path.clone(),
                    seqs: f.seqs.clone(),
                    status: match &f.status {
                        FileStatus::Safe => Status::Safe,
                        FileStatus::AlreadyReverted => Status::AlreadyReverted,
                        FileStatus::Conflict(ConflictReason::ChangedSince { by: b }) => {
                            Status::ChangedSince(b.as_ref().map(by))
                        }
                        FileStatus::Conflict(ConflictReason::NeverCommitted) => {
                            Status::NeverCommitted
                        }
                    },
                    target: show(&f.target),
                }
            })
            .collect(),
    }
}

/// The workspace as text: every file with contents and mode, every directory.
fn real_tree(root: &Path) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let mut files = BTreeMap::new();
    let mut dirs = BTreeSet::new();
    for rel in names_under(root) {
        let p = root.join(&rel);
        let name = rel.to_str().unwrap().to_owned();
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.is_dir() {
            dirs.insert(name);
        } else {
            assert!(md.is_file(), "{name} is neither a file nor a directory");
            let bytes = std::fs::read(&p).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            files.insert(name, show_st(&Some((bytes, mode))));
        }
    }
    (files, dirs)
}

fn model_tree(m: &Model) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let files = m
        .files
        .iter()
        .map(|(p, s)| (p.to_string(), show_st(&Some(s.clone()))))
        .collect();
    (files, m.dirs.clone())
}

fn show_real_entry(e: &Entry) -> String {
    format!(
        "#{} {} {} v{} turn {} group {:?}: {} -> {} dirs {:?}{}",
        e.seq,
        e.message_id,
        e.path,
        e.version,
        e.turn,
        e.group,
        show(&e.before),
        e.after.as_ref().map_or("uncommitted".into(), show),
        e.created_dirs,
        if e.in_flight.is_some() {
            " IN FLIGHT"
        } else {
            ""
        }
    )
}

fn show_model_entry(e: &MEntry) -> String {
    format!(
        "#{} {} {} v{} turn {} group {:?}: {} -> {} dirs {:?}",
        e.seq,
        e.msg,
        e.path,
        e.version,
        e.turn,
        e.group,
        show_st(&e.before),
        e.after.as_ref().map_or("uncommitted".into(), show_st),
        e.created_dirs
    )
}

fn show_real_record(r: &RevertRecord) -> String {
    let files: Vec<String> = r
        .files
        .iter()
        .map(|f| {
            format!(
                "{}: found {} restored {}",
                f.path,
                f.overwritten.as_ref().map_or("unknown".into(), show),
                show(&f.restored)
            )
        })
        .collect();
    let dirs: Vec<&str> = r.removed_dirs.iter().map(|d| d.path.as_str()).collect();
    format!(
        "{} entries {:?} turns {:?} files {:?} removed dirs {:?}",
        r.kind,
        r.entries.iter().map(show_real_entry).collect::<Vec<_>>(),
        r.turns.iter().map(|t| t.number).collect::<Vec<_>>(),
        files,
        dirs
    )
}

fn show_model_record(r: &MRecord) -> String {
    let files: Vec<String> = r
        .files
        .iter()
        .map(|f| {
            format!(
                "{}: found {} restored {}",
                f.path,
                show_st(&f.overwritten),
                show_st(&f.restored)
            )
        })
        .collect();
    format!(
        "{} entries {:?} turns {:?} files {:?} removed dirs {:?}",
        r.kind,
        r.entries.iter().map(show_model_entry).collect::<Vec<_>>(),
        r.turns,
        files,
        r.removed_dirs
    )
}

/// The test: the real store driven alongside the model.
pub struct StoreTest;

impl StateMachineTest for StoreTest {
    type SystemUnderTest = Real;
    type Reference = Reference;

    fn init_test(model: &Model) -> Real {
        CASES.with(|c| c.set(c.get() + 1));
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (path, (bytes, _)) in &model.files {
            hand_edit(
                dir.path(),
                path,
                &Edit::Put(String::from_utf8(bytes.clone()).unwrap()),
            );
        }
        let store = Store::new(home.path());
        Real {
            session: store.session(MAIN).unwrap(),
            other: store.session(OTHER).unwrap(),
            ws: Workspace::open(dir.path()).unwrap(),
            home,
            dir,
            crash_temps: BTreeSet::new(),
        }
    }

    fn apply(mut real: Real, model: &Model, op: Op) -> Real {
        OPS.with(|c| c.set(c.get() + 1));
        let (s, ws) = (&real.session, &real.ws);
        let got = match &op {
            Op::Write { path, data, msg } => done(s.write(ws, path, data.as_bytes(), msg)),
            Op::Remove { path, msg } => done(s.remove(ws, path, msg)),
            Op::Rename { from, to, msg } => done(s.rename(ws, from, to, msg)),
            Op::Checkpoint {
                path,
                edit,
                end,
                msg,
            } => {
                let cp = s.checkpoint(ws, path, msg).expect("checkpoint");
                hand_edit(real.dir.path(), path, edit);
                match end {
                    End::Commit => done(cp.commit()),
                    End::Rollback => done(cp.rollback()),
                    End::Abandon => {
                        drop(cp);
                        Expect::Done
                    }
                }
            }
            Op::CommitPending { .. } => done(s.commit(model.seq_arg)),
            Op::RollbackPending { how, .. } => reported(s.rollback_with(model.seq_arg, how.opts())),
            Op::Undo { how } => reported(s.undo(how.opts())),
            Op::Revert { path, how } => reported(s.revert(ws, path, how.opts())),
            Op::Rewind { msg, how } => reported(s.rewind(msg, how.opts())),
            Op::RewindTurn { how, .. } => reported(s.rewind_to_turn(model.turn_arg, how.opts())),
            Op::BeginTurn => match s.begin_turn("a prompt", None) {
                Ok(n) => Expect::Turn(n),
                Err(e) => Expect::Fail(failure(e)),
            },
            Op::Redo { how } => reported(s.redo(how.opts())),
            Op::Person { path, edit } => {
                hand_edit(real.dir.path(), path, edit);
                Expect::Done
            }
            Op::Other { path, data } => match data {
                Some(d) => done(real.other.write(ws, path, d.as_bytes(), OTHER_MSG)),
                None => done(real.other.remove(ws, path, OTHER_MSG)),
            },
            Op::Reopen => {
                real = real.reopen(model);
                Expect::Done
            }
            Op::Crash {
                path, data, msg, ..
            } => {
                real.crash_write(path, data, msg, model.crash_at);
                real = real.reopen(model);
                Expect::Done
            }
        };
        assert_eq!(got, model.expect, "what {op:?} returned");
        real
    }

    fn check_invariants(real: &Real, model: &Model) {
        let root = real.dir.path();
        let temps = stray_temps(root);
        assert!(
            temps.is_empty(),
            "stray temporaries in the workspace: {temps:?}"
        );
        let store_temps: Vec<_> = store_temps(real.home.path())
            .into_iter()
            .filter(|p| !real.crash_temps.contains(p))
            .collect();
        assert!(
            store_temps.is_empty(),
            "stray temporaries in the home: {store_temps:?}"
        );
        assert_eq!(
            real_tree(root),
            model_tree(model),
            "the workspace (files, directories)"
        );

        let entries: Vec<String> = real
            .session
            .entries()
            .unwrap()
            .iter()
            .map(show_real_entry)
            .collect();
        let expected: Vec<String> = model.entries.iter().map(show_model_entry).collect();
        assert_eq!(entries, expected, "the session's entries");

        let turns: Vec<u32> = real
            .session
            .turn_bounds()
            .unwrap()
            .iter()
            .map(|t| t.number)
            .collect();
        assert_eq!(turns, model.turns, "the session's turns");

        let history: Vec<String> = real
            .session
            .history()
            .unwrap()
            .iter()
            .map(show_real_record)
            .collect();
        let expected: Vec<String> = model.history.iter().map(show_model_record).collect();
        assert_eq!(history, expected, "the session's redo history");

        let other: Vec<String> = real
            .other
            .entries()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "#{} {} -> {}",
                    e.seq,
                    e.path,
                    e.after.as_ref().map_or("uncommitted".into(), show)
                )
            })
            .collect();
        let expected: Vec<String> = model
            .other
            .iter()
            .map(|e| format!("#{} {} -> {}", e.seq, e.path, show_st(&e.after)))
            .collect();
        assert_eq!(other, expected, "the other session's entries");
    }
}

/// 64 cases unless `PROPTEST_CASES` says otherwise; nothing persisted.
fn config() -> Config {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = DEFAULT_CASES;
    }
    config
}

#[test]
fn the_store_behaves_as_the_model_under_random_operations() {
    let config = config();
    let mut runner = TestRunner::new(config.clone());
    let strategy = Reference::sequential_strategy(1..=MAX_STEPS);
    let result = runner.run(&strategy, |(initial, steps, seen)| {
        StoreTest::test_sequential(config.clone(), initial, steps, seen);
        Ok(())
    });
    let crashes = CRASHES.with(Cell::get);
    println!(
        "model: {} cases, {} operations applied to real stores, {crashes} of them crashes",
        CASES.with(Cell::get),
        OPS.with(Cell::get)
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        crashes > 0 || config.cases < DEFAULT_CASES,
        "{} cases and not one crash",
        config.cases
    );
}

/// Replays one exact sequence against a fresh store (how a shrunk failure is
/// kept as a regression test); returns what the model predicted for each step.
fn replay(files: &[(&'static str, &str)], ops: Vec<Op>) -> Vec<Expect> {
    let files: BTreeMap<_, _> = files.iter().map(|(p, d)| (*p, d.to_string())).collect();
    let mut model = Model::new(files.clone());
    let predicted = ops
        .iter()
        .map(|op| {
            model = Reference::apply(model.clone(), op);
            model.expect.clone()
        })
        .collect();
    StoreTest::test_sequential(config(), Model::new(files), ops, None);
    predicted
}

/// A fixed sequence through the main paths: a refusal naming the other
/// session, forced, redone; a rename into new directories rewound by turn and
/// redone; an abandoned checkpoint refused, rolled back by number, reopened.
#[test]
fn a_scripted_sequence_matches_the_model() {
    use Edit::*;
    use How::*;
    use Op::*;
    let ops = vec![
        BeginTurn,
        Write {
            path: "a",
            data: "b".into(),
            msg: "m0",
        },
        Other {
            path: "a",
            data: Some("ab".into()),
        },
        Undo { how: Plain },
        Undo { how: Force },
        Redo { how: Plain },
        Rename {
            from: "a",
            to: "d/e/z",
            msg: "m1",
        },
        RewindTurn { pick: 1, how: Dry },
        RewindTurn {
            pick: 1,
            how: Plain,
        },
        Redo { how: Plain },
        Checkpoint {
            path: "d/x",
            edit: Put("b".into()),
            end: End::Abandon,
            msg: "m2",
        },
        Undo { how: Plain },
        RollbackPending {
            pick: 0,
            how: How::Plain,
        },
        Reopen,
        Undo { how: Plain },
        Redo { how: Plain },
    ];
    let expected = replay(&[("a", "a")], ops);
    let by_other = Status::ChangedSince(Some(By {
        session: OTHER.into(),
        message_id: OTHER_MSG.into(),
        seq: 1,
    }));
    let refused = |path: &str, seq, reason| {
        Expect::Fail(Failure::Refused(vec![ExpConflict {
            path: path.into(),
            seq,
            reason,
        }]))
    };
    assert_eq!(expected[3], refused("a", 1, by_other));
    assert!(matches!(&expected[4], Expect::Report { applied: true, .. }));
    assert!(matches!(&expected[8], Expect::Report { applied: true, files } if files.len() == 2));
    assert_eq!(expected[11], refused("d/x", 4, Status::NeverCommitted));
    assert!(matches!(
        &expected[15],
        Expect::Report { applied: true, .. }
    ));
}

/// A `turnback write` aborted at every crash point the model knows, in each
/// situation that changes which points a write passes or what a crash there
/// leaves (a session's first change or a journal line; over a file, a new
/// file, a new file in new directories, the contents the file has already),
/// each followed by a write and two undos: every time, what recovery left is
/// what the model predicted.
#[test]
fn a_write_crashed_at_each_of_its_points_leaves_what_the_model_predicts() {
    use Op::*;
    type Situation = (
        &'static [(&'static str, &'static str)],
        Vec<Op>,
        &'static str,
        &'static str,
    );
    let situations: [Situation; 5] = [
        (&[("a", "a")], vec![], "a", "ab"),
        (&[("a", "a")], vec![BeginTurn], "a", "ab"),
        (&[], vec![], "b", "ab"),
        (&[("a", "a")], vec![BeginTurn], "d/e/z", "ab"),
        (&[("a", "a")], vec![BeginTurn], "a", "a"),
    ];
    let mut reached: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (files, setup, path, data) in situations {
        let mut model = Model::new(files.iter().map(|(p, d)| (*p, d.to_string())).collect());
        for op in &setup {
            model = Reference::apply(model, op);
        }
        for pick in 0..model.crash_points(path).len() {
            let (point, crashed) = model.crash(path, data, pick as u8);
            let mut ops = setup.clone();
            ops.extend([
                Crash {
                    path,
                    data: data.into(),
                    msg: "m1",
                    pick: pick as u8,
                },
                Write {
                    path,
                    data: "b".into(),
                    msg: "m2",
                },
                Undo { how: How::Plain },
                Undo { how: How::Plain },
            ]);
            replay(files, ops);
            reached
                .entry(point)
                .or_default()
                .insert(format!("{path} <- {data:?}: {crashed:?}"));
        }
    }
    let every = [
        "blob-written",
        "ws-mkdir",
        "ws-mkdir-synced",
        "ws-tmp-written",
        "ws-tmp-synced",
        "journal-written",
        "journal-synced",
        "ws-tmp-linked",
        "ws-renamed",
        "ws-dir-synced",
    ];
    assert_eq!(
        reached.keys().copied().collect::<Vec<_>>(),
        every
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    eprintln!("crashes replayed: {reached:?}");
}
