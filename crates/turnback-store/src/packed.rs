//! How a blob's file holds its contents: as they are (raw), compressed as
//! one zstd frame behind a small header of turnback's own (`docs/FORMAT.md`,
//! "Blob encoding"), or as a difference from another blob (`delta.rs`); and
//! [`BlobReader`], the one reader every backup is read back through, which
//! decodes each. Memory stays flat whatever the size:
//! at most [`SAMPLE`] bytes are held, and a larger file is compressed and
//! decoded as a stream.
//!
//! This module owns the encoding only: it never names, moves or deletes a
//! blob (`blobs.rs` does), and never decides that what it decoded is right:
//! the caller hashes it against the blob's name.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use sha2::{Digest, Sha256};

use crate::delta;
use crate::hash::{self, CopyError};
use crate::sys::EarlyWriteback;

/// The zstd level backups are compressed at: level 3 (zstd's default) was
/// measured against level 1 and lz4 on the bench's replay of real source
/// history (`docs/PERFORMANCE.md`, section 11).
pub(crate) const LEVEL: i32 = 3;

/// What a compressed blob starts with: a zstd skippable frame (magic
/// `0x184D2A5B`, 16 bytes of payload) whose payload is `turnback` and the
/// size of the contents (u64, little-endian). `zstd -d` skips it.
const PREFIX: [u8; 16] = [
    0x5B, 0x2A, 0x4D, 0x18, 16, 0, 0, 0, b't', b'u', b'r', b'n', b'b', b'a', b'c', b'k',
];

/// The header's length: [`PREFIX`] and the size.
const HEADER_LEN: usize = 24;

/// Contents read before deciding how to store them: a file up to this size is
/// compressed whole in memory and kept raw unless that is smaller; a larger
/// one is compressed as a stream when these first bytes compress.
const SAMPLE: usize = 128 * 1024;

/// The largest zstd window a blob may ask for (8 MiB; level 3 uses 2 MiB at
/// most): a frame that asks for more is refused as undecodable rather than
/// given the memory.
const WINDOW_LOG_MAX: u32 = 23;

fn header(size: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..16].copy_from_slice(&PREFIX);
    h[16..].copy_from_slice(&size.to_le_bytes());
    h
}

/// Reads into `buf` until it is full or the stream ends; the bytes read.
fn read_up_to(reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// How a blob's file holds its contents, as its first bytes say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Encoding {
    Raw,
    /// Compressed alone, contents of this size.
    Packed(u64),
    /// A difference (`delta.rs`) of contents of this size from this blob.
    Delta(u64, String),
}

/// True when contents starting with `first` would read as encoded: such
/// contents are never stored raw.
fn tagged(first: &[u8]) -> bool {
    first.starts_with(&PREFIX) || first.starts_with(&delta::PREFIX)
}

/// How `file` holds its contents; its cursor is left at its start.
pub(crate) fn encoding(file: &mut File) -> io::Result<Encoding> {
    file.seek(SeekFrom::Start(0))?;
    let mut h = [0u8; delta::HEADER_LEN];
    let n = read_up_to(file, &mut h)?;
    file.seek(SeekFrom::Start(0))?;
    if let Some((size, base)) = delta::parse(&h[..n]) {
        return Ok(Encoding::Delta(size, base));
    }
    Ok(match n >= HEADER_LEN && h[..16] == PREFIX {
        true => Encoding::Packed(u64::from_le_bytes(
            h[16..HEADER_LEN].try_into().expect("8 bytes"),
        )),
        false => Encoding::Raw,
    })
}

/// True when a blob file holding exactly `file`'s bytes would read as
/// encoded: such contents are never stored raw.
pub(crate) fn looks_packed(file: &mut File) -> io::Result<bool> {
    Ok(encoding(file)? != Encoding::Raw)
}

/// What [`write_blob`] wrote.
#[derive(Debug)]
pub(crate) struct Written {
    /// The SHA-256 of the contents, in hex.
    pub(crate) sha256: String,
    pub(crate) size: u64,
    /// The base the blob is a difference from, if it is one.
    pub(crate) delta: Option<String>,
    /// Whether the blob is compressed (alone or as a difference).
    pub(crate) encoded: bool,
}

/// A blob a new one may be stored as a difference from: its name and its
/// contents, read and verified against the name.
pub(crate) type Base = (String, Vec<u8>);

/// Finds the [`Base`] a backup may be stored against, asked only when one
/// could help (the contents are small and compress).
pub(crate) type FindBase<'a> = &'a mut dyn FnMut() -> Option<Base>;

