//! The path filter of a summary record: a Bloom filter of every file a
//! session's record names and of each directory between the file and its
//! workspace root, so that a lookup can pass over a session that never
//! touched a file (or anything under a directory) without reading the
//! record's file lines. It may say "maybe" of a path the session never
//! touched (then the lines are read), never "no" of one it did.
//!
//! The format (`docs/FORMAT.md`, "The summary"): `bits` is a multiple of 64,
//! ten per key (at least 64); a key's bytes are hashed with 64-bit FNV-1a
//! (`h1`), `h2` is SplitMix64 of `h1` with its low bit set, and the key sets
//! bits `(h1 + i·h2) mod bits` for `i` in `0..7`; the words are written as
//! lower-case hex, each word's bytes little-endian, first word first.

use std::path::{Component, Path, PathBuf};

/// How many bits a key sets.
const HASHES: u64 = 7;

/// Bits per key: about a 1% chance of a "maybe" for a path never added.
const BITS_PER_KEY: usize = 10;

/// A path in the form the filter and the record's lines compare: its
/// components joined again, so that `/w/a/`, `/w/./a` and `/w/a` (which
/// `Path` calls equal) are one key.
pub(crate) fn key_of(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// The filter of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathFilter {
    words: Vec<u64>,
}

impl PathFilter {
    /// A filter holding `keys` (each already a [`key_of`]).
    pub(crate) fn of<'a>(keys: impl ExactSizeIterator<Item = &'a Path>) -> PathFilter {
        let bits = (keys.len() * BITS_PER_KEY).max(64).div_ceil(64) * 64;
        let mut filter = PathFilter {
            words: vec![0; bits / 64],
        };
        for key in keys {
            for bit in filter.bits_of(key) {
                filter.words[(bit / 64) as usize] |= 1 << (bit % 64);
            }
        }
        filter
    }

    /// False only when `key` (a [`key_of`]) was never added.
    pub(crate) fn may_contain(&self, key: &Path) -> bool {
        self.bits_of(key)
            .all(|bit| self.words[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    fn bits_of(&self, key: &Path) -> impl Iterator<Item = u64> + use<> {
        let bits = self.words.len() as u64 * 64;
        let h1 = fnv1a(key.as_os_str().as_encoded_bytes());
        let h2 = splitmix64(h1) | 1;
        (0..HASHES).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % bits)
    }

    /// The filter as the record writes it.
    pub(crate) fn to_hex(&self) -> String {
        let mut out = String::with_capacity(self.words.len() * 16);
        for w in &self.words {
            for b in w.to_le_bytes() {
                out.push_str(&format!("{b:02x}"));
            }
        }
        out
    }

    /// The filter a record wrote; `None` when it is not one.
    pub(crate) fn from_hex(text: &str) -> Option<PathFilter> {
        let bytes = text.as_bytes();
        if bytes.is_empty() || !bytes.len().is_multiple_of(16) {
            return None;
        }
        let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        let words = bytes
            .chunks(16)
            .map(|word| {
                let mut le = [0u8; 8];
                for (i, pair) in word.chunks(2).enumerate() {
                    le[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
                }
                Some(u64::from_le_bytes(le))
            })
            .collect::<Option<Vec<u64>>>()?;
        Some(PathFilter { words })
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_added_is_found_and_the_hex_round_trips() {
        let keys: Vec<PathBuf> = (0..500)
            .map(|i| PathBuf::from(format!("/w/d{i}/f")))
            .collect();
        let filter = PathFilter::of(keys.iter().map(PathBuf::as_path));
        for k in &keys {
            assert!(filter.may_contain(k), "{}", k.display());
        }
        let again = PathFilter::from_hex(&filter.to_hex()).unwrap();
        assert_eq!(again, filter);
        // Most keys never added are told apart (about 1% are not).
        let missed = (0..1000)
            .filter(|i| filter.may_contain(Path::new(&format!("/w/e{i}/f"))))
            .count();
        assert!(missed < 50, "{missed} of 1000 keys never added were maybe");
    }

    #[test]
    fn an_empty_filter_holds_nothing_and_damage_is_no_filter() {
        let empty = PathFilter::of(std::iter::empty());
        assert!(!empty.may_contain(Path::new("/w/f")));
        for bad in ["", "0", "zz00000000000000", "00000000000000"] {
            assert_eq!(PathFilter::from_hex(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn paths_that_path_calls_equal_are_one_key() {
        assert_eq!(key_of(Path::new("/w/./a/")), key_of(Path::new("/w/a")));
        assert_eq!(key_of(Path::new("/w/a")), PathBuf::from("/w/a"));
    }
}
