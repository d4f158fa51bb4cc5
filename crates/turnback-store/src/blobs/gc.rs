//! Collecting a session's garbage: blobs no entry names, the temporaries of
//! backups never named, and pins and hints (`bases.rs`) of blobs that are
//! gone; never a blob that an entry names, nor the base of a difference
//! (`delta.rs`) that is kept.
//!
//! A blob is deleted in two steps: moved aside to `.gc-<name>-<hex>`, then
//! its modification time looked at again. A writer that chose it as a base
//! made it fresh first and then found it under its name (`bases.rs`), so
//! either it finds the name gone (and stores a whole blob), or the second look
//! sees it fresh and the blob goes back under its name. A blob left aside by
//! a killed collector goes back if anything needs it, and is deleted
//! otherwise, by the next collection.
//!
//! A collection right after an eviction (`collect_unnamed`, under the
//! session's exclusive lock, once the journal line that evicted is durable)
//! takes at once every blob no entry names, with no grace: every process that
//! names a backup it stored looks for it once its entry is recorded (under
//! the lock as it records it, or after: from then on the entry keeps it),
//! and stores it again if it went (`session/record.rs`, `session/write.rs`).
//! A pin keeps its base even when its blob has no name yet (a
//! writer is between the pin and the rename). A temporary goes at once only
//! when its writer is dead: a writer holds an `flock` on its temporary from
//! before its first byte until the temporary has its name.

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::io::Read;
use std::time::SystemTime;

use super::Blobs;
use super::bases::{HINT_PREFIX, parse_pin};
use crate::hash;
use crate::session_id::random_u64;

/// The name prefix of a blob being deleted.
const ASIDE_PREFIX: &str = ".gc-";

/// What a collection found in the blob directory.
#[derive(Default)]
struct Listing {
    /// Blobs under their names.
    blobs: HashMap<String, Metadata>,
    /// Pins: (blob, base, the pin's name, its metadata).
    pins: Vec<(String, String, String, Metadata)>,
    /// Blobs moved aside by a collection: (blob, the name it is under).
    aside: Vec<(String, String, Metadata)>,
    /// Temporaries of backups being written.
    temps: Vec<(String, Metadata)>,
    /// Hints of the last backup of a file.
    hints: Vec<String>,
}

fn old(md: &Metadata, older_than: SystemTime) -> bool {
    md.modified().is_ok_and(|m| m < older_than)
}

