//! A session's summary, `index.summary`: what a change that only adds
//! entries or finishes open ones needs of the index (the counters, the turn
//! under way, the entries in flight or not committed, the caps' totals, and
//! each file's number of entries), so that such a process reads it instead
//! of replaying the whole index.
//!
//! It is a cache, never trusted over the index: it names the index files it
//! was computed from (device, inode, length and modification time of the
//! snapshot and the journal, how far the journal was read and its last
//! bytes there) and carries checksums of itself. One that does not match the
//! files exactly, or does not check, is ignored: the index is read whole, and
//! the next change writes a new summary. Every change this build makes writes
//! it after its journal line, under the session's exclusive lock; it is not
//! synced (a summary lost or torn in a crash is one full read).
//!
//! `index.summary` is a line with the checksum (16 hex digits) of the rest,
//! then a JSON line (the header); `index.summary.table` each file's number
//! of entries (`table.rs`), appended to by each change, of which the header
//! names the length and checksum it holds.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::state::State;
use super::table::{Table, checksum};
use crate::index::{Entry, FileState, RevertRecord, Turn};
use crate::index_check;
use crate::trust;

/// The summary's own format; a summary of another is ignored.
const VERSION: u32 = 1;

/// Which index files a summary (or a handle's cache) was computed from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    /// The snapshot's [`crate::sys::FileVersion`].
    pub(super) snapshot: crate::sys::FileVersion,
    /// The journal's, if there was one.
    pub(super) journal: Option<crate::sys::FileVersion>,
    /// Bytes of the journal read: the end of its last whole line.
    pub(super) offset: u64,
    /// The newest journal record applied.
    pub(super) last_n: u64,
    /// The journal's last bytes before `offset`, in hex.
    pub(super) tail: String,
}

/// The summary's files, as `layout.rs` names them: `index.summary` and
/// `index.summary.table`, and the temporaries they are replaced through.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub(crate) head: PathBuf,
    pub(crate) head_temp: PathBuf,
    pub(crate) table: PathBuf,
    pub(crate) table_temp: PathBuf,
}

/// What a change did to the entries and revert records, each as it was
/// before and after ([`super::Tracked`] knows both): what brings a summary
/// up to date without the whole index.
#[derive(Debug, Default)]
pub(crate) struct Delta {
    pub(super) entries: Vec<(Option<Entry>, Option<Entry>)>,
    pub(super) records: Vec<(Option<RevertRecord>, Option<RevertRecord>)>,
}

/// The summary's header: everything but the files' numbers of entries.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(super) struct Header {
    summary: u32,
    session: String,
    pub(super) stamp: Stamp,
    pub(super) next_seq: u64,
    pub(super) next_turn: u32,
    pub(super) next_record: u64,
    /// The newest turn (the one under way), if any.
    pub(super) turn: Option<Turn>,
    /// Entries in effect.
    pub(super) entries: u64,
    /// The sizes of the backed-up states the `max_bytes` cap looks at
    /// (`caps.rs`), each counted every time a state names it: never less
    /// than the distinct bytes the cap counts.
    pub(super) backups: u64,
    /// The entries in flight or not committed, by `seq`.
    pub(super) live: Vec<Entry>,
    /// What `index.summary.table` holds: its first `len` bytes, `lines`
    /// lines of `files` files, whose checksum is `sum`.
    table: TableStamp,
}

/// What a header says of the table.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
struct TableStamp {
    len: u64,
    sum: u64,
    lines: u64,
    files: u64,
}

/// A summary in memory.
#[derive(Debug, Clone)]
pub(super) struct Summary {
    pub(super) head: Header,
    /// Each file's number of entries.
    pub(super) table: Table,
    /// How many bytes of the table the table file holds as the header on
    /// disk says (so the next write appends the rest), or `None`: the file
    /// is to be written anew.
    on_disk: Option<u64>,
}

/// True for an entry a summary keeps whole: in flight or not committed.
pub(super) fn is_live(e: &Entry) -> bool {
    e.in_flight.is_some() || e.after.is_none()
}

