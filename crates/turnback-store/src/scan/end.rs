//! Ending a scan bracket. Commit: each changed file's contents at the
//! beginning copied into the session's blobs (from git or the baseline),
//! then one entry per changed file recorded as one step (one journal line),
//! then the record closed. Rollback: the same entries recorded uncommitted,
//! then each rolled back (`revert::rollback`), recording nothing.
//!
//! A change another session (or this one) recorded during the bracket is
//! not the bracket's; one made while another session's scan was open on the
//! workspace is marked shared with it, so an undo refuses rather than take
//! that session's work.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::index::{Entry, FileState, ScanMark};
use crate::relpath::RelPath;
use crate::revert::{self, RevertAction, RevertOptions};
use crate::session::{Draft, Session};
use crate::workspace::Workspace;

use super::baseline;
use super::changes::{self, Candidate};
use super::dirs::{self, DirChanges};
use super::git;
use super::links;
use super::record::{self, Header, Record, Source};
use super::report::{self, PathKind, RolledBack, ScanChangeKind, ScanReport, Unrecorded};
use super::unnamed;
use super::unscoped;
use super::walk::Stat;
use super::watch::{Live, Touched};

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Commit,
    Rollback,
}

/// A change ready to be recorded.
struct Found {
    draft: Draft,
    kind: ScanChangeKind,
    shared_with: Vec<String>,
}

impl Found {
    /// Where the change goes in its step, oldest first, so that an undo
    /// (newest first) takes away what the command made, deepest first,
    /// then makes again the directories it removed, outermost first, then
    /// writes back the files: the files restored, then the directories
    /// removed (deepest first), then what was made or replaced (outermost
    /// first). A redo goes the other way.
    ///
    /// A directory's new mode goes among the files, before what is inside
    /// it (a redo opens it before it writes there), unless it shuts out its
    /// owner (no `u+wx`): then last, so that a redo writes inside first and
    /// an undo opens it again before anything else.
    fn order(&self) -> (u8, std::cmp::Reverse<String>, String) {
        let path = self.draft.rel.to_string();
        let after = self.draft.after.as_ref();
        let shut = after.is_some_and(|a| a.is_dir() && a.mode.is_some_and(|m| m & 0o300 != 0o300));
        match self.kind {
            ScanChangeKind::Deleted if self.draft.before.is_dir() => {
                (1, std::cmp::Reverse(path), String::new())
            }
            ScanChangeKind::Created | ScanChangeKind::Replaced => {
                (2, std::cmp::Reverse(String::new()), path)
            }
            ScanChangeKind::ModeChanged if shut => (3, std::cmp::Reverse(String::new()), path),
            _ => (0, std::cmp::Reverse(String::new()), path),
        }
    }
}

impl Session {
    /// Commits scan `id`: records each file the command changed as an entry
    /// of the scan's message, all as one step (one undo takes them back),
    /// and closes the scan. [`Error::NoSuchScan`] if it is not open.
    pub fn commit_scan(&self, id: &str) -> Result<ScanReport> {
        self.end_scan(id, End::Commit, None)
    }

    /// [`Session::commit_scan`] for a bracket begun watched in this process:
    /// it looks again only where the watch saw something happen.
    pub fn commit_watched_scan(&self, scan: super::WatchedScan) -> Result<ScanReport> {
        self.end_scan(&scan.id, End::Commit, scan.live)
    }

    /// [`Session::rollback_scan`] for a bracket begun watched in this
    /// process.
    pub fn rollback_watched_scan(&self, scan: super::WatchedScan) -> Result<ScanReport> {
        self.end_scan(&scan.id, End::Rollback, scan.live)
    }

    /// Rolls scan `id` back: puts every file the command changed back as it
    /// was when the scan began (a file it made is deleted) and records
    /// nothing; closes the scan.
    pub fn rollback_scan(&self, id: &str) -> Result<ScanReport> {
        self.end_scan(id, End::Rollback, None)
    }

