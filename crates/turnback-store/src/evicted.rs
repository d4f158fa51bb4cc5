//! What a session's caps evicted, remembered (format 4's `evicted`): how many
//! entries, up to which one, and for each file and each message the newest
//! entry that went. So `log` can show the gap, and an undo, revert or rewind
//! that reaches past it can name the files it cannot restore instead of
//! restoring them to a state they never had at the point asked for.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::relpath::is_relative_path;

/// The entries a session's caps evicted (oldest first, whole steps), in
/// summary: what a revert needs to know it cannot go back past them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// How many entries were evicted, in all.
    pub entries: u64,
    /// The newest entry evicted (every entry evicted has a `seq` up to it).
    pub through_seq: u64,
    /// When the oldest entry evicted was made.
    #[serde(with = "time::serde::rfc3339")]
    pub oldest: OffsetDateTime,
    /// When the newest entry evicted was made.
    #[serde(with = "time::serde::rfc3339")]
    pub newest: OffsetDateTime,
    /// Each file with an entry evicted: its newest one. Sorted by workspace,
    /// then path.
    pub files: Vec<EvictedFile>,
    /// Each message with an entry evicted: its oldest one. Oldest first.
    pub messages: Vec<EvictedMessage>,
}

/// A file with entries evicted, and its newest one.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct EvictedFile {
    /// The workspace root.
    pub workspace: PathBuf,
    /// The file's path relative to it.
    pub path: String,
    /// The newest entry of the file evicted.
    pub seq: u64,
    /// Its message.
    pub message_id: String,
    /// Its turn.
    pub turn: u32,
}

impl EvictedFile {
    /// The file's absolute path.
    pub fn absolute_path(&self) -> PathBuf {
        self.workspace.join(&self.path)
    }
}

/// A message with entries evicted, and its oldest one.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct EvictedMessage {
    /// The message id.
    pub id: String,
    /// Its oldest entry evicted.
    pub seq: u64,
    /// That entry's turn.
    pub turn: u32,
}

/// One entry evicted, as a journal line's `evict` op lists it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gone {
    pub(crate) seq: u64,
    pub(crate) message_id: String,
    pub(crate) turn: u32,
    pub(crate) workspace: PathBuf,
    pub(crate) path: String,
    #[serde(with = "time::serde::rfc3339")]
    pub(crate) time: OffsetDateTime,
}

impl Gone {
    /// Rejects what could make a revert name a file outside its workspace.
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        if !is_relative_path(&self.path) || !self.workspace.is_absolute() {
            return Err(format!(
                "evicted entry {} has an unsafe path {:?}",
                self.seq, self.path
            ));
        }
        Ok(())
    }
}

impl Evicted {
    /// The record of `gone` alone.
    fn first(gone: &Gone) -> Evicted {
        Evicted {
            entries: 0,
            through_seq: 0,
            oldest: gone.time,
            newest: gone.time,
            files: Vec::new(),
            messages: Vec::new(),
        }
    }

    /// Adds `gone` to the record `evicted` (made with it when there is none).
    pub(crate) fn add(evicted: &mut Option<Evicted>, gone: &Gone) {
        let e = evicted.get_or_insert_with(|| Evicted::first(gone));
        e.entries += 1;
        e.through_seq = e.through_seq.max(gone.seq);
        e.oldest = e.oldest.min(gone.time);
        e.newest = e.newest.max(gone.time);
        let key = |f: &EvictedFile| (f.workspace.clone(), f.path.clone());
        let wanted = (gone.workspace.clone(), gone.path.clone());
        let file = EvictedFile {
            workspace: gone.workspace.clone(),
            path: gone.path.clone(),
            seq: gone.seq,
            message_id: gone.message_id.clone(),
            turn: gone.turn,
        };
        match e.files.binary_search_by(|f| key(f).cmp(&wanted)) {
            Ok(i) if e.files[i].seq < gone.seq => e.files[i] = file,
            Ok(_) => {}
            Err(i) => e.files.insert(i, file),
        }
        // Entries go oldest first: a message seen before is nearly always
        // the last one.
        match e.messages.iter().rposition(|m| m.id == gone.message_id) {
            Some(i) if e.messages[i].seq > gone.seq => {
                e.messages[i].seq = gone.seq;
                e.messages[i].turn = gone.turn;
            }
            Some(_) => {}
            None => e.messages.push(EvictedMessage {
                id: gone.message_id.clone(),
                seq: gone.seq,
                turn: gone.turn,
            }),
        }
    }

    /// The oldest entry evicted of message `id`, if any was.
    pub fn message(&self, id: &str) -> Option<&EvictedMessage> {
        self.messages.iter().find(|m| m.id == id)
    }

    /// The files whose newest evicted entry is `seq` or newer: what a revert
    /// of everything from `seq` on cannot put back as it was.
    pub fn files_since_seq(&self, seq: u64) -> Vec<&EvictedFile> {
        self.files.iter().filter(|f| f.seq >= seq).collect()
    }

    /// The files whose newest evicted entry belongs to turn `turn` or a later
    /// one: what a rewind to that turn cannot put back.
    pub fn files_since_turn(&self, turn: u32) -> Vec<&EvictedFile> {
        self.files.iter().filter(|f| f.turn >= turn).collect()
    }

    /// The evicted record of the file at absolute path `file`.
    pub fn file(&self, file: &Path) -> Option<&EvictedFile> {
        self.files.iter().find(|f| f.absolute_path() == file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gone(seq: u64, msg: &str, path: &str) -> Gone {
        Gone {
            seq,
            message_id: msg.into(),
            turn: seq as u32,
            workspace: "/w".into(),
            path: path.into(),
            time: OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(seq as i64),
        }
    }

    #[test]
    fn keeps_the_newest_entry_of_each_file_and_the_oldest_of_each_message() {
        let mut e = None;
        for g in [gone(1, "m1", "a"), gone(2, "m1", "b"), gone(3, "m2", "a")] {
            Evicted::add(&mut e, &g);
        }
        let e = e.unwrap();
        assert_eq!((e.entries, e.through_seq), (3, 3));
        let files: Vec<_> = e.files.iter().map(|f| (f.path.as_str(), f.seq)).collect();
        assert_eq!(files, [("a", 3), ("b", 2)]);
        assert_eq!(e.message("m1").unwrap().seq, 1);
        assert_eq!(e.message("m2").unwrap().seq, 3);
        let since: Vec<_> = e
            .files_since_seq(3)
            .iter()
            .map(|f| f.path.clone())
            .collect();
        assert_eq!(since, ["a"]);
        assert_eq!(e.files_since_turn(2).len(), 2);
        assert_eq!(e.oldest.unix_timestamp(), 1);
        assert_eq!(e.newest.unix_timestamp(), 3);
        assert!(gone(1, "m", "../x").check().is_err());
    }
}
