//! The `operations` fuzz target's property ([`run`]): the bytes are decoded
//! into a workspace and a sequence of the model's operations (every kind, and
//! symbolic links the person plants, pointing inside the workspace or out of
//! it), each applied to the model and to a real store, and after every step
//! the store returns what the model says and shows what it has (the checks of
//! the model test, `driver::check_invariants`), and nothing escaped: the
//! sentinel tree beside the workspace (files, directories, modes, contents)
//! and everything around the scratch directory are as they were.
//!
//! Shared, through `mod`, by `fuzz/fuzz_targets/operations.rs` and by the
//! replay of its corpus (`crates/turnback-store/tests/format.rs`). With
//! `TURNBACK_FUZZ_TRACE` set, each step is printed before it runs, with what the model expects (to read
//! a crash: `cargo fuzz run operations ARTIFACT`).
//!
//! The encoding (a seed for `fuzz/corpus/operations` is written by hand from
//! it): the first byte is how many files the workspace starts with (`% 4`),
//! each then a path byte and a contents byte; then, until the bytes run out
//! or [`MAX_OPS`] operations, one kind byte (`% 18`, in the order of the
//! `match` in `decode_op`) and that operation's argument bytes (a missing
//! byte reads as 0). No byte decodes to [`Op::Crash`] (see `decode_op`).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::driver::{self, Real};
use super::reference::{Edit, End, How, Model, Op, ROOT_MARK, SCRATCH_MARK, intern};

/// Directory names and file names: apart, so that the paths the agent writes
/// never make a directory of a file; a link may take either kind of name.
const DIRS: [&str; 2] = ["d", "e"];
const LEAVES: [&str; 2] = ["a", "b"];
/// How deep a path goes (directories above its file).
const DEPTH: usize = 2;
const MSGS: [&str; 4] = ["m0", "m1", "m2", "m3"];
const MODES: [u32; 3] = [0o600, 0o644, 0o755];
/// The most operations one input runs (more bytes are ignored).
pub const MAX_OPS: usize = 48;

/// Every directory path of the alphabet, shallowest first.
fn dir_paths() -> &'static [&'static str] {
    static DIR_PATHS: OnceLock<Vec<&'static str>> = OnceLock::new();
    DIR_PATHS.get_or_init(|| {
        let mut level: Vec<String> = vec![String::new()];
        let mut out = Vec::new();
        for _ in 0..DEPTH {
            level = level
                .iter()
                .flat_map(|p| DIRS.iter().map(move |d| format!("{p}{d}/")))
                .collect();
            out.extend(level.iter().map(|p| intern(p.trim_end_matches('/'))));
        }
        out
    })
}

/// Every file path of the alphabet: a file name at the top or in a directory.
fn file_paths() -> &'static [&'static str] {
    static FILE_PATHS: OnceLock<Vec<&'static str>> = OnceLock::new();
    FILE_PATHS.get_or_init(|| {
        let dirs = std::iter::once("").chain(dir_paths().iter().copied());
        dirs.flat_map(|d| {
            LEAVES.iter().map(move |f| match d {
                "" => intern(f),
                d => intern(&format!("{d}/{f}")),
            })
        })
        .collect()
    })
}

/// Where a link may be planted or point: any path of the alphabet.
fn any_paths() -> &'static [&'static str] {
    static ANY: OnceLock<Vec<&'static str>> = OnceLock::new();
    ANY.get_or_init(|| file_paths().iter().chain(dir_paths()).copied().collect())
}

/// What the sentinel directory beside the workspace holds (a path under it,
/// and a file's mode and contents, or a directory's mode): names of the
/// alphabet, so that a change that escapes through a link lands on one.
const SENTINEL: [(&str, u32, Option<&str>); 5] = [
    ("a", 0o644, Some("sentinel")),
    ("x", 0o755, Some("#!/bin/sh\n")),
    ("d", 0o750, None),
    ("d/a", 0o600, Some("deeper")),
    ("d/b", 0o640, Some("deeper b")),
];

