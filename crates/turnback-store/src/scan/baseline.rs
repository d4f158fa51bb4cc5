//! A workspace's scan baseline, shared by every session that scans it:
//! `baselines/<key>/`, the contents of each file a scan had to back up itself
//! (outside git, or a git file that is not clean in the index) as blobs, and
//! a listing of which stat each blob vouches for. Built by the first scan,
//! then kept up to date by stat: a file whose stat is the one listed is not
//! read again. Changed only under its own lock. A prune drops one no kept
//! session uses ([`prune`]): a cache, built again by the next scan.
//!
//! Bounded: its blobs take at most `max_baseline_bytes` of disk (counted in
//! allocated blocks, what `du` says: 50,000 small files take 200 MiB, not
//! their 400 KiB). A copy that would go past it is not made ([`Baseline::
//! room_for`]); the beginning records that file as not backed up. A blob
//! that neither the listing nor an open scan's record names (a file's older
//! copy, a file gone from the workspace, a racy copy whose bracket ended)
//! is deleted under the lock ([`Baseline::collect`]).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::blobs::Blobs;
use crate::durable::{self, Durability};
use crate::error::{Error, Result};
use crate::index::{Index, WorkspaceRoot};
use crate::layout::{BaselinePaths, PRUNED_PREFIX};
use crate::lock::{self, LockGuard, Mode};
use crate::store::Store;

use super::walk::Stat;

/// One file of the listing.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Line {
    path: String,
    stat: Stat,
    sha256: String,
}

/// A workspace's baseline, its lock held.
pub(crate) struct Baseline {
    paths: BaselinePaths,
    files: HashMap<String, (Stat, String)>,
    changed: bool,
    /// Blobs were stored since the directory was last synced.
    unsynced: bool,
    blobs: Blobs,
    /// The bytes of disk its blobs take: counted at the first copy that
    /// needs it, then kept (each copy adds its estimate, [`on_disk`]).
    bytes: Option<u64>,
    /// Blobs were stored or listed ones dropped: some may be named by
    /// nothing now ([`Baseline::collect`]).
    unnamed: bool,
    /// [`Baseline::collect`] ran since this was opened.
    collected: bool,
    _lock: LockGuard,
}

/// What the disk gives a file of `size` bytes, roughly: whole 4 KiB
/// blocks, and one for an empty file's inode. An estimate only until the
/// blobs are counted again; over rather than under for most file systems.
fn on_disk(size: u64) -> u64 {
    size.max(1).div_ceil(4096) * 4096
}

/// The disk a file takes: its allocated blocks (a sparse or reflinked file
/// may take less than its length, a small one takes a whole block).
fn allocated(md: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    md.blocks().saturating_mul(512)
}

/// The key of a workspace's baseline: its root's path and identity.
fn key(root: &WorkspaceRoot) -> String {
    let text = format!("{}\0{}\0{}", root.path.display(), root.dev, root.ino);
    let (hash, _) = crate::hash::hash_reader(&mut text.as_bytes()).expect("in memory");
    hash[..32].to_owned()
}

/// The paths of `root`'s baseline in `store`, once `baselines/`, the
/// baseline's directory and its `blobs/` passed the store's trust check
/// (`trust.rs`): a symbolic link planted as any of them, or one that others
/// may write, is [`Error::UnsafeStore`], before anything is made or written
/// through it. Each is checked before the one inside it is made, so what is
/// made is in the checked directory.
fn checked(store: &Store, root: &WorkspaceRoot) -> Result<BaselinePaths> {
    let paths = BaselinePaths::new(store.home(), &key(root));
    store.check_session_dirs(None)?;
    for dir in [
        BaselinePaths::all(store.home()),
        paths.dir.clone(),
        paths.blobs.clone(),
    ] {
        store.secure_store_dir(&dir)?;
    }
    Ok(paths)
}