    fn end_scan(&self, id: &str, how: End, live: Option<Live>) -> Result<ScanReport> {
        let no_such = || Error::NoSuchScan {
            session: self.id().to_owned(),
            id: id.to_owned(),
        };
        if crate::session_id::validate(id).is_err() {
            return Err(no_such());
        }
        // Still open (another process may have ended it); a record kept from
        // the beginning is not read back.
        let dir = self.session_dir();
        let (mut rec, watched) = match live {
            Some(Live {
                watch,
                header,
                body,
            }) => {
                let open = record::load(dir, id, false)?.ok_or_else(no_such)?;
                if open.header == header {
                    (open, Some((watch, body)))
                } else {
                    (record::load(dir, id, true)?.ok_or_else(no_such)?, None)
                }
            }
            None => (record::load(dir, id, true)?.ok_or_else(no_such)?, None),
        };
        self.check_scope(&rec.header.workspace.path)?;
        let ws = Workspace::reopen(&rec.header.workspace)?;
        let mine = |e: &Entry| e.scan.as_ref().is_some_and(|m| m.id == id);
        let already: Vec<Entry> =
            self.view(|idx| idx.entries.iter().filter(|e| mine(e)).cloned().collect())?;
        if !already.is_empty() {
            // A commit or rollback that died after recording: finish it.
            let known = RolledBack::default();
            return self.finish(&rec, &ws, how, already, Vec::new(), known);
        }
        let mut skip = HashSet::new();
        if let Ok(home) = std::fs::canonicalize(self.store().home()) {
            skip.insert(home);
        }
        skip.extend(rec.header.skipped.iter().map(|s| ws.root().join(s)));
        // Where the watch saw something happen, or everywhere. Only the
        // header was read back for a bracket watched here.
        let whole = watched.is_none();
        let touched = watched.and_then(|(mut w, body)| {
            let events = w.drain();
            w.close_elsewhere();
            Some((Touched::from_events(events.ok()?)?, body))
        });
        let (candidates, dirs, unnamed) = match &touched {
            Some((t, body)) => {
                let (now, candidates) = changes::compare_touched(&rec.header, body, t, &skip)?;
                let dirs = dirs::compare(&rec.header, &now, ws.root(), |d| t.covers(d));
                (candidates, dirs, now.unnamed)
            }
            None => {
                // Not watched, or the watch cannot say: the whole record.
                if !whole {
                    rec = record::load(dir, id, true)?.ok_or_else(no_such)?;
                }
                let (now, candidates) = changes::compare(&rec, &skip)?;
                let dirs = dirs::compare(&rec.header, &now, ws.root(), |_| true);
                (candidates, dirs, now.unnamed)
            }
        };
        let files: BTreeSet<PathBuf> = candidates
            .iter()
            .map(|c| c.path.as_str())
            .chain(dirs.made.keys().map(String::as_str))
            .chain(dirs.removed.keys().map(String::as_str))
            .chain(dirs.moded.keys().map(String::as_str))
            .map(|p| ws.root().join(p))
            .collect();
        let _locks = self.lock_files(&files)?;
        let mut unrecorded = unnamed::changed(ws.root(), &rec.header.unnamed, &unnamed);
        let found = self.resolve(&rec, &ws, candidates, dirs, &mut unrecorded)?;
        if how == End::Rollback {
            // Refused here, as an undo would refuse, rather than part way.
            let drafts: Vec<&Draft> = found.iter().map(|f| &f.draft).collect();
            super::refuse::not_empty(self.id(), &ws, &drafts)?;
        }
        crate::crash::point("scan-backed-up");
        let not_undoable: Vec<String> = unrecorded
            .iter()
            .filter_map(|u| match u {
                Unrecorded::RecordedBy { .. } => None,
                // What the link replaced is recorded, and undone once the
                // link is gone.
                Unrecorded::Link {
                    before: PathKind::File | PathKind::Directory,
                    ..
                } => None,
                Unrecorded::Link { path, .. }
                | Unrecorded::UnderLink { path, .. }
                | Unrecorded::TooBig { path, .. }
                | Unrecorded::NoBackup { path, .. } => Some(path.clone()),
            })
            .collect();
        // What each change was: a rollback's entries record no "after".
        let mut known = RolledBack::default();
        for f in &found {
            let after = f.draft.after.as_ref().expect("a change found");
            let dir = after.is_dir() || (!after.exists && f.draft.before.is_dir());
            known.changes.insert(f.draft.rel.to_string(), (f.kind, dir));
        }
        let (drafts, marks): (Vec<Draft>, Vec<ScanMark>) = found
            .into_iter()
            .map(|mut f| {
                if how == End::Rollback {
                    f.draft.after = None;
                }
                let mark = ScanMark {
                    id: id.to_owned(),
                    command: rec.header.command.clone(),
                    shared_with: f.shared_with,
                    not_undoable: not_undoable.clone(),
                };
                (f.draft, mark)
            })
            .unzip();
        let entries = if drafts.is_empty() {
            Vec::new()
        } else {
            self.record_marked(&ws, &rec.header.message_id, drafts, Some(marks))?
        };
        crate::crash::point("scan-recorded");
        drop(_locks);
        self.finish(&rec, &ws, how, entries, unrecorded, known)
    }

