//! Applying a revert: the marker first, then chunk by chunk the files' new
//! contents prepared and verified, what each file holds backed up, and the
//! files replaced or deleted; and writing one file back from a backup.

use crate::error::{Error, Result};
use crate::index::FileState;
use crate::marker::{self, DoneWhen, MarkedFile};
use crate::restore::restore_contents;
use crate::session::Session;
use crate::workspace::{NewContents, Parent, Workspace};

use super::backups::keep_current;
use super::plan::FilePlan;

/// What [`apply`] did: each file restored, with what it held before (backed
/// up; `None` when not kept or not touched), in order, and how it ended.
pub(super) struct Applied<'p> {
    pub(super) restored: Vec<(&'p FilePlan, Option<FileState>)>,
    pub(super) outcome: Result<()>,
}

/// How many files [`apply`] prepares at once: each holds two descriptors
/// (its directory and its new contents) until it is renamed into place, and
/// one lock of its directory; fewer where the process may open fewer
/// descriptors, keeping room for the rest.
fn chunk_size() -> usize {
    const MOST: usize = 64;
    let limit = crate::sys::open_file_limit().unwrap_or(1024);
    let room = usize::try_from(limit.saturating_sub(48) / 4).unwrap_or(MOST);
    room.clamp(4, MOST)
}

/// Restores the files of `plans` in order, writing the revert down
/// ([`marker`]) before any temporary gets a name and before any file is
/// replaced. Chunk by chunk, every file's
/// new contents are made and verified first; then (with `keep`) what each
/// file holds is backed up and the marker rewritten with it, so that a
/// replacement is backed up only once it is known good and recovery can put
/// back every file touched; then the files are replaced. Stops at the first
/// file that fails; the caller records what was restored (the index then
/// matches the files) and removes the marker.
pub(super) fn apply<'p>(
    session: &Session,
    plans: &'p [FilePlan],
    keep: bool,
    done_when: impl Fn(&FilePlan) -> DoneWhen,
) -> Result<Applied<'p>> {
    if marker::exists(session.session_dir()) {
        // A dead revert's marker that could not be settled yet (one of its
        // files was busy): writing ours would lose what it knows.
        return Err(Error::SessionBusy {
            session: session.id().to_owned(),
            waited: std::time::Duration::ZERO,
        });
    }
    let temps: Vec<String> = plans
        .iter()
        .map(|_| crate::relpath::new_temp_name())
        .collect();
    // Each touched plan's place in the marker.
    let mut slot = Vec::with_capacity(plans.len());
    let mut marked: Vec<MarkedFile> = Vec::new();
    for (p, temp) in plans.iter().zip(&temps) {
        slot.push(p.touches().then_some(marked.len()));
        if p.touches() {
            marked.push(MarkedFile {
                workspace: p.root.clone(),
                path: p.rel.to_string(),
                temp: temp.clone(),
                target: p.target.clone(),
                overwritten: None,
                done_when: done_when(p),
            });
        }
    }
    let mut applied = Applied {
        restored: Vec::new(),
        outcome: Ok(()),
    };
    // The marker is written before the first named temporary (only where the
    // filesystem cannot make unnamed ones) and, with `keep`, before each
    // chunk's files are replaced; an unnamed temporary vanishes with a crash.
    let mut marker = Marking {
        files: marked,
        written: false,
    };
    for chunk in chunks(plans) {
        let (restored, outcome) =
            apply_chunk(session, plans, &chunk, &temps, &slot, keep, &mut marker);
        applied.restored.extend(restored);
        if outcome.is_err() {
            applied.outcome = outcome;
            break;
        }
    }
    Ok(applied)
}

/// The plans in chunks of at most [`chunk_size`], in order. A chunk ends after a
/// file that becomes a directory again: what goes inside it is prepared in
/// the next one, once the directory is there.
fn chunks(plans: &[FilePlan]) -> Vec<Vec<usize>> {
    let size = chunk_size();
    let mut out = Vec::new();
    let mut chunk = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        chunk.push(i);
        let file_to_dir = p.touches() && p.target.is_dir() && p.now.exists && !p.now.is_dir();
        if chunk.len() == size || file_to_dir {
            out.push(std::mem::take(&mut chunk));
        }
    }
    if !chunk.is_empty() {
        out.push(chunk);
    }
    out
}

/// The marker of a revert being applied, and whether it is on disk yet.
struct Marking {
    files: Vec<MarkedFile>,
    written: bool,
}

impl Marking {
    fn write(&mut self, session: &Session) -> Result<()> {
        if !self.files.is_empty() {
            marker::write(session.session_dir(), &self.files)?;
            self.written = true;
        }
        Ok(())
    }

    /// Says durably what the files at `slots` hold now, before they are
    /// replaced: appended to the marker once it is written.
    fn update(&mut self, session: &Session, slots: &[usize]) -> Result<()> {
        if !self.written {
            return self.write(session);
        }
        let changed: Vec<MarkedFile> = slots.iter().map(|&at| self.files[at].clone()).collect();
        if changed.is_empty() {
            return Ok(());
        }
        marker::append(session.session_dir(), &changed)
    }
}

/// What [`apply_chunk`] restored, and how it ended.
type ChunkOutcome<'p> = (Vec<(&'p FilePlan, Option<FileState>)>, Result<()>);

