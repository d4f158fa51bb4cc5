//! The sessions of a home: listing them, and finding the one a person means
//! in a directory (or for a file) when they name none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::session_id;
use crate::store::Store;
use crate::summary::{Newest, Summary, key_of};
use crate::workspace::Workspace;

/// One session as [`Store::sessions`] lists it.
#[derive(Debug, Clone)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// The workspace roots its entries (in effect or undone) are in.
    pub workspaces: Vec<PathBuf>,
    /// How many entries it holds (in effect; undone ones are not counted).
    pub entries: usize,
    /// When its newest entry, or its newest undo, revert or rewind not yet
    /// redone, was made.
    pub last_change: Option<OffsetDateTime>,
    /// Bytes of backups it keeps.
    pub bytes: u64,
    /// Why its index could not be read, if it could not (the session is listed
    /// anyway, and nothing of it is changed): the error itself, so that a
    /// caller can tell a busy session from a damaged one and render it as it
    /// renders any error.
    pub problem: Option<Arc<Error>>,
}

/// Which session a person's command means when it names none
/// ([`Store::choose_session`]): one rule per kind of command.
#[derive(Debug, Clone, Copy)]
pub enum SessionChoice<'a> {
    /// The session whose newest change to a file under the directory is the
    /// newest of all ([`Store::latest_session_under`]): what `undo`,
    /// `rewind`, `log` and `diff` mean.
    ChangedUnder(&'a Path),
    /// The session whose newest undo, revert or rewind of a file under the
    /// directory is the newest of all ([`Store::latest_redo_session_under`]),
    /// else (none has one) the one [`SessionChoice::ChangedUnder`] picks,
    /// which then has nothing to redo: what `redo` means.
    RevertedUnder(&'a Path),
    /// The session that changed the file (in the workspace) last
    /// ([`Store::latest_session_for`]): what `revert FILE` means.
    ChangedFile(&'a Workspace, &'a Path),
}

/// The session a person's command works on ([`Store::choose_session`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenSession {
    /// The session id.
    pub id: String,
    /// Why it is the one, for a note to the person.
    pub reason: ChoiceReason,
}

/// Why [`Store::choose_session`] chose a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChoiceReason {
    /// The person named it.
    Named,
    /// It has the newest change under the directory.
    ChangedUnder,
    /// Its undo, revert or rewind under the directory was the last.
    RevertedUnder,
    /// It changed the file last.
    ChangedFile,
}

/// What [`Store::newest_under`] compares sessions by.
#[derive(Debug, Clone, Copy)]
enum Counted {
    /// Their newest entries in effect.
    InEffect,
    /// Their newest undo, revert or rewind.
    TakenBack,
}