    /// Closes the scan once its entries are recorded (a rollback first
    /// rolls each back, newest first, noting in `known` each directory it
    /// keeps).
    fn finish(
        &self,
        rec: &Record,
        ws: &Workspace,
        how: End,
        entries: Vec<Entry>,
        unrecorded: Vec<Unrecorded>,
        mut known: RolledBack,
    ) -> Result<ScanReport> {
        if how == End::Rollback {
            for e in entries.iter().rev() {
                let rel = e.rel_path();
                let _lock = self.lock_file(ws, &rel)?;
                let held = BTreeSet::from([rel.under(ws.root())]);
                match revert::rollback(self, e.seq, RevertOptions::default(), &held) {
                    Ok(r) => {
                        known
                            .kept
                            .extend(r.files.into_iter().filter_map(|f| match f.action {
                                RevertAction::KeepDirectory { holding } => Some((f.path, holding)),
                                _ => None,
                            }))
                    }
                    Err(Error::NoSuchEntry { .. }) => {}
                    Err(err) => return Err(err),
                }
            }
        }
        record::remove(self.session_dir(), &rec.header.id)?;
        let rolled_back = (how == End::Rollback).then_some(&known);
        Ok(report::report(
            &rec.header,
            self.id(),
            rolled_back,
            &entries,
            unrecorded,
        ))
    }