/// Writes what `source` yields into `file`, a new and empty blob temporary:
/// compressed at `level` when that makes it smaller, else raw (always raw
/// without a level, unless the contents start as an encoded blob does:
/// those are always compressed, so that no raw blob reads as one). Contents
/// of at most [`delta::MAX`] bytes that compress are stored as a difference
/// from the base `find_base` finds, when that is smaller still. The caller
/// must keep the base while the blob lives (`blobs/gc.rs`).
pub(crate) fn write_blob(
    source: &mut dyn Read,
    file: &mut File,
    level: Option<i32>,
    find_base: Option<FindBase<'_>>,
) -> Result<Written, CopyError> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; SAMPLE];
    let n = read_up_to(source, &mut buf).map_err(CopyError::Read)?;
    hasher.update(&buf[..n]);
    let first = &buf[..n];
    let tagged = tagged(first);
    let whole = n < SAMPLE;
    let level = match (level, tagged) {
        (Some(l), _) => Some(l),
        (None, true) => Some(LEVEL),
        (None, false) => None,
    };
    let packed = match level {
        Some(l) => Some(zstd::bulk::compress(first, l).map_err(CopyError::Write)?),
        None => None,
    };
    let smaller = packed
        .as_ref()
        .is_some_and(|p| tagged || HEADER_LEN + p.len() < n);
    // Contents that do not compress alone are not worth a base's read.
    if let (Some(p), true, Some(find)) = (&packed, smaller && whole && n <= delta::MAX, find_base)
        && let Some(base) = find()
        && let Some(w) = write_delta(first, p.len(), &base, file, &hasher)?
    {
        return Ok(w);
    }
    let mut writer = EarlyWriteback::new(file);
    let total = match (smaller, whole) {
        (true, true) => {
            let p = packed.expect("compressed");
            writer
                .write_all(&header(n as u64))
                .map_err(CopyError::Write)?;
            writer.write_all(&p).map_err(CopyError::Write)?;
            writer.finish().map_err(CopyError::Write)?;
            n as u64
        }
        (true, false) => {
            let level = level.expect("a level");
            // The size is patched in at the end.
            writer.write_all(&header(0)).map_err(CopyError::Write)?;
            let mut enc =
                zstd::stream::write::Encoder::new(writer, level).map_err(CopyError::Write)?;
            enc.write_all(first).map_err(CopyError::Write)?;
            let total = n as u64 + copy_rest(source, &mut enc, &mut hasher, &mut buf)?;
            let writer = enc.finish().map_err(CopyError::Write)?;
            writer.finish().map_err(CopyError::Write)?;
            file.seek(SeekFrom::Start(16)).map_err(CopyError::Write)?;
            file.write_all(&total.to_le_bytes())
                .map_err(CopyError::Write)?;
            total
        }
        (false, _) => {
            writer.write_all(first).map_err(CopyError::Write)?;
            let total = n as u64 + copy_rest(source, &mut writer, &mut hasher, &mut buf)?;
            // Holes were skipped, not written: the length covers a last one.
            writer.finish().map_err(CopyError::Write)?;
            total
        }
    };
    Ok(Written {
        sha256: hash::to_hex(&hasher.finalize()),
        size: total,
        delta: None,
        encoded: smaller,
    })
}

/// Writes `contents` (all there is, hashed into `hasher` already) into
/// `file` as a difference from `base`, if that is smaller than compressing
/// them alone (`alone` bytes of frame) and than the contents; `None`
/// (nothing written) otherwise.
fn write_delta(
    contents: &[u8],
    alone: usize,
    (base, base_contents): &Base,
    file: &mut File,
    hasher: &Sha256,
) -> Result<Option<Written>, CopyError> {
    if base_contents.len() > delta::MAX {
        return Ok(None);
    }
    let Some(header) = delta::header(contents.len() as u64, base) else {
        return Ok(None);
    };
    let Ok(frame) = delta::encode(contents, base_contents, LEVEL) else {
        return Ok(None);
    };
    let size = delta::HEADER_LEN + frame.len();
    if size >= (HEADER_LEN + alone).min(contents.len()) {
        return Ok(None);
    }
    let mut writer = EarlyWriteback::new(file);
    writer.write_all(&header).map_err(CopyError::Write)?;
    writer.write_all(&frame).map_err(CopyError::Write)?;
    writer.finish().map_err(CopyError::Write)?;
    Ok(Some(Written {
        sha256: hash::to_hex(&hasher.clone().finalize()),
        size: contents.len() as u64,
        delta: Some(base.clone()),
        encoded: true,
    }))
}

