//! SHA-256 over streams: contents are hashed while they are copied, never held
//! whole in memory.

use std::io::{self, Read, Write};

use sha2::{Digest, Sha256};

/// Copy buffer size: large enough for throughput, small enough to keep memory flat.
pub(crate) const BUF_SIZE: usize = 256 * 1024;

/// Lower-case hex of a digest (sha2 0.11 no longer formats digests as hex).
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// The 32 bytes a SHA-256 in lower-case hex spells, if `s` is one.
pub(crate) fn from_hex(s: &str) -> Option<[u8; 32]> {
    if !is_sha256_hex(s) {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => b - b'0',
        _ => b - b'a' + 10,
    };
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
        *o = (digit(pair[0]) << 4) | digit(pair[1]);
    }
    Some(out)
}

/// True when `s` looks like a SHA-256 in lower-case hex (the name of a blob).
pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Which side of a copy failed.
#[derive(Debug)]
pub(crate) enum CopyError {
    Read(io::Error),
    Write(io::Error),
}

/// Copies `reader` into `writer` (when given), returning the SHA-256 hex and the
/// byte count of what went through.
pub(crate) fn copy_hashing(
    reader: &mut dyn Read,
    mut writer: Option<&mut dyn Write>,
) -> Result<(String, u64), CopyError> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BUF_SIZE];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        hasher.update(&buf[..n]);
        if let Some(w) = writer.as_mut() {
            w.write_all(&buf[..n]).map_err(CopyError::Write)?;
        }
        total += n as u64;
    }
    Ok((to_hex(&hasher.finalize()), total))
}

/// Hashes a whole stream.
pub(crate) fn hash_reader(reader: &mut dyn Read) -> io::Result<(String, u64)> {
    copy_hashing(reader, None).map_err(|e| match e {
        CopyError::Read(e) | CopyError::Write(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        let (h, n) = hash_reader(&mut &b""[..]).unwrap();
        assert_eq!(
            h,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(n, 0);
        let (h, n) = hash_reader(&mut &b"abc"[..]).unwrap();
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(n, 3);
        assert!(is_sha256_hex(&h));
        assert!(!is_sha256_hex("../etc/passwd"));
    }

    #[test]
    fn copy_passes_every_byte_through_across_buffers() {
        let data: Vec<u8> = (0..BUF_SIZE * 2 + 17)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let mut out = Vec::new();
        let (h, n) = copy_hashing(&mut &data[..], Some(&mut out)).unwrap();
        assert_eq!(out, data);
        assert_eq!(n, data.len() as u64);
        assert_eq!(h, hash_reader(&mut &data[..]).unwrap().0);
    }
}