impl Blobs {
    fn list(&self) -> Option<Listing> {
        let mut l = Listing::default();
        for entry in std::fs::read_dir(&self.dir).ok()?.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(md) = entry.metadata() else { continue };
            if hash::is_sha256_hex(&name) {
                l.blobs.insert(name, md);
            } else if let Some((blob, base)) = parse_pin(&name) {
                let (blob, base) = (blob.to_owned(), base.to_owned());
                l.pins.push((blob, base, name, md));
            } else if let Some(rest) = name.strip_prefix(ASIDE_PREFIX) {
                if let Some(h) = rest.get(..64).filter(|h| hash::is_sha256_hex(h)) {
                    l.aside.push((h.to_owned(), name, md));
                }
            } else if name.starts_with(".tmp-") {
                l.temps.push((name, md));
            } else if name.starts_with(HINT_PREFIX) {
                l.hints.push(name);
            }
        }
        Some(l)
    }

    /// Deletes blobs no entry names and no kept difference is stored against,
    /// temporaries, and pins of blobs that are gone, last changed before
    /// `older_than`; returns how many files and their bytes. Call under the
    /// session's exclusive lock, with `referenced` read under it.
    pub(crate) fn collect_garbage(
        &self,
        referenced: &HashSet<&str>,
        older_than: SystemTime,
        dry_run: bool,
    ) -> (usize, u64) {
        self.collect(referenced, older_than, dry_run, false)
    }

    /// Deletes at once every blob no entry names and no pin keeps (a pin
    /// keeps its base even while its blob has no name yet), blobs a killed
    /// collection left aside that nothing needs, and the temporaries of dead
    /// writers (not locked, and not empty); pins and empty temporaries as
    /// [`Blobs::collect_garbage`] does, by `older_than`. Call under the
    /// session's exclusive lock, with `referenced` read under it, once the
    /// change that un-named them is durable, and only where every process
    /// that names a backup it stored checks under that lock that it is still
    /// there (see the module's documentation).
    pub(crate) fn collect_unnamed(
        &self,
        referenced: &HashSet<&str>,
        older_than: SystemTime,
    ) -> (usize, u64) {
        self.collect(referenced, older_than, false, true)
    }

    fn collect(
        &self,
        referenced: &HashSet<&str>,
        older_than: SystemTime,
        dry_run: bool,
        at_once: bool,
    ) -> (usize, u64) {
        // With no grace, a blob is "made fresh meanwhile" only once this
        // collection began.
        let started = SystemTime::now();
        let blob_older_than = if at_once { started } else { older_than };
        let Some(mut l) = self.list() else {
            return (0, 0);
        };
        let (mut count, mut bytes) = (0, 0);
        // Blobs a collection left aside go back if anything needs them.
        let needed = |l: &Listing, h: &str| {
            referenced.contains(h)
                || l.pins
                    .iter()
                    .any(|(b, base, ..)| base == h && referenced.contains(b.as_str()))
        };
        for (h, name, md) in std::mem::take(&mut l.aside) {
            let back = needed(&l, &h) && !l.blobs.contains_key(&h);
            if back && !dry_run && std::fs::rename(self.dir.join(&name), self.path(&h)).is_ok() {
                l.blobs.insert(h, md);
            } else if !back && (at_once || old(&md, older_than)) && (dry_run || self.remove(&name))
            {
                count += 1;
                bytes += md.len();
            }
        }
        let candidate =
            |h: &str, md: &Metadata| !referenced.contains(h) && (at_once || old(md, older_than));
        // Two rounds: a base goes only once the differences stored against
        // it went (a base is never itself a difference, so two suffice).
        let mut gone: HashSet<String> = HashSet::new();
        for _ in 0..2 {
            let kept_bases: HashSet<&str> = l
                .pins
                .iter()
                .filter(|(b, _, _, md)| match l.blobs.get(b) {
                    Some(_) => !gone.contains(b),
                    // A writer is about to give the blob its name.
                    None => at_once || !old(md, older_than),
                })
                .map(|(_, base, ..)| base.as_str())
                .collect();
            let doomed: Vec<String> = l
                .blobs
                .iter()
                .filter(|(h, md)| {
                    !gone.contains(*h) && candidate(h, md) && !kept_bases.contains(h.as_str())
                })
                .map(|(h, _)| h.clone())
                .collect();
            for h in doomed {
                if dry_run || self.delete_blob(&h, blob_older_than) {
                    count += 1;
                    bytes += l.blobs[&h].len();
                    gone.insert(h);
                }
            }
        }
        for (blob, _, name, md) in &l.pins {
            let blob_gone = gone.contains(blob) || !l.blobs.contains_key(blob);
            if blob_gone && (gone.contains(blob) || old(md, older_than)) && !dry_run {
                self.remove(name);
            }
        }
        // A hint of a blob that went is of no more use (and only a blob
        // going makes one stale).
        if !gone.is_empty() && !dry_run {
            for name in &l.hints {
                let mut named = String::new();
                if let Ok(f) = crate::trust::open_read(&self.dir.join(name)) {
                    let _ = f.take(64).read_to_string(&mut named);
                }
                if !l.blobs.contains_key(&named) || gone.contains(&named) {
                    self.remove(name);
                }
            }
        }
        for (name, md) in &l.temps {
            let dead = || at_once && md.len() > 0 && self.unlocked(name);
            if (old(md, older_than) || dead()) && (dry_run || self.remove(name)) {
                count += 1;
                bytes += md.len();
            }
        }
        (count, bytes)
    }

    /// True when `blobs/` holds what only a dead process leaves: a temporary
    /// with contents no writer holds, or a blob a killed collection left
    /// aside. Reads names, and looks only at those.
    pub(crate) fn dead_leftovers(&self) -> bool {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        read.flatten().any(|e| {
            let name = e.file_name();
            let Some(name) = name.to_str() else {
                return false;
            };
            name.starts_with(ASIDE_PREFIX)
                || (name.starts_with(".tmp-")
                    && e.metadata().is_ok_and(|m| m.len() > 0)
                    && self.unlocked(name))
        })
    }

    /// True when no writer holds the temporary `name` (it died): its
    /// writer locks it before it writes a byte, until it has its name.
    fn unlocked(&self, name: &str) -> bool {
        crate::trust::open_read(&self.dir.join(name))
            .is_ok_and(|f| fs4::FileExt::try_lock(&f).is_ok())
    }

    fn remove(&self, name: &str) -> bool {
        std::fs::remove_file(self.dir.join(name)).is_ok()
    }

    /// Moves blob `h` aside, looks at it again, and deletes it unless it
    /// was made fresh meanwhile (then it goes back): true when deleted.
    pub(super) fn delete_blob(&self, h: &str, older_than: SystemTime) -> bool {
        let aside = self
            .dir
            .join(format!("{ASIDE_PREFIX}{h}-{:08x}", random_u64() as u32));
        if std::fs::rename(self.path(h), &aside).is_err() {
            return false;
        }
        let fresh = std::fs::symlink_metadata(&aside).map_or(true, |md| !old(&md, older_than));
        match fresh {
            true => {
                let _ = std::fs::rename(&aside, self.path(h));
                false
            }
            false => std::fs::remove_file(&aside).is_ok(),
        }
    }
}
