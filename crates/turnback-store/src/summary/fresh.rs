//! Each session's summary as it is now: its record when the record's stamp
//! is the versions of the index's files (looked at under the session's
//! shared lock, as reading the index would be), else computed from the
//! index read under that lock and written back for the next lookup. So a
//! lookup reads the index only of the sessions that changed since a lookup
//! last did, and the answer is always the one the index gives.

use std::path::Path;

use super::files::SummaryDir;
use super::filter::PathFilter;
use super::record::{FileLine, Header, Record};
use crate::error::Result;
use crate::layout::{SessionDir, SummaryPaths};
use crate::lock::Mode;
use crate::store::Store;

/// One session's summary, as a lookup uses it.
#[derive(Debug)]
pub(crate) struct Summary {
    /// The session id.
    pub(crate) id: String,
    /// Everything but the files.
    pub(crate) header: Header,
    /// The header's filter, decoded.
    filter: PathFilter,
    /// The files, once read (or computed).
    files: Option<Vec<FileLine>>,
}

impl Summary {
    /// False only when the session's record names no file at `key` (a
    /// [`super::key_of`]) and none under it (below its root).
    pub(crate) fn may_hold(&self, key: &Path) -> bool {
        self.filter.may_contain(key)
    }

    /// The summary of a record read from its file (`None`: its filter is
    /// damaged).
    fn read(id: &str, header: Header) -> Option<Summary> {
        Some(Summary {
            id: id.to_owned(),
            filter: header.path_filter()?,
            header,
            files: None,
        })
    }
}

/// The sessions of a home, summarized: from [`Store::summaries`].
pub(crate) struct Summaries<'a> {
    store: &'a Store,
    dir: Option<SummaryDir>,
}

impl Store {
    /// The summaries of the home's sessions, for one lookup. The summary
    /// directory is used only if it passes the trust check (another user's,
    /// one others may write, or a link is never read or written: the lookup
    /// then reads every index, as without a summary).
    pub(crate) fn summaries(&self) -> Summaries<'_> {
        let paths = SummaryPaths::new(self.home());
        let dir = self
            .secure_store_dir(&paths.dir)
            .ok()
            .map(|()| SummaryDir::new(paths));
        Summaries { store: self, dir }
    }
}

impl Summaries<'_> {
    /// Session `id`'s summary now; an error when its index cannot be read
    /// (busy past the session lock timeout, damaged, unsafe), as reading it
    /// would give.
    pub(crate) fn of(&self, id: &str) -> Result<Summary> {
        let dir = self.store.session_dir(id);
        crate::trust::check_dir(dir.path())?;
        let timeout = self.store.options().session_lock_timeout;
        let _guard = dir.lock(Mode::Shared, timeout)?;
        let stamp = dir.index_stamp()?;
        if let Some(header) = self.dir.as_ref().and_then(|d| d.read_header(id))
            && header.stamp == stamp
            && let Some(summary) = Summary::read(id, header)
        {
            return Ok(summary);
        }
        self.computed(&dir, stamp)
    }

    /// Computes session `dir`'s record from its index (under its lock, which
    /// the caller holds) and writes it.
    fn computed(&self, dir: &SessionDir, stamp: crate::layout::IndexStamp) -> Result<Summary> {
        let idx = dir.load()?;
        let record = Record::of(dir.id(), &idx, stamp);
        if let Some(d) = &self.dir {
            // A record not written is only computed again next time.
            let _ = d.write(dir.id(), &record);
        }
        Ok(Summary {
            id: dir.id().to_owned(),
            header: record.header,
            filter: record.filter,
            files: Some(record.files),
        })
    }

    /// The file lines of `summary`, read from its record if that still has
    /// its stamp, else computed again (with its header) from the index.
    pub(crate) fn files<'s>(&self, summary: &'s mut Summary) -> Result<&'s [FileLine]> {
        if summary.files.is_none() {
            let read = self
                .dir
                .as_ref()
                .and_then(|d| d.read_files(&summary.id, &summary.header.stamp));
            match read {
                Some(files) => summary.files = Some(files),
                None => {
                    let dir = self.store.session_dir(&summary.id);
                    crate::trust::check_dir(dir.path())?;
                    let timeout = self.store.options().session_lock_timeout;
                    let _guard = dir.lock(Mode::Shared, timeout)?;
                    let stamp = dir.index_stamp()?;
                    *summary = self.computed(&dir, stamp)?;
                }
            }
        }
        Ok(summary.files.as_deref().unwrap_or_default())
    }

    /// Drops the records of sessions that are no longer there and the
    /// temporaries of writers that died (prune's sweep).
    pub(crate) fn sweep(&self, exists: impl Fn(&str) -> bool) {
        if let Some(d) = &self.dir {
            d.sweep(exists);
        }
    }

    /// Drops session `id`'s record (prune removed the session).
    pub(crate) fn forget(&self, id: &str) {
        if let Some(d) = &self.dir {
            d.remove(id);
        }
    }
}
