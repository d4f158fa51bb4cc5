//! A handle's cache made from the session's summary (`summary.rs`): a
//! partial state for a change that needs only what the summary holds, and
//! the summary written after every change.

use std::io::{Read, Seek, SeekFrom};

use super::file::{FileId, Files, Loaded, open_journal, stat};
use super::summary::{self, Delta, Stamp, Summary};
use crate::error::Result;

impl Loaded {
    /// [`Loaded::refresh`] for a change that needs only what the summary
    /// holds (`Need::Live`): a partial state from the summary when it matches
    /// the files, else the whole index.
    pub(crate) fn refresh_live(
        cache: &mut Option<Loaded>,
        files: &Files,
        session: &str,
    ) -> Result<()> {
        if let Some(l) = cache.as_mut() {
            let fresh = match l.state.is_partial() {
                true => l.unchanged(files)?,
                false => l.catch_up(files)?,
            };
            if fresh {
                return Ok(());
            }
        }
        *cache = None;
        *cache = Some(match Loaded::from_summary(files, session)? {
            Some(l) => l,
            None => Loaded::read(files, session)?,
        });
        Ok(())
    }

    /// True when the files are the ones this cache was read from.
    fn unchanged(&self, files: &Files) -> Result<bool> {
        let snapshot = stat(&files.index)?.map(|m| FileId::of(&m));
        let journal = stat(&files.journal)?.map(|m| FileId::of(&m));
        Ok(snapshot == self.snapshot && journal == self.journal)
    }

    /// A partial state from the session's summary, if it is there, checks,
    /// and was made from the index files as they are now (see `summary.rs`).
    fn from_summary(files: &Files, session: &str) -> Result<Option<Loaded>> {
        let Some(summary) = Summary::read(&files.summary, session) else {
            return Ok(None);
        };
        let st = &summary.head.stamp;
        let Some(tail) = summary::unhex(&st.tail).filter(|t| t.len() as u64 <= st.offset) else {
            return Ok(None);
        };
        let loaded = Loaded {
            state: summary.state(),
            snapshot: Some(FileId(st.snapshot)),
            journal: st.journal.map(FileId),
            offset: st.offset,
            last_n: st.last_n,
            tail,
            summary: None,
        };
        if !loaded.unchanged(files)? || loaded.journal.is_some_and(|j| j.len() < loaded.offset) {
            return Ok(None);
        }
        // The bytes before `offset` must be the ones the summary saw there
        // (a journal torn in a power cut can keep its length).
        if !loaded.tail.is_empty() {
            let Some(mut f) = open_journal(&files.journal)? else {
                return Ok(None);
            };
            let mut seen = vec![0; loaded.tail.len()];
            let start = loaded.offset - seen.len() as u64;
            let read = f
                .seek(SeekFrom::Start(start))
                .and_then(|_| f.read_exact(&mut seen));
            if read.is_err() || seen != loaded.tail {
                return Ok(None);
            }
        }
        Ok(Some(Loaded {
            summary: Some(summary),
            ..loaded
        }))
    }

    /// True when a change that adds at most `adds` entries naming `bytes`
    /// of new backups leaves the session within the caps (`max_entries`
    /// entries, `max_bytes` of backups) by what the summary in memory says:
    /// it then evicts nothing, and the caps need not look at the index.
    /// `false` when there is no summary to tell.
    pub(crate) fn within_caps(
        &self,
        adds: usize,
        bytes: u64,
        max_entries: usize,
        max_bytes: u64,
    ) -> bool {
        self.summary
            .as_ref()
            .is_some_and(|s| s.fits(adds, bytes, max_entries, max_bytes))
    }

    /// What names the files this cache holds, for its summary.
    fn stamp(&self) -> Option<Stamp> {
        Some(Stamp {
            snapshot: self.snapshot?.0,
            journal: self.journal.map(|j| j.0),
            offset: self.offset,
            last_n: self.last_n,
            tail: summary::hex(&self.tail),
        })
    }

    /// Writes the summary of the index as this cache now holds it, made from
    /// the whole index if need be. Best effort (`summary.rs`).
    pub(super) fn save_summary(&mut self, files: &Files) {
        let Some(stamp) = self.stamp() else {
            return;
        };
        match &mut self.summary {
            Some(s) => s.head.stamp = stamp,
            None => self.summary = Summary::of(&self.state, &self.state.index.session, stamp),
        }
        match &mut self.summary {
            Some(s) => s.write(&files.summary),
            // No summary can say this index: none may say an older one.
            None => {
                let _ = std::fs::remove_file(&files.summary.head);
            }
        }
    }

    /// Brings the summary in memory up to date with a change, or drops it:
    /// a whole index makes it again when it is written, and a partial state
    /// without one writes none (and is given no more changes).
    pub(super) fn note_change(&mut self, delta: &Delta) {
        const SMALL: usize = 16;
        let partial = self.state.is_partial();
        let keep = match &mut self.summary {
            Some(s) if partial || delta.entries.len() <= SMALL => s.apply(delta, &self.state),
            _ => false,
        };
        if !keep {
            self.summary = None;
        }
    }
}

