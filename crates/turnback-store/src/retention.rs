//! Retention: which sessions the store keeps, and pruning the rest.
//!
//! A session is kept while it is among the most recently changed ones or was
//! changed recently (both configurable); the session in use, one a live handle
//! holds (`live`), one whose lock is held by a live process, one that changed
//! since prune listed it, and one whose index cannot be read are always kept.
//! Within a kept session, backups that neither an entry nor a revert record
//! (kept for redo) names are deleted once they are older than a grace period
//! (a writer may be about to name one). A workspace's scan baseline goes
//! once no kept session has changes in it or a scan open on it.

use std::path::Path;
use std::time::{Duration, SystemTime};

use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::layout::{IndexStamp, PRUNED_PREFIX};
use crate::lock::Mode;
use crate::session_id::random_u64;
use crate::store::Store;

/// What a prune keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// Keep this many most recently changed sessions.
    pub keep_recent: usize,
    /// Keep every session changed within this long.
    pub keep_for: Duration,
    /// Keep unreferenced backups younger than this.
    pub blob_grace: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_recent: 20,
            keep_for: Duration::from_secs(30 * 24 * 3600),
            blob_grace: crate::caps::BLOB_GRACE,
        }
    }
}

impl Retention {
    /// What `settings` keep (and the default grace for backups).
    pub fn of(settings: &crate::settings::Settings) -> Retention {
        Retention {
            keep_recent: settings.keep_sessions.value,
            keep_for: settings.keep_for(),
            ..Retention::default()
        }
    }
}

/// What a prune removed, or with `dry_run` would remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneReport {
    /// False for a dry run: nothing was deleted.
    pub applied: bool,
    /// The sessions removed.
    pub removed: Vec<PrunedSession>,
    /// The sessions retention alone would remove that were kept, and why.
    pub spared: Vec<SparedSession>,
    /// How many sessions are kept.
    pub kept: usize,
    /// Unreferenced backups deleted from kept sessions.
    pub blobs_removed: usize,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Workspaces' scan baselines deleted: no kept session uses them.
    pub baselines_removed: usize,
    /// Their backups' bytes.
    pub baseline_bytes: u64,
    /// The retention the prune went by.
    pub retention: Retention,
}

/// One session removed by a prune.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedSession {
    /// The session id.
    pub id: String,
    /// When it last changed: the newer modification time of its
    /// `index.json` and `journal.jsonl` (its directory's when it has neither).
    pub last_change: OffsetDateTime,
    /// Bytes of backups it held.
    pub bytes: u64,
    /// Its place among the sessions by last change, newest first (1 is the
    /// newest): why it is not among those kept for being recent.
    pub rank: usize,
}

/// A session retention alone would remove that a prune kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparedSession {
    /// The session id.
    pub id: String,
    /// Why it was kept.
    pub reason: SpareReason,
}

/// Why a prune kept a session that retention alone would remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpareReason {
    /// It is the session in use (the one named, or making the change).
    InUse,
    /// A live process has it open (holds its `live` lock).
    Open,
    /// A process holds its lock (a change under way).
    Busy,
    /// It changed since the prune listed the sessions.
    Changed,
    /// Its index cannot be read, or its directory is not safe to use.
    Unreadable,
    /// A change of it is under way in a live process: a write between its
    /// checkpoint and its commit, or a shell command's bracket still open.
    Writing,
}

impl SpareReason {
    /// A stable name (`in-use`, `open`, `busy`, `changed`, `unreadable`,
    /// `writing`).
    pub fn name(self) -> &'static str {
        match self {
            SpareReason::InUse => "in-use",
            SpareReason::Open => "open",
            SpareReason::Busy => "busy",
            SpareReason::Changed => "changed",
            SpareReason::Unreadable => "unreadable",
            SpareReason::Writing => "writing",
        }
    }
}

struct Candidate {
    id: String,
    last_change: SystemTime,
    readable: bool,
    /// The index files as prune looked at them, to tell at the moment of
    /// removal whether anything changed the session since (`None`: they
    /// could not be looked at, and the session is spared).
    seen: Option<IndexStamp>,
}

