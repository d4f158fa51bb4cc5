//! A workspace's scan baseline, shared by every session that scans it:
//! `baselines/<key>/`, the contents of each file a scan had to back up itself
//! (outside git, or a git file that is not clean in the index) as blobs, and
//! a listing of which stat each blob vouches for. Built by the first scan,
//! then kept up to date by stat: a file whose stat is the one listed is not
//! read again. Changed only under its own lock.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};

use serde::{Deserialize, Serialize};

use crate::blobs::Blobs;
use crate::durable::{self, Durability};
use crate::error::{Error, Result};
use crate::index::WorkspaceRoot;
use crate::layout::BaselinePaths;
use crate::lock::{self, LockGuard, Mode};

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
    _lock: LockGuard,
}

/// The key of a workspace's baseline: its root's path and identity.
fn key(root: &WorkspaceRoot) -> String {
    let text = format!("{}\0{}\0{}", root.path.display(), root.dev, root.ino);
    let (hash, _) = crate::hash::hash_reader(&mut text.as_bytes()).expect("in memory");
    hash[..32].to_owned()
}

impl Baseline {
    /// Opens (or starts) the baseline of `root` in `home`, taking its lock
    /// (waiting at most `timeout`). A listing it cannot read is started over:
    /// it is a cache, and every blob it names is checked when used.
    pub(crate) fn open(
        home: &std::path::Path,
        root: &WorkspaceRoot,
        timeout: std::time::Duration,
    ) -> Result<Baseline> {
        let paths = BaselinePaths::new(home, &key(root));
        crate::sys::create_store_dir_all(&paths.dir)
            .map_err(Error::io("create directory", &paths.dir))?;
        let lock =
            lock::acquire(&paths.lock, Mode::Exclusive, timeout, Some("a scan")).map_err(|_| {
                Error::ScanFailed {
                    path: paths.lock.clone(),
                    reason: "the workspace's baseline is busy (another scan is beginning)".into(),
                }
            })?;
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
        let (sha, _) = self
            .blobs
            .store_file_batched(&mut file.file, &file.display)?;
        self.unsynced = true;
        if !racy {
            self.files.insert(path.to_owned(), (stat, sha.clone()));
            self.changed = true;
        }
        Ok(sha)
    }

    /// Drops what is no longer in the workspace from the listing.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let before = self.files.len();
        self.files.retain(|p, _| keep(p));
        self.changed |= self.files.len() != before;
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

/// The baseline blobs of `root` in `home`, to read a scan's backups from
/// (without the lock: blobs are immutable once named).
pub(crate) fn blobs_of(home: &std::path::Path, root: &WorkspaceRoot) -> Blobs {
    Blobs::new(BaselinePaths::new(home, &key(root)).blobs)
}
