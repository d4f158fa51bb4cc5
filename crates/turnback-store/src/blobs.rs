//! Content-addressed backups: `blobs/<sha256>`, immutable once written.
//!
//! A blob is streamed into a temporary, fsynced, renamed to its hash and the
//! directory fsynced before this module returns its name, so no index can ever
//! name a blob that is not durable. Reading a blob back verifies its hash.
//! This module never deletes a blob that has its final name.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::hash::{self, CopyError};
use crate::session_id::random_u64;
use crate::sys;

/// The blob directory of one session.
#[derive(Debug, Clone)]
pub(crate) struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Blobs { dir }
    }

    pub(crate) fn path(&self, hash: &str) -> PathBuf {
        debug_assert!(hash::is_sha256_hex(hash));
        self.dir.join(hash)
    }

    /// Streams `reader` (the file at `source`, named in errors) into the store and
    /// returns its SHA-256 and size once the blob is durable.
    pub(crate) fn store(&self, reader: &mut dyn Read, source: &Path) -> Result<(String, u64)> {
        std::fs::create_dir_all(&self.dir).map_err(Error::io("create directory", &self.dir))?;
        let tmp = self.dir.join(format!(".tmp-{:016x}", random_u64()));
        let result = self.store_via(&tmp, reader, source);
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    fn store_via(&self, tmp: &Path, reader: &mut dyn Read, source: &Path) -> Result<(String, u64)> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)
            .map_err(Error::io("create", tmp))?;
        let (hash, size) = hash::copy_hashing(reader, Some(&mut file)).map_err(|e| match e {
            CopyError::Read(e) => Error::io("read", source)(e),
            CopyError::Write(e) => Error::io("write backup", tmp)(e),
        })?;
        crate::crash::point("blob-written");
        let target = self.path(&hash);
        // Same name, same contents: an existing blob of the right size is kept
        // (one of the wrong size is damaged, and the fresh copy replaces it).
        if std::fs::metadata(&target).is_ok_and(|m| m.len() == size) {
            drop(file);
            let _ = std::fs::remove_file(tmp);
            // Fresh again: pruning spares blobs changed in its grace period, and
            // this one is about to be named by an entry.
            let _ = File::open(&target).and_then(|f| f.set_modified(std::time::SystemTime::now()));
            return Ok((hash, size));
        }
        file.sync_all().map_err(Error::io("sync", tmp))?;
        crate::crash::point("blob-synced");
        drop(file);
        std::fs::rename(tmp, &target).map_err(Error::io("rename into place", &target))?;
        crate::crash::point("blob-renamed");
        sys::fsync_dir_path(&self.dir).map_err(Error::io("sync directory", &self.dir))?;
        crate::crash::point("blob-dir-synced");
        Ok((hash, size))
    }

    /// Opens a blob for reading. The caller verifies the hash while it copies
    /// (see [`crate::hash::copy_hashing`]).
    pub(crate) fn open(&self, hash: &str) -> io::Result<File> {
        File::open(self.path(hash))
    }

    pub(crate) fn exists(&self, hash: &str) -> bool {
        self.path(hash).is_file()
    }

    /// Deletes blobs no entry names (and temporaries) last changed before
    /// `older_than`; returns how many and their bytes. Call under the session's
    /// exclusive lock, with `referenced` read under it.
    pub(crate) fn collect_garbage(
        &self,
        referenced: &std::collections::HashSet<&str>,
        older_than: std::time::SystemTime,
        dry_run: bool,
    ) -> (usize, u64) {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return (0, 0);
        };
        let (mut count, mut bytes) = (0, 0);
        for entry in read.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let ours = name.starts_with(".tmp-") || hash::is_sha256_hex(name);
            if !ours || referenced.contains(name) {
                continue;
            }
            let Ok(md) = entry.metadata() else { continue };
            if md.modified().is_ok_and(|m| m < older_than)
                && (dry_run || std::fs::remove_file(entry.path()).is_ok())
            {
                count += 1;
                bytes += md.len();
            }
        }
        (count, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_once_by_content_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().join("blobs"));
        let (h1, n1) = blobs.store(&mut &b"same"[..], Path::new("a")).unwrap();
        let (h2, _) = blobs.store(&mut &b"same"[..], Path::new("b")).unwrap();
        assert_eq!(h1, h2);
        assert_eq!(n1, 4);
        assert_eq!(std::fs::read(blobs.path(&h1)).unwrap(), b"same");
        assert_eq!(
            std::fs::read_dir(dir.path().join("blobs")).unwrap().count(),
            1
        );
        assert!(blobs.exists(&h1));
    }

    #[test]
    fn a_damaged_blob_of_the_wrong_size_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().join("blobs"));
        let (h, _) = blobs.store(&mut &b"contents"[..], Path::new("a")).unwrap();
        std::fs::write(blobs.path(&h), b"cont").unwrap();
        blobs.store(&mut &b"contents"[..], Path::new("a")).unwrap();
        assert_eq!(std::fs::read(blobs.path(&h)).unwrap(), b"contents");
    }

    #[test]
    fn a_failing_reader_leaves_nothing_behind() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().join("blobs"));
        let err = blobs.store(&mut Broken, Path::new("src/x")).unwrap_err();
        assert!(err.to_string().contains("src/x"), "{err}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("blobs")).unwrap().count(),
            0
        );
    }
}
