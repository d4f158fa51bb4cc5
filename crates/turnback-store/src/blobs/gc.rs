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
            } else if !back && old(&md, older_than) && (dry_run || self.remove(&name)) {
                count += 1;
                bytes += md.len();
            }
        }
        let candidate = |h: &str, md: &Metadata| !referenced.contains(h) && old(md, older_than);
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
                    None => !old(md, older_than),
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
                if dry_run || self.delete_blob(&h, older_than) {
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
            if old(md, older_than) && (dry_run || self.remove(name)) {
                count += 1;
                bytes += md.len();
            }
        }
        (count, bytes)
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