impl Store {
    /// The ids of every session in the home, sorted.
    pub fn session_ids(&self) -> Result<Vec<String>> {
        self.check_session_dirs(None)?;
        let dir = self.sessions_dir();
        let read = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("list sessions in", &dir)(e)),
        };
        let mut ids: Vec<String> = read
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|id| session_id::validate(id).is_ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Every session of the home with its workspaces, size and last change,
    /// newest change last (those without one first; ties in id order). From
    /// each session's summary record where it is still true (`summary/`),
    /// else from its index.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let ids = self.session_ids()?;
        let summaries = self.summaries();
        let mut out = Vec::new();
        for id in ids {
            let bytes = self.session_dir(&id).blob_bytes();
            let summary = match summaries.of(&id) {
                // Undone entries count for where a session works and when it
                // last did something: a person may still want to redo them.
                Ok(s) => SessionSummary {
                    id,
                    workspaces: s.header.workspaces,
                    entries: s.header.entries,
                    last_change: s.header.last_change,
                    bytes,
                    problem: None,
                },
                Err(e) => SessionSummary {
                    id,
                    workspaces: Vec::new(),
                    entries: 0,
                    last_change: None,
                    bytes,
                    problem: Some(Arc::new(e)),
                },
            };
            out.push(summary);
        }
        out.sort_by(|a, b| a.last_change.cmp(&b.last_change).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The session a person's command works on: `named` (by a flag or the
    /// environment) when given, else the one `choice` picks; `None` when
    /// none is meant (no session has such a change). The named session is
    /// not looked at here: opening it says whether it exists.
    pub fn choose_session(
        &self,
        named: Option<&str>,
        choice: SessionChoice<'_>,
    ) -> Result<Option<ChosenSession>> {
        if let Some(id) = named {
            return Ok(Some(ChosenSession {
                id: id.to_owned(),
                reason: ChoiceReason::Named,
            }));
        }
        let chosen = |id: Option<String>, reason| id.map(|id| ChosenSession { id, reason });
        Ok(match choice {
            SessionChoice::ChangedUnder(dir) => {
                chosen(self.latest_session_under(dir)?, ChoiceReason::ChangedUnder)
            }
            SessionChoice::RevertedUnder(dir) => match self.latest_redo_session_under(dir)? {
                Some(id) => chosen(Some(id), ChoiceReason::RevertedUnder),
                None => chosen(self.latest_session_under(dir)?, ChoiceReason::ChangedUnder),
            },
            SessionChoice::ChangedFile(workspace, file) => chosen(
                self.latest_session_for(workspace, file)?,
                ChoiceReason::ChangedFile,
            ),
        })
    }

    /// The session that changed `path` (in `workspace`) last, across every session
    /// of the home: what `turnback revert FILE` uses when no session is named.
    /// Sessions whose index cannot be read are skipped. Each session's
    /// summary says, without its index, whether it may have changed the file
    /// and how new its newest change is: the sessions that may are looked at
    /// newest first, until none left can be newer.
    pub fn latest_session_for(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
    ) -> Result<Option<String>> {
        let path = path.as_ref();
        let candidates = crate::workspace::candidate_files(workspace, path)?;
        let keys: Vec<PathBuf> = candidates.iter().map(|c| key_of(c)).collect();
        let ids = self.session_ids()?;
        let summaries = self.summaries();
        let mut pending: Vec<(Newest, Summary)> = Vec::new();
        for id in ids {
            let Ok(s) = summaries.of(&id) else {
                continue;
            };
            let roots = s.header.roots.iter();
            let bound = roots
                .filter(|r| keys.iter().any(|k| k.starts_with(&r.path)))
                .filter_map(|r| r.entry)
                .max();
            let maybe = keys.iter().any(|k| s.may_hold(k));
            if let Some(bound) = bound
                && maybe
            {
                pending.push((bound, s));
            }
        }
        // Newest first; of two as new, the first id first (it wins a tie).
        pending.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
        let mut best: Option<(Newest, String)> = None;
        for (bound, mut s) in pending {
            if best
                .as_ref()
                .is_some_and(|(b, id)| bound < *b || (bound == *b && s.id > *id))
            {
                break;
            }
            let Ok(files) = summaries.files(&mut s) else {
                continue;
            };
            let found = keys.iter().filter_map(|k| {
                let at = files.binary_search_by(|l| l.file.as_path().cmp(k)).ok()?;
                files[at].entry
            });
            if let Some(newest) = found.max()
                && best
                    .as_ref()
                    .is_none_or(|(b, id)| newest > *b || (newest == *b && s.id < *id))
            {
                best = Some((newest, s.id));
            }
        }
        Ok(best.map(|(_, id)| id))
    }

    /// The session a person working in `dir` most likely means: the one whose
    /// newest change still in effect to a file under `dir` is the newest of
    /// all; where no session has a change in effect there, the one whose
    /// undo, revert or rewind of such a file was the last (redo can put it
    /// back). A session that took all its changes back does not hide another
    /// whose changes are still there: after `turnback run` and `undo`, `log`
    /// shows the agent's work, not the person's emptied session. A session
    /// whose workspace merely contains `dir` (a parent directory) but changed
    /// nothing under it is not one. What `turnback undo`, `rewind`, `log` and
    /// `diff` use when no session is named. Sessions whose index cannot be
    /// read are skipped.
    pub fn latest_session_under(&self, dir: impl AsRef<Path>) -> Result<Option<String>> {
        match self.newest_under(dir.as_ref(), Counted::InEffect)? {
            Some(id) => Ok(Some(id)),
            None => self.newest_under(dir.as_ref(), Counted::TakenBack),
        }
    }

    /// The session whose newest undo, revert or rewind of a file under `dir`
    /// is the newest of all (by the record's time): what `turnback redo` takes
    /// back when no session is named. Sessions whose index cannot be read are
    /// skipped.
    pub fn latest_redo_session_under(&self, dir: impl AsRef<Path>) -> Result<Option<String>> {
        self.newest_under(dir.as_ref(), Counted::TakenBack)
    }

    /// The session whose newest entry in effect of a file under `dir` (or
    /// newest undo, revert or rewind of one: `counted` says which) is the
    /// newest of all; ties go to the larger id. From each session's summary:
    /// a root under `dir` (or `dir` itself) counts whole; only for `dir`
    /// inside a root are the files looked at, of the sessions that may have
    /// one under it, newest first, until none left can be newer.
    fn newest_under(&self, dir: &Path, counted: Counted) -> Result<Option<String>> {
        let dir = key_of(dir);
        let ids = self.session_ids()?;
        let summaries = self.summaries();
        let newest = |entry: Option<Newest>, taken: Option<OffsetDateTime>| match counted {
            Counted::InEffect => entry.map(|e| e.time),
            Counted::TakenBack => taken,
        };
        let mut best: Option<(OffsetDateTime, String)> = None;
        let better = |best: &Option<(OffsetDateTime, String)>, t: OffsetDateTime, id: &str| {
            best.as_ref()
                .is_none_or(|(b, bid)| t > *b || (t == *b && id > bid.as_str()))
        };
        // The newest of the roots under `dir`, and of those holding it.
        let of_roots = |s: &Summary| {
            let (mut whole, mut inside) = (None, None);
            for r in &s.header.roots {
                if r.path.starts_with(&dir) {
                    whole = whole.max(newest(r.entry, r.taken));
                } else if dir.starts_with(&r.path) {
                    inside = inside.max(newest(r.entry, r.taken));
                }
            }
            (whole, inside)
        };
        let mut pending: Vec<(OffsetDateTime, Summary)> = Vec::new();
        for id in ids {
            let Ok(s) = summaries.of(&id) else {
                continue;
            };
            let (whole, inside) = of_roots(&s);
            let maybe = s.may_hold(&dir);
            match inside {
                Some(bound) if maybe && inside > whole => pending.push((bound, s)),
                _ => {
                    if let Some(t) = whole
                        && better(&best, t, &id)
                    {
                        best = Some((t, id));
                    }
                }
            }
        }
        // Newest first; of two as new, the larger id first (it wins a tie).
        pending.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.id.cmp(&a.1.id)));
        for (bound, mut s) in pending {
            if best
                .as_ref()
                .is_some_and(|(b, id)| bound < *b || (bound == *b && s.id < *id))
            {
                break;
            }
            // (Read again from the index if the record changed meanwhile:
            // then the roots are taken again too.)
            let under = summaries.files(&mut s).ok().and_then(|files| {
                files
                    .iter()
                    .filter(|l| l.file.starts_with(&dir))
                    .filter_map(|l| newest(l.entry, l.taken))
                    .max()
            });
            if let Some(t) = under.max(of_roots(&s).0)
                && better(&best, t, &s.id)
            {
                best = Some((t, s.id));
            }
        }
        Ok(best.map(|(_, id)| id))
    }

    /// The newest entry in effect, across every session of the home, that
    /// `wanted` accepts, with its session's id. Sessions whose index cannot be
    /// read are skipped. A caller that holds the lock of session `holding`
    /// (a revert naming who changed a file) says so: that session is read
    /// without taking its lock again, which would wait for itself, and no
    /// other session's lock is waited for, since its holder may be waiting for
    /// the caller's in the same way; a busy one is read without its lock (the
    /// answer is only a hint in an error message).
    pub(crate) fn newest_entry_where(
        &self,
        holding: Option<&str>,
        wanted: impl Fn(&Entry) -> bool,
    ) -> Result<Option<(String, Entry)>> {
        let mut best: Option<(String, Entry)> = None;
        for id in self.session_ids()? {
            let idx = match holding {
                None => self.read_index(&id),
                Some(holding) => self
                    .session_dir(&id)
                    .read_index_for_hint(holding == id.as_str()),
            };
            let Ok(idx) = idx else {
                continue;
            };
            for e in idx.entries.into_iter().filter(|e| wanted(e)) {
                if best
                    .as_ref()
                    .is_none_or(|(_, b)| (e.time, e.seq) > (b.time, b.seq))
                {
                    best = Some((id.clone(), e));
                }
            }
        }
        Ok(best)
    }

    /// Every entry in effect, in any session, of workspace `root` recorded
    /// at `since` or later that `wanted` accepts, with its session's id (a
    /// scan's commit: who recorded a change during its bracket). Only the
    /// indexes of sessions whose summary has such an entry are read: a root
    /// nested with `root` (either way) whose newest entry is that recent.
    /// Sessions whose index cannot be read are passed over.
    pub(crate) fn entries_in_root_since(
        &self,
        root: &Path,
        since: OffsetDateTime,
        wanted: impl Fn(&Entry) -> bool,
    ) -> Result<Vec<(String, Entry)>> {
        let key = key_of(root);
        let summaries = self.summaries();
        let mut found = Vec::new();
        for id in self.session_ids()? {
            let Ok(s) = summaries.of(&id) else {
                continue;
            };
            // A file's line is under the root of the entry that first named
            // it, which may be an outer or inner workspace of `root`.
            let recent = s
                .header
                .roots
                .iter()
                .filter(|r| r.path.starts_with(&key) || key.starts_with(&r.path))
                .filter_map(|r| r.entry)
                .any(|n| n.time >= since);
            if !recent {
                continue;
            }
            let Ok(idx) = self.read_index(&id) else {
                continue;
            };
            found.extend(
                idx.entries
                    .into_iter()
                    .filter(|e| e.workspace.path == root && e.time >= since && wanted(e))
                    .map(|e| (id.clone(), e)),
            );
        }
        Ok(found)
    }

    /// Session `id`'s whole index, read under its shared lock
    /// ([`crate::layout::SessionDir::read_index`]).
    fn read_index(&self, id: &str) -> Result<Index> {
        self.session_dir(id)
            .read_index(self.options().session_lock_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Options;
    use std::time::Duration;

    #[test]
    fn listing_waits_for_a_session_in_the_middle_of_a_change() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path()).with_options(Options {
            session_lock_timeout: Duration::from_millis(50),
            ..Options::default()
        });
        let s = store.session("s").unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        s.write(&ws, "f", &b"x"[..], "m").unwrap();
        // Another process in the middle of a change holds the lock: the
        // listing does not read the session's files meanwhile.
        let path = s.dir().join("lock");
        let held = crate::lock::acquire(&path, crate::lock::Mode::Exclusive, Duration::ZERO, None)
            .unwrap();
        let listed = store.sessions().unwrap();
        let problem = listed[0].problem.as_deref();
        assert!(
            matches!(problem, Some(Error::SessionBusy { .. })),
            "{problem:?}"
        );
        assert_eq!(store.latest_session_for(&ws, "f").unwrap(), None);
        drop(held);
        assert_eq!(store.sessions().unwrap()[0].entries, 1);
        assert_eq!(
            store.latest_session_for(&ws, "f").unwrap().as_deref(),
            Some("s")
        );
    }

    #[test]
    fn a_refusal_names_a_change_of_the_reverting_session_itself() {
        // The revert holds its own session's lock while it asks which change
        // made the file what it is: its own session must be read then too,
        // without waiting for the lock it holds.
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path()).with_options(Options {
            session_lock_timeout: Duration::from_millis(200),
            ..Options::default()
        });
        let s = store.session("s").unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        let plain = crate::RevertOptions::default();
        s.write(&ws, "f", &b"one"[..], "m1").unwrap();
        s.undo(plain).unwrap();
        s.write(&ws, "f", &b"three"[..], "m3").unwrap();
        let Err(Error::Refused { conflicts, .. }) = s.redo(plain) else {
            panic!("the redo was not refused");
        };
        let reason = &conflicts[0].reason;
        let crate::ConflictReason::ChangedSince { by: Some(by) } = reason else {
            panic!("no changer named: {reason:?}");
        };
        assert_eq!((by.session.as_str(), by.message_id.as_str()), ("s", "m3"));
    }

    #[test]
    fn a_refusal_does_not_wait_for_another_sessions_lock_to_name_it() {
        // Two agents reverting at once each hold their own session's lock while
        // they name who changed a file; waiting for each other's would stall
        // both until the timeout. The other session is read without its lock.
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path()).with_options(Options {
            session_lock_timeout: Duration::from_millis(500),
            ..Options::default()
        });
        let (a, b) = (store.session("a").unwrap(), store.session("b").unwrap());
        let ws = Workspace::open(wsdir.path()).unwrap();
        let plain = crate::RevertOptions::default();
        b.write(&ws, "f", &b"one"[..], "m1").unwrap();
        b.undo(plain).unwrap();
        a.write(&ws, "f", &b"two"[..], "m2").unwrap();
        let path = a.dir().join("lock");
        let _held = crate::lock::acquire(&path, crate::lock::Mode::Exclusive, Duration::ZERO, None)
            .unwrap();
        let Err(Error::Refused { conflicts, .. }) = b.redo(plain) else {
            panic!("the redo was not refused");
        };
        let reason = &conflicts[0].reason;
        let crate::ConflictReason::ChangedSince { by: Some(by) } = reason else {
            panic!("no changer named: {reason:?}");
        };
        assert_eq!((by.session.as_str(), by.message_id.as_str()), ("a", "m2"));
    }

    #[test]
    fn a_persons_session_choice_follows_the_rule_of_its_command() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let store = Store::new(home.path());
        let ws = Workspace::open(wsdir.path()).unwrap();
        let (a, b) = (store.session("a").unwrap(), store.session("b").unwrap());
        let choose = |named, choice| {
            let c: Option<ChosenSession> = store.choose_session(named, choice).unwrap();
            c.map(|c| (c.id, c.reason))
        };
        let under = SessionChoice::ChangedUnder(ws.root());
        let redo = SessionChoice::RevertedUnder(ws.root());
        let file = SessionChoice::ChangedFile(&ws, Path::new("f"));
        for choice in [under, redo, file] {
            assert_eq!(choose(None, choice), None, "{choice:?}");
            let named = Some(("x".to_owned(), ChoiceReason::Named));
            assert_eq!(choose(Some("x"), choice), named, "{choice:?}");
        }
        a.write(&ws, "f", &b"1"[..], "m").unwrap();
        b.write(&ws, "g", &b"1"[..], "m").unwrap();
        let b_under = Some(("b".to_owned(), ChoiceReason::ChangedUnder));
        assert_eq!(choose(None, under), b_under);
        // Nothing to redo anywhere: the session a person means.
        assert_eq!(choose(None, redo), b_under);
        let a_file = Some(("a".to_owned(), ChoiceReason::ChangedFile));
        assert_eq!(choose(None, file), a_file);
        a.undo(crate::RevertOptions::default()).unwrap();
        let a_redo = Some(("a".to_owned(), ChoiceReason::RevertedUnder));
        assert_eq!(choose(None, redo), a_redo);
    }
}
