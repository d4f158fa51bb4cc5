//! Content-addressed backups: `blobs/<sha256>`, immutable once written.
//!
//! A blob is streamed into a temporary, fsynced, renamed to its hash and the
//! directory fsynced before this module returns, so no change that reaches a
//! workspace can rest on a blob that is not durable. (Its name is handed out a
//! little earlier, for an entry still in flight: see
//! [`Blobs::store_file_then`].) A blob holds its contents raw, compressed
//! (`packed.rs`) or as a difference from an earlier backup (`delta.rs`,
//! chosen by `bases.rs`), and is always read back through its decoder and
//! verified against its hash. Only a collection (`gc.rs`) deletes a blob that
//! has its final name.

pub(crate) mod bases;
mod gc;

use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::error::{Error, Result};
use crate::hash::{self, CopyError};
use crate::packed::{self, BlobReader, Written};
use crate::session_id::random_u64;
use crate::sys;

/// The name prefix of a blob moved aside because it did not match its hash.
pub(crate) const QUARANTINE_PREFIX: &str = ".corrupt-";

/// What [`Error::BlobCorrupt`] says a compressed blob's contents hash to
/// when they do not decode.
pub(crate) const UNDECODABLE: &str = "nothing (its compressed contents do not decode)";

/// Streams `reader` (the file at `source`) into the blob temporary `tmp`,
/// compressed at `level` where that makes it smaller, or as a difference
/// from the base `find_base` finds where that is smaller still
/// ([`packed::write_blob`]).
fn write_blob(
    reader: &mut dyn Read,
    source: &Path,
    tmp: &Path,
    file: &mut File,
    level: Option<i32>,
    find_base: Option<packed::FindBase<'_>>,
) -> Result<Written> {
    packed::write_blob(reader, file, level, find_base).map_err(|e| match e {
        CopyError::Read(e) => Error::io("read", source)(e),
        CopyError::Write(e) => Error::io("write backup", tmp)(e),
    })
}

/// A raw blob of a clone, as [`Written`].
fn whole((sha256, size): (String, u64)) -> Written {
    Written {
        sha256,
        size,
        delta: None,
        encoded: false,
    }
}

/// The blob directory of one session.
#[derive(Debug, Clone)]
pub(crate) struct Blobs {
    dir: PathBuf,
    /// The zstd level new backups of files are compressed at (`None`: raw).
    level: Option<i32>,
}

impl Blobs {
    /// The blobs in `dir`, written raw.
    pub(crate) fn new(dir: PathBuf) -> Self {
        Blobs { dir, level: None }
    }

    /// These blobs, with backups of files ([`Blobs::store_file_then`])
    /// compressed when that makes them smaller, if `compress`.
    pub(crate) fn compressing(self, compress: bool) -> Self {
        Blobs {
            level: compress.then_some(packed::LEVEL),
            ..self
        }
    }

    pub(crate) fn path(&self, hash: &str) -> PathBuf {
        debug_assert!(hash::is_sha256_hex(hash));
        self.dir.join(hash)
    }

    /// Backs up `source_file` (the file at `source`, named in errors) and
    /// returns its SHA-256 and size once the blob is durable. Where the
    /// filesystem can clone a file (a reflink: XFS, btrfs), the blob shares the
    /// file's blocks instead of copying them, and the hash is taken from the
    /// clone: what the blob holds, whatever happens to the file afterwards.
    /// Elsewhere the file is streamed in, hashed on the way.
    #[cfg(test)]
    pub(crate) fn store_file(
        &self,
        source_file: &mut File,
        source: &Path,
    ) -> Result<(String, u64)> {
        self.store_file_then(source_file, source, |_, _| {})
    }

    /// [`Blobs::store_file`], calling `hashed` with the blob's name and size as
    /// soon as they are known, before the blob is durable. The caller may then
    /// record an entry in flight that names it (recovery drops an entry in
    /// flight whose file is still at "before", blob or no blob), but must not
    /// change the file before this returns `Ok`.
    ///
    /// A compressed backup of a file backed up before in this directory may
    /// be stored as a difference from the earlier backup (`bases.rs`).
    pub(crate) fn store_file_then(
        &self,
        source_file: &mut File,
        source: &Path,
        hashed: impl FnOnce(&str, u64),
    ) -> Result<(String, u64)> {
        let size = source_file.metadata().map_or(0, |m| m.len());
        let taking_part = self.level.is_some() && bases::takes_part(size);
        let last = taking_part.then(|| self.last_of(source)).flatten();
        let encoded = std::cell::Cell::new(false);
        let stored = self.store_with(hashed, |tmp, file| {
            if sys::clone_file(file, source_file).is_ok() {
                let read = |e| Error::io("read backup", tmp)(e);
                let cloned = hash::hash_reader(file).map_err(read)?;
                if !packed::looks_packed(file).map_err(read)? {
                    return Ok(whole(cloned));
                }
                // A clone stays raw, but these contents would read as
                // compressed: they are written compressed instead.
                file.set_len(0).map_err(Error::io("write backup", tmp))?;
                source_file
                    .seek(io::SeekFrom::Start(0))
                    .map_err(Error::io("read", source))?;
            }
            let mut find = || last.as_deref().and_then(|l| self.choose_base(l));
            let find: Option<packed::FindBase<'_>> = taking_part.then_some(&mut find);
            let written = write_blob(source_file, source, tmp, file, self.level, find)?;
            encoded.set(written.encoded);
            Ok(written)
        })?;
        // Only a compressed backup is worth basing the next on; written only
        // when it changes, so a backup of the same bytes again leaves the
        // store as it was.
        if taking_part && encoded.get() && last.as_deref() != Some(stored.0.as_str()) {
            self.remember_last(source, &stored.0);
        }
        Ok(stored)
    }

