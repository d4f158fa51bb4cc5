//! The summary's table (`summary.rs`): each file's number of entries in
//! effect, as lines (its absolute path as a JSON string, a space, the
//! number) that are only ever appended: a file's newest line says its
//! number (0: none), so that a change appends a line instead of rewriting
//! the table, and a lookup finds a line without parsing the others. The
//! table is written anew, one line per file, once it holds twice as many
//! lines as files.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// A table and what a summary's header says of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Table {
    /// The lines (shared with the partial state made from the table, which
    /// copies them only if a change sets a number).
    pub(super) bytes: Arc<Vec<u8>>,
    /// Their checksum, line by line (so that appending continues it).
    pub(super) sum: u64,
    /// How many lines.
    pub(super) lines: u64,
    /// How many files have entries (a newest line not 0).
    pub(super) files: u64,
}

/// A file's key in the table: its path as a JSON string (`None`: a path that
/// is not UTF-8, which an index cannot hold either).
pub(super) fn key(file: &Path) -> Option<Vec<u8>> {
    serde_json::to_vec(file).ok()
}

/// The number on the newest line of `file` in `bytes` (0 when none).
pub(super) fn count(bytes: &[u8], file: &Path) -> u32 {
    let Some(mut k) = key(file) else {
        return 0;
    };
    k.push(b' ');
    let mut with_nl = vec![b'\n'];
    with_nl.extend_from_slice(&k);
    let start = match memchr::memmem::rfind(bytes, &with_nl) {
        Some(i) => i + 1,
        None if bytes.starts_with(&k) => 0,
        None => return 0,
    };
    let rest = &bytes[start + k.len()..];
    let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end])
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A checksum of `bytes` that a torn or damaged file fails (not a defence
/// against someone who can write the store: they can write the index too).
pub(super) fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(PRIME).rotate_left(23);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h ^ (h >> 29)
}

/// The checksum `sum` continued over one more line.
fn fold(sum: u64, line: &[u8]) -> u64 {
    (sum ^ checksum(line))
        .wrapping_mul(0x0000_0100_0000_01b3)
        .rotate_left(17)
}

impl Table {
    /// An empty table.
    pub(super) fn new() -> Table {
        Table::default()
    }

    /// The table whose lines are `bytes`, if `sum`, `lines` and `files` are
    /// what they say (what a reader checks).
    pub(super) fn checked(bytes: Vec<u8>, sum: u64, lines: u64, files: u64) -> Option<Table> {
        let mut t = Table::new();
        if !(bytes.is_empty() || bytes.ends_with(b"\n")) {
            return None;
        }
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            t.sum = fold(t.sum, line);
            t.lines += 1;
        }
        t.bytes = Arc::new(bytes);
        t.files = files;
        (t.sum == sum && t.lines == lines).then_some(t)
    }

    /// The number of entries of `file`.
    pub(super) fn count(&self, file: &Path) -> u32 {
        count(&self.bytes, file)
    }

    /// Adds the line of a file not in the table yet (making a table anew).
    pub(super) fn push_new(&mut self, file: &Path, n: u32) -> Option<()> {
        let mut line = key(file)?;
        line.extend_from_slice(format!(" {n}\n").as_bytes());
        self.sum = fold(self.sum, &line);
        self.lines += 1;
        self.files += u64::from(n > 0);
        Arc::make_mut(&mut self.bytes).extend_from_slice(&line);
        Some(())
    }

    /// Sets `file`'s number to `n`, by a line appended; `false` for a path
    /// a table cannot hold.
    pub(super) fn set(&mut self, file: &Path, n: u32) -> bool {
        let Some(mut line) = key(file) else {
            return false;
        };
        let old = self.count(file);
        line.extend_from_slice(format!(" {n}\n").as_bytes());
        self.sum = fold(self.sum, &line);
        self.lines += 1;
        Arc::make_mut(&mut self.bytes).extend_from_slice(&line);
        match (old, n) {
            (0, 1..) => self.files += 1,
            (1.., 0) => self.files -= 1,
            _ => {}
        }
        true
    }

    /// True when the table should be written anew: twice as many lines as
    /// files, and more than a few.
    pub(super) fn wants_rewrite(&self) -> bool {
        self.lines > 64 && self.lines > 2 * self.files
    }

    /// The same numbers, one line per file.
    pub(super) fn rewritten(&self) -> Table {
        let mut newest: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
        for line in self.bytes.split_inclusive(|&b| b == b'\n') {
            if let Some(at) = memchr::memrchr(b' ', line) {
                newest.insert(&line[..at], line);
            }
        }
        let mut t = Table::new();
        for line in newest.into_values() {
            if line.strip_suffix(b"\n").unwrap_or(line).ends_with(b" 0") {
                continue;
            }
            t.sum = fold(t.sum, line);
            t.lines += 1;
            t.files += 1;
            Arc::make_mut(&mut t.bytes).extend_from_slice(line);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_finds_counts_and_sets_each_file_alone() {
        let mut t = Table::new();
        let (a, ab, b) = (Path::new("/w/a"), Path::new("/w/a b"), Path::new("/w/b"));
        t.set(a, 2);
        t.set(ab, 5);
        t.set(b, 1);
        assert_eq!((t.count(a), t.count(ab), t.count(b)), (2, 5, 1));
        t.set(a, 3);
        t.set(b, 0);
        assert_eq!((t.count(a), t.count(ab), t.count(b)), (3, 5, 0));
        assert_eq!(t.count(Path::new("/w")), 0);
        assert_eq!((t.lines, t.files), (5, 2));
        let again = Table::checked(t.bytes.to_vec(), t.sum, t.lines, t.files).unwrap();
        assert_eq!(again, t);
        let r = t.rewritten();
        assert_eq!((r.count(a), r.count(ab), r.count(b)), (3, 5, 0));
        assert_eq!((r.lines, r.files), (2, 2));
        assert!(Table::checked(r.bytes.to_vec(), r.sum, r.lines, r.files).is_some());
        let mut torn = t.bytes.to_vec();
        torn.pop();
        assert!(Table::checked(torn, t.sum, t.lines, t.files).is_none());
    }
}
