//! The backups a revert needs, checked before it touches anything, and
//! keeping what a file holds as a backup before it is overwritten.

use crate::error::Result;
use crate::index::FileState;
use crate::session::Session;
use crate::workspace::Workspace;

use super::plan::FilePlan;

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
    let blobs = session.blobs();
    for (p, hash) in &writes {
        if to_touch <= 1 {
            blobs.check_present(session.id(), p.rel.as_str(), hash)?;
            continue;
        }
        blobs
            .open_backup(session.id(), p.rel.as_str(), hash)?
            .verify_whole()?;
    }
    Ok(())
}

/// Makes sure what the file holds now (as the check found it) is a backup of
/// the session, and returns its state. A file whose contents are a backup
/// already (the usual case for a redo) is not copied again.
pub(super) fn keep_current(session: &Session, p: &FilePlan) -> Result<FileState> {
    match p.now.sha256.as_deref() {
        // A directory is its mode; nothing to copy.
        None if p.now.is_dir() => Ok(p.now.clone()),
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
