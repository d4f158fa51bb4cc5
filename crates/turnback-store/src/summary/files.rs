//! The summary's files: reading a record's header (its first line alone)
//! and its file lines, writing a record (through a temporary of its own,
//! renamed over), and removing records and temporaries.
//!
//! Everything read here is a cache of the indexes: whatever cannot be read,
//! or does not parse, or is another user's or a link, is read as no record
//! (the caller computes it from the index again). Nothing here decides
//! whether a record is still true: its caller compares its stamp.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};

use super::record::{FileLine, Header, RECORD_FORMAT, Record, parse_files};
use crate::error::{Error, Result};
use crate::layout::{IndexStamp, SummaryPaths};
use crate::trust;

/// The longest header line read: a longer one is a damaged record.
const MAX_HEADER: u64 = 4 * 1024 * 1024;

/// The summary directory of a home, once it passed the trust check.
#[derive(Debug, Clone)]
pub(crate) struct SummaryDir {
    paths: SummaryPaths,
}

impl SummaryDir {
    /// The directory at `paths`, which the caller checked (or will make).
    pub(crate) fn new(paths: SummaryPaths) -> SummaryDir {
        SummaryDir { paths }
    }

    /// Session `id`'s record's header, if there is a whole one of this
    /// format and of this session.
    pub(crate) fn read_header(&self, id: &str) -> Option<Header> {
        let mut reader = self.open(id)?;
        let header = read_header_line(&mut reader)?;
        (header.format == RECORD_FORMAT && header.session == id).then_some(header)
    }

    /// Session `id`'s record's file lines, if its header still has `stamp`
    /// (another reader may have written a newer one since) and every line
    /// is there.
    pub(crate) fn read_files(&self, id: &str, stamp: &IndexStamp) -> Option<Vec<FileLine>> {
        let mut reader = self.open(id)?;
        let header = read_header_line(&mut reader)?;
        if header.format != RECORD_FORMAT || header.session != id || &header.stamp != stamp {
            return None;
        }
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).ok()?;
        parse_files(&rest, header.files)
    }

    fn open(&self, id: &str) -> Option<BufReader<File>> {
        let file = trust::open_read(&self.paths.record(id)).ok()?;
        Some(BufReader::with_capacity(16 * 1024, file))
    }

    /// Writes session `id`'s record: a temporary of this process, renamed
    /// over the record. Not synced: a record lost in a power cut is
    /// computed again, and a torn one does not parse (its header counts
    /// its lines).
    pub(crate) fn write(&self, id: &str, record: &Record) -> Result<()> {
        let dir = &self.paths.dir;
        crate::sys::create_store_dir_all(dir).map_err(Error::io("create directory", dir))?;
        let temp = self.paths.temp(crate::session_id::random_u64());
        let written = (|| {
            let mut f = trust::open(
                crate::sys::store_file_options()
                    .write(true)
                    .create_new(true),
                &temp,
            )
            .map_err(trust::store_io("create", &temp))?;
            f.write_all(&record.to_bytes())
                .map_err(Error::io("write", &temp))?;
            drop(f);
            let target = self.paths.record(id);
            std::fs::rename(&temp, &target).map_err(Error::io("rename into place", &target))
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written
    }

    /// Removes session `id`'s record, if there is one.
    pub(crate) fn remove(&self, id: &str) {
        let _ = std::fs::remove_file(self.paths.record(id));
    }

    /// Removes the records of sessions `exists` denies, and the temporaries
    /// of processes that are gone (a writer killed before its rename).
    pub(crate) fn sweep(&self, exists: impl Fn(&str) -> bool) {
        let Ok(read) = std::fs::read_dir(&self.paths.dir) else {
            return;
        };
        for e in read.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let orphan = SummaryPaths::id_of(name).is_some_and(|id| !exists(id));
            let dead = SummaryPaths::temp_writer(name)
                .is_some_and(|pid| pid != std::process::id() && !crate::sys::process_exists(pid));
            if orphan || dead {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// A record's first line, parsed; `None` when it is not a whole header.
fn read_header_line(reader: &mut BufReader<File>) -> Option<Header> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(MAX_HEADER)
        .read_until(b'\n', &mut line)
        .ok()?;
    if n == 0 || line.last() != Some(&b'\n') {
        return None;
    }
    serde_json::from_slice(&line).ok()
}