/// The input, read a byte at a time; past its end every byte is 0.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let b = self.data.get(self.at).copied();
        self.at += 1;
        b
    }

    fn byte(&mut self) -> u8 {
        self.next().unwrap_or(0)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[usize::from(self.byte()) % items.len()]
    }

    fn file(&mut self) -> &'static str {
        self.pick(file_paths())
    }

    fn msg(&mut self) -> &'static str {
        self.pick(&MSGS)
    }

    /// Up to two of `a` and `b`: contents the driver shows by their text.
    fn data(&mut self) -> String {
        let b = self.byte();
        (0..b % 3)
            .map(|i| if b >> (2 + i) & 1 == 1 { 'b' } else { 'a' })
            .collect()
    }

    fn how(&mut self) -> How {
        match self.byte() % 9 {
            0..=4 => How::Plain,
            5..=7 => How::Force,
            _ => How::Dry,
        }
    }

    fn edit(&mut self) -> Edit {
        match self.byte() % 5 {
            0..=2 => Edit::Put(self.data()),
            3 => Edit::Delete,
            _ => Edit::Chmod(self.pick(&MODES)),
        }
    }

    fn end(&mut self) -> End {
        match self.byte() % 5 {
            0 | 1 => End::Commit,
            2 | 3 => End::Rollback,
            _ => End::Abandon,
        }
    }

    /// What a link planted at `at` says: a path of the workspace (relative
    /// to the link's directory, or absolute), `.`, `..`, itself, the root,
    /// or a way out (climbing past the root, or absolute to the sentinel,
    /// the store's home or the scratch directory).
    fn link_target(&mut self, at: &str) -> String {
        let up = "../".repeat(at.matches('/').count());
        let kind = self.byte();
        let arg = self.byte();
        let inside = any_paths()[usize::from(arg) % any_paths().len()];
        match kind % 8 {
            0..=2 => format!("{up}{inside}"),
            3 => format!("{ROOT_MARK}/{inside}"),
            4 => match arg % 4 {
                0 => ".".into(),
                1 => "..".into(),
                2 => at.rsplit('/').next().unwrap().into(),
                _ => ROOT_MARK.into(),
            },
            5 => {
                let out = ["outside", "outside/a", "outside/d", "home", "..", "ws/a"];
                format!("{up}../{}", out[usize::from(arg) % out.len()])
            }
            _ => {
                let out = [
                    "/outside",
                    "/outside/a",
                    "/outside/d",
                    "/outside/d/a",
                    "/outside/nothing",
                    "/home",
                    "",
                ];
                format!("{SCRATCH_MARK}{}", out[usize::from(arg) % out.len()])
            }
        }
    }
}

/// The workspace's files and the operations an input says.
pub fn decode(data: &[u8]) -> (BTreeMap<&'static str, String>, Vec<Op>) {
    let mut b = Bytes { data, at: 0 };
    let mut files = BTreeMap::new();
    for _ in 0..b.byte() % 4 {
        let path = b.file();
        files.insert(path, b.data());
    }
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS {
        let Some(kind) = b.next() else { break };
        ops.push(decode_op(kind, &mut b));
    }
    (files, ops)
}

/// One operation of kind `kind`. Every kind of [`Op`] but [`Op::Crash`],
/// which is skipped on purpose, not forgotten: a crash runs a `turnback
/// write` child process and aborts it, and a fuzz target must not spawn
/// processes (libFuzzer runs thousands of inputs a second in one process,
/// and there is no binary to run here: the driver has no
/// `Real::turnback`). The model test draws crashes instead. Leaving it out
/// also keeps the encoding of the checked-in corpus as it was.
fn decode_op(kind: u8, b: &mut Bytes) -> Op {
    match kind % 18 {
        0 | 1 => Op::Write {
            path: b.file(),
            data: b.data(),
            msg: b.msg(),
        },
        2 => Op::Remove {
            path: b.file(),
            msg: b.msg(),
        },
        3 => Op::Rename {
            from: b.file(),
            to: b.file(),
            msg: b.msg(),
        },
        4 => Op::Checkpoint {
            path: b.file(),
            edit: b.edit(),
            end: b.end(),
            msg: b.msg(),
        },
        5 => Op::CommitPending { pick: b.byte() },
        6 => Op::RollbackPending {
            pick: b.byte(),
            how: b.how(),
        },
        7 => Op::Undo { how: b.how() },
        8 => Op::Revert {
            path: b.file(),
            how: b.how(),
        },
        9 => Op::Rewind {
            msg: b.msg(),
            how: b.how(),
        },
        10 => Op::RewindTurn {
            pick: b.byte(),
            how: b.how(),
        },
        11 => Op::BeginTurn,
        12 => Op::Redo { how: b.how() },
        13 => Op::Person {
            path: b.file(),
            edit: b.edit(),
        },
        14 => Op::Other {
            path: b.file(),
            data: (!b.byte().is_multiple_of(5)).then(|| b.data()),
        },
        15 => Op::Reopen,
        _ => {
            let path = b.pick(any_paths());
            Op::Link {
                path,
                target: b.link_target(path),
            }
        }
    }
}

