//! The reference model of the store: plain data and a step function, no I/O
//! but the umask probe. Shared by the model test (`tests/model.rs`, whose
//! module comment says what the model covers), the `operations` fuzz target
//! (`fuzz/`) and the replay of its corpus (`crates/turnback-store/tests/format.rs`),
//! each through `mod`; proptest stays in the test.
//!
//! Besides the files and directories the person and the agent make, the model
//! knows symbolic links the person plants (the fuzz target does; the proptest
//! strategies do not): it resolves a path as `Workspace::resolve` does (links
//! inside followed, a way out refused) and walks it as a write or a restore
//! does (no link followed), so it predicts the refusals a link causes, which
//! leave everything as it was.
//!
//! It also knows a crash ([`Op::Crash`]): a `turnback write` aborted at one of
//! the crash points the write passes, and what recovery leaves of it. Only
//! the model test draws it (the driver spawns a process for it); the fuzz
//! target does not.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Mutex, OnceLock};

use turnback_store::{REDO_OVERWRITE_MESSAGE, RevertOptions};

use super::support::default_mode;

/// The session under test, and the other one that writes the same files.
pub const MAIN: &str = "agent";
pub const OTHER: &str = "other";
/// The message id of every change of the other session.
pub const OTHER_MSG: &str = "o";
/// How a link's absolute target names the workspace root and the scratch
/// directory around it (which the model does not know): the driver writes the
/// real path in their place and reads it back as this.
pub const ROOT_MARK: &str = "/@ROOT@";
pub const SCRATCH_MARK: &str = "/@SCRATCH@";
/// How many links one resolution may pass through (`workspace.rs`'s `MAX_LINKS`).
const MAX_LINKS: usize = 40;

/// The one `&'static str` for `s`: paths the model resolves through links are
/// new strings, and the model keeps paths as `&'static str` (the strategies
/// pick them from constants). Few distinct paths ever come up.
pub fn intern(s: &str) -> &'static str {
    static SEEN: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut seen = SEEN.get_or_init(Default::default).lock().unwrap();
    if let Some(p) = seen.get(s) {
        return p;
    }
    let p: &'static str = Box::leak(s.to_owned().into_boxed_str());
    seen.insert(p);
    p
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
    pub fn opts(self) -> RevertOptions {
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
    /// The person replaces whatever is at `path` (a file, a link, a directory
    /// and all it holds) with a symbolic link saying `target` (see
    /// [`ROOT_MARK`]), making the directories on the way; nothing happens
    /// where a link or a file is on the way.
    Link {
        path: &'static str,
        target: String,
    },
    /// `turnback write path` (contents `data`) in the session, aborted at a
    /// crash point ([`Model::crash_points`], picked among them), then every
    /// handle dropped and opened again. Spawns a process: drawn by the model
    /// test, never by the fuzz target (`fuzzing.rs`), and only in a
    /// workspace without links (the model knows the crash points of a plain
    /// write only).
    Crash {
        path: &'static str,
        data: String,
        msg: &'static str,
        pick: u8,
    },
}

// ---------------------------------------------------------------------------
// Expectations: what a step returns, in a form both sides produce.

/// Who the store names as the changer of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct By {
    pub session: String,
    pub message_id: String,
    pub seq: u64,
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
    pub fn is_conflict(&self) -> bool {
        matches!(self, Status::ChangedSince(_) | Status::NeverCommitted)
    }
}

/// One file of a revert report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportFile {
    pub path: String,
    pub seqs: Vec<u64>,
    pub status: Status,
    pub target: String,
}

