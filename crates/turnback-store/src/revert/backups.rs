//! The backups a revert needs, checked before it touches anything, the
//! errors for one that is missing or damaged, and keeping what a file holds
//! as a backup before it is overwritten.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::hash;
use crate::index::FileState;
use crate::session::Session;
use crate::workspace::Workspace;

use super::plan::FilePlan;

/// The error for a backup that is not there under its name: corrupt, if it
/// was found corrupt and moved aside before, else missing.
pub(super) fn missing_backup(session: &Session, rel: &str, hash: &str) -> Error {
    let aside = session.blobs().quarantined(hash);
    let actual = aside.as_ref().and_then(|p| {
        let mut f = std::fs::File::open(p).ok()?;
        hash::hash_reader(&mut f).ok().map(|(h, _)| h)
    });
    match (aside, actual) {
        (Some(aside), Some(actual)) => Error::BlobCorrupt {
            session: session.id().to_owned(),
            path: rel.to_owned(),
            hash: hash.to_owned(),
            actual,
            moved_to: Some(aside.into_boxed_path()),
        },
        _ => Error::BlobMissing {
            session: session.id().to_owned(),
            path: rel.to_owned(),
            hash: hash.to_owned(),
        },
    }
}

/// The error for a backup whose contents do not match its name. The blob is
/// moved aside first (kept, never deleted), so that the next backup of the
/// same bytes writes it whole again instead of trusting the damaged copy.
pub(super) fn corrupt_backup(session: &Session, rel: &str, hash: &str, actual: String) -> Error {
    let moved_to = session
        .blobs()
        .quarantine(hash)
        .ok()
        .map(PathBuf::into_boxed_path);
    Error::BlobCorrupt {
        session: session.id().to_owned(),
        path: rel.to_owned(),
        hash: hash.to_owned(),
        actual,
        moved_to,
    }
}

/// Every backup a revert will write must be there, and when the revert restores
/// more than one file, intact: a damaged backup found half way would leave the
/// revert half done. (A single file's backup is verified as it is copied, before
/// it replaces anything.)
pub(super) fn check_backups(session: &Session, plans: &[FilePlan]) -> Result<()> {
    let writes: Vec<(&FilePlan, &str)> = plans
        .iter()
        .filter(|p| p.touches())
        .filter_map(|p| p.target.sha256.as_deref().map(|h| (p, h)))
        .collect();
    let to_touch = plans.iter().filter(|p| p.touches()).count();
    for (p, hash) in &writes {
        if to_touch <= 1 {
            if !session.blobs().exists(hash) {
                return Err(missing_backup(session, &p.rel, hash));
            }
            continue;
        }
        let mut blob = session
            .blobs()
            .open(hash)
            .map_err(|_| missing_backup(session, &p.rel, hash))?;
        let blob_path = session.blobs().path(hash);
        let (actual, _) = hash::hash_reader(&mut blob).map_err(Error::io("read", &blob_path))?;
        if actual != *hash {
            return Err(corrupt_backup(session, &p.rel, hash, actual));
        }
    }
    Ok(())
}

/// Makes sure what the file holds now (as the check found it) is a backup of
/// the session, and returns its state. A file whose contents are a backup
/// already (the usual case for a redo) is not copied again.
pub(super) fn keep_current(session: &Session, p: &FilePlan) -> Result<FileState> {
    match p.now.sha256.as_deref() {
        None => Ok(FileState::absent()),
        Some(hash) if session.blobs().exists(hash) => {
            // Only its owner is to be read, for a redo to give it back.
            let ws = Workspace::reopen(&p.root)?;
            Ok(match ws.open_regular(&p.rel)? {
                Some(f) => p.now.clone().with_owner(f.owner.0, f.owner.1),
                None => p.now.clone(),
            })
        }
        Some(_) => {
            let ws = Workspace::reopen(&p.root)?;
            session.back_up(&ws, &p.rel)
        }
    }
}