/// Copies the rest of `source` into `out`, hashing it; the bytes copied.
fn copy_rest(
    source: &mut dyn Read,
    out: &mut dyn Write,
    hasher: &mut Sha256,
    buf: &mut [u8],
) -> Result<u64, CopyError> {
    let mut total = 0u64;
    loop {
        let n = match source.read(buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(CopyError::Write)?;
        total += n as u64;
    }
}

/// A blob's contents, read back: a raw blob's bytes, or a compressed one's
/// decoded as they are read. What it yields is still to be verified against
/// the blob's name.
pub(crate) struct BlobReader {
    inner: Inner,
    size: u64,
    undecodable: bool,
}

enum Inner {
    Raw(File),
    Zstd(Box<zstd::stream::read::Decoder<'static, io::BufReader<File>>>),
    /// A difference, decoded whole (it is small).
    Decoded(io::Cursor<Vec<u8>>),
    /// A difference that does not decode: its base is gone, damaged or
    /// itself a difference, or its frame is damaged.
    Broken,
}

/// Opens the blob of a name, for a difference's base.
pub(crate) type OpenBlob<'a> = &'a dyn Fn(&str) -> io::Result<File>;

impl BlobReader {
    /// Reads the blob file `file` from its start; a difference's base is
    /// opened through `open`.
    pub(crate) fn new(mut file: File, open: OpenBlob<'_>) -> io::Result<BlobReader> {
        let (inner, size) = match encoding(&mut file)? {
            Encoding::Raw => {
                let size = file.metadata()?.len();
                (Inner::Raw(file), size)
            }
            Encoding::Packed(size) => {
                file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
                let mut d = zstd::stream::read::Decoder::new(file)?;
                d.window_log_max(WINDOW_LOG_MAX)?;
                (Inner::Zstd(Box::new(d)), size)
            }
            Encoding::Delta(size, base) => {
                let inner = match decode_delta(&mut file, size, &base, open)? {
                    Some(bytes) => Inner::Decoded(io::Cursor::new(bytes)),
                    None => Inner::Broken,
                };
                (inner, size)
            }
        };
        Ok(BlobReader {
            inner,
            size,
            undecodable: false,
        })
    }

    /// The contents of a whole blob (not a difference) of at most
    /// [`delta::MAX`] bytes, verified against `sha256`: what a difference
    /// is made from and decoded against. `None` when it is not such a blob.
    pub(crate) fn base_contents(file: File, sha256: &str) -> io::Result<Option<Vec<u8>>> {
        let no_base: OpenBlob<'_> = &|_| Err(io::ErrorKind::NotFound.into());
        let mut r = BlobReader::new(file, no_base)?;
        if matches!(r.inner, Inner::Decoded(_) | Inner::Broken) || r.size > delta::MAX as u64 {
            return Ok(None);
        }
        let mut bytes = Vec::with_capacity(r.size as usize);
        match (&mut r).take(delta::MAX as u64 + 1).read_to_end(&mut bytes) {
            Ok(_) => {}
            Err(_) if r.undecodable => return Ok(None),
            Err(e) => return Err(e),
        }
        let (actual, _) = hash::hash_reader(&mut &bytes[..])?;
        Ok((actual == sha256 && bytes.len() <= delta::MAX).then_some(bytes))
    }

    /// The size of the contents (a compressed blob's header says it).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// True once decoding failed: what the file holds is not a whole zstd
    /// frame (damaged), as opposed to a file that could not be read.
    pub(crate) fn undecodable(&self) -> bool {
        self.undecodable
    }
}

/// The contents the difference `file` (of contents of `size` bytes, from
/// the blob `base`) decodes to; `None` when it does not decode. An error
/// only when `file` itself cannot be read.
fn decode_delta(
    file: &mut File,
    size: u64,
    base: &str,
    open: OpenBlob<'_>,
) -> io::Result<Option<Vec<u8>>> {
    let len = file.metadata()?.len();
    // A frame of contents of at most `MAX` bytes is never much larger.
    let bound = (delta::HEADER_LEN + zstd::zstd_safe::compress_bound(delta::MAX)) as u64;
    if size > delta::MAX as u64 || len > bound {
        return Ok(None);
    }
    let mut frame = Vec::with_capacity(len as usize);
    file.seek(SeekFrom::Start(delta::HEADER_LEN as u64))?;
    file.read_to_end(&mut frame)?;
    let Some(base) = open(base)
        .ok()
        .and_then(|f| BlobReader::base_contents(f, base).ok().flatten())
    else {
        return Ok(None);
    };
    Ok(delta::decode(&frame, &base, size).ok())
}

impl Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::Raw(f) => f.read(buf),
            Inner::Zstd(d) => d.read(buf).inspect_err(|e| {
                // The file's own errors carry an OS code; the decoder's do not.
                if e.kind() != io::ErrorKind::Interrupted && e.raw_os_error().is_none() {
                    self.undecodable = true;
                }
            }),
            Inner::Decoded(c) => c.read(buf),
            Inner::Broken => {
                self.undecodable = true;
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a difference that does not decode against its base",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores `bytes` at `level` into a new file; its path and what it holds.
    fn stored(dir: &std::path::Path, bytes: &[u8], level: Option<i32>) -> (Vec<u8>, String) {
        let path = dir.join(format!("b-{}", crate::session_id::random_u64()));
        let mut f = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        let Written {
            sha256: h, size: n, ..
        } = write_blob(&mut &bytes[..], &mut f, level, None).unwrap();
        assert_eq!(n, bytes.len() as u64);
        let (want, _) = hash::hash_reader(&mut &bytes[..]).unwrap();
        assert_eq!(h, want);
        let mut back = Vec::new();
        let mut r = BlobReader::new(File::open(&path).unwrap(), &no_base).unwrap();
        assert_eq!(r.size(), bytes.len() as u64);
        r.read_to_end(&mut back).unwrap();
        assert!(back == bytes, "the contents did not come back");
        (std::fs::read(&path).unwrap(), h)
    }

    fn no_base(_: &str) -> io::Result<File> {
        Err(io::ErrorKind::NotFound.into())
    }

    fn text(len: usize) -> Vec<u8> {
        let line = b"fn main() { println!(\"hello\"); }\n";
        (0..len).map(|i| line[i % line.len()]).collect()
    }

    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn text_is_compressed_and_noise_and_tiny_files_stay_raw() {
        let dir = tempfile::tempdir().unwrap();
        let t = text(20_000);
        let (file, _) = stored(dir.path(), &t, Some(LEVEL));
        assert!(file.starts_with(&PREFIX) && file.len() < t.len() / 10);
        let n = noise(20_000);
        assert_eq!(stored(dir.path(), &n, Some(LEVEL)).0, n);
        assert_eq!(stored(dir.path(), b"tiny", Some(LEVEL)).0, b"tiny");
        assert_eq!(stored(dir.path(), b"", Some(LEVEL)).0, b"");
        assert_eq!(stored(dir.path(), &t, None).0, t, "no level: raw");
    }

    #[test]
    fn a_large_file_is_streamed_either_way() {
        let dir = tempfile::tempdir().unwrap();
        let t = text(3 * SAMPLE + 17);
        let (file, _) = stored(dir.path(), &t, Some(LEVEL));
        assert!(file.starts_with(&PREFIX) && file.len() < t.len() / 10);
        assert_eq!(
            u64::from_le_bytes(file[16..24].try_into().unwrap()),
            t.len() as u64
        );
        let n = noise(2 * SAMPLE + 5);
        assert_eq!(stored(dir.path(), &n, Some(LEVEL)).0, n);
    }

    #[test]
    fn contents_that_look_compressed_are_never_stored_raw() {
        let dir = tempfile::tempdir().unwrap();
        let mut odd = PREFIX.to_vec();
        odd.extend_from_slice(&noise(100));
        for level in [None, Some(LEVEL)] {
            let (file, _) = stored(dir.path(), &odd, level);
            assert_ne!(file, odd);
        }
        // Nor does a raw blob that merely starts with zstd's own magic.
        let mut zst = vec![0x28, 0xB5, 0x2F, 0xFD];
        zst.extend_from_slice(&noise(100));
        assert_eq!(stored(dir.path(), &zst, Some(LEVEL)).0, zst);
    }

    #[test]
    fn a_damaged_frame_is_undecodable() {
        let dir = tempfile::tempdir().unwrap();
        let (mut file, _) = stored(dir.path(), &text(50_000), Some(LEVEL));
        let at = file.len() / 2;
        file[at] ^= 0xff;
        file.truncate(file.len() - 3);
        let path = dir.path().join("damaged");
        std::fs::write(&path, &file).unwrap();
        let mut r = BlobReader::new(File::open(&path).unwrap(), &no_base).unwrap();
        let mut out = Vec::new();
        let read = r.read_to_end(&mut out);
        assert!(read.is_err() && r.undecodable(), "{read:?}");
    }

    // Through `Blobs`, as the store uses them.
    use crate::blobs::{Blobs, UNDECODABLE};
    use crate::error::Error;

    /// Backs up `bytes` from a file in `dir`.
    fn store(blobs: &Blobs, dir: &std::path::Path, bytes: &[u8]) -> crate::Result<(String, u64)> {
        let path = dir.join(format!("source-{:016x}", crate::session_id::random_u64()));
        std::fs::write(&path, bytes).unwrap();
        blobs.store_file(&mut File::open(&path).unwrap(), &path)
    }

    /// Source text: compresses well.
    fn source_text() -> Vec<u8> {
        (0..600)
            .flat_map(|i| format!("    let line_{i} = compute({i}, \"some text\");\n").into_bytes())
            .collect()
    }

    /// Reads the backup `hash` back through its decoder, verified.
    fn read_back(blobs: &Blobs, hash: &str) -> Vec<u8> {
        let mut backup = blobs.open_backup("s", "f.rs", hash).unwrap();
        let size = backup.size();
        let mut out = Vec::new();
        let read = backup
            .reader()
            .read_to_end(&mut out)
            .map_err(Error::io("read", "-"));
        backup.checked(read).unwrap();
        let (actual, _) = hash::hash_reader(&mut &out[..]).unwrap();
        backup.verify(&actual).unwrap();
        assert_eq!(size, out.len() as u64);
        out
    }

    #[test]
    fn raw_and_compressed_blobs_round_trip_through_one_reader() {
        let dir = tempfile::tempdir().unwrap();
        let raw = Blobs::new(dir.path().join("blobs"));
        let packing = raw.clone().compressing(true);
        let t = source_text();
        let (h, n) = store(&packing, dir.path(), &t).unwrap();
        assert_eq!(n, t.len() as u64);
        let on_disk = std::fs::metadata(packing.path(&h)).unwrap().len();
        assert!(on_disk < n / 4, "{on_disk} of {n} bytes");
        assert_eq!(read_back(&raw, &h), t, "any handle reads it");
        // Kept by content: the same bytes again, compressed or not, reuse it.
        store(&packing, dir.path(), &t).unwrap();
        store(&raw, dir.path(), &t).unwrap();
        assert_eq!(std::fs::metadata(packing.path(&h)).unwrap().len(), on_disk);
        // A raw blob (written without compression, as by an older build).
        let (r, _) = store(&raw, dir.path(), b"raw contents").unwrap();
        assert_eq!(std::fs::read(raw.path(&r)).unwrap(), b"raw contents");
        assert_eq!(read_back(&packing, &r), b"raw contents");
        let (c, _) = store(&packing, dir.path(), &t[..5000]).unwrap();
        assert_eq!(read_back(&packing, &c), &t[..5000]);
    }

    #[test]
    fn a_compressed_blob_that_does_not_decode_is_corrupt_and_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().join("blobs")).compressing(true);
        let (h, _) = store(&blobs, dir.path(), &source_text()).unwrap();
        let mut bytes = std::fs::read(blobs.path(&h)).unwrap();
        bytes.truncate(bytes.len() - 10);
        std::fs::write(blobs.path(&h), &bytes).unwrap();
        let backup = blobs.open_backup("s", "f.rs", &h).unwrap();
        match backup.verify_whole() {
            Err(Error::BlobCorrupt {
                hash,
                actual,
                moved_to: Some(aside),
                ..
            }) => {
                assert_eq!((hash.as_str(), actual.as_str()), (h.as_str(), UNDECODABLE));
                assert_eq!(std::fs::read(aside).unwrap(), bytes, "kept as it was");
            }
            other => panic!("{other:?}"),
        }
        assert!(!blobs.exists(&h));
        // Named again: still corrupt, from what was moved aside.
        match blobs.check_present("s", "f.rs", &h) {
            Err(Error::BlobCorrupt { actual, .. }) => assert_eq!(actual, UNDECODABLE),
            other => panic!("{other:?}"),
        }
        // The next backup of the same bytes writes it whole again.
        store(&blobs, dir.path(), &source_text()).unwrap();
        assert_eq!(read_back(&blobs, &h), source_text());
    }
}