    /// Backs up what `reader` yields (a stream that is not a file: an object
    /// `git` hands out), named `source` in errors; as
    /// [`Blobs::store_file_batched`]: call [`Blobs::sync_dir`] after the batch.
    pub(crate) fn store_reader_batched(
        &self,
        reader: &mut dyn std::io::Read,
        source: &Path,
    ) -> Result<(String, u64)> {
        self.store_with_sync(
            |_, _| {},
            |tmp, file| write_blob(reader, source, tmp, file, None, None),
            false,
        )
    }

    /// Makes a blob of what `fill` puts into a new temporary (returning its
    /// hash and size), durably, and removes the temporary on failure.
    fn store_with(
        &self,
        hashed: impl FnOnce(&str, u64),
        fill: impl FnOnce(&Path, &mut File) -> Result<Written>,
    ) -> Result<(String, u64)> {
        self.store_with_sync(hashed, fill, true)
    }

    /// [`Blobs::store_with`]; without `dir_sync` the directory is not synced
    /// after the rename, and the caller must call [`Blobs::sync_dir`] before it
    /// relies on the blob (one sync for a batch of blobs).
    fn store_with_sync(
        &self,
        hashed: impl FnOnce(&str, u64),
        fill: impl FnOnce(&Path, &mut File) -> Result<Written>,
        dir_sync: bool,
    ) -> Result<(String, u64)> {
        sys::create_store_dir_all(&self.dir).map_err(Error::io("create directory", &self.dir))?;
        let tmp = self.dir.join(format!(".tmp-{:016x}", random_u64()));
        let result = self.store_via(&tmp, hashed, fill, dir_sync);
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    fn store_via(
        &self,
        tmp: &Path,
        hashed: impl FnOnce(&str, u64),
        fill: impl FnOnce(&Path, &mut File) -> Result<Written>,
        dir_sync: bool,
    ) -> Result<(String, u64)> {
        let mut file = crate::trust::open(
            sys::store_file_options()
                .read(true)
                .write(true)
                .create_new(true),
            tmp,
        )
        .map_err(crate::trust::store_io("create", tmp))?;
        let Written {
            sha256: hash,
            size,
            delta: base,
            ..
        } = fill(tmp, &mut file)?;
        crate::crash::point("blob-written");
        hashed(&hash, size);
        crate::crash::point("blob-hashed");
        let target = self.path(&hash);
        // Same name, same contents: an existing blob of the right size is kept
        // (one of the wrong size is damaged, and the fresh copy replaces it),
        // opened fresh since an entry is about to name it.
        if let Some(existing) = self.open_fresh(&hash)
            && self.holds(existing, &hash, size)
        {
            drop(file);
            let _ = std::fs::remove_file(tmp);
            return Ok((hash, size));
        }
        if let Some(base) = &base {
            // Before the name: a collection keeps the base while the blob is
            // there (`gc.rs`).
            self.pin(&hash, base)?;
        }
        file.sync_all().map_err(Error::io("sync", tmp))?;
        crate::crash::point("blob-synced");
        drop(file);
        std::fs::rename(tmp, &target).map_err(Error::io("rename into place", &target))?;
        crate::crash::point("blob-renamed");
        if dir_sync {
            self.sync_dir()?;
        }
        Ok((hash, size))
    }

    /// Opens the blob `hash`, made fresh (its modification time set to now:
    /// pruning spares blobs changed in its grace period) and then found still
    /// under its name. A collection moves a blob aside and looks at its time
    /// again before deleting it (`gc.rs`), so a blob opened here either goes
    /// back under its name or was gone already (`None`), never deleted while
    /// a caller is about to name it or base a difference on it. `None` too
    /// for a name that is not a regular file.
    fn open_fresh(&self, hash: &str) -> Option<File> {
        let file = self.open(hash).ok()?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return None;
        }
        file.set_modified(std::time::SystemTime::now()).ok()?;
        sys::is_at(&file, &self.path(hash)).then_some(file)
    }

