//! What was in the workspace before a command but out of its scan's scope
//! (an ignore file named it), and that the command's edit of an ignore file
//! brought into scope: not the command's creation. Never recorded as
//! created, so an undo never deletes it (a `.gitignore` edit once made an
//! undo delete the user's ignored `secret.env`).
//!
//! A path the beginning did not list is the command's only if it changed
//! during the bracket: its status-change time (which every create, write,
//! rename and link sets) is not before the beginning's clock. When an ignore
//! file changed too, a path that changed may still have been there before,
//! ignored: its birth time tells where the system keeps one; where it does
//! not, the path is reported and not recorded.

use std::path::Path;
use std::time::SystemTime;

use super::changes::Candidate;
use super::dirs::DirChanges;
use super::report::Unrecorded;
use super::walk::Stat;

/// The names of the ignore files a scan's walk reads in the workspace.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Takes out of `candidates` (and `dirs.made`) what was there before the
/// bracket began at `clock`, noting in `unrecorded` what cannot be told
/// apart; returns the rest.
pub(super) fn sort_out(
    clock: [i64; 2],
    root: &Path,
    candidates: Vec<Candidate>,
    dirs: &mut DirChanges,
    unrecorded: &mut Vec<Unrecorded>,
) -> Vec<Candidate> {
    let rules_changed = candidates.iter().any(|c| {
        let name = c.path.rsplit('/').next().unwrap_or(&c.path);
        IGNORE_FILES.contains(&name)
    });
    let mut verdict = |path: &str, stat: &Stat| -> bool {
        if !stat.racy(clock) {
            // There before, untouched: not the command's.
            return false;
        }
        if !rules_changed {
            return true;
        }
        match born_at(&root.join(path)) {
            Some(born) => born >= clock,
            None => {
                unrecorded.push(Unrecorded::NoBackup {
                    path: path.to_owned(),
                    reason: "an ignore file changed, and it may have been there before, ignored: \
                             not recorded, so an undo leaves it"
                        .into(),
                });
                false
            }
        }
    };
    let rest = candidates
        .into_iter()
        .filter(|c| match (&c.before, &c.now) {
            (None, Some(stat)) => verdict(&c.path, stat),
            _ => true,
        })
        .collect();
    dirs.made.retain(|d, _| {
        match std::fs::symlink_metadata(root.join(d.as_str())) {
            Ok(md) => verdict(d, &Stat::of(&md)),
            // Gone again: nothing to record of it either way.
            Err(_) => true,
        }
    });
    rest
}

/// When the file at `path` was made, as (seconds, nanoseconds) since the
/// epoch, where the system keeps it (Linux's statx on most file systems,
/// macOS).
fn born_at(path: &Path) -> Option<[i64; 2]> {
    let born = std::fs::symlink_metadata(path).ok()?.created().ok()?;
    let since = born.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    Some([
        i64::try_from(since.as_secs()).ok()?,
        i64::from(since.subsec_nanos()),
    ])
}
