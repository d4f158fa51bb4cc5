//! A blob stored as a difference from an earlier backup of the same file
//! (`docs/FORMAT.md`, "Blob encoding"): one zstd frame compressed with the
//! earlier backup's contents as its prefix (a dictionary of raw content), behind
//! a header that names that backup. An agent's edits change a few lines of a
//! file at a time, so the second backup of a file costs what changed, not the
//! file again.
//!
//! This module owns the encoding only: which backup a blob is stored against
//! is `blobs/bases.rs`'s choice, and what keeps that backup while the blob
//! needs it is `blobs/gc.rs`'s. Both sides are bounded: a difference is made
//! only of contents and a base of at most [`MAX`] bytes, read whole in memory,
//! and a base is never itself a difference (one level, so a read opens at most
//! two files).

use std::io;

use crate::hash;

/// The most bytes a difference's contents and its base may each hold: files
/// larger than this are compressed alone, as a stream.
pub(crate) const MAX: usize = 128 * 1024;

/// What a difference starts with: a zstd skippable frame (magic `0x184D2A5B`,
/// 48 bytes of payload) whose payload is `turndiff`, the size of the contents
/// (u64, little-endian) and the SHA-256 of the base (32 bytes).
pub(crate) const PREFIX: [u8; 16] = [
    0x5B, 0x2A, 0x4D, 0x18, 48, 0, 0, 0, b't', b'u', b'r', b'n', b'd', b'i', b'f', b'f',
];

/// The header's length: [`PREFIX`], the size and the base's hash.
pub(crate) const HEADER_LEN: usize = 56;

/// The largest zstd window a difference may ask for (as `packed.rs`'s).
const WINDOW_LOG_MAX: u32 = 23;

/// The header of a difference from `base` (hex SHA-256) of contents of
/// `size` bytes.
pub(crate) fn header(size: u64, base: &str) -> Option<[u8; HEADER_LEN]> {
    let base = hash::from_hex(base)?;
    let mut h = [0u8; HEADER_LEN];
    h[..16].copy_from_slice(&PREFIX);
    h[16..24].copy_from_slice(&size.to_le_bytes());
    h[24..].copy_from_slice(&base);
    Some(h)
}

/// The size of the contents and the base (hex) a difference's first bytes
/// name, or `None` when `first` is not the start of a difference.
pub(crate) fn parse(first: &[u8]) -> Option<(u64, String)> {
    if first.len() < HEADER_LEN || first[..16] != PREFIX {
        return None;
    }
    let size = u64::from_le_bytes(first[16..24].try_into().expect("8 bytes"));
    Some((size, hash::to_hex(&first[24..HEADER_LEN])))
}

/// `contents` compressed at zstd level `level` against `base`: the frame
/// that follows the header.
pub(crate) fn encode(contents: &[u8], base: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let mut cctx = zstd::zstd_safe::CCtx::create();
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(contents.len()));
    cctx.set_parameter(zstd::zstd_safe::CParameter::CompressionLevel(level))
        .and_then(|_| cctx.ref_prefix(base))
        .and_then(|_| cctx.compress2(&mut out, contents))
        .map_err(zstd_error)?;
    Ok(out)
}

/// The `size` bytes of contents that `frame` (what follows the header)
/// decodes to against `base`; an error when it does not decode to exactly
/// that many (what the caller reports as damage).
pub(crate) fn decode(frame: &[u8], base: &[u8], size: u64) -> io::Result<Vec<u8>> {
    let size = usize::try_from(size)
        .ok()
        .filter(|&n| n <= MAX)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a difference too large"))?;
    let mut dctx = zstd::zstd_safe::DCtx::create();
    // One byte more than the contents need: a frame that decodes to more is
    // damaged, and is caught by the length check rather than cut short.
    let mut out = Vec::with_capacity(size + 1);
    dctx.set_parameter(zstd::zstd_safe::DParameter::WindowLogMax(WINDOW_LOG_MAX))
        .and_then(|_| dctx.ref_prefix(base))
        .and_then(|_| dctx.decompress(&mut out, frame))
        .map_err(zstd_error)?;
    if out.len() != size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a difference that decodes to another size than its header says",
        ));
    }
    Ok(out)
}

fn zstd_error(code: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        zstd::zstd_safe::get_error_name(code),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVEL: i32 = crate::packed::LEVEL;

    /// Source-like text that compresses about as well as source does.
    fn source(n: usize) -> Vec<u8> {
        let words = [
            "let", "value", "fn", "compute", "self", "Result", "match", "None",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..n)
            .flat_map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (a, b) = (words[(x % 8) as usize], words[(x >> 8) as usize % 8]);
                format!("    {a} {b}_{} = {}({i});\n", x % 1000, a).into_bytes()
            })
            .collect()
    }

    #[test]
    fn a_small_edit_costs_a_small_difference_and_decodes_back() {
        let base = source(1000);
        let mut edited = base.clone();
        edited.splice(
            5000..5000,
            b"// a comment the agent added\n".iter().copied(),
        );
        let frame = encode(&edited, &base, LEVEL).unwrap();
        let alone = zstd::bulk::compress(&edited, LEVEL).unwrap();
        assert!(
            frame.len() * 20 < alone.len(),
            "difference {} bytes, alone {}",
            frame.len(),
            alone.len()
        );
        let back = decode(&frame, &base, edited.len() as u64).unwrap();
        assert!(back == edited);
    }

    #[test]
    fn another_base_or_size_or_a_damaged_frame_does_not_decode_to_the_contents() {
        let base = source(500);
        let mut edited = base.clone();
        edited[100] = b'#';
        let frame = encode(&edited, &base, LEVEL).unwrap();
        let n = edited.len() as u64;
        assert!(decode(&frame, &base, n - 1).is_err());
        assert!(decode(&frame, &base, n + 1).is_err());
        assert!(decode(&frame, &base, MAX as u64 + 1).is_err());
        // Against other bytes, what comes out (if anything) is not the
        // contents: the caller's hash check is what catches it.
        let other = source(400);
        assert!(decode(&frame, &other, n).map_or(true, |b| b != edited));
        let mut damaged = frame.clone();
        let mid = damaged.len() / 2;
        damaged[mid] ^= 0x55;
        damaged.truncate(damaged.len() - 1);
        assert!(decode(&damaged, &base, n).is_err());
    }

    #[test]
    fn a_header_names_the_size_and_the_base() {
        let base = "ab".repeat(32);
        let h = header(12345, &base).unwrap();
        assert_eq!(parse(&h), Some((12345, base)));
        assert_eq!(parse(&h[..HEADER_LEN - 1]), None);
        assert_eq!(header(1, "not hex"), None);
        let mut other = h;
        other[12] = b'x';
        assert_eq!(parse(&other), None);
    }
}
