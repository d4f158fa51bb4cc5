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
//! The model itself (`model/reference.rs`) and the driver of the real store
//! with the checks above (`model/driver.rs`) are shared with the `operations`
//! fuzz target (`fuzz/`), which also plants symbolic links (and draws no
//! crash: it spawns no process); only the proptest strategies live here.
//!
//! Failures are not persisted to `proptest-regressions/`
//! (`failure_persistence: None`): a shrunk failing case is kept here as a
//! regular `#[test]` that replays its exact sequence with [`replay`], as
//! `a_scripted_sequence_matches_the_model` does.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::{Config, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

// The model and the driver, shared with the fuzz target (which includes these
// files itself); they reach the helpers as `super::support`.
pub mod driver;
pub mod reference;
use crate::util::support;

use driver::Real;
use reference::{
    By, Edit, End, ExpConflict, Expect, Failure, How, Model, OTHER, OTHER_MSG, Op, Status,
};

/// The files operations touch; no path is a directory of another.
const PATHS: [&str; 5] = ["a", "b", "d/x", "d/y", "d/e/z"];
/// The message ids of the agent's changes (few, so that rewinds find them).
const MSGS: [&str; 4] = ["m0", "m1", "m2", "m3"];
/// Modes the person sets by hand.
const MODES: [u32; 3] = [0o600, 0o644, 0o755];
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

// ---------------------------------------------------------------------------
// Operations, as proptest draws them.

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

    fn apply(state: Model, op: &Op) -> Model {
        state.apply(op)
    }
}

/// The test: the real store driven alongside the model.
pub struct StoreTest;

impl StateMachineTest for StoreTest {
    type SystemUnderTest = Real;
    type Reference = Reference;

    fn init_test(model: &Model) -> Real {
        CASES.with(|c| c.set(c.get() + 1));
        let mut real = Real::new(tempfile::tempdir().unwrap(), model);
        // What `Op::Crash` runs (and the driver asserts aborted).
        real.turnback = Some(crate::util::bin());
        real
    }

    fn apply(real: Real, model: &Model, op: Op) -> Real {
        OPS.with(|c| c.set(c.get() + 1));
        let real = driver::apply(real, model, &op);
        if matches!(op, Op::Crash { .. }) {
            // The driver returned: the writer aborted where it was told to.
            CRASHES.with(|c| c.set(c.get() + 1));
        }
        real
    }

    fn check_invariants(real: &Real, model: &Model) {
        driver::check_invariants(real, model);
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
            model = model.clone().apply(op);
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
            model = model.apply(op);
        }
        for pick in 0..model.crash_points(path, data).len() {
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
