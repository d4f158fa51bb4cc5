//! What a well-formed entry, revert record and read mark are: checked as an
//! index or a journal line is read, so that nothing in a store written by
//! someone else can make the store touch the wrong thing.

use crate::hash::is_sha256_hex;
use crate::index::{Entry, FileState, Index, ReadMark, RevertRecord};
use crate::relpath::{is_relative_path, is_temp_name};

/// Rejects an entry that could make the store touch the wrong thing: a path
/// that climbs out, a blob name that is not a hash, an unsafe temporary name.
pub(crate) fn check_entry(e: &Entry) -> std::result::Result<(), String> {
    if e.seq == 0 {
        return Err("entry 0 cannot exist: entries are numbered from 1".into());
    }
    if !is_relative_path(&e.path) {
        return Err(format!("entry {} has an unsafe path {:?}", e.seq, e.path));
    }
    if !e.workspace.path.is_absolute() {
        return Err(format!("entry {} has a relative workspace root", e.seq));
    }
    for state in std::iter::once(&e.before).chain(e.after.as_ref()) {
        check_state(state).map_err(|why| format!("entry {}: {why}", e.seq))?;
    }
    if let Some(dir) = e.created_dirs.iter().find(|d| !is_relative_path(d)) {
        return Err(format!("entry {} has an unsafe directory {dir:?}", e.seq));
    }
    if let Some(t) = e.in_flight.as_ref().and_then(|f| f.temp.as_deref())
        && !is_temp_name(t)
    {
        return Err(format!(
            "entry {} has an unsafe temporary name {t:?}",
            e.seq
        ));
    }
    Ok(())
}

/// [`check_entry`] for a revert record: its entries, files and directories.
pub(crate) fn check_record(r: &RevertRecord) -> std::result::Result<(), String> {
    for e in &r.entries {
        check_entry(e)?;
    }
    if let Some(d) = r.removed_dirs.iter().find(|d| !is_relative_path(&d.path)) {
        return Err(format!(
            "revert {} has an unsafe directory {:?}",
            r.id, d.path
        ));
    }
    for f in &r.files {
        if !is_relative_path(&f.path) || !f.workspace.path.is_absolute() {
            return Err(format!("revert {} has an unsafe path {:?}", r.id, f.path));
        }
        for state in std::iter::once(&f.restored).chain(f.overwritten.as_ref()) {
            check_state(state).map_err(|why| format!("revert {}: {why}", r.id))?;
        }
    }
    Ok(())
}

/// [`check_entry`] for a read mark.
pub(crate) fn check_read(m: &ReadMark) -> std::result::Result<(), String> {
    check_state(&m.state).map_err(|why| format!("read mark {}: {why}", m.file.display()))
}

fn check_state(s: &FileState) -> std::result::Result<(), String> {
    if s.dir {
        return match (s.exists, &s.sha256, s.size) {
            (true, None, 0) => Ok(()),
            _ => Err("a directory with contents, or absent".into()),
        };
    }
    match (&s.exists, &s.sha256) {
        (true, Some(h)) if is_sha256_hex(h) => Ok(()),
        (true, Some(h)) => Err(format!("{h:?} is not a SHA-256")),
        (true, None) => Err("an existing file without a hash".into()),
        (false, None) => Ok(()),
        (false, Some(_)) => Err("an absent file with a hash".into()),
    }
}

impl Index {
    /// Rejects what parses but could make the store touch the wrong thing.
    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        let mut last = 0;
        for e in &self.entries {
            if e.seq <= last {
                return Err(format!("entry {} is out of order", e.seq));
            }
            last = e.seq;
        }
        let recorded = self.history.iter().flat_map(|r| &r.entries);
        for e in self.entries.iter().chain(recorded) {
            if e.seq >= self.next_seq {
                return Err(format!(
                    "entry {} is not below next_seq {}",
                    e.seq, self.next_seq
                ));
            }
            check_entry(e)?;
        }
        for r in &self.history {
            check_record(r)?;
        }
        for m in &self.reads {
            check_read(m)?;
        }
        if let Some(f) = self
            .evicted
            .iter()
            .flat_map(|e| &e.files)
            .find(|f| !is_relative_path(&f.path) || !f.workspace.is_absolute())
        {
            return Err(format!("an evicted file has an unsafe path {:?}", f.path));
        }
        Ok(())
    }
}