    /// Decides each candidate under its file's lock: unchanged after all,
    /// a change to record (its "before" now in the session's blobs), or one
    /// that is not recorded (and why).
    fn resolve(
        &self,
        rec: &Record,
        ws: &Workspace,
        candidates: Vec<Candidate>,
        mut dirs: DirChanges,
        unrecorded: &mut Vec<Unrecorded>,
    ) -> Result<Vec<Found>> {
        let h = &rec.header;
        // What was there before, out of scope, is not the command's.
        let candidates = unscoped::sort_out(h.clock, ws.root(), candidates, &mut dirs, unrecorded);
        // What a link is part of is reported, not recorded.
        let candidates = links::sort_out(ws, candidates, &mut dirs, unrecorded);
        // Git objects first, in one `git cat-file`.
        let wanted: Vec<(String, String)> = candidates
            .iter()
            .filter_map(|c| match &c.before.as_ref()?.source {
                Source::Git(oid) => Some((oid.clone(), c.path.clone())),
                _ => None,
            })
            .collect();
        let objects = git::copy_objects(ws.root(), self.blobs(), &wanted)?;
        // Only what git still had was stored: with every object missing
        // there may be no blobs directory to sync.
        let mut stored = objects.iter().any(Option::is_some);
        let mut objects = objects.into_iter();
        let base = baseline::blobs_of(self.store().home(), &h.workspace);
        let paths: HashSet<&str> = candidates
            .iter()
            .map(|c| c.path.as_str())
            .chain(dirs.made.keys().map(String::as_str))
            .chain(dirs.removed.keys().map(String::as_str))
            .chain(dirs.moded.keys().map(String::as_str))
            .collect();
        let root = &h.workspace;
        let others = self
            .store()
            .entries_in_root_since(&root.path, h.began, |e| {
                paths.contains(e.path.as_str()) && e.scan.as_ref().is_none_or(|m| m.id != h.id)
            })?;
        let watching = self.other_open_scans(h)?;
        let seen = Others {
            others: &others,
            watching: &watching,
        };
        let mut out = Vec::new();
        for c in candidates {
            let path = c.path.clone();
            let Some(rel) = RelPath::new(&path) else {
                continue;
            };
            let before = match c.before.as_ref().map(|b| &b.source) {
                // Absent, or a directory the command replaced by this file.
                None => dirs.before(&path).unwrap_or_else(FileState::absent),
                // `links::sort_out` took every link out.
                Some(Source::Link(_)) => continue,
                Some(Source::TooBig) => {
                    let size = c.before.as_ref().map_or(0, |b| b.stat.size);
                    unrecorded.push(Unrecorded::TooBig { path, size });
                    continue;
                }
                // The beginning did not copy it (`begin.rs`, the baseline's
                // cap or its time budget): said, never a silent loss.
                Some(Source::NotCopied(reason)) => {
                    let reason = reason.clone();
                    unrecorded.push(Unrecorded::NoBackup { path, reason });
                    continue;
                }
                Some(Source::Git(_)) => {
                    let b = c.before.as_ref().expect("a source");
                    match objects.next().flatten() {
                        Some((sha, size)) if size == b.stat.size => {
                            FileState::present(sha, size, b.stat.perms())
                        }
                        _ => {
                            unrecorded.push(Unrecorded::NoBackup {
                                path,
                                reason: "git's copy is gone or differs from the file".into(),
                            });
                            continue;
                        }
                    }
                }
                Some(Source::Baseline(sha)) => {
                    let b = c.before.as_ref().expect("a source");
                    let mut backup = base.open_backup(self.id(), &path, sha)?;
                    let size = backup.size();
                    // A link where it can (blobs are immutable, and durable
                    // in the baseline), a verified copy where it cannot.
                    stored = true;
                    if !self.blobs().link_from(&base, sha)? {
                        let from = backup.blob_path();
                        let copied = self.blobs().store_reader_batched(backup.reader(), &from);
                        let (got, _) = backup.checked(copied)?;
                        backup.verify(&got)?;
                    }
                    FileState::present(sha.clone(), size, b.stat.perms())
                }
            };
            let now = match c.now {
                Some(s) if s.size > h.limit => {
                    unrecorded.push(Unrecorded::TooBig { path, size: s.size });
                    continue;
                }
                // Gone, or a directory now (its files are candidates).
                None => dirs.after(&path).unwrap_or_else(FileState::absent),
                Some(st) => match ws.current_state(&rel) {
                    Ok(now) => now,
                    // Made unreadable by the command: a change of its mode
                    // alone (its size and time as they were) needs no read;
                    // any other is reported, and the rest recorded.
                    Err(e) if e.is_permission_denied() => {
                        let was = c.before.as_ref().map(|b| b.stat);
                        match was {
                            Some(w)
                                if before.sha256.is_some()
                                    && w.size == st.size
                                    && w.times[..2] == st.times[..2] =>
                            {
                                FileState {
                                    mode: Some(st.perms()),
                                    ..before.clone()
                                }
                            }
                            _ => {
                                unrecorded.push(Unrecorded::NoBackup {
                                    path,
                                    reason: "it could not be read after the command (permission denied): its change is not recorded".into(),
                                });
                                continue;
                            }
                        }
                    }
                    Err(e) => return Err(e),
                },
            };
            if now.same_state(&before) {
                continue;
            }
            // This path's directory change, if any, is part of this one.
            dirs.made.remove(&path);
            dirs.removed.remove(&path);
            if let Some(f) = attribute(self.id(), seen, rel, before, now, c.now, unrecorded) {
                out.push(f);
            }
        }
        // The directories made or removed that no file change took in, and
        // those whose mode changed.
        let made = std::mem::take(&mut dirs.made);
        let removed = std::mem::take(&mut dirs.removed);
        let moded = std::mem::take(&mut dirs.moded);
        let changed = made
            .into_iter()
            .map(|(d, m)| (d, FileState::absent(), FileState::directory(Some(m))))
            .chain(
                removed
                    .into_iter()
                    .map(|(d, m)| (d, FileState::directory(m), FileState::absent())),
            )
            .chain(moded.into_iter().map(|(d, (was, now))| {
                let (was, now) = (Some(was), Some(now));
                (d, FileState::directory(was), FileState::directory(now))
            }));
        for (path, before, now) in changed {
            let Some(rel) = RelPath::new(&path) else {
                continue;
            };
            // A directory has no stat here to say when it changed.
            if let Some(f) = attribute(self.id(), seen, rel, before, now, None, unrecorded) {
                out.push(f);
            }
        }
        // Every "before" now named in the session's blobs is durable.
        if stored {
            self.blobs().sync_dir()?;
        }
        // What the command made is recorded last, so that an undo or a
        // rollback (newest first) deletes it before it restores the rest.
        out.sort_by_cached_key(Found::order);
        Ok(out)
    }