impl Baseline {
    /// Opens (or starts) the baseline of `root` in `store`, taking its lock
    /// (waiting at most `timeout`). A listing it cannot read is started over:
    /// it is a cache, and every blob it names is checked when used.
    pub(crate) fn open(
        store: &Store,
        root: &WorkspaceRoot,
        timeout: std::time::Duration,
    ) -> Result<Baseline> {
        let paths = checked(store, root)?;
        let busy = |why: &str| Error::ScanFailed {
            path: paths.lock.clone(),
            reason: format!("the workspace's baseline is busy ({why})"),
        };
        let mut tries = 0;
        let lock = loop {
            crate::sys::create_store_dir_all(&paths.dir)
                .map_err(Error::io("create directory", &paths.dir))?;
            let lock = lock::acquire(&paths.lock, Mode::Exclusive, timeout, Some("a scan"))
                .map_err(|_| busy("another scan is beginning"))?;
            // A prune that took the baseline away while this waited for its
            // lock: a new one is started where it was.
            if lock.is_at(&paths.lock) {
                break lock;
            }
            tries += 1;
            if tries == 8 {
                return Err(busy("a prune keeps taking it away"));
            }
        };
        let mut files = HashMap::new();
        if let Ok(f) = crate::trust::open_read(&paths.file) {
            for line in BufReader::new(f).lines() {
                let Ok(line) = line else { break };
                let Ok(l) = serde_json::from_str::<Line>(&line) else {
                    continue;
                };
                if crate::hash::is_sha256_hex(&l.sha256) {
                    files.insert(l.path, (l.stat, l.sha256));
                }
            }
        }
        Ok(Baseline {
            blobs: Blobs::new(paths.blobs.clone()),
            paths,
            files,
            changed: false,
            unsynced: false,
            bytes: None,
            unnamed: false,
            collected: false,
            _lock: lock,
        })
    }

    /// The blob of `path` if the listing vouches for it at `stat`.
    pub(crate) fn lookup(&self, path: &str, stat: &Stat) -> Option<&str> {
        match self.files.get(path) {
            Some((s, h)) if s == stat && self.blobs.exists(h) => Some(h),
            _ => None,
        }
    }

    /// Backs up `file` (the workspace's `path`, at `stat`) into the baseline's
    /// blobs; listed unless `racy` (its stat then cannot vouch for it later).
    pub(crate) fn store(
        &mut self,
        path: &str,
        stat: Stat,
        racy: bool,
        file: &mut crate::workspace::OpenFile,
    ) -> Result<String> {
        let (sha, size) = self
            .blobs
            .store_file_batched(&mut file.file, &file.display)?;
        self.unsynced = true;
        self.unnamed = true;
        if let Some(b) = &mut self.bytes {
            *b += on_disk(size);
        }
        if !racy {
            self.files.insert(path.to_owned(), (stat, sha.clone()));
            self.changed = true;
        }
        Ok(sha)
    }

    /// True when a copy of a file of `size` bytes keeps the blobs within
    /// `cap` bytes of disk. When it would not, the blobs no one names are
    /// deleted first (once per opening: `keep` names those of the beginning
    /// under way) and the copy fits if that made room.
    pub(crate) fn room_for(
        &mut self,
        size: u64,
        cap: u64,
        store: &Store,
        keep: &HashSet<String>,
    ) -> bool {
        let need = on_disk(size);
        let blobs = &self.paths.blobs;
        let bytes = *self.bytes.get_or_insert_with(|| bytes_in(blobs).1);
        if bytes.saturating_add(need) <= cap {
            return true;
        }
        if !self.collected {
            self.collect(store, keep);
        }
        self.bytes.is_some_and(|b| b.saturating_add(need) <= cap)
    }

    /// Deletes every blob that nothing needs any more: named neither by the
    /// listing, nor in `keep` (the beginning under way), nor by the record
    /// of a scan open on this workspace in any session (its commit copies
    /// from here). Holding the lock, which every beginning holds until its
    /// record is written, no record naming a blob can appear meanwhile; a
    /// record that cannot be read keeps everything. Counts the blobs again.
    pub(crate) fn collect(&mut self, store: &Store, keep: &HashSet<String>) {
        self.collected = true;
        self.unnamed = false;
        let Some(open) = open_blobs(store, &self.paths) else {
            return;
        };
        let Ok(read) = std::fs::read_dir(&self.paths.blobs) else {
            return;
        };
        let listed: HashSet<&str> = self.files.values().map(|(_, h)| h.as_str()).collect();
        let mut bytes = 0;
        for e in read.flatten() {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let Ok(md) = e.metadata() else { continue };
            let named = !crate::hash::is_sha256_hex(&name)
                || listed.contains(name.as_str())
                || keep.contains(&name)
                || open.contains(&name);
            if named || !md.is_file() || std::fs::remove_file(e.path()).is_err() {
                bytes += allocated(&md);
            }
        }
        self.bytes = Some(bytes);
    }