impl Store {
    /// Removes the sessions `retention` does not keep, never `in_use`, and
    /// deletes old unreferenced backups of the sessions it keeps. One prune
    /// runs at a time: this one waits (at most the session lock timeout) for
    /// another to end, then goes on regardless, since every removal is
    /// decided again under the session's own locks.
    pub fn prune(
        &self,
        retention: &Retention,
        in_use: Option<&str>,
        dry_run: bool,
    ) -> Result<PruneReport> {
        let _one_at_a_time = match dry_run || !self.home().is_dir() {
            true => None,
            false => crate::lock::acquire(
                &self.home().join(crate::layout::PRUNE_LOCK),
                Mode::Exclusive,
                self.options().session_lock_timeout,
                None,
            )
            .ok(),
        };
        self.prune_unlocked(retention, in_use, dry_run)
    }

    /// [`Store::prune`], for a caller that holds the prune lock (or knows
    /// there is none to take).
    pub(crate) fn prune_unlocked(
        &self,
        retention: &Retention,
        in_use: Option<&str>,
        dry_run: bool,
    ) -> Result<PruneReport> {
        let now = SystemTime::now();
        let mut candidates: Vec<Candidate> = Vec::new();
        for id in self.session_ids()? {
            let dir = self.session_dir(&id);
            // The index (snapshot or journal) changes with every write and
            // undo; the directory stands in for a session that never wrote one.
            let modified = |path: &Path| std::fs::symlink_metadata(path).and_then(|m| m.modified());
            let files = dir.index_files();
            let last_change = [modified(&files.index), modified(&files.journal)]
                .into_iter()
                .flatten()
                .max()
                .or_else(|| modified(dir.path()).ok())
                .unwrap_or(now);
            let seen = dir.index_stamp().ok();
            // A session directory someone else could have planted or changed
            // is kept, like one whose index cannot be read.
            let readable = dir.is_readable();
            candidates.push(Candidate {
                id,
                last_change,
                readable,
                seen,
            });
        }
        candidates.sort_by_key(|c| std::cmp::Reverse(c.last_change));
        crate::crash::point("prune-listed");
        let mut report = PruneReport {
            applied: !dry_run,
            removed: Vec::new(),
            spared: Vec::new(),
            kept: 0,
            blobs_removed: 0,
            blob_bytes: 0,
            baselines_removed: 0,
            baseline_bytes: 0,
            retention: retention.clone(),
        };
        // The workspaces of the sessions kept; `None` once one is unknown.
        let mut used: Option<Vec<crate::index::WorkspaceRoot>> = Some(Vec::new());
        for (rank, c) in candidates.iter().enumerate() {
            let age = now.duration_since(c.last_change).unwrap_or_default();
            let retained = rank < retention.keep_recent || age < retention.keep_for;
            let spared = match () {
                _ if retained => None,
                _ if in_use == Some(c.id.as_str()) => Some(SpareReason::InUse),
                _ if !c.readable => Some(SpareReason::Unreadable),
                _ => self.remove_session(c, rank + 1, dry_run, &mut report)?,
            };
            if let Some(reason) = spared {
                report.spared.push(SparedSession {
                    id: c.id.clone(),
                    reason,
                });
            }
            if retained || spared.is_some() {
                report.kept += 1;
                let (n, bytes, roots) = self.collect_session_garbage(&c.id, retention, dry_run);
                report.blobs_removed += n;
                report.blob_bytes += bytes;
                used = used.zip(roots).map(|(u, r)| [u, r].concat());
            }
        }
        self.sweep_pruned(dry_run);
        if let Some(used) = used {
            (report.baselines_removed, report.baseline_bytes) =
                crate::scan::prune_baselines(self, &used, dry_run)?;
        }
        Ok(report)
    }