/// The bytes a backed-up state counts for.
fn backed(s: &FileState) -> u64 {
    if s.sha256.is_some() { s.size } else { 0 }
}

fn record_bytes(r: &RevertRecord) -> u64 {
    let entries: u64 = r.entries.iter().map(|e| backed(&e.before)).sum();
    let files: u64 = r
        .files
        .iter()
        .filter_map(|f| f.overwritten.as_ref())
        .map(backed)
        .sum();
    entries + files
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Summary {
    /// The summary of a whole index (`None` for a state that is itself a
    /// summary's, or that holds a path a table cannot).
    pub(super) fn of(state: &State, session: &str, stamp: Stamp) -> Option<Summary> {
        let mut table = Table::new();
        for (file, n) in state.file_counts()? {
            table.push_new(file, n)?;
        }
        let idx = &**state;
        let recorded: u64 = idx.history.iter().map(record_bytes).sum();
        let befores: u64 = idx.entries.iter().map(|e| backed(&e.before)).sum();
        Some(Summary {
            head: Header {
                summary: VERSION,
                session: session.to_owned(),
                stamp,
                next_seq: idx.next_seq,
                next_turn: idx.next_turn,
                next_record: idx.next_record,
                turn: idx.turns.last().cloned(),
                entries: idx.entries.len() as u64,
                backups: befores + recorded,
                live: idx.entries.iter().filter(|e| is_live(e)).cloned().collect(),
                table: TableStamp::default(),
            },
            table,
            on_disk: None,
        })
    }

    /// Brings the summary up to date with a change (`state` as it left the
    /// index): `false` when it cannot tell, and must be made anew.
    pub(super) fn apply(&mut self, delta: &Delta, state: &State) -> bool {
        let head = &mut self.head;
        let mut live: BTreeSet<u64> = head.live.iter().map(|e| e.seq).collect();
        let mut files: BTreeSet<PathBuf> = BTreeSet::new();
        for (old, new) in &delta.entries {
            if let Some(o) = old {
                head.entries = head.entries.saturating_sub(1);
                head.backups = head.backups.saturating_sub(backed(&o.before));
                live.remove(&o.seq);
                files.insert(o.absolute_path());
            }
            if let Some(n) = new {
                head.entries += 1;
                head.backups += backed(&n.before);
                if is_live(n) {
                    live.insert(n.seq);
                }
                files.insert(n.absolute_path());
            }
        }
        for (old, new) in &delta.records {
            let gone = old.as_ref().map_or(0, record_bytes);
            let added = new.as_ref().map_or(0, record_bytes);
            head.backups = (head.backups + added).saturating_sub(gone);
        }
        let mut entries = Vec::with_capacity(live.len());
        for seq in live {
            match state.entry(seq) {
                Some(e) => entries.push(e.clone()),
                None => return false,
            }
        }
        head.live = entries;
        let idx = &**state;
        head.next_seq = idx.next_seq;
        head.next_turn = idx.next_turn;
        head.next_record = idx.next_record;
        head.turn = idx.turns.last().cloned();
        files.iter().all(|f| {
            let n = state.entries_for(f);
            self.table.count(f) == n || self.table.set(f, n)
        })
    }

    /// True when a change that adds at most `adds` entries naming `bytes`
    /// of new backups leaves the session with at most `max_entries` entries
    /// and `max_bytes` of backups: it then evicts nothing, and needs nothing
    /// else of the index.
    pub(super) fn fits(&self, adds: usize, bytes: u64, max_entries: usize, max_bytes: u64) -> bool {
        let entries = self.head.entries.saturating_add(adds as u64);
        let backups = self.head.backups.saturating_add(bytes);
        entries <= max_entries as u64 && backups <= max_bytes
    }

    /// The state a change works on: the open entries, the counters and the
    /// turn under way, with the table's numbers of entries.
    pub(super) fn state(&self) -> State {
        let h = &self.head;
        let index = crate::index::Index {
            journal: h.stamp.last_n,
            next_seq: h.next_seq,
            entries: h.live.clone(),
            turns: h.turn.iter().cloned().collect(),
            next_turn: h.next_turn,
            next_record: h.next_record,
            ..crate::index::Index::empty(&h.session)
        };
        State::of_summary(index, self.table.bytes.clone())
    }

    /// Reads the session's summary: `None` when there is none, or it is
    /// damaged, of another format or session, or not well formed.
    pub(super) fn read(files: &Paths, session: &str) -> Option<Summary> {
        let mut bytes = Vec::new();
        trust::open_read(&files.head)
            .ok()?
            .read_to_end(&mut bytes)
            .ok()?;
        let head = Summary::parse(&bytes, session)?;
        let t = &head.table;
        let mut table = Vec::with_capacity(t.len as usize);
        let f = trust::open_read(&files.table).ok()?;
        f.take(t.len).read_to_end(&mut table).ok()?;
        if table.len() as u64 != t.len {
            return None;
        }
        let table = Table::checked(table, t.sum, t.lines, t.files)?;
        let on_disk = Some(t.len);
        Some(Summary {
            head,
            table,
            on_disk,
        })
    }

    /// The header of the bytes of `index.summary`, if they check.
    fn parse(bytes: &[u8], session: &str) -> Option<Header> {
        let nl = memchr::memchr(b'\n', bytes)?;
        let sum = u64::from_str_radix(std::str::from_utf8(&bytes[..nl]).ok()?, 16).ok()?;
        let rest = &bytes[nl + 1..];
        if checksum(rest) != sum {
            return None;
        }
        let head: Header = serde_json::from_slice(rest.strip_suffix(b"\n")?).ok()?;
        let ordered = head.live.windows(2).all(|w| w[0].seq < w[1].seq);
        let sound = head
            .live
            .iter()
            .all(|e| is_live(e) && e.seq < head.next_seq && index_check::check_entry(e).is_ok());
        let turn_ok = head.turn.as_ref().is_none_or(|t| t.number < head.next_turn);
        let counted = head.entries >= head.live.len() as u64;
        if head.summary != VERSION || head.session != session {
            return None;
        }
        (ordered && sound && turn_ok && counted).then_some(head)
    }

    /// The bytes of `index.summary`: the checksum line and the header.
    fn head_bytes(head: &Header) -> Option<Vec<u8>> {
        let mut rest = serde_json::to_vec(head).ok()?;
        rest.push(b'\n');
        let mut bytes = format!("{:016x}\n", checksum(&rest)).into_bytes();
        bytes.extend_from_slice(&rest);
        Some(bytes)
    }

    /// Writes the summary: what the table file lacks of the table (all of
    /// it, through its temporary, when it is written anew), then the header
    /// through its temporary. Not synced. Best effort: on a failure the
    /// header is removed (an older one must not outlive a change it does
    /// not know), and the next change writes it all again.
    pub(super) fn write(&mut self, files: &Paths) {
        if self.table.wants_rewrite() {
            self.table = self.table.rewritten();
            self.on_disk = None;
        }
        let t = &self.table;
        self.head.table = TableStamp {
            len: t.bytes.len() as u64,
            sum: t.sum,
            lines: t.lines,
            files: t.files,
        };
        let written = self.write_table(files).and_then(|()| {
            let bytes = Summary::head_bytes(&self.head)
                .ok_or_else(|| std::io::Error::other("a summary that does not serialize"))?;
            replace(&files.head, &files.head_temp, &bytes)
        });
        match written {
            Ok(()) => self.on_disk = Some(self.table.bytes.len() as u64),
            Err(_) => {
                let _ = std::fs::remove_file(&files.head);
                self.on_disk = None;
            }
        }
    }

    fn write_table(&self, files: &Paths) -> std::io::Result<()> {
        let bytes = &self.table.bytes;
        let Some(had) = self.on_disk.filter(|&n| n <= bytes.len() as u64) else {
            return replace(&files.table, &files.table_temp, bytes);
        };
        let opts = crate::sys::store_file_options().write(true).clone();
        let mut f = trust::open(&opts, &files.table)?;
        // What a writer that died appended after the header's length goes.
        f.set_len(had)?;
        f.seek(SeekFrom::Start(had))?;
        f.write_all(&bytes[had as usize..])
    }
}

/// Replaces the store file `path` with `bytes` through `temp` (not synced).
fn replace(path: &Path, temp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let opts = crate::sys::store_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .clone();
    let written = trust::open(&opts, temp).and_then(|mut f| f.write_all(bytes));
    let renamed = written.and_then(|()| std::fs::rename(temp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    renamed
}

/// What the summary reader accepts of `body` (the bytes of `index.summary`
/// after its checksum line, given the right checksum, which random bytes
/// would never have) holds only entries an index accepts, makes a state,
/// and reads back the same once written (for the fuzz target).
pub(crate) fn round_trip(body: &[u8]) {
    let mut bytes = format!("{:016x}\n", checksum(body)).into_bytes();
    bytes.extend_from_slice(body);
    let Some(head) = Summary::parse(&bytes, "fuzz") else {
        return;
    };
    assert!(
        head.live
            .iter()
            .all(|e| index_check::check_entry(e).is_ok())
    );
    let s = Summary {
        head,
        table: Table::new(),
        on_disk: None,
    };
    assert_eq!(s.state().entries.len(), s.head.live.len());
    let again = Summary::head_bytes(&s.head).expect("it was read");
    let again = Summary::parse(&again, "fuzz").expect("read again");
    assert_eq!(again.live, s.head.live);
    assert_eq!(again.stamp, s.head.stamp);
    assert_eq!(again.table, s.head.table);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_summary_is_no_summary() {
        let dir = tempfile::tempdir().unwrap();
        let sdir = crate::layout::SessionDir::at(dir.path().to_owned(), "s");
        let files = &sdir.index_files().summary;
        let mut state = State::new(crate::index::Index::empty("s"));
        let mut e = crate::index::tests::entry_at(1, "a");
        e.after = None;
        state.put_entry(e);
        state.index.next_seq = 2;
        let stamp = Stamp {
            snapshot: (1, 2, 3, 4, 5),
            journal: None,
            offset: 0,
            last_n: 0,
            tail: String::new(),
        };
        let mut made = Summary::of(&state, "s", stamp).unwrap();
        made.write(files);
        let read = Summary::read(files, "s").unwrap();
        assert_eq!(read.head.live.len(), 1);
        assert_eq!(read.table.count(Path::new("/w/a")), 1);
        assert!(Summary::read(files, "other").is_none());
        for (path, at) in [(&files.head, 3), (&files.table, 2)] {
            let good = std::fs::read(path).unwrap();
            let mut bad = good.clone();
            let n = bad.len();
            bad[n - at] ^= 1;
            std::fs::write(path, &bad).unwrap();
            assert!(Summary::read(files, "s").is_none(), "{}", path.display());
            std::fs::write(path, &good).unwrap();
        }
        // A table a writer that died appended to is read as far as the
        // header says, and the next write cuts the rest off.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&files.table)
            .unwrap();
        f.write_all(b"\"/w/torn").unwrap();
        let mut read = Summary::read(files, "s").unwrap();
        read.table.set(Path::new("/w/b"), 1);
        read.write(files);
        let again = Summary::read(files, "s").unwrap();
        assert_eq!(again.table, read.table);
        assert_eq!(unhex(&hex(b"\x00\xffab")).unwrap(), b"\x00\xffab");
    }

    #[test]
    fn the_fuzz_seed_is_a_summary() {
        let seed =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/summary/open_checkpoint");
        let body = std::fs::read(seed).unwrap();
        let mut bytes = format!("{:016x}\n", checksum(&body)).into_bytes();
        bytes.extend_from_slice(&body);
        let head = Summary::parse(&bytes, "fuzz").expect("accepted");
        assert_eq!(head.live.len(), 1);
        assert_eq!(head.turn.as_ref().map(|t| t.number), Some(1));
        round_trip(&body);
    }
}