    /// [`Baseline::collect`] if blobs were stored or listed ones dropped
    /// since it was opened, and it has not run since.
    pub(crate) fn collect_if_needed(&mut self, store: &Store, keep: &HashSet<String>) {
        if self.unnamed {
            self.collect(store, keep);
        }
    }

    /// Drops from the listing each path `seen` (every path the scan saw)
    /// does not yield: what is no longer in the workspace. The listing is
    /// mostly much smaller than the workspace, so it is what is hashed.
    pub(crate) fn retain_seen<'a>(&mut self, seen: impl Iterator<Item = &'a str>) {
        let mut unseen: HashSet<String> = self.files.keys().cloned().collect();
        for p in seen {
            if unseen.is_empty() {
                break;
            }
            unseen.remove(p);
        }
        if !unseen.is_empty() {
            self.files.retain(|p, _| !unseen.contains(p));
            self.changed = true;
            self.unnamed = true;
        }
    }

    /// Makes every blob stored durable (one directory sync for all), then
    /// writes the listing back if it changed: a cache, whose loss in a power
    /// cut only means files are read again, so its directory is not synced.
    pub(crate) fn save(&mut self) -> Result<()> {
        if self.unsynced {
            self.blobs.sync_dir()?;
            self.unsynced = false;
        }
        if !self.changed {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for (path, (stat, sha256)) in &self.files {
            let line = Line {
                path: path.clone(),
                stat: *stat,
                sha256: sha256.clone(),
            };
            serde_json::to_writer(&mut bytes, &line).expect("serializes");
            bytes.push(b'\n');
        }
        durable::replace(
            &self.paths.file,
            &self.paths.temp,
            &bytes,
            Durability::MayBeLost,
        )
    }
}

/// Where the listing of `root`'s git index is cached in `store`
/// (`git_cache.rs`): in its baseline, dropped with it; its directories
/// checked first, as [`Baseline::open`] checks them.
pub(crate) fn git_cache_of(store: &Store, root: &WorkspaceRoot) -> Result<std::path::PathBuf> {
    Ok(checked(store, root)?.git_index)
}

/// The baseline blobs of `root` in `home`, to read a scan's backups from
/// (without the lock: blobs are immutable once named).
pub(crate) fn blobs_of(home: &std::path::Path, root: &WorkspaceRoot) -> Blobs {
    Blobs::new(BaselinePaths::new(home, &key(root)).blobs)
}

/// The workspaces `idx` has changes in (in effect, or kept for redo): each
/// session's claim on their baselines.
pub(crate) fn workspaces_of(idx: &Index) -> impl Iterator<Item = &WorkspaceRoot> {
    let recorded = idx.history.iter().flat_map(|r| &r.entries);
    idx.entries.iter().chain(recorded).map(|e| &e.workspace)
}

/// Drops (with `dry_run`, only counts) each baseline of `store` that no
/// session uses: of none of `kept` (the workspaces the sessions a prune
/// keeps have changes in), and none that an open scan of any session began
/// on, looked for under the baseline's lock, which every scan beginning
/// holds until its record is written. A baseline busy right now stays.
/// Returns how many went and their backups' bytes.
pub(crate) fn prune(store: &Store, kept: &[WorkspaceRoot], dry_run: bool) -> Result<(usize, u64)> {
    let home = store.home();
    let keep: HashSet<String> = kept.iter().map(key).collect();
    let all = BaselinePaths::all(home);
    // Never listed (and what is in it never deleted) through a link.
    crate::trust::check_dir(&all)?;
    let Ok(read) = std::fs::read_dir(&all) else {
        return Ok((0, 0));
    };
    let (mut n, mut bytes) = (0, 0);
    for e in read.flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        if name.starts_with(PRUNED_PREFIX) {
            // One a crash left half deleted.
            if !dry_run {
                let _ = std::fs::remove_dir_all(e.path());
            }
            continue;
        }
        let a_key = name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit());
        if keep.contains(&name) || !a_key {
            continue;
        }
        let paths = BaselinePaths::new(home, &name);
        let Ok(Some(lock)) = lock::try_acquire(&paths.lock) else {
            continue;
        };
        // The sessions listed now, under the lock: one made since the
        // prune began may have a scan open here.
        if !lock.is_at(&paths.lock) || open_on(store).is_none_or(|o| o.contains(&name)) {
            continue;
        }
        let (_, size) = bytes_in(&paths.blobs);
        if !dry_run {
            // Renamed away under its lock, so a scan waiting for it starts
            // a new one; then deleted.
            let trash = all.join(format!(
                "{PRUNED_PREFIX}{name}-{:08x}",
                crate::session_id::random_u64() as u32
            ));
            if std::fs::rename(&paths.dir, &trash).is_err() {
                continue;
            }
            drop(lock);
            let _ = std::fs::remove_dir_all(&trash);
        }
        n += 1;
        bytes += size;
    }
    Ok((n, bytes))
}

