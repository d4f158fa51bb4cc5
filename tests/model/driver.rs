//! The real store driven as the model is ([`apply`]), and everything the two
//! must agree on after each step ([`check_invariants`]). Shared, through `mod`,
//! by the model test, the `operations` fuzz target and the replay of its corpus.
//!
//! [`Op::Crash`] runs the built `turnback` binary as a child process
//! ([`Real::crash_write`]), so only a driver given the binary
//! ([`Real::turnback`], which the model test sets) can apply it; the fuzz
//! target spawns no process and draws no crash.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use turnback_store::{
    ChangedBy, ConflictReason, Entry, Error, FileState, FileStatus, RevertAction, RevertRecord,
    RevertReport, Session, Store, Workspace,
};

use super::reference::{
    By, End, ExpConflict, Expect, Failure, MAIN, MEntry, MRecord, Model, OTHER, OTHER_MSG, Op,
    ROOT_MARK, ReportFile, SCRATCH_MARK, Status, show_st,
};
use super::support::{names_under, sha256_hex, stray_temps};

// ---------------------------------------------------------------------------
// The real store.

/// A real store home and workspace side by side in a scratch directory, with
/// both sessions open.
pub struct Real {
    pub scratch: tempfile::TempDir,
    /// The scratch directory's real path (links are written and read with it).
    pub base: PathBuf,
    pub home: PathBuf,
    pub dir: PathBuf,
    pub session: Session,
    pub other: Session,
    pub ws: Workspace,
    /// The built `turnback` binary that [`Op::Crash`] runs; `None` where
    /// there is none to run (the fuzz target, the replay of its corpus), and
    /// a crash there is a bug of the caller.
    pub turnback: Option<PathBuf>,
    /// Backup temporaries (`blobs/.tmp-*`, relative to the home) that crashed
    /// writers left: nothing but pruning removes them, and nothing else may
    /// leave one.
    pub crash_temps: BTreeSet<PathBuf>,
}

impl Real {
    /// A store in `scratch/home` and a workspace `scratch/ws` holding the
    /// model's files (which it has from [`Model::new`]).
    pub fn new(scratch: tempfile::TempDir, model: &Model) -> Real {
        let base = std::fs::canonicalize(scratch.path()).unwrap();
        let home = base.join("home");
        let dir = base.join("ws");
        std::fs::create_dir(&dir).unwrap();
        for (path, (bytes, _)) in &model.files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
        let store = Store::new(&home);
        Real {
            session: store.session(MAIN).unwrap(),
            other: store.session(OTHER).unwrap(),
            ws: Workspace::open(&dir).unwrap(),
            scratch,
            base,
            home,
            dir,
            turnback: None,
            crash_temps: BTreeSet::new(),
        }
    }

    fn reopen(self, model: &Model) -> Real {
        let Real {
            scratch,
            base,
            home,
            dir,
            session,
            other,
            ws,
            turnback,
            crash_temps,
        } = self;
        drop((session, other, ws));
        let store = Store::new(&home);
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
        let ws = Workspace::open(&dir).unwrap();
        Real {
            scratch,
            base,
            home,
            dir,
            session,
            other,
            ws,
            turnback,
            crash_temps,
        }
    }

    /// Runs `turnback write path` (contents `data`) in the session as a child
    /// process that aborts at crash point `point` (its first pass), and
    /// notes the backup temporaries it left. The write must abort there.
    fn crash_write(&mut self, path: &str, data: &str, msg: &str, point: &str) {
        use std::io::Write;
        use std::os::unix::process::ExitStatusExt;
        let bin = self
            .turnback
            .as_ref()
            .expect("a crash needs the turnback binary (Real::turnback): no fuzz target draws one");
        let mut child = std::process::Command::new(bin)
            .args(["write", path, "--message", msg])
            .current_dir(&self.dir)
            .env("TURNBACK_HOME", &self.home)
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
        self.crash_temps
            .extend(store_temps(&self.home).into_iter().filter(|p| {
                p.parent().and_then(Path::file_name) == Some("blobs".as_ref())
                    && p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(".tmp-")
            }));
    }

    /// What a link the model describes says on disk: the marks replaced by
    /// the real paths.
    fn link_text(&self, target: &str) -> PathBuf {
        let under = |base: &Path, rest: &str| base.join(rest.trim_start_matches('/'));
        if let Some(rest) = target.strip_prefix(ROOT_MARK) {
            under(self.ws.root(), rest)
        } else if let Some(rest) = target.strip_prefix(SCRATCH_MARK) {
            under(&self.base, rest)
        } else {
            PathBuf::from(target)
        }
    }

