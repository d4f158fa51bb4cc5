//! What git's index says of each file, held compactly: every entry in one
//! buffer (the form `git_cache.rs` writes to disk as it is), found by the
//! hash of its path. Tens of thousands of entries are two allocations, made
//! and freed in a few milliseconds, where a map of owned strings took tens.

use std::collections::HashMap;
use std::hash::BuildHasher;

use super::bytes::{Reader, is_hex, put};

/// One file of git's index, with the stat data git recorded when it last
/// hashed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexEntry<'a> {
    pub(crate) oid: &'a str,
    pub(crate) mode: u32,
    pub(crate) size: u64,
    /// mtime (s, ns), ctime (s, ns).
    pub(crate) times: [i64; 4],
    pub(crate) ino: u64,
}

impl IndexEntry<'_> {
    /// True when the file's stat is the one git recorded (git keeps sizes
    /// and inodes in 32 bits) and git's own record is not racy (`stamp`:
    /// when the index was written): git has the file's contents as `oid`.
    pub(crate) fn vouches_for(&self, st: &super::walk::Stat, stamp: [i64; 2]) -> bool {
        let racy = [self.times[0], self.times[1]] >= stamp;
        let exec = |m: u32| m & 0o111 != 0;
        !racy
            && st.is_file()
            && self.mode & 0o170_000 == 0o100_000
            && exec(self.mode) == exec(st.mode)
            && self.times == st.times
            && self.size == st.size & 0xffff_ffff
            && self.ino == st.ino & 0xffff_ffff
    }
}

/// The entries of git's index, written one after another by [`Entries::push`].
#[derive(Debug, Default)]
pub(crate) struct Entries {
    bytes: Vec<u8>,
    len: usize,
}

impl Entries {
    /// Appends the entry of `path`.
    pub(crate) fn push(&mut self, path: &str, e: &IndexEntry<'_>) {
        let out = &mut self.bytes;
        put(out, path.as_bytes());
        out.extend_from_slice(&e.mode.to_le_bytes());
        put(out, e.oid.as_bytes());
        for v in [e.size as i64]
            .into_iter()
            .chain(e.times)
            .chain([e.ino as i64])
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.len += 1;
    }

    /// The entries as bytes, and how many.
    pub(crate) fn as_bytes(&self) -> (&[u8], usize) {
        (&self.bytes, self.len)
    }

    /// Entries read back from `bytes`, said to be `len` entries. What each
    /// holds is checked where it is used, not here (tens of thousands are
    /// read, a few used): an object name that is not hex is no entry
    /// ([`GitIndex::get`]), a path that is not relative is not listed
    /// ([`GitIndex::paths`]).
    /// The count is checked by [`GitIndex::read`], which goes through them.
    pub(crate) fn from_bytes(bytes: Vec<u8>, len: usize) -> Entries {
        Entries { bytes, len }
    }
}

/// One entry as bytes: its path, and the rest, its object name not checked.
struct Raw<'a> {
    path: &'a [u8],
    mode: u32,
    oid: &'a [u8],
    numbers: [i64; 6],
}

impl<'a> Raw<'a> {
    /// The entry, if its object name is one.
    fn entry(&self) -> Option<IndexEntry<'a>> {
        let oid = std::str::from_utf8(self.oid).ok().filter(|o| is_hex(o))?;
        let n = self.numbers;
        Some(IndexEntry {
            oid,
            mode: self.mode,
            size: n[0] as u64,
            times: [n[1], n[2], n[3], n[4]],
            ino: n[5] as u64,
        })
    }
}

fn one<'a>(r: &mut Reader<'a>) -> Option<Raw<'a>> {
    let path = r.bytes()?;
    let mode = r.u32()?;
    let oid = r.bytes()?;
    let mut numbers = [0; 6];
    for v in &mut numbers {
        *v = r.i64()?;
    }
    Some(Raw {
        path,
        mode,
        oid,
        numbers,
    })
}

/// The index of the repository a workspace is in: its entries by path
/// (relative to the workspace), its submodules, and when it was written (an
/// entry stamped at or after that may have changed again in the same tick:
/// git's "racy" entries).
#[derive(Debug)]
pub(crate) struct GitIndex {
    entries: Entries,
    /// Each entry's offset in `entries`, by its path's hash; a path whose
    /// hash another has already is in `collided`.
    table: HashMap<u64, u32, foldhash::fast::RandomState>,
    collided: HashMap<Vec<u8>, u32, foldhash::fast::RandomState>,
    hasher: foldhash::fast::RandomState,
    /// The paths of submodules (whose files are another repository's).
    pub(crate) submodules: Vec<String>,
    pub(crate) stamp: [i64; 2],
}

impl GitIndex {
    /// The index of `entries` written by [`Entries::push`].
    pub(crate) fn new(entries: Entries, submodules: Vec<String>, stamp: [i64; 2]) -> GitIndex {
        Self::read(entries, submodules, stamp).expect("entries as written")
    }