    /// Removes one session unless it is in use; why it was kept, or `None`
    /// when removed. In use: a handle in any process holds `live` (it may be
    /// about to record an entry naming a backup it just stored), or a change
    /// holds the session's lock, or the session changed since prune looked at
    /// it (a write that ran to completion in between). Decided under both
    /// locks, at the moment of removal, and never by a guess about time.
    fn remove_session(
        &self,
        c: &Candidate,
        rank: usize,
        dry_run: bool,
        report: &mut PruneReport,
    ) -> Result<Option<SpareReason>> {
        let (id, last_change) = (c.id.as_str(), c.last_change);
        let dir = self.session_dir(id);
        let Some(live) = dir.try_lock_live() else {
            return Ok(Some(SpareReason::Open));
        };
        let Some(guard) = dir.try_lock(Mode::Exclusive) else {
            return Ok(Some(SpareReason::Busy));
        };
        if c.seen.is_none() || dir.index_stamp().ok() != c.seen {
            return Ok(Some(SpareReason::Changed));
        }
        let Ok(idx) = dir.load() else {
            return Ok(Some(SpareReason::Unreadable));
        };
        // A write between its checkpoint and its commit (an agent's
        // PreToolUse and PostToolUse), or a shell bracket still open, whose
        // process lives: its backup is about to be needed.
        let writing = idx
            .entries
            .iter()
            .any(|e| crate::mark::being_written(self, id, e));
        let scanning = crate::scan::open_in_use(&dir);
        if writing || scanning {
            return Ok(Some(SpareReason::Writing));
        }
        let bytes = dir.blob_bytes();
        if !dry_run {
            // Renamed away first, under the lock, so the session vanishes at once
            // and a half-finished delete is never mistaken for a session.
            let trash = self
                .sessions_dir()
                .join(format!("{PRUNED_PREFIX}{id}-{:08x}", random_u64() as u32));
            std::fs::rename(dir.path(), &trash).map_err(Error::io("remove session", dir.path()))?;
            // The rename made durable before any of its files goes: a power
            // cut part way then leaves the session whole or gone, never a
            // session whose backups are half deleted (issue 35).
            let sessions = self.sessions_dir();
            crate::sys::fsync_dir_path(&sessions)
                .map_err(Error::io("sync directory", &sessions))?;
            drop((guard, live));
            std::fs::remove_dir_all(&trash).map_err(Error::io("delete", &trash))?;
            self.summaries().forget(id);
        }
        report.removed.push(PrunedSession {
            id: id.to_owned(),
            last_change: last_change.into(),
            bytes,
            rank,
        });
        Ok(None)
    }

    /// Collects session `id`'s garbage under its lock: backups no entry or
    /// revert record names, the temporaries of backups never named, and
    /// `index.json.tmp` / `reverting.json.tmp` left by a killed process. When
    /// no handle anywhere has the session open (`live` taken exclusively, at
    /// once), no process can be about to name a backup, so every unnamed one
    /// goes; otherwise only those older than the grace period. A session busy
    /// right now is collected next time. Also returns the workspaces the
    /// session has changes in (`None`: not known, it was busy).
    fn collect_session_garbage(
        &self,
        id: &str,
        retention: &Retention,
        dry_run: bool,
    ) -> (usize, u64, Option<Vec<crate::index::WorkspaceRoot>>) {
        let dir = self.session_dir(id);
        // A dry run makes no file: without `live`, no handle holds it.
        let no_live = dry_run && !dir.live_path().exists();
        // Held while collecting: no handle opens the session meanwhile.
        let live = match no_live {
            true => None,
            false => dir.try_lock_live(),
        };
        let unused = no_live || live.is_some();
        let Some(_guard) = dir.try_lock(Mode::Exclusive) else {
            return (0, 0, None);
        };
        let Ok(idx) = dir.load() else {
            return (0, 0, None);
        };
        let roots = crate::scan::workspaces_of(&idx).cloned().collect();
        // Entries in effect, and what the revert history keeps for redo.
        let referenced = crate::caps::referenced(&idx);
        let older_than = match unused {
            true => SystemTime::now() + Duration::from_secs(1),
            false => SystemTime::now() - retention.blob_grace,
        };
        if !dry_run {
            // Their writers held the session's lock, which is ours now: a
            // crash left them.
            for temp in [&dir.index_files().index_temp, &dir.marker_temp_path()] {
                let _ = std::fs::remove_file(temp);
            }
        }
        let (n, bytes) = dir
            .blobs()
            .collect_garbage(&referenced, older_than, dry_run);
        (n, bytes, Some(roots))
    }

    /// Finishes deletes that a crash interrupted, and drops the summary
    /// records of sessions that are gone and the temporaries of their dead
    /// writers.
    fn sweep_pruned(&self, dry_run: bool) {
        if !dry_run {
            self.summaries()
                .sweep(|id| self.session_dir(id).path().is_dir());
        }
        let Ok(read) = std::fs::read_dir(self.sessions_dir()) else {
            return;
        };
        for e in read.flatten() {
            if e.file_name().to_string_lossy().starts_with(PRUNED_PREFIX) && !dry_run {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