/// Whether the summary of the session whose index files are `files` says
/// what the whole index says, where it is trusted (it matches the files):
/// `Err` names what differs. For the model test and the fuzz targets.
pub(crate) fn summary_agrees(files: &Files, session: &str) -> std::result::Result<(), String> {
    let Some(partial) = Loaded::from_summary(files, session).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let whole = Loaded::read(files, session).map_err(|e| e.to_string())?;
    let stamp = whole.stamp().ok_or("a summary without a snapshot")?;
    let ours = partial.summary.as_ref().expect("made from one");
    if stamp != ours.head.stamp {
        return Err(format!("stamps {:?} and {stamp:?}", ours.head.stamp));
    }
    let theirs = Summary::of(&whole.state, session, stamp).ok_or("no summary of the index")?;
    let (a, b) = (&ours.head, &theirs.head);
    let (ours_t, theirs_t) = (ours.table.rewritten(), theirs.table.rewritten());
    let same = (a.next_seq, a.next_turn, a.next_record, a.entries)
        == (b.next_seq, b.next_turn, b.next_record, b.entries)
        && a.turn == b.turn
        && a.live == b.live
        && a.backups == b.backups
        && ours_t.bytes == theirs_t.bytes
        && ours.table.files == theirs_t.files;
    match same {
        true => Ok(()),
        false => Err(format!(
            "the summary says {a:?} and {:?}, the index {b:?} and {:?}",
            String::from_utf8_lossy(&ours_t.bytes[..]),
            String::from_utf8_lossy(&theirs_t.bytes[..])
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::durable::Durability;
    use crate::journal::{change, change_again};

    fn files(dir: &tempfile::TempDir) -> Files {
        crate::layout::SessionDir::at(dir.path().to_owned(), "s")
            .index_files()
            .clone()
    }

    /// Adds an entry for `path` through `cache`, numbered as a write would.
    fn add(cache: &mut Option<Loaded>, files: &Files, path: &str) {
        let file = Path::new("/w").join(path);
        change_again(cache, files, "s", Durability::Full, |t| {
            let mut e = crate::index::tests::entry_at(t.take_seq(), path);
            e.version = 1 + t.entries_for(&file);
            t.insert_entry(e);
            Ok(())
        })
        .unwrap();
    }

    /// A session with entries for a, b, a through a whole index.
    fn session() -> (tempfile::TempDir, Files) {
        let dir = tempfile::tempdir().unwrap();
        let files = files(&dir);
        let mut cache = None;
        for p in ["a", "b", "a"] {
            change(&mut cache, &files, "s", Durability::Full, |_| Ok(())).unwrap();
            add(&mut cache, &files, p);
        }
        (dir, files)
    }

    fn live(files: &Files) -> Option<Loaded> {
        let mut cache = None;
        Loaded::refresh_live(&mut cache, files, "s").unwrap();
        cache
    }

    #[test]
    fn a_new_handle_changes_the_summary_and_agrees_with_the_index() {
        let (_dir, files) = session();
        let mut cache = live(&files);
        let state = &cache.as_ref().unwrap().state;
        assert!(state.is_partial(), "made from the summary");
        assert!(state.entries.is_empty(), "no entry is open");
        assert_eq!(state.entries_for(Path::new("/w/a")), 2);
        add(&mut cache, &files, "a");
        add(&mut cache, &files, "c");
        summary_agrees(&files, "s").unwrap();
        let whole = Loaded::read(&files, "s").unwrap();
        let versions: Vec<(u64, u32)> = whole
            .state
            .entries
            .iter()
            .map(|e| (e.seq, e.version))
            .collect();
        assert_eq!(versions, [(1, 1), (2, 1), (3, 2), (4, 3), (5, 1)]);
        // And the next one goes on from there.
        let next = live(&files);
        assert!(next.as_ref().unwrap().state.is_partial());
        assert_eq!(next.unwrap().state.entries_for(Path::new("/w/a")), 3);
    }

    #[test]
    fn a_summary_that_does_not_match_the_files_is_not_used() {
        let (_dir, files) = session();
        let paths = [&files.summary.head, &files.summary.table];
        let summary = paths.map(|p| std::fs::read(p).unwrap());
        let put_back = || {
            for (p, bytes) in paths.iter().zip(&summary) {
                std::fs::write(p, bytes).unwrap();
            }
        };
        let journal = std::fs::read(&files.journal).unwrap();
        // A change the summary does not know of (an older build's).
        let mut whole = None;
        Loaded::refresh(&mut whole, &files, "s").unwrap();
        add(&mut whole, &files, "d");
        let ahead = std::fs::read(&files.journal).unwrap();
        put_back();
        assert!(Summary::read(&files.summary, "s").is_some());
        assert!(
            !live(&files).unwrap().state.is_partial(),
            "an older summary"
        );
        // A journal whose last line a power cut zeroed, at the same length.
        let mut zeroed = journal.clone();
        let n = zeroed.len();
        zeroed[n - 10..].fill(0);
        std::fs::write(&files.journal, &zeroed).unwrap();
        let stamp = &Summary::read(&files.summary, "s").unwrap().head.stamp;
        let meta = std::fs::metadata(&files.journal).unwrap();
        let mut st = stamp.clone();
        st.journal = Some(crate::sys::version_of(&meta));
        let mut s = Summary::read(&files.summary, "s").unwrap();
        s.head.stamp = st;
        s.write(&files.summary);
        assert!(!live(&files).unwrap().state.is_partial(), "a torn journal");
        // A damaged summary.
        std::fs::write(&files.journal, &ahead).unwrap();
        let mut cache = None;
        Loaded::refresh(&mut cache, &files, "s").unwrap();
        add(&mut cache, &files, "e");
        assert!(live(&files).unwrap().state.is_partial());
        let mut bytes = std::fs::read(&files.summary.table).unwrap();
        let n = bytes.len();
        bytes[n - 2] ^= 0x01;
        std::fs::write(&files.summary.table, &bytes).unwrap();
        assert!(
            !live(&files).unwrap().state.is_partial(),
            "a damaged summary"
        );
    }
}