/// A tree as the escape check compares it: every path (not following links)
/// with its kind, mode and contents or target.
fn digest(root: &Path) -> BTreeMap<PathBuf, String> {
    super::support::names_under(root)
        .into_iter()
        .chain([PathBuf::new()])
        .map(|rel| {
            let p = root.join(&rel);
            let md = std::fs::symlink_metadata(&p).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            let what = if md.is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if md.is_dir() {
                format!("dir {mode:o}")
            } else {
                let bytes = std::fs::read(&p).unwrap();
                format!("file {mode:o} {:?}", String::from_utf8_lossy(&bytes))
            };
            (rel, what)
        })
        .collect()
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// What must hold after every step whatever the store did: the sentinel as it
/// was, the scratch directory holding only the workspace, the sentinel and
/// (once made) the home, and the directory around it only the scratch
/// directory.
struct Escape {
    sentinel: PathBuf,
    sentinel_was: BTreeMap<PathBuf, String>,
    around: PathBuf,
    scratch_name: String,
}

impl Escape {
    fn around(real: &Real, around: &Path) -> Escape {
        let sentinel = real.base.join("outside");
        for (rel, mode, contents) in SENTINEL {
            let p = sentinel.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            match contents {
                Some(c) => std::fs::write(&p, c).unwrap(),
                None => std::fs::create_dir_all(&p).unwrap(),
            }
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        Escape {
            sentinel_was: digest(&sentinel),
            sentinel,
            around: around.to_owned(),
            scratch_name: real
                .scratch
                .path()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .into(),
        }
    }

    fn check(&self, real: &Real) {
        assert_eq!(
            digest(&self.sentinel),
            self.sentinel_was,
            "the sentinel outside the workspace changed"
        );
        // The home is made with the session's first change.
        let beside = names(&real.base);
        let allowed: BTreeSet<String> = ["home", "outside", "ws"].map(String::from).into();
        assert!(
            beside.is_subset(&allowed) && beside.contains("ws") && beside.contains("outside"),
            "something appeared beside the workspace, or went: {beside:?}"
        );
        assert_eq!(
            names(&self.around),
            BTreeSet::from([self.scratch_name.clone()]),
            "something appeared around the scratch directory"
        );
    }
}

fn tracing() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("TURNBACK_FUZZ_TRACE").is_some())
}

/// The property: see the module comment. Panics on any disagreement.
pub fn run(data: &[u8]) {
    let (files, ops) = decode(data);
    if tracing() {
        eprintln!("files: {files:?}");
    }
    let mut model = Model::new(files);
    // The scratch directory inside one of its own, so that what is around it
    // is known: nothing else.
    let around = tempfile::Builder::new()
        .prefix("turnback-fuzz-")
        .tempdir()
        .unwrap();
    let scratch = tempfile::Builder::new()
        .prefix("case-")
        .tempdir_in(around.path())
        .unwrap();
    let mut real = Real::new(scratch, &model);
    let escape = Escape::around(&real, around.path());
    driver::check_invariants(&real, &model);
    for (i, op) in ops.iter().enumerate() {
        if tracing() {
            eprintln!("step {i}: {op:?}");
        }
        model = model.apply(op);
        if tracing() {
            eprintln!("  expect {:?}", model.expect);
        }
        real = driver::apply(real, &model, op);
        driver::check_invariants(&real, &model);
        escape.check(&real);
    }
}
