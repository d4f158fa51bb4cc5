//! Making a workspace file hold a state a session backed up: the backup
//! copied beside the file and verified against its hash before anything is
//! done with it, then moved over the file; or no file.

use crate::blobs::Blobs;
use crate::error::Result;
use crate::index::FileState;
use crate::layout::SessionDir;
use crate::relpath::RelPath;
use crate::store::Store;
use crate::workspace::{NewContents, Parent, Workspace};

/// New contents for the file of `parent` that hold `state`: its backup (in
/// `blobs`, of session `session`), copied beside the file through the
/// temporary `temp` and verified against its hash before anything is done
/// with them, with its mode and owner. `before_naming` runs first where the
/// temporary gets its name at once ([`NewContents::create_named_then`]).
pub(crate) fn restore_contents<'a>(
    blobs: &Blobs,
    session: &str,
    parent: &'a Parent,
    state: &FileState,
    temp: String,
    before_naming: impl FnOnce() -> Result<()>,
) -> Result<NewContents<'a>> {
    let hash = state.sha256.as_deref().expect("a file to write back");
    let mut backup = blobs.open_backup(session, parent.rel.as_str(), hash)?;
    let source = backup.blob_path();
    let mut new = NewContents::create_named_then(parent, 0o600, temp, before_naming)?;
    let filled = new.fill(backup.reader(), &source);
    let (actual, _) = backup.checked(filled)?;
    backup.verify(&actual)?;
    new.keep_owner(owners_for(state, parent));
    new.seal(state.mode)?;
    Ok(new)
}

/// Who a restored file should belong to: the owner recorded with its backup,
/// else that of the file it replaces (else the process's, and then
/// `NewContents::keep_owner` drops setuid and setgid).
fn owners_for(target: &FileState, parent: &Parent) -> Vec<(u32, u32)> {
    target
        .owner()
        .into_iter()
        .chain(parent.target_owner())
        .collect()
}

/// Makes `rel` in `ws` hold `state`: its contents from the session's backup,
/// verified against their hash before they replace anything (through the
/// temporary `temp`), with its mode; or no file at all; or a directory with
/// its mode. A directory in the way goes only if it is empty (else `rel` is
/// left as it is).
pub(crate) fn write_state(
    store: &Store,
    dir: &SessionDir,
    holder: &str,
    ws: &Workspace,
    rel: &RelPath,
    state: &FileState,
    temp: String,
) -> Result<()> {
    if state.is_dir() {
        let parent = ws
            .parent_of(rel, true)?
            .expect("parent_of creates what is missing");
        if parent.dir_target()?.is_none() && parent.target_kind(ws.root())?.exists() {
            parent.remove_target()?;
        }
        return parent.make_dir_target(ws.root(), state.mode);
    }
    // A directory in the file's place (a scan saw it made) goes if empty.
    if let Some(parent) = ws.parent_of(rel, false)?
        && parent.dir_target()?.is_some()
    {
        let claimed = store.try_lock_dir(&rel.under(ws.root()));
        if claimed.is_none() || !parent.remove_dir_target()? {
            return Ok(());
        }
    }
    if state.sha256.is_none() {
        if let Some(parent) = ws.parent_of(rel, false)?
            && parent.target_kind(ws.root())?.exists()
        {
            parent.remove_target()?;
        }
        return Ok(());
    }
    let _dir_lock = store.lock_parent_dir(ws, rel, holder)?;
    let parent = ws
        .parent_of(rel, true)?
        .expect("parent_of creates what is missing");
    parent.target_kind(ws.root())?;
    let new = restore_contents(&dir.blobs(), dir.id(), &parent, state, temp, || Ok(()))?;
    new.replace_target()
}