/// One conflict of a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpConflict {
    pub path: String,
    pub seq: u64,
    pub reason: Status,
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
    /// `OutsideWorkspace`, with the link that leads out (relative to the root)
    /// when one does.
    Outside {
        via_link: Option<String>,
    },
    /// `UnsafePath`: the component in the way, and what it is.
    Unsafe {
        component: String,
        what: &'static str,
    },
    /// `NotRegularFile`, of this kind.
    NotRegular(&'static str),
    /// `Io` during this operation: too many links to resolve, a move onto
    /// the same file.
    Io(&'static str),
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
pub type St = Option<(Vec<u8>, u32)>;

/// The same file (or both absent): contents and mode, as the store compares
/// them (`FileState::same_state`): a chmod alone is a change.
pub fn same(a: &St, b: &St) -> bool {
    a == b
}

/// A state as the checks print it.
pub fn show_st(st: &St) -> String {
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

#[derive(Clone, Debug)]
pub struct MEntry {
    pub seq: u64,
    pub msg: &'static str,
    pub path: &'static str,
    pub version: u32,
    pub before: St,
    /// `None` until committed.
    pub after: Option<St>,
    pub created_dirs: Vec<String>,
    pub turn: u32,
    pub group: Option<u64>,
    /// Creation order across both sessions (the store compares times).
    pub stamp: u64,
}

#[derive(Clone, Debug)]
pub struct MFile {
    pub path: &'static str,
    pub overwritten: St,
    pub restored: St,
}

#[derive(Clone, Debug)]
pub struct MRecord {
    pub kind: &'static str,
    pub entries: Vec<MEntry>,
    pub turns: Vec<u32>,
    pub files: Vec<MFile>,
    pub removed_dirs: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct OtherEntry {
    pub seq: u64,
    pub path: &'static str,
    pub after: St,
    pub stamp: u64,
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
    pub files: BTreeMap<&'static str, (Vec<u8>, u32)>,
    pub dirs: BTreeSet<String>,
    /// Symbolic links the person planted, with what each says.
    pub links: BTreeMap<&'static str, String>,
    pub entries: Vec<MEntry>,
    pub next_seq: u64,
    pub turns: Vec<u32>,
    pub next_turn: u32,
    pub history: Vec<MRecord>,
    pub other: Vec<OtherEntry>,
    pub other_next_seq: u64,
    pub stamp: u64,
    /// What the last step must return.
    pub expect: Expect,
    /// The entry number the last commit/rollback by number resolved to.
    pub seq_arg: u64,
    /// The turn the last rewind to a turn resolved to.
    pub turn_arg: u32,
    /// Where the last step's edit by hand lands (the path with the links on
    /// the way followed), if anywhere: a person's editor follows links, and
    /// the driver edits the real workspace there without following any.
    pub person_at: Option<&'static str>,
    /// The crash point the last crash resolved to.
    pub crash_at: &'static str,
    /// The session's `index.json` is on disk for certain (a change was
    /// recorded): its next change is a journal line, which passes the
    /// journal's crash points.
    pub snapshot: bool,
}

/// What a crash at a point of a write leaves once recovery settled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crashed {
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

/// The components of a path as `Path::components` gives them: no empty ones,
/// no `.`.
fn parts(p: &str) -> Vec<String> {
    p.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(str::to_owned)
        .collect()
}

/// What is at a path of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Absent,
    File,
    Dir,
    Link,
}

fn unsafe_at(component: &str, what: &'static str) -> Failure {
    Failure::Unsafe {
        component: component.to_owned(),
        what,
    }
}

impl Model {
    /// A workspace holding `files` (default mode), before any session.
    pub fn new(files: BTreeMap<&'static str, String>) -> Model {
        let mut m = Model {
            files: BTreeMap::new(),
            dirs: BTreeSet::new(),
            links: BTreeMap::new(),
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
            person_at: None,
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

    fn kind(&self, path: &str) -> Kind {
        if self.files.contains_key(path) {
            Kind::File
        } else if self.links.contains_key(path) {
            Kind::Link
        } else if self.dirs.contains(path) {
            Kind::Dir
        } else {
            Kind::Absent
        }
    }

    /// `Workspace::resolve`: the real file `given` names, relative to the
    /// root, with every link on the way (and at the end, unless `follow_last`
    /// is false, as `rm` does not) followed; `..` taken from the real path so
    /// far; any way out refused, even one that would come back in.
    pub fn resolve_with(&self, given: &str, follow_last: bool) -> Result<&'static str, Failure> {
        let mut pending: Vec<String> = parts(given);
        pending.reverse();
        let mut resolved: Vec<String> = Vec::new();
        let mut links = 0;
        while let Some(part) = pending.pop() {
            if part == ".." {
                if resolved.pop().is_none() {
                    return Err(Failure::Outside { via_link: None });
                }
                continue;
            }
            let mut candidate = resolved.join("/");
            if !candidate.is_empty() {
                candidate.push('/');
            }
            candidate.push_str(&part);
            // A path under a file or a missing directory is no link: the model
            // has links only under directories.
            let target = match self.links.get(candidate.as_str()) {
                Some(t) if follow_last || !pending.is_empty() => t,
                _ => {
                    resolved.push(part);
                    continue;
                }
            };
            links += 1;
            if links > MAX_LINKS {
                return Err(Failure::Io("resolve"));
            }
            let rest = if let Some(inside) = target.strip_prefix(ROOT_MARK) {
                resolved.clear();
                inside
            } else if target.starts_with('/') {
                return Err(Failure::Outside {
                    via_link: Some(candidate),
                });
            } else {
                target
            };
            let mut more = parts(rest);
            more.reverse();
            pending.extend(more);
        }
        if resolved.is_empty() {
            return Err(Failure::NotRegular("directory"));
        }
        Ok(intern(&resolved.join("/")))
    }

    /// [`Model::resolve_with`], following every link.
    pub fn resolve(&self, given: &str) -> Result<&'static str, Failure> {
        self.resolve_with(given, true)
    }

    /// The walk of a write or a restore to the directory of `rel`, following
    /// no link (`Workspace::parent_of`): `Ok(false)` where a directory on the
    /// way is missing (and so is the file), else the component in the way.
    fn walk(&self, rel: &str) -> Result<bool, Failure> {
        for d in ancestors(rel) {
            match self.kind(&d) {
                Kind::Dir => {}
                Kind::Link => return Err(unsafe_at(&d, "a symbolic link")),
                Kind::File => return Err(unsafe_at(&d, "not a directory")),
                Kind::Absent => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The file at `rel` as the store reads it (`Workspace::current_state`),
    /// refusing a link or a directory there or on the way.
    fn current(&self, rel: &str) -> Result<St, Failure> {
        if !self.walk(rel)? {
            return Ok(None);
        }
        match self.kind(rel) {
            Kind::Absent => Ok(None),
            Kind::File => Ok(self.state(rel)),
            Kind::Dir => Err(Failure::NotRegular("directory")),
            Kind::Link => Err(unsafe_at(rel, "a symbolic link")),
        }
    }

    /// A path as a session's change takes it: resolved, and readable there.
    fn target(&self, path: &str) -> Result<(&'static str, St), Failure> {
        let rel = self.resolve(path)?;
        Ok((rel, self.current(rel)?))
    }

    /// The directories of `path`, made as a redo makes the ones a revert
    /// removed (`parent_of` creating): those already there kept, a link or a
    /// file on the way refused (what was made before stays).
    fn make_dirs(&mut self, path: &str) -> Result<(), Failure> {
        for d in ancestors(path) {
            match self.kind(&d) {
                Kind::Dir => {}
                Kind::Link => return Err(unsafe_at(&d, "a symbolic link")),
                Kind::File => return Err(unsafe_at(&d, "not a directory")),
                Kind::Absent => {
                    self.dirs.insert(d);
                }
            }
        }
        Ok(())
    }

    /// Everything at and under `path` gone, as `rm -rf` leaves it.
    fn remove_tree(&mut self, path: &str) {
        let prefix = format!("{path}/");
        let under = |p: &str| p == path || p.starts_with(&prefix);
        self.files.retain(|p, _| !under(p));
        self.links.retain(|p, _| !under(p));
        self.dirs.retain(|p| !under(p));
    }

    /// The person plants a link (see [`Op::Link`]); returns whether they did.
    fn plant(&mut self, path: &'static str, target: &str) -> bool {
        if ancestors(path)
            .iter()
            .any(|d| matches!(self.kind(d), Kind::Link | Kind::File))
        {
            return false;
        }
        self.remove_tree(path);
        self.ensure_dirs(path);
        self.links.insert(path, target.to_owned());
        true
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
            && !self.links.keys().any(|l| l.starts_with(&prefix))
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

    /// The person's edit of `path`, as an editor, `rm` and `chmod` do it:
    /// through links (but `rm` removes a link itself), and nothing where the
    /// way leads out or is blocked. Sets [`Model::person_at`].
    fn person(&mut self, path: &'static str, edit: &Edit) {
        self.person_at = None;
        let resolved = match edit {
            Edit::Delete => self.resolve_with(path, false),
            _ => self.resolve(path),
        };
        let Ok(rel) = resolved else { return };
        if *edit == Edit::Delete && self.kind(rel) == Kind::Link {
            if self.walk(rel).is_ok() {
                self.links.remove(rel);
                self.person_at = Some(rel);
            }
            return;
        }
        if self.current(rel).is_ok() {
            self.edit_at(rel, edit);
        }
    }

    /// The person's edit of the file at `rel`, whose way is clear. Sets
    /// [`Model::person_at`] where something changes.
    fn edit_at(&mut self, rel: &'static str, edit: &Edit) {
        self.person_at = None;
        match edit {
            Edit::Put(data) => {
                let mode = self.files.get(rel).map_or(default_mode(), |(_, m)| *m);
                self.put(rel, Some((data.as_bytes().to_vec(), mode)));
            }
            Edit::Delete if self.files.contains_key(rel) => self.put(rel, None),
            Edit::Chmod(mode) if self.files.contains_key(rel) => {
                if let Some((_, m)) = self.files.get_mut(rel) {
                    *m = *mode;
                }
            }
            Edit::Delete | Edit::Chmod(_) => return,
        }
        self.person_at = Some(rel);
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

    /// Every file checked before any is touched; the first that cannot be
    /// read (a link or a directory at it or on its way) fails the revert.
    fn classify(&self, plans: &mut [Plan]) -> Result<(), Failure> {
        for p in plans.iter_mut() {
            let now = self.current(p.path)?;
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
        Ok(())
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
        if let Err(f) = self.classify(&mut plans) {
            return Expect::Fail(f);
        }
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
        if let Err(f) = self.classify(&mut plans) {
            return Expect::Fail(f);
        }
        if how == How::Dry {
            return Self::report(&plans, false);
        }
        if let Some(refused) = Self::refusal(&plans, how) {
            return refused;
        }
        for d in &rec.removed_dirs {
            if let Err(f) = self.make_dirs(&format!("{d}/x")) {
                return Expect::Fail(f);
            }
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
            // The preview decides as the rollback does: a change recorded
            // since is the conflict, named; else the file holds the
            // caller's own half-made write, safe to overwrite.
            let mut expect = self.revert(&seqs, How::Dry, None, None);
            if let Expect::Report { files, .. } = &mut expect {
                for f in files
                    .iter_mut()
                    .filter(|f| f.status != Status::AlreadyReverted)
                {
                    f.status = match &by {
                        Some(by) => Status::ChangedSince(Some(by.clone())),
                        None => Status::Safe,
                    };
                }
            }
            return expect;
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
    /// A write of the contents the file already holds (`data`) records
    /// nothing: it stops once it knows the backup's name, so it passes only
    /// the points before that, where a crash leaves nothing either.
    pub fn crash_points(&self, path: &str, data: &str) -> Vec<(&'static str, Crashed)> {
        use Crashed::*;
        let unchanged = self
            .files
            .get(path)
            .is_some_and(|(bytes, _)| bytes == data.as_bytes());
        if unchanged {
            return vec![
                ("blob-written", Nothing),
                ("ws-tmp-written", Nothing),
                ("ws-tmp-synced", Nothing),
            ];
        }
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
    pub fn crash(&self, path: &str, data: &str, pick: u8) -> (&'static str, Crashed) {
        let points = self.crash_points(path, data);
        points[pick as usize % points.len()]
    }

    /// Applies `op`: the model's state changes and `expect` says what the
    /// store must return.
    pub fn apply(mut self, op: &Op) -> Model {
        self.person_at = None;
        self.expect = self.step(op).unwrap_or_else(Expect::Fail);
        self
    }

    fn step(&mut self, op: &Op) -> Result<Expect, Failure> {
        Ok(match op {
            Op::Write { path, data, msg } => {
                let (rel, _) = self.target(path)?;
                let (before, after, created_dirs) = self.write_through(rel, data);
                self.record(
                    msg,
                    vec![Draft {
                        path: rel,
                        before,
                        after: Some(after),
                        created_dirs,
                    }],
                );
                Expect::Done
            }
            Op::Remove { path, msg } => {
                let (rel, before) = self.target(path)?;
                if before.is_none() {
                    return Err(Failure::FileNotFound);
                }
                self.put(rel, None);
                self.record(
                    msg,
                    vec![Draft {
                        path: rel,
                        before,
                        after: Some(None),
                        created_dirs: Vec::new(),
                    }],
                );
                Expect::Done
            }
            Op::Rename { from, to, msg } => {
                let from = self.resolve(from)?;
                let to = self.resolve(to)?;
                if from == to {
                    return Err(Failure::Io("move"));
                }
                let moved = self.current(from)?;
                if moved.is_none() {
                    return Err(Failure::FileNotFound);
                }
                let before_to = self.current(to)?;
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
                let (rel, before) = self.target(path)?;
                let created_dirs = self.missing_dirs(rel);
                let seq = self.record(
                    msg,
                    vec![Draft {
                        path: rel,
                        before,
                        after: None,
                        created_dirs,
                    }],
                )[0];
                self.edit_at(rel, edit);
                // The driver edits where the checkpoint is, whatever changed.
                self.person_at = Some(rel);
                match end {
                    End::Commit => {
                        let now = self.state(rel);
                        self.entry_mut(seq).after = Some(now);
                    }
                    End::Rollback => {
                        self.revert(&[seq], How::Force, None, None);
                    }
                    End::Abandon => {}
                }
                Expect::Done
            }
            Op::CommitPending { pick } => {
                let seq = self.pick_uncommitted(*pick)?;
                let path = self.entry_mut(seq).path;
                let now = self.current(path)?;
                self.entry_mut(seq).after = Some(now);
                Expect::Done
            }
            Op::RollbackPending { pick, how } => {
                let seq = self.pick_uncommitted(*pick)?;
                self.rollback(seq, *how)
            }
            Op::Undo { how } => match self.entries.last() {
                Some(last) => {
                    let seqs = self.with_group(last);
                    self.revert(&seqs, *how, Some("undo"), None)
                }
                None => return Err(Failure::NothingToUndo),
            },
            Op::Revert { path, how } => {
                // The entries of the path as given, or of the file it leads to.
                let real = self.resolve(path).ok();
                let found = self
                    .entries
                    .iter()
                    .rev()
                    .find(|e| e.path == *path || Some(e.path) == real);
                match found {
                    Some(newest) => {
                        let seqs = self.with_group(newest);
                        self.revert(&seqs, *how, Some("revert"), None)
                    }
                    None => return Err(Failure::NoChangeToFile),
                }
            }
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
                None => return Err(Failure::MessageNotFound),
            },
            Op::RewindTurn { pick, how } => {
                let n = u32::from(*pick) % (self.next_turn + 1);
                self.turn_arg = n;
                if !self.turns.contains(&n) {
                    return Err(Failure::TurnNotFound);
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
                let (rel, now) = self.target(path)?;
                let after = match data {
                    Some(d) => self.write_through(rel, d).1,
                    None if now.is_none() => return Err(Failure::FileNotFound),
                    None => {
                        self.put(rel, None);
                        None
                    }
                };
                let stamp = self.next_stamp();
                self.other.push(OtherEntry {
                    seq: self.other_next_seq,
                    path: rel,
                    after,
                    stamp,
                });
                self.other_next_seq += 1;
                Expect::Done
            }
            Op::Reopen => Expect::Done,
            Op::Link { path, target } => {
                if self.plant(path, target) {
                    self.person_at = Some(path);
                }
                Expect::Done
            }
            Op::Crash {
                path,
                data,
                msg,
                pick,
            } => {
                // Where a link is, the write may stop (refused) before any
                // crash point, and the points it passes are not these.
                assert!(
                    self.links.is_empty(),
                    "a crash is modelled in a workspace without links only"
                );
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
        })
    }
}