    /// The index of `entries` read back ([`Entries::from_bytes`]): `None`
    /// unless they are whole and as many as they say.
    pub(crate) fn read(
        entries: Entries,
        submodules: Vec<String>,
        stamp: [i64; 2],
    ) -> Option<GitIndex> {
        let hasher = foldhash::fast::RandomState::default();
        let mut table = HashMap::with_capacity_and_hasher(entries.len, hasher.clone());
        let mut collided = HashMap::with_hasher(hasher.clone());
        let mut r = Reader(&entries.bytes);
        let mut n = 0;
        while !r.is_empty() {
            let at = (entries.bytes.len() - r.0.len()) as u32;
            let raw = one(&mut r)?;
            n += 1;
            if let Some(first) = table.insert(hasher.hash_one(raw.path), at) {
                // Two paths of one hash: the second looked up by name.
                table.insert(hasher.hash_one(raw.path), first);
                collided.insert(raw.path.to_vec(), at);
            }
        }
        (n == entries.len).then_some(GitIndex {
            entries,
            table,
            collided,
            hasher,
            submodules,
            stamp,
        })
    }

    fn at(&self, offset: u32) -> Option<Raw<'_>> {
        one(&mut Reader(self.entries.bytes.get(offset as usize..)?))
    }

    /// The entry of `path`, if git tracks it (and names an object).
    pub(crate) fn get(&self, path: &str) -> Option<IndexEntry<'_>> {
        let path = path.as_bytes();
        let at = *self.table.get(&self.hasher.hash_one(path))?;
        let raw = self.at(at)?;
        if raw.path == path {
            return raw.entry();
        }
        self.at(*self.collided.get(path)?)?.entry()
    }

    /// How many entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len
    }

    /// Every tracked path that is one (relative, UTF-8).
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        let mut r = Reader(&self.entries.bytes);
        std::iter::from_fn(move || one(&mut r).map(|raw| raw.path))
            .filter_map(|p| std::str::from_utf8(p).ok())
            .filter(|p| crate::relpath::is_relative_path(p))
    }

    /// The entries, as [`Entries::as_bytes`] gives them.
    pub(crate) fn entries(&self) -> &Entries {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(oid: &str, ino: u64) -> IndexEntry<'_> {
        IndexEntry {
            oid,
            mode: 0o100644,
            size: 7,
            times: [1, 2, 3, 4],
            ino,
        }
    }

    #[test]
    fn entries_are_found_by_path_and_only_by_it() {
        let mut es = Entries::default();
        let paths: Vec<String> = (0..2000).map(|i| format!("d{}/f{i}.rs", i % 7)).collect();
        for (i, p) in paths.iter().enumerate() {
            es.push(p, &entry("ab12", i as u64));
        }
        let g = GitIndex::new(es, vec![], [0, 0]);
        assert_eq!(g.len(), 2000);
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(g.get(p), Some(entry("ab12", i as u64)), "{p}");
        }
        assert_eq!(g.get("d0/f1.rs"), None);
        assert_eq!(g.get(""), None);
        assert_eq!(g.paths().count(), 2000);
    }

    #[test]
    fn two_paths_of_one_hash_are_both_found() {
        let mut es = Entries::default();
        es.push("a", &entry("aa", 1));
        es.push("b", &entry("bb", 2));
        let mut g = GitIndex::new(es, vec![], [0, 0]);
        // As if "b" hashed as "a" does: its hash leads to "a", and it is
        // found by its name.
        let (ha, hb) = (g.hasher.hash_one(b"a"), g.hasher.hash_one(b"b"));
        let a_at = g.table[&ha];
        let b_at = g.table.insert(hb, a_at).unwrap();
        g.collided.insert(b"b".to_vec(), b_at);
        assert_eq!(g.get("a").map(|e| e.oid), Some("aa"));
        assert_eq!(g.get("b").map(|e| e.oid), Some("bb"));
        assert_eq!(g.get("c"), None);
    }

    #[test]
    fn entries_read_back_whole_and_an_unsound_one_is_never_used() {
        let mut es = Entries::default();
        es.push("a/b", &entry("0a", 1));
        let (bytes, n) = es.as_bytes();
        let read = |b: &[u8], n| GitIndex::read(Entries::from_bytes(b.to_vec(), n), vec![], [0, 0]);
        assert!(read(bytes, n).is_some());
        assert!(read(bytes, n + 1).is_none(), "a count that lies");
        assert!(read(&bytes[..bytes.len() - 1], n).is_none(), "cut short");
        let mut bad = Entries::default();
        for (path, oid) in [("../x", "0a"), ("a", "zz"), ("/etc", "0a"), ("ok", "0b")] {
            bad.push(path, &entry(oid, 1));
        }
        let (b, n) = bad.as_bytes();
        let g = read(b, n).unwrap();
        assert_eq!(
            g.paths().collect::<Vec<_>>(),
            ["a", "ok"],
            "only relative paths"
        );
        assert_eq!(g.get("a"), None, "an object name that is not hex");
        assert_eq!(g.get("ok").map(|e| e.oid), Some("0b"));
    }
}
