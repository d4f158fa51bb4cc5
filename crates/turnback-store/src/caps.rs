//! The per-session caps: a change that leaves a session with more entries than
//! `max_entries`, or backups of more than `max_bytes`, evicts the oldest
//! entries (whole steps) in the same index update, and the record of the gap
//! remembers them (`evicted.rs`). What the caps never evict: the entries the
//! change itself made, an entry in flight (a writer is on it), and a
//! checkpoint not yet committed (its rollback needs its backup).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::index::{FileState, Index};
use crate::journal::Tracked;

/// How old a backup no entry names must be before it is deleted while some
/// process may be about to name it (a writer stores its backup, then records
/// its entry; a writer that reuses a backup refreshes its time).
pub(crate) const BLOB_GRACE: Duration = Duration::from_secs(3600);

/// A session's caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Entries in effect, at most.
    pub(crate) max_entries: usize,
    /// Bytes of the distinct backups the index names, at most.
    pub(crate) max_bytes: u64,
}

impl Caps {
    /// The caps the settings give.
    pub(crate) fn of(settings: &crate::settings::Settings) -> Caps {
        Caps {
            max_entries: settings.max_entries.value,
            max_bytes: settings.max_bytes.value,
        }
    }
}

/// Every file state whose contents the index keeps as a backup: the entries
/// in effect, those a revert record took away, and what a record restored
/// and overwrote (redo needs them).
fn kept_states(idx: &Index) -> impl Iterator<Item = &FileState> {
    let recorded = idx.history.iter().flat_map(|r| &r.entries);
    let entry_states = idx
        .entries
        .iter()
        .chain(recorded)
        .flat_map(|e| std::iter::once(&e.before).chain(e.after.as_ref()));
    let redo_states = idx
        .history
        .iter()
        .flat_map(|r| &r.files)
        .flat_map(|f| std::iter::once(&f.restored).chain(f.overwritten.as_ref()));
    entry_states.chain(redo_states)
}

/// The names of every backup the index needs.
pub(crate) fn referenced(idx: &Index) -> HashSet<&str> {
    kept_states(idx)
        .filter_map(|s| s.sha256.as_deref())
        .collect()
}

/// The bytes of the distinct backups the index needs (by the sizes of the
/// files backed up): what the `max_bytes` cap counts.
pub(crate) fn stored_bytes(idx: &Index) -> u64 {
    sizes(idx).values().map(|(size, _)| size).sum()
}

/// The states whose contents were backed up: each entry's `before` (in
/// effect or taken away by a revert) and what a revert found and kept for
/// redo (`overwritten`). An `after` is a blob only when it is another
/// state's backup too.
fn backed_up(idx: &Index) -> impl Iterator<Item = &FileState> {
    let recorded = idx.history.iter().flat_map(|r| &r.entries);
    let befores = idx.entries.iter().chain(recorded).map(|e| &e.before);
    let overwritten = idx
        .history
        .iter()
        .flat_map(|r| &r.files)
        .filter_map(|f| f.overwritten.as_ref());
    befores.chain(overwritten)
}

/// Each backup the index needs: its size, and how many states name it.
fn sizes(idx: &Index) -> HashMap<&str, (u64, usize)> {
    let mut refs: HashMap<&str, (u64, usize)> = HashMap::new();
    for s in backed_up(idx) {
        if let Some(h) = s.sha256.as_deref() {
            refs.entry(h).or_insert((s.size, 0)).1 += 1;
        }
    }
    refs
}

/// What one eviction did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Eviction {
    /// Entries evicted.
    pub(crate) entries: usize,
    /// Revert records dropped (redo can no longer put them back).
    pub(crate) records: usize,
}