/// One chunk of [`apply`]: prepare, back up and mark, replace.
fn apply_chunk<'p>(
    session: &Session,
    plans: &'p [FilePlan],
    chunk: &[usize],
    temps: &[String],
    slot: &[Option<usize>],
    keep: bool,
    marker: &mut Marking,
) -> ChunkOutcome<'p> {
    let fail = |e| (Vec::new(), Err(e));
    // The directories of the files to write, made where missing, and held
    // (their locks, shared) until the files are in place.
    let mut parents: Vec<Option<Parent>> = Vec::with_capacity(chunk.len());
    let mut dir_locks = Vec::new();
    for &i in chunk {
        let p = &plans[i];
        let parent = match (p.touches(), p.target.sha256.is_some()) {
            (true, true) => match Workspace::reopen(&p.root).and_then(|ws| {
                dir_locks.extend(session.lock_parent_dir(&ws, &p.rel)?);
                let parent = ws
                    .parent_of(&p.rel, true)?
                    .expect("parent_of creates what is missing");
                // A directory there now goes first (`replace`).
                if !p.now.is_dir() {
                    parent.target_kind(ws.root())?;
                }
                Ok(parent)
            }) {
                Ok(parent) => Some(parent),
                Err(e) => return fail(e),
            },
            _ => None,
        };
        parents.push(parent);
    }
    // Their new contents, verified, before anything is backed up or replaced.
    let mut news: Vec<Option<NewContents<'_>>> = Vec::with_capacity(chunk.len());
    for (&i, parent) in chunk.iter().zip(&parents) {
        let new = match parent {
            Some(parent) => {
                let temp = temps[i].clone();
                match prepare(session, parent, &plans[i], temp, &mut *marker) {
                    Ok(new) => Some(new),
                    Err(e) => return fail(e),
                }
            }
            None => None,
        };
        news.push(new);
    }
    let mut found: Vec<Option<FileState>> = Vec::with_capacity(chunk.len());
    for &i in chunk {
        let p = &plans[i];
        found.push(match (keep, p.touches()) {
            (true, true) => match keep_current(session, p) {
                Ok(f) => Some(f),
                Err(e) => return fail(e),
            },
            _ => None,
        });
    }
    if keep {
        let mut slots = Vec::with_capacity(chunk.len());
        for (&i, f) in chunk.iter().zip(&found) {
            if let Some(at) = slot[i] {
                marker.files[at].overwritten = f.clone();
                slots.push(at);
            }
        }
        if let Err(e) = marker.update(session, &slots) {
            return fail(e);
        }
    }
    let mut restored = Vec::with_capacity(chunk.len());
    for ((&i, new), found) in chunk.iter().zip(news).zip(found) {
        let p = &plans[i];
        if let Err(e) = replace(session, p, new).and_then(|()| remove_temps(p)) {
            return (restored, Err(e));
        }
        restored.push((p, found));
    }
    (restored, Ok(()))
}

/// The new contents of a file to write back: its backup, copied beside it
/// through the temporary `temp` and verified against its hash, with its mode.
fn prepare<'a>(
    session: &Session,
    parent: &'a Parent,
    p: &FilePlan,
    temp: String,
    marker: &mut Marking,
) -> Result<NewContents<'a>> {
    let blobs = session.blobs();
    restore_contents(
        blobs,
        session.id(),
        parent,
        &p.target,
        temp,
        || match marker.written {
            true => Ok(()),
            false => marker.write(session),
        },
    )
}

/// Puts the prepared contents in place, or deletes a file whose target is
/// absence, or makes a directory again; a file already at its target is left
/// alone. A directory there now (one a scan saw made, emptied by the plans
/// before this one) is removed first; one that is not empty stays, and a
/// file cannot go back in its place.
fn replace(session: &Session, p: &FilePlan, new: Option<NewContents>) -> Result<()> {
    if !p.touches() {
        return Ok(());
    }
    let ws = Workspace::reopen(&p.root)?;
    if p.now.is_dir()
        && !p.target.is_dir()
        && let Some(parent) = ws.parent_of(&p.rel, false)?
    {
        // Its lock, which no writer into it holds, while it goes.
        let gone = match session.store().try_lock_dir(&p.file()) {
            Some(_claimed) => parent.remove_dir_target()?,
            None => false,
        };
        if !gone && p.target.exists {
            return Err(Error::io("remove directory", p.file())(
                std::io::Error::from(std::io::ErrorKind::DirectoryNotEmpty),
            ));
        }
        if !gone {
            return Ok(());
        }
    }
    match new {
        Some(new) => new.replace_target(),
        None if p.target.is_dir() => {
            let parent = ws
                .parent_of(&p.rel, true)?
                .expect("parent_of creates what is missing");
            if parent.dir_target()?.is_none() && parent.target_kind(ws.root())?.exists() {
                parent.remove_target()?;
            }
            parent.make_dir_target(ws.root(), p.target.mode)
        }
        None => {
            if let Some(parent) = ws.parent_of(&p.rel, false)?
                && parent.dir_target()?.is_none()
                && parent.target_kind(ws.root())?.exists()
            {
                parent.remove_target()?;
            }
            Ok(())
        }
    }
}

/// Deletes the temporaries that dead writers of the plan's entries left.
fn remove_temps(p: &FilePlan) -> Result<()> {
    if p.temps.is_empty() {
        return Ok(());
    }
    let ws = Workspace::reopen(&p.root)?;
    if let Some(parent) = ws.parent_of(&p.rel, false)? {
        for t in &p.temps {
            parent.remove_temp(t);
        }
    }
    Ok(())
}