    /// True when `file`, the blob `hash`, holds contents of `size` bytes. A
    /// difference is decoded and hashed too: it rests on its base as well as
    /// on itself, and a new backup of the same bytes must not lean on one
    /// that no longer decodes (the fresh blob replaces it).
    fn holds(&self, mut file: File, hash: &str, size: u64) -> bool {
        match packed::encoding(&mut file) {
            Ok(packed::Encoding::Delta(n, _)) if n == size => {
                BlobReader::new(file, &|h| self.open(h))
                    .and_then(|mut r| hash::hash_reader(&mut r))
                    .is_ok_and(|(actual, n)| actual == hash && n == size)
            }
            Ok(packed::Encoding::Delta(..)) => false,
            Ok(packed::Encoding::Packed(n)) => n == size,
            Ok(packed::Encoding::Raw) => file.metadata().is_ok_and(|m| m.len() == size),
            Err(_) => false,
        }
    }

    /// Syncs the blob directory: every blob renamed into it is durable after.
    pub(crate) fn sync_dir(&self) -> Result<()> {
        sys::fsync_dir_path(&self.dir).map_err(Error::io("sync directory", &self.dir))?;
        crate::crash::point("blob-dir-synced");
        Ok(())
    }

    /// [`Blobs::store_file`] of one of a batch: its directory is not synced;
    /// call [`Blobs::sync_dir`] once after the batch, before relying on any.
    pub(crate) fn store_file_batched(
        &self,
        source_file: &mut File,
        source: &Path,
    ) -> Result<(String, u64)> {
        self.store_with_sync(
            |_, _| {},
            |tmp, file| write_blob(source_file, source, tmp, file, None, None),
            false,
        )
    }

    /// Names blob `hash` of `from` (another blob directory on the same file
    /// system, whose blobs are durable) in this one too, by a hard link:
    /// blobs are immutable, so the two names can share the file. The
    /// directory is not synced (see [`Blobs::sync_dir`]). `false` when a
    /// link cannot be made (another file system); then copy it.
    pub(crate) fn link_from(&self, from: &Blobs, hash: &str) -> Result<bool> {
        sys::create_store_dir_all(&self.dir).map_err(Error::io("create directory", &self.dir))?;
        let target = self.path(hash);
        if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file()) {
            return Ok(true);
        }
        if std::fs::hard_link(from.path(hash), &target).is_err() {
            return Ok(false);
        }
        // Fresh: pruning spares blobs changed in its grace period, and this
        // one is about to be named by an entry.
        let _ = crate::trust::open_read(&target)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        Ok(true)
    }

    /// Opens a blob for reading. The caller verifies the hash while it copies
    /// (see [`crate::hash::copy_hashing`]).
    /// A blob that is a symbolic link, or another user's, does not open.
    fn open(&self, hash: &str) -> io::Result<File> {
        crate::trust::open_read(&self.path(hash))
    }

    /// Opens the blob `hash` to read it back as the backup of `path` (a file
    /// of session `session`; both named in errors): [`Error::BlobMissing`]
    /// when it cannot be opened, or [`Error::BlobCorrupt`] when it was found
    /// corrupt and moved aside before. What is read is checked against the
    /// name with [`Backup::verify`].
    pub(crate) fn open_backup<'a>(
        &'a self,
        session: &'a str,
        path: &'a str,
        hash: &'a str,
    ) -> Result<Backup<'a>> {
        let file = self
            .open(hash)
            .map_err(|_| self.missing(session, path, hash))?;
        let blob = self.path(hash);
        let reader = BlobReader::new(file, &|h| self.open(h)).map_err(Error::io("read", &blob))?;
        Ok(Backup {
            blobs: self,
            session,
            path,
            hash,
            reader,
            blob,
        })
    }

    /// [`Error::BlobMissing`] (or [`Error::BlobCorrupt`], as for
    /// [`Blobs::open_backup`]) unless the blob `hash` is there.
    pub(crate) fn check_present(&self, session: &str, path: &str, hash: &str) -> Result<()> {
        match self.exists(hash) {
            true => Ok(()),
            false => Err(self.missing(session, path, hash)),
        }
    }

    /// The error for a backup that is not there under its name: corrupt, if
    /// it was found corrupt and moved aside before, else missing.
    fn missing(&self, session: &str, path: &str, hash: &str) -> Error {
        let aside = self.quarantined(hash);
        let actual = aside.as_ref().and_then(|p| {
            let mut r = BlobReader::new(File::open(p).ok()?, &|h| self.open(h)).ok()?;
            match hash::hash_reader(&mut r) {
                Ok((h, _)) => Some(h),
                Err(_) => r.undecodable().then(|| UNDECODABLE.to_owned()),
            }
        });
        match (aside, actual) {
            (Some(aside), Some(actual)) => Error::BlobCorrupt {
                session: session.to_owned(),
                path: path.to_owned(),
                hash: hash.to_owned(),
                actual,
                moved_to: Some(aside.into_boxed_path()),
            },
            _ => Error::BlobMissing {
                session: session.to_owned(),
                path: path.to_owned(),
                hash: hash.to_owned(),
            },
        }
    }

    pub(crate) fn exists(&self, hash: &str) -> bool {
        std::fs::symlink_metadata(self.path(hash)).is_ok_and(|m| m.is_file())
    }

    /// Moves the blob `hash`, found not to match its name, aside to
    /// `.corrupt-<hash>-<random>` in the same directory: kept (a person may
    /// want what is left of it), never again trusted, and out of the way of
    /// the next backup of the same bytes, which writes the blob whole again.
    fn quarantine(&self, hash: &str) -> io::Result<PathBuf> {
        let aside = self.dir.join(format!(
            "{QUARANTINE_PREFIX}{hash}-{:08x}",
            random_u64() as u32
        ));
        std::fs::rename(self.path(hash), &aside)?;
        sys::fsync_dir_path(&self.dir)?;
        Ok(aside)
    }

    /// A blob `hash` moved aside as corrupt, if there is one.
    fn quarantined(&self, hash: &str) -> Option<PathBuf> {
        let prefix = format!("{QUARANTINE_PREFIX}{hash}-");
        std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
    }
}