    /// The other scans open on the same workspace (other sessions', and
    /// this session's own other brackets: two `turnback run`s at once in
    /// one workspace must not take each other's changes), each as its
    /// session with the clock it began at.
    fn other_open_scans(&self, h: &Header) -> Result<Vec<(String, [i64; 2])>> {
        let mut out = Vec::new();
        for sid in self.store().session_ids()? {
            let dir = self.store().session_dir(&sid);
            for id in record::list(&dir) {
                if sid == self.id() && id == h.id {
                    continue;
                }
                if let Ok(Some(r)) = record::load(&dir, &id, false)
                    && r.header.workspace.path == h.workspace.path
                {
                    out.push((sid.clone(), r.header.clock));
                }
            }
        }
        Ok(out)
    }
}

/// The change of `rel` from `before` to `now` as this scan's, or `None`
/// (noted in `unrecorded`) when a session recorded it during the bracket;
/// marked shared with the sessions whose scans were open meanwhile, unless
/// its stat now (`stat`; `None`: gone, or not known) says it changed before
/// they began.
fn attribute(
    me: &str,
    seen: Others<'_>,
    rel: RelPath,
    before: FileState,
    now: FileState,
    stat: Option<Stat>,
    unrecorded: &mut Vec<Unrecorded>,
) -> Option<Found> {
    let Others { others, watching } = seen;
    let path = rel.to_string();
    if let Some((session, _)) = others
        .iter()
        .filter(|(_, e)| e.path == path)
        .find(|(_, e)| e.after.as_ref().is_some_and(|a| a.same_state(&now)))
    {
        unrecorded.push(Unrecorded::RecordedBy {
            path,
            session: session.clone(),
        });
        return None;
    }
    let mut shared_with: Vec<String> = others
        .iter()
        // This session's own other brackets count as another's would.
        .filter(|(s, e)| e.path == path && (s != me || e.scan.is_some()))
        .map(|(s, _)| s.clone())
        .collect();
    shared_with.extend(
        watching
            .iter()
            .filter(|(_, clock)| stat.is_none_or(|s| s.racy(*clock)))
            .map(|(s, _)| s.clone()),
    );
    shared_with.sort();
    shared_with.dedup();
    let kind = report::kind_of(&before, &now);
    Some(Found {
        draft: Draft {
            rel,
            before,
            after: Some(now),
            // The directories it made are changes of their own.
            created_dirs: Vec::new(),
            in_flight: None,
        },
        kind,
        shared_with,
    })
}

/// What other sessions did while the bracket was open: their entries since
/// it began (by session), and their scans open on the workspace with the
/// clock each began at.
#[derive(Clone, Copy)]
struct Others<'a> {
    others: &'a [(String, Entry)],
    watching: &'a [(String, [i64; 2])],
}
