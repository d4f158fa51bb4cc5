//! The store-level summary: one record per session (`<home>/summary/`) of
//! what the lookups across sessions need (which workspaces and files it
//! touched, its newest change per file), so that finding the session that
//! changed a file last, or the newest one with changes under a directory,
//! listing the sessions, or a scan's commit finding what other sessions
//! recorded in its workspace during its bracket, reads the index only of
//! sessions that changed since a lookup last looked (or, for the scan, that
//! have entries that recent). A record is a cache, never trusted over the index:
//! it is used only while its stamp is the versions of the index's files,
//! looked at under the session's shared lock, and anything else (missing,
//! damaged, stale, another session's or another user's) is computed from
//! the index again.
//!
//! One job per part: `filter` the path filter of a record, `record` its
//! format and building one from an index, `files` its files, `fresh` each
//! session's summary as it is now.

mod files;
mod filter;
mod fresh;
mod record;
#[cfg(test)]
mod tests;

pub(crate) use filter::key_of;
pub(crate) use fresh::Summary;
pub(crate) use record::Newest;