/// A backup opened to be read back ([`Blobs::open_backup`]), through the
/// decoder of its blob.
pub(crate) struct Backup<'a> {
    blobs: &'a Blobs,
    session: &'a str,
    path: &'a str,
    hash: &'a str,
    reader: BlobReader,
    blob: PathBuf,
}

impl Backup<'_> {
    /// The blob's contents, to read; what was read is then checked with
    /// [`Backup::checked`] and [`Backup::verify`].
    pub(crate) fn reader(&mut self) -> &mut BlobReader {
        &mut self.reader
    }

    /// The size of the contents (not of the blob's file, when compressed).
    pub(crate) fn size(&self) -> u64 {
        self.reader.size()
    }

    /// The whole contents, verified against the blob's name as
    /// [`Backup::verify`] does, when they are at most `limit` bytes; `None`
    /// for larger contents (read no further than `limit + 1` bytes, and so
    /// not verified: a caller that shows them has nothing to show). A
    /// backup emptied or cut short (a disk that lost its last writes) is
    /// [`Error::BlobCorrupt`], never a diff against what is left of it.
    pub(crate) fn read_small(mut self, limit: u64) -> Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        let read = (&mut self.reader)
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(Error::io("read", &self.blob));
        self.checked(read)?;
        if buf.len() as u64 > limit {
            return Ok(None);
        }
        self.verify(&hash::to_hex(&sha2::Sha256::digest(&buf)))?;
        Ok(Some(buf))
    }

    /// The blob's path, for an error reading it.
    pub(crate) fn blob_path(&self) -> PathBuf {
        self.blob.clone()
    }

    /// `result`, of reading the contents through [`Backup::reader`]; a
    /// failure because they do not decode is [`Error::BlobCorrupt`] (and the
    /// blob moved aside, as for [`Backup::verify`]), not a failure to read.
    pub(crate) fn checked<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(_) if self.reader.undecodable() => Err(self.corrupt(UNDECODABLE)),
            other => other,
        }
    }

    /// Checks `actual`, the SHA-256 of what was read, against the blob's
    /// name: [`Error::BlobCorrupt`] when they differ. The blob is then moved
    /// aside first (kept, never deleted), so that the next backup of the same
    /// bytes writes it whole again instead of trusting the damaged copy.
    pub(crate) fn verify(&self, actual: &str) -> Result<()> {
        match actual == self.hash {
            true => Ok(()),
            false => Err(self.corrupt(actual)),
        }
    }

    fn corrupt(&self, actual: &str) -> Error {
        let moved_to = self
            .blobs
            .quarantine(self.hash)
            .ok()
            .map(PathBuf::into_boxed_path);
        Error::BlobCorrupt {
            session: self.session.to_owned(),
            path: self.path.to_owned(),
            hash: self.hash.to_owned(),
            actual: actual.to_owned(),
            moved_to,
        }
    }

    /// Reads the whole blob and [`Backup::verify`]s it.
    pub(crate) fn verify_whole(mut self) -> Result<()> {
        let read = hash::hash_reader(&mut self.reader).map_err(Error::io("read", &self.blob));
        let (actual, _) = self.checked(read)?;
        self.verify(&actual)
    }
}

#[cfg(test)]
mod tests;