    /// A link's text as the model writes it ([`Real::link_text`] undone).
    fn model_text(&self, text: &Path) -> String {
        for (base, mark) in [(self.ws.root(), ROOT_MARK), (&self.base, SCRATCH_MARK)] {
            if let Ok(rest) = text.strip_prefix(base) {
                return match rest.to_str().unwrap() {
                    "" => mark.to_owned(),
                    rest => format!("{mark}/{rest}"),
                };
            }
        }
        text.to_str().unwrap().to_owned()
    }

    /// A path of the workspace relative to its root, as the model names it.
    fn relative(&self, p: &Path) -> String {
        p.strip_prefix(self.ws.root())
            .unwrap_or(p)
            .to_str()
            .unwrap()
            .to_owned()
    }
}

/// The store's temporaries under `home` (relative to it): `.tmp-*` and `*.tmp`.
fn store_temps(home: &Path) -> BTreeSet<PathBuf> {
    names_under(home)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(".tmp-") || name.ends_with(".tmp")
        })
        .collect()
}

/// Panics unless every directory on the way to `rel` is a real one (or
/// missing): the driver's own edits must never follow a link, or they would
/// reach where the store must not (and the escape check would blame it).
fn assert_no_link_on_the_way(root: &Path, rel: &str) {
    let mut p = root.to_owned();
    let comps: Vec<&str> = rel.split('/').collect();
    for c in &comps[..comps.len() - 1] {
        p.push(c);
        match std::fs::symlink_metadata(&p) {
            Ok(md) => assert!(md.is_dir(), "the driver's edit of {rel} would pass {c}"),
            Err(_) => return,
        }
    }
}

/// The person's edit of `path` (with no link on its way), on the real
/// workspace: writes make the directories, deletes take a link itself.
fn hand_edit(root: &Path, path: &str, edit: &super::reference::Edit) {
    use super::reference::Edit;
    assert_no_link_on_the_way(root, path);
    let p = root.join(path);
    let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_symlink());
    match edit {
        Edit::Put(data) => {
            assert!(!is_link, "the driver would write through the link {path}");
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, data).unwrap();
        }
        Edit::Delete => match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("delete {}: {e}", p.display()),
        },
        Edit::Chmod(mode) => {
            assert!(!is_link, "the driver would chmod through the link {path}");
            if p.exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
            }
        }
    }
}

/// The person replaces what is at `path` with a link saying `text`.
fn plant_link(root: &Path, path: &str, text: &Path) {
    assert_no_link_on_the_way(root, path);
    let p = root.join(path);
    match std::fs::symlink_metadata(&p) {
        Ok(md) if md.is_dir() => std::fs::remove_dir_all(&p).unwrap(),
        Ok(_) => std::fs::remove_file(&p).unwrap(),
        Err(_) => std::fs::create_dir_all(p.parent().unwrap()).unwrap(),
    }
    std::os::unix::fs::symlink(text, &p).unwrap();
}

/// The store's error as the model predicts it; any other is a failure.
fn failure(real: &Real, e: Error) -> Failure {
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
                            // The model takes no scans, so nothing is shared
                            // and no directory is recorded.
                            ConflictReason::Shared { .. } | ConflictReason::NotEmpty { .. } => {
                                unreachable!("no scans in the model")
                            }
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
        Error::OutsideWorkspace { via_link, .. } => Failure::Outside {
            via_link: via_link.map(|l| real.relative(&l)),
        },
        Error::UnsafePath {
            component, what, ..
        } => Failure::Unsafe { component, what },
        Error::NotRegularFile { kind, .. } => Failure::NotRegular(kind),
        Error::Io { op, .. } if op == "resolve" || op == "move" => Failure::Io(op),
        other => panic!("an error the model does not predict: {other}"),
    }
}

fn done<T>(real: &Real, r: turnback_store::Result<T>) -> Expect {
    match r {
        Ok(_) => Expect::Done,
        Err(e) => Expect::Fail(failure(real, e)),
    }
}

fn reported(real: &Real, r: turnback_store::Result<RevertReport>) -> Expect {
    let r = match r {
        Ok(r) => r,
        Err(e) => return Expect::Fail(failure(real, e)),
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
                    RevertAction::Directory | RevertAction::KeepDirectory { .. } => {
                        unreachable!("no scans in the model: {f:?}")
                    }
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
                        FileStatus::Conflict(
                            ConflictReason::Shared { .. } | ConflictReason::NotEmpty { .. },
                        ) => unreachable!("no scans in the model"),
                    },
                    target: show(&f.target),
                }
            })
            .collect(),
    }
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

/// The workspace as text: every file with contents and mode, every
/// directory, every link with what it says.
type Tree = (
    BTreeMap<String, String>,
    BTreeSet<String>,
    BTreeMap<String, String>,
);

