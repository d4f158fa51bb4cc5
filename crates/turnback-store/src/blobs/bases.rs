//! Which earlier backup a new one is stored as a difference from
//! (`delta.rs`), and the names in the blob directory that say so.
//!
//! - `.last-<key>` (the key: the first 32 hex digits of the SHA-256 of the
//!   file's path) holds the name of the last blob a backup of that file made.
//!   A hint, not a record: it is written without a sync, read without trust
//!   (a blob it names is verified against its name before it is used), and a
//!   hint lost or wrong only costs a whole blob.
//! - `.base-<blob>-<base>` (empty) says that `<blob>` is a difference from
//!   `<base>`. It is made before the blob gets its name, so that a collection
//!   (`gc.rs`), which reads names and never blobs, keeps the base while the
//!   blob is there.
//!
//! The base of a difference is always a whole blob (compressed alone or raw):
//! a file backed up again and again is stored against the last whole backup,
//! until a difference from it would not be smaller than a whole blob, which
//! then becomes the base of the next.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Blobs;
use crate::hash;
use crate::packed::{self, BlobReader, Encoding};
use crate::sys;

/// The smallest file whose backups are stored as differences (and which
/// gets a hint): below it a difference saves less than its hint costs.
pub(crate) const MIN_SIZE: u64 = 2048;

/// Whether backups of contents of `size` bytes take part: from
/// [`MIN_SIZE`] to what a difference can hold ([`crate::delta::MAX`]).
pub(super) fn takes_part(size: u64) -> bool {
    (MIN_SIZE..=crate::delta::MAX as u64).contains(&size)
}

/// The name prefix of a hint (see the module's documentation).
pub(crate) const HINT_PREFIX: &str = ".last-";

/// The name prefix of a base's pin (see the module's documentation).
pub(crate) const PIN_PREFIX: &str = ".base-";

/// The pin that keeps `base` while `blob` is there.
pub(super) fn pin_name(blob: &str, base: &str) -> String {
    format!("{PIN_PREFIX}{blob}-{base}")
}

/// The blob and base a pin's name names.
pub(super) fn parse_pin(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PIN_PREFIX)?;
    let (blob, base) = rest.split_once('-')?;
    (hash::is_sha256_hex(blob) && hash::is_sha256_hex(base)).then_some((blob, base))
}

impl Blobs {
    fn hint_path(&self, source: &Path) -> PathBuf {
        let digest = Sha256::digest(source.as_os_str().as_encoded_bytes());
        let key = hash::to_hex(&digest[..16]);
        self.dir.join(format!("{HINT_PREFIX}{key}"))
    }

    /// The last backup of `source` its hint names (`None`: no hint, or not
    /// a blob's name).
    pub(super) fn last_of(&self, source: &Path) -> Option<String> {
        let mut hint = String::new();
        crate::trust::open_read(&self.hint_path(source))
            .ok()?
            .take(64)
            .read_to_string(&mut hint)
            .ok()?;
        hash::is_sha256_hex(&hint).then_some(hint)
    }

    /// The blob a new backup may be stored as a difference from, and its
    /// contents (verified against its name), given `last`, the last backup
    /// of the same file: `last` if that is a whole blob, else its base.
    /// `None` when there is none fit to use.
    ///
    /// The base is opened with [`Blobs::open_fresh`], so it is not deleted
    /// before the new blob's pin keeps it.
    pub(super) fn choose_base(&self, last: &str) -> Option<(String, Vec<u8>)> {
        let mut file = self.open_fresh(last)?;
        let (name, file) = match packed::encoding(&mut file).ok()? {
            Encoding::Delta(_, base) => {
                let f = self.open_fresh(&base)?;
                (base, f)
            }
            _ => (last.to_owned(), file),
        };
        let contents = BlobReader::base_contents(file, &name).ok()??;
        Some((name, contents))
    }

    /// Remembers `sha256` as the last backup of `source` (best effort: a
    /// hint).
    pub(super) fn remember_last(&self, source: &Path, sha256: &str) {
        let path = self.hint_path(source);
        let write = || -> io::Result<()> {
            let mut f = crate::trust::open(
                sys::store_file_options()
                    .write(true)
                    .create(true)
                    .truncate(true),
                &path,
            )?;
            io::Write::write_all(&mut f, sha256.as_bytes())
        };
        let _ = write();
    }

    /// Makes the pin that keeps `base` while `blob` is there (it may be
    /// there already: the same blob stored against the same base before).
    /// Not synced: the directory sync that makes the blob's name durable
    /// follows, and makes this one durable with it.
    pub(super) fn pin(&self, blob: &str, base: &str) -> crate::Result<()> {
        let path = self.dir.join(pin_name(blob, base));
        crate::trust::open(sys::store_file_options().write(true).create(true), &path)
            .map(drop)
            .map_err(crate::trust::store_io("create", &path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_names_its_blob_and_base_and_nothing_else_parses_as_one() {
        let (b, base) = ("a".repeat(64), "b".repeat(64));
        let name = pin_name(&b, &base);
        assert_eq!(parse_pin(&name), Some((b.as_str(), base.as_str())));
        assert_eq!(parse_pin(&format!("{PIN_PREFIX}{b}")), None);
        assert_eq!(parse_pin(&format!("{PIN_PREFIX}{b}-xyz")), None);
        assert_eq!(parse_pin(&b), None);
    }
}