/// The baseline keys of the workspaces the open scans of `store`'s sessions
/// watch; `None` when the sessions or a record cannot be read (it may be
/// any workspace's).
fn open_on(store: &Store) -> Option<HashSet<String>> {
    let mut out = HashSet::new();
    for id in store.session_ids().ok()? {
        let dir = store.session_dir(&id);
        for id in super::record::list(&dir) {
            if let Some(r) = super::record::load(&dir, &id, false).ok()? {
                out.insert(key(&r.header.workspace));
            }
        }
    }
    Some(out)
}

/// The blobs named by the records of the scans open on the workspace whose
/// baseline is at `paths`, in every session of `store`; `None` when the
/// sessions or a record cannot be read (it may name any blob).
fn open_blobs(store: &Store, paths: &BaselinePaths) -> Option<HashSet<String>> {
    let mut out = HashSet::new();
    for id in store.session_ids().ok()? {
        let dir = store.session_dir(&id);
        for id in super::record::list(&dir) {
            let Some(r) = super::record::load(&dir, &id, false).ok()? else {
                continue;
            };
            if BaselinePaths::new(store.home(), &key(&r.header.workspace)).dir != paths.dir {
                continue;
            }
            let Some(r) = super::record::load(&dir, &id, true).ok()? else {
                continue;
            };
            out.extend(r.files.into_iter().filter_map(|f| match f.source {
                super::record::Source::Baseline(h) => Some(h),
                _ => None,
            }));
        }
    }
    Some(out)
}

/// The files directly in `dir`: their length and the disk they take.
fn bytes_in(dir: &Path) -> (u64, u64) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    read.flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .fold((0, 0), |(len, disk), m| {
            (len + m.len(), disk + allocated(&m))
        })
}

/// The workspaces' scan baselines of a store: how many, and the disk they
/// take (their blobs, listings and cached git listings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BaselineUsage {
    /// Baselines (`baselines/<key>/`), one per workspace scanned.
    pub baselines: usize,
    /// Bytes of disk they take, in allocated blocks (what `du` counts).
    pub bytes: u64,
}

impl Store {
    /// How many workspaces' scan baselines the store holds and the disk they
    /// take (each is capped at `max_baseline_bytes` of blobs; a prune drops
    /// those no kept session uses). [`Error::UnsafeStore`] when `baselines/`
    /// is a symbolic link.
    pub fn baseline_usage(&self) -> Result<BaselineUsage> {
        usage(self.home())
    }
}

/// [`BaselineUsage`] of the store at `home`: read without any lock (a
/// baseline being written or pruned meanwhile is counted as it is seen).
pub(crate) fn usage(home: &Path) -> Result<BaselineUsage> {
    let all = BaselinePaths::all(home);
    crate::trust::check_dir(&all)?;
    let mut u = BaselineUsage::default();
    let Ok(read) = std::fs::read_dir(&all) else {
        return Ok(u);
    };
    for e in read.flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let a_key = name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit());
        if !a_key || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let paths = BaselinePaths::new(home, &name);
        u.baselines += 1;
        u.bytes += bytes_in(&paths.dir).1 + bytes_in(&paths.blobs).1;
    }
    Ok(u)
}

#[cfg(test)]
#[path = "baseline_tests.rs"]
mod tests;
