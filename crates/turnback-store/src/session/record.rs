//! Recording a step's entries under the session's lock, once their backups
//! are stored: each backup a draft names checked still there (an eviction
//! deletes at once every blob no entry names, `blobs/gc.rs`), and stored
//! again from the file if it went.

use time::OffsetDateTime;

use crate::durable::Durability;
use crate::error::Result;
use crate::index::{Entry, FileState};
use crate::journal::Need;
use crate::relpath::RelPath;
use crate::workspace::Workspace;

use super::handle::Session;
use super::write::Draft;

impl Session {
    /// The backup of `before` (the state of `rel`, backed up by this process)
    /// is still there, or is stored again from the file if it still holds it
    /// (and `from_file`). Called under the session's lock as the entry is
    /// recorded, or after it: an entry, once recorded, keeps its backup.
    pub(super) fn still_stored(
        &self,
        workspace: &Workspace,
        rel: &RelPath,
        before: &FileState,
        from_file: bool,
    ) -> Result<()> {
        let Some(hash) = before.sha256.as_deref() else {
            return Ok(());
        };
        if from_file && !self.blobs.exists(hash) {
            // If the file changed meanwhile, this is another blob no entry
            // names, which the next collection takes.
            let _ = self.back_up(workspace, rel);
        }
        let path = rel.under(workspace.root());
        self.blobs
            .check_present(self.id(), &path.to_string_lossy(), hash)
    }

    /// Appends entries for one step (two for a rename, grouped), in the turn
    /// under way, and marks the files as this session leaves them (so that the
    /// stale-read guard lets the agent write them again).
    pub(crate) fn record(
        &self,
        workspace: &Workspace,
        message_id: &str,
        drafts: Vec<Draft>,
    ) -> Result<Vec<Entry>> {
        self.record_marked(workspace, message_id, drafts, None, true)
    }

    /// [`Session::record`] of the changes a scan found, each entry marked with
    /// `mark` (its scan, and with whom the change of each is shared: by the
    /// draft's place). With `stored`, each backup the drafts name is stored
    /// already, and is checked under the session's lock: an eviction in
    /// between may have deleted it, no entry naming it (`blobs/gc.rs`), and
    /// it is then stored again from the file (whose lock the caller holds;
    /// not for a scan, whose files have changed), or the change fails,
    /// naming it ([`Error::BlobMissing`]).
    pub(crate) fn record_marked(
        &self,
        workspace: &Workspace,
        message_id: &str,
        drafts: Vec<Draft>,
        marks: Option<Vec<crate::index::ScanMark>>,
        stored: bool,
    ) -> Result<Vec<Entry>> {
        let root = workspace.identity();
        let grouped = drafts.len() > 1;
        // What the caps count of the new backups (each state that names one).
        let bytes = drafts
            .iter()
            .filter(|d| d.before.sha256.is_some())
            .map(|d| d.before.size)
            .sum();
        let need = Need::Live {
            adds: drafts.len(),
            bytes,
        };
        self.mutate_live(Durability::Full, need, |idx| {
            if stored {
                // A scan's befores are its baseline's, not the files'.
                let from_file = marks.is_none();
                for d in &drafts {
                    self.still_stored(workspace, &d.rel, &d.before, from_file)?;
                }
            }
            let group = grouped.then_some(idx.next_seq);
            let turn = idx.current_turn();
            let mut made = Vec::new();
            let mut marks = marks.clone().map(Vec::into_iter);
            for d in drafts {
                let scan = marks.as_mut().and_then(Iterator::next).map(Box::new);
                let file = d.rel.under(&root.path);
                let version = 1 + idx.entries_for(&file);
                let entry = Entry {
                    seq: idx.take_seq(),
                    message_id: message_id.to_owned(),
                    workspace: root.clone(),
                    path: d.rel.into(),
                    version,
                    time: OffsetDateTime::now_utc(),
                    before: d.before,
                    after: d.after,
                    created_dirs: d.created_dirs.iter().map(RelPath::to_string).collect(),
                    in_flight: d.in_flight,
                    turn,
                    group,
                    scan,
                };
                if let Some(after) = &entry.after {
                    idx.mark_read(file, after.clone());
                }
                idx.insert_entry(entry.clone());
                made.push(entry);
            }
            Ok(made)
        })
    }
}
