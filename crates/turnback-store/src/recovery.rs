//! Crash recovery: what the next holder of a session's lock does about a
//! writer or a revert whose process died half way, working on the session's
//! directory and the store's locks, never through a session handle.
//!
//! A write-through change in flight whose file lock is free belongs to a
//! dead process: file at "before", the write never happened and the entry
//! goes; otherwise it stays. Either way the temporary name it recorded is
//! deleted, and nothing else. A revert marker (`reverting.json`) belongs to a
//! revert that died: each file it touched whose change the index never
//! recorded is put back to what the revert found (`marker.rs` has the rules).
//!
//! Recovery never waits for a file's lock while the caller holds the
//! session's (it only tries, and what it cannot settle now waits for the
//! next lock holder), and never puts back a file that is not exactly as the
//! dead revert left it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::index::Index;
use crate::journal::Tracked;
use crate::layout::SessionDir;
use crate::marker;
use crate::relpath::{RelPath, is_temp_name};
use crate::restore::write_state;
use crate::store::Store;
use crate::workspace::Workspace;

/// Settles what a dead revert left (see the module's documentation), for a
/// caller holding the session's exclusive lock and the file locks of `held`.
/// `idx` is the index as on disk now. Best effort: what it cannot settle now
/// (a file whose lock is busy) keeps the marker for the next lock holder.
/// `holder` names the caller in the lock it may take on a file's directory.
pub(crate) fn settle_revert(
    store: &Store,
    dir: &SessionDir,
    holder: &str,
    idx: &Index,
    held: Option<&BTreeSet<PathBuf>>,
) {
    let Some(files) = marker::read(dir) else {
        return;
    };
    let mut pending = false;
    // Last first: the revert went in order (what it took away before what
    // it put back, where directories are made or removed), so going back
    // the other way puts a directory back before what goes in it.
    for f in files.iter().rev() {
        // The marker is not the index: its paths are checked here.
        let Some(rel) = RelPath::new(&f.path).filter(|_| is_temp_name(&f.temp)) else {
            continue;
        };
        let Ok(ws) = Workspace::reopen(&f.workspace) else {
            continue;
        };
        let file = rel.under(ws.root());
        let _guard = if held.is_some_and(|h| h.contains(&file)) {
            None
        } else {
            match store.try_lock_file(&file) {
                Some(guard) => Some(guard),
                None => {
                    pending = true;
                    continue;
                }
            }
        };
        if let Ok(Some(parent)) = ws.parent_of(&rel, false) {
            parent.remove_temp(&f.temp);
        }
        if f.done_when.holds(idx) {
            continue;
        }
        let Some(found) = &f.overwritten else {
            continue;
        };
        let Ok(now) = ws.state_of(&rel) else {
            continue;
        };
        // Half way from a file to a directory or back, nothing is there.
        let swapping = f.target.exists && found.exists && f.target.is_dir() != found.is_dir();
        let at_target = now.same_state(&f.target) || swapping && !now.exists;
        if at_target && !now.same_state(found) {
            // Best effort: a backup that cannot be read back leaves the file
            // at the revert's target, which is a version the session holds.
            let _ = write_state(store, dir, holder, &ws, &rel, found, f.temp.clone());
        }
    }
    if !pending {
        marker::remove(dir);
    }
}

/// Recovery for write-through changes whose process died between recording
/// the entry and clearing its mark. An entry whose file lock is held belongs to
/// a live writer and is left alone. `blobs` are the session's backups.
///
/// A file at "before" loses its entry, also when it is at "after" too (a
/// write of the contents it held): then the file cannot tell whether the
/// write happened, and it does not matter, since nothing changed. What
/// matters is that such an entry may name a backup that was never made: a
/// writer records its entry while its backup is still being stored, so a
/// kill in that window left an entry without its blob. Any other file keeps
/// its entry (at "after", or changed since by someone else: its undo will
/// say so).
pub(crate) fn settle_in_flight(store: &Store, idx: &mut Tracked, held: Option<&BTreeSet<PathBuf>>) {
    for seq in idx.in_flight() {
        let e = idx.entry(seq).expect("in flight").clone();
        let file = e.absolute_path();
        let _guard = if held.is_some_and(|h| h.contains(&file)) {
            None
        } else {
            let Some(guard) = store.try_lock_file(&file) else {
                continue;
            };
            Some(guard)
        };
        let Ok(ws) = Workspace::reopen(&e.workspace) else {
            continue;
        };
        let rel = e.rel_path();
        if let (Some(temp), Ok(Some(parent))) = (
            e.in_flight.as_ref().and_then(|f| f.temp.as_deref()),
            ws.parent_of(&rel, false),
        ) {
            parent.remove_temp(temp);
        }
        let Ok(now) = ws.current_state(&rel) else {
            continue;
        };
        if now.same_contents(&e.before) {
            idx.remove_entries(&[seq]);
            let made: Vec<RelPath> = e.created_dirs.iter().map(|d| RelPath::checked(d)).collect();
            store.remove_unused_dirs(&ws, &made);
        } else if let Some(entry) = idx.entry_mut(seq) {
            entry.in_flight = None;
        }
    }
}