fn real_tree(real: &Real) -> Tree {
    let root = real.dir.as_path();
    let mut files = BTreeMap::new();
    let mut dirs = BTreeSet::new();
    let mut links = BTreeMap::new();
    for rel in names_under(root) {
        let p = root.join(&rel);
        let name = rel.to_str().unwrap().to_owned();
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.is_dir() {
            dirs.insert(name);
        } else if md.is_symlink() {
            let text = std::fs::read_link(&p).unwrap();
            links.insert(name, real.model_text(&text));
        } else {
            assert!(
                md.is_file(),
                "{name} is neither a file, a directory nor a link"
            );
            let bytes = std::fs::read(&p).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            files.insert(name, show_st(&Some((bytes, mode))));
        }
    }
    (files, dirs, links)
}

fn model_tree(m: &Model) -> Tree {
    let files = m
        .files
        .iter()
        .map(|(p, s)| (p.to_string(), show_st(&Some(s.clone()))))
        .collect();
    let links = m
        .links
        .iter()
        .map(|(p, t)| (p.to_string(), t.clone()))
        .collect();
    (files, m.dirs.clone(), links)
}

fn by(b: &ChangedBy) -> By {
    By {
        session: b.session.clone(),
        message_id: b.message_id.clone(),
        seq: b.seq,
    }
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

/// Applies `op` to the real store and workspace and checks that it returned
/// what the model (already stepped: `model.expect`) says.
pub fn apply(mut real: Real, model: &Model, op: &Op) -> Real {
    let (s, ws) = (&real.session, &real.ws);
    let got = match op {
        Op::Write { path, data, msg } => done(&real, s.write(ws, path, data.as_bytes(), msg)),
        Op::Remove { path, msg } => done(&real, s.remove(ws, path, msg)),
        Op::Rename { from, to, msg } => done(&real, s.rename(ws, from, to, msg)),
        Op::Checkpoint {
            path,
            edit,
            end,
            msg,
        } => match s.checkpoint(ws, path, msg) {
            Err(e) => Expect::Fail(failure(&real, e)),
            Ok(cp) => {
                hand_edit(&real.dir, cp.path(), edit);
                match end {
                    End::Commit => done(&real, cp.commit()),
                    End::Rollback => done(&real, cp.rollback()),
                    End::Abandon => {
                        drop(cp);
                        Expect::Done
                    }
                }
            }
        },
        Op::CommitPending { .. } => done(&real, s.commit(model.seq_arg)),
        Op::RollbackPending { how, .. } => {
            reported(&real, s.rollback_with(model.seq_arg, how.opts()))
        }
        Op::Undo { how } => reported(&real, s.undo(how.opts())),
        Op::Revert { path, how } => reported(&real, s.revert(ws, path, how.opts())),
        Op::Rewind { msg, how } => reported(&real, s.rewind(msg, how.opts())),
        Op::RewindTurn { how, .. } => reported(&real, s.rewind_to_turn(model.turn_arg, how.opts())),
        Op::BeginTurn => match s.begin_turn("a prompt", None) {
            Ok(n) => Expect::Turn(n),
            Err(e) => Expect::Fail(failure(&real, e)),
        },
        Op::Redo { how } => reported(&real, s.redo(how.opts())),
        Op::Person { edit, .. } => {
            if let Some(at) = model.person_at {
                hand_edit(&real.dir, at, edit);
            }
            Expect::Done
        }
        Op::Other { path, data } => match data {
            Some(d) => done(&real, real.other.write(ws, path, d.as_bytes(), OTHER_MSG)),
            None => done(&real, real.other.remove(ws, path, OTHER_MSG)),
        },
        Op::Reopen => {
            real = real.reopen(model);
            Expect::Done
        }
        Op::Link { target, .. } => {
            if let Some(at) = model.person_at {
                plant_link(&real.dir, at, &real.link_text(target));
            }
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

/// What the real store and workspace must show after every step: the
/// workspace tree, no stray temporary (but the backup temporaries crashed
/// writers left, [`Real::crash_temps`]), the session's entries, turns and redo
/// history, and the other session's entries, all as the model has them.
pub fn check_invariants(real: &Real, model: &Model) {
    let root = real.dir.as_path();
    let temps = stray_temps(root);
    assert!(
        temps.is_empty(),
        "stray temporaries in the workspace: {temps:?}"
    );
    let store_temps: Vec<_> = store_temps(&real.home)
        .into_iter()
        .filter(|p| !real.crash_temps.contains(p))
        .collect();
    assert!(
        store_temps.is_empty(),
        "stray temporaries in the home: {store_temps:?}"
    );
    assert_eq!(
        real_tree(real),
        model_tree(model),
        "the workspace (files, directories, links)"
    );
    // A summary the next process would trust says what the index says.
    for id in [MAIN, OTHER] {
        let dir = real.home.join("sessions").join(id);
        if let Err(why) = turnback_store::fuzz_support::summary_agrees(&dir, id) {
            panic!("session {id}'s summary: {why}");
        }
    }

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