/// After a change that added entries: evicts the oldest entries (whole
/// steps: a rename's two sides together) until the session is within
/// `caps`, and, if its backups are still over `max_bytes`, the oldest revert
/// records. The entries the change added are never evicted, so a single
/// change larger than a cap is kept alone.
pub(crate) fn enforce(idx: &mut Tracked, caps: Caps) -> Eviction {
    let added: HashSet<u64> = idx.added_entries().into_iter().collect();
    if added.is_empty() {
        return Eviction::default();
    }
    let mut count = idx.entries.len();
    let (evict, records) = {
        let mut refs = sizes(idx);
        let mut bytes: u64 = refs.values().map(|(size, _)| size).sum();
        if count <= caps.max_entries && bytes <= caps.max_bytes {
            return Eviction::default();
        }
        let mut release = |s: &FileState, bytes: &mut u64| {
            if let Some((size, n)) = s.sha256.as_deref().and_then(|h| refs.get_mut(h)) {
                *n -= 1;
                if *n == 0 {
                    *bytes -= *size;
                }
            }
        };
        let over = |count: usize, bytes: u64| count > caps.max_entries || bytes > caps.max_bytes;
        let entries = &idx.entries;
        // Each step's entries found in one pass, and each step weighed
        // once: a shell command's step may hold 100,000 entries, and
        // looking for its members again from each of them is quadratic.
        let mut groups: HashMap<u64, Vec<&crate::index::Entry>> = HashMap::new();
        for e in entries {
            if let Some(g) = e.group {
                groups.entry(g).or_default().push(e);
            }
        }
        let mut evict: Vec<u64> = Vec::new();
        let mut weighed: HashSet<u64> = HashSet::new();
        for e in entries {
            if !over(count, bytes) {
                break;
            }
            let step: Vec<_> = match e.group {
                Some(g) if !weighed.insert(g) => continue,
                Some(g) => groups.remove(&g).unwrap_or_default(),
                None => vec![e],
            };
            let busy = |x: &&crate::index::Entry| {
                added.contains(&x.seq) || x.in_flight.is_some() || x.after.is_none()
            };
            if step.iter().any(busy) {
                continue;
            }
            for x in step {
                evict.push(x.seq);
                count -= 1;
                release(&x.before, &mut bytes);
            }
        }
        let mut records = Vec::new();
        for r in &idx.history {
            if bytes <= caps.max_bytes {
                break;
            }
            records.push(r.id);
            let recorded = r.entries.iter().map(|e| &e.before);
            let files = r.files.iter().filter_map(|f| f.overwritten.as_ref());
            for s in recorded.chain(files) {
                release(s, &mut bytes);
            }
        }
        (evict, records)
    };
    idx.evict(&evict);
    for &id in &records {
        idx.remove_record(id);
    }
    Eviction {
        entries: evict.len(),
        records: records.len(),
    }
}

#[cfg(test)]
mod tests {
    use crate::settings::{Setting, Settings, Source};
    use crate::store::Store;
    use crate::workspace::Workspace;

    fn capped(home: &std::path::Path, entries: usize, bytes: u64) -> Store {
        let settings = Settings {
            max_entries: Setting {
                value: entries,
                source: Source::Default,
            },
            max_bytes: Setting {
                value: bytes,
                source: Source::Default,
            },
            ..Settings::default()
        };
        Store::new(home).with_settings(settings)
    }

    #[test]
    fn evicts_whole_steps_oldest_first_and_never_an_open_checkpoint() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        let s = capped(home.path(), 2, u64::MAX).session("s").unwrap();
        let open = s.checkpoint(&ws, "open.txt", "m0").unwrap();
        s.write(&ws, "a", &b"1"[..], "m1").unwrap();
        s.rename(&ws, "a", "b", "m2").unwrap();
        s.write(&ws, "c", &b"x"[..], "m3").unwrap();
        let seqs: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
        // 1 is a checkpoint not committed; 3 and 4 one step (the rename).
        assert_eq!(seqs, [1, 5]);
        let gap = s.evicted().unwrap().unwrap();
        assert_eq!((gap.entries, gap.through_seq), (3, 4));
        let files: Vec<&str> = gap.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, ["a", "b"]);
        // The checkpoint still rolls back.
        open.rollback().unwrap();
        assert!(!wsdir.path().join("open.txt").exists());
    }

    #[test]
    fn one_change_larger_than_the_byte_cap_is_kept_alone() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        std::fs::write(wsdir.path().join("a"), [b'a'; 50]).unwrap();
        std::fs::write(wsdir.path().join("b"), [b'b'; 500]).unwrap();
        let s = capped(home.path(), 100, 100).session("s").unwrap();
        s.write(&ws, "a", &b"1"[..], "m1").unwrap();
        assert_eq!(s.stored_bytes().unwrap(), 50);
        s.write(&ws, "b", &b"2"[..], "m2").unwrap();
        let seqs: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2], "the big one stays, the older goes");
        assert_eq!(s.stored_bytes().unwrap(), 500);
        s.undo(crate::RevertOptions::default()).unwrap();
        assert_eq!(std::fs::read(wsdir.path().join("b")).unwrap(), [b'b'; 500]);
    }
}
