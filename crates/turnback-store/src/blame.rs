//! Which change wrote each line of a file: from the versions the store
//! already holds (every in-effect entry of every session that touched the
//! file, oldest first), the lines of the file as it is now, each with the
//! entry that last changed it, or "by hand" for lines that changed between
//! two entries (or since the last one) without turnback, or "before" for
//! lines already there when the first session backed the file up.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use similar::{DiffOp, TextDiff};

use crate::diff::MAX_DIFF_BYTES;
use crate::error::Result;
use crate::index::{Entry, FileState, Turn};
use crate::session::Session;
use crate::store::Store;
use crate::workspace::Workspace;

/// How long one version's line diff may take before it settles for a
/// coarser answer (whole blocks attributed to the newer version).
const STEP_DEADLINE: Duration = Duration::from_secs(2);

/// Who wrote a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// It was in the file when the first session backed it up.
    Before,
    /// An agent's change through turnback: the session, the entry, and the
    /// turn it was made in (if the session had begun one).
    Entry {
        /// The session id.
        session: String,
        /// The entry (boxed: origins are many, and most are small).
        entry: Box<Entry>,
        /// Its turn, with the prompt.
        turn: Option<Turn>,
    },
    /// Changed without turnback (a person, an editor, a formatter) after
    /// this entry (by index into [`Blame::origins`]) and before the next one,
    /// (or since the last one, for the lines of the file now).
    ByHand {
        /// The origin index of the entry it came after, if any.
        after: Option<usize>,
    },
    /// Either this entry (by index into [`Blame::origins`]) or a change
    /// without turnback after it: what the entry left is kept by no backup
    /// (the file was changed again before any later entry backed it up),
    /// so its change and the later one cannot be told apart.
    EntryOrByHand {
        /// The origin index of the entry.
        entry: usize,
    },
}

/// Each line of a file as it is now, with who last changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blame {
    /// Everyone who wrote a line still there (and those whose lines are
    /// all gone), oldest first; [`Blame::lines`] refer to them by index.
    pub origins: Vec<Origin>,
    /// The lines of the file now (without their line ends), each with the
    /// index of its origin.
    pub lines: Vec<(usize, String)>,
    /// True when a version along the way could not be read (its contents
    /// are kept by no backup): the lines of the next version read are
    /// [`Origin::EntryOrByHand`].
    pub gaps: bool,
}

/// Why a file cannot be blamed line by line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoBlame {
    /// No session has an entry for the file.
    Untouched,
    /// The file (or a version of it) holds a NUL byte or is not UTF-8.
    Binary,
    /// The file (or a version of it) is larger than [`MAX_DIFF_BYTES`].
    TooBig,
}

impl Store {
    /// Blames the file `path` (relative to `workspace`, or absolute): its
    /// lines now, each with the change that last wrote it, across every
    /// session of the store that has an entry for it.
    pub fn blame(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
    ) -> Result<std::result::Result<Blame, NoBlame>> {
        let candidates = workspace.candidate_files(path.as_ref())?;
        // Every in-effect entry of the file, with its session, oldest first.
        let mut sessions: Vec<Session> = Vec::new();
        let mut versions: Vec<(usize, Entry)> = Vec::new();
        for id in self.session_ids()? {
            let Ok(s) = self.open_session(&id) else {
                continue;
            };
            let Ok(entries) = s.entries() else { continue };
            let mine: Vec<Entry> = entries
                .into_iter()
                .filter(|e| candidates.contains(&e.absolute_path()))
                .collect();
            if !mine.is_empty() {
                let at = sessions.len();
                sessions.push(s);
                versions.extend(mine.into_iter().map(|e| (at, e)));
            }
        }
        if versions.is_empty() {
            return Ok(Err(NoBlame::Untouched));
        }
        versions.sort_by_key(|(s, e)| (e.time, *s, e.seq));
        // Where each content hash can be read: the sessions whose backups
        // hold it (every entry's "before" is one).
        let mut holders: HashMap<String, usize> = HashMap::new();
        for (s, e) in &versions {
            if let Some(h) = &e.before.sha256 {
                holders.entry(h.clone()).or_insert(*s);
            }
        }
        let (first_session, first) = &versions[0];
        let (now_state, now) = sessions[*first_session].current_contents(first)?;
        let read = |state: &FileState, path: &str| -> Result<Option<Option<Vec<u8>>>> {
            if !state.exists {
                return Ok(Some(Some(Vec::new())));
            }
            if state.size > MAX_DIFF_BYTES {
                return Ok(Some(None));
            }
            if state.same_contents(&now_state) {
                return Ok(Some(now.clone()));
            }
            let Some(h) = &state.sha256 else {
                return Ok(None);
            };
            match holders.get(h) {
                Some(&s) => Ok(Some(sessions[s].backup_contents(path, state)?)),
                None => Ok(None),
            }
        };

        let mut turns: HashMap<usize, Vec<Turn>> = HashMap::new();
        let mut origins = vec![Origin::Before];
        let mut gaps = false;
        // The lines of the version reached so far, each with its origin.
        let Some(start) = read(&first.before, &first.path)? else {
            return Ok(Ok(Blame {
                origins,
                lines: Vec::new(),
                gaps: true,
            }));
        };
        let mut lines: Vec<(usize, String)> = match text_lines(start)? {
            Ok(l) => l.into_iter().map(|l| (0, l)).collect(),
            Err(no) => return Ok(Err(no)),
        };
        let mut state = first.before.clone();
        let mut last_entry: Option<usize> = None;
        // The entry whose "after" could not be read, until a version is.
        let mut unknown: Option<usize> = None;
        for (s, e) in &versions {
            if !e.before.same_contents(&state) {
                // Changed without turnback since the version before.
                if let Some(contents) = read(&e.before, &e.path)? {
                    origins.push(by_hand(last_entry, unknown.take()));
                    let text = match text_lines(contents)? {
                        Ok(t) => t,
                        Err(no) => return Ok(Err(no)),
                    };
                    lines = step(lines, text, origins.len() - 1);
                } else {
                    gaps = true;
                }
                state = e.before.clone();
            }
            let turn = if e.turn == 0 {
                None
            } else {
                let list = match turns.get(s) {
                    Some(l) => l,
                    None => turns.entry(*s).or_insert(sessions[*s].turn_bounds()?),
                };
                list.iter().find(|t| t.number == e.turn).cloned()
            };
            origins.push(Origin::Entry {
                session: sessions[*s].id().to_owned(),
                entry: Box::new(e.clone()),
                turn,
            });
            last_entry = Some(origins.len() - 1);
            let Some(after) = &e.after else {
                // A checkpoint not committed: what it left is unknown; the
                // next version read says.
                gaps = true;
                unknown = last_entry;
                continue;
            };
            match read(after, &e.path)? {
                Some(contents) => {
                    let text = match text_lines(contents)? {
                        Ok(t) => t,
                        Err(no) => return Ok(Err(no)),
                    };
                    lines = step(lines, text, origins.len() - 1);
                    state = after.clone();
                    unknown = None;
                }
                None => {
                    // Not kept: the next version read is attributed to it
                    // or a change by hand after it.
                    gaps = true;
                    unknown = last_entry;
                    state = after.clone();
                }
            }
        }
        if !now_state.same_contents(&state) {
            origins.push(by_hand(last_entry, unknown));
            let text = match text_lines(now)? {
                Ok(t) => t,
                Err(no) => return Ok(Err(no)),
            };
            lines = step(lines, text, origins.len() - 1);
        }
        Ok(Ok(Blame {
            origins,
            lines,
            gaps,
        }))
    }
}

/// The origin of a change without turnback after `last_entry`, or of one
/// that cannot be told from the entry `unknown` whose result is not kept.
fn by_hand(last_entry: Option<usize>, unknown: Option<usize>) -> Origin {
    match unknown {
        Some(entry) => Origin::EntryOrByHand { entry },
        None => Origin::ByHand { after: last_entry },
    }
}

/// The lines of `contents` (`None`: too big), or why there are none.
fn text_lines(contents: Option<Vec<u8>>) -> Result<std::result::Result<Vec<String>, NoBlame>> {
    let Some(bytes) = contents else {
        return Ok(Err(NoBlame::TooBig));
    };
    if bytes.contains(&0) {
        return Ok(Err(NoBlame::Binary));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(Err(NoBlame::Binary));
    };
    Ok(Ok(text.lines().map(str::to_owned).collect()))
}

/// The lines of `new`, each keeping the origin of its line in `old` when the
/// diff says it is unchanged, else taking `origin`.
fn step(old: Vec<(usize, String)>, new: Vec<String>, origin: usize) -> Vec<(usize, String)> {
    let old_text: Vec<&str> = old.iter().map(|(_, l)| l.as_str()).collect();
    let new_text: Vec<&str> = new.iter().map(String::as_str).collect();
    let diff = TextDiff::configure()
        .timeout(STEP_DEADLINE)
        .diff_slices(&old_text, &new_text);
    let mut out: Vec<Option<usize>> = vec![None; new.len()];
    for op in diff.ops() {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            for i in 0..len {
                out[new_index + i] = Some(old[old_index + i].0);
            }
        }
    }
    new.into_iter()
        .zip(out)
        .map(|(line, o)| (o.unwrap_or(origin), line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_keeps_the_origin_of_unchanged_lines() {
        let old = vec![
            (0, "a".to_owned()),
            (1, "b".to_owned()),
            (0, "c".to_owned()),
        ];
        let new = vec!["a".into(), "B".into(), "c".into(), "d".into()];
        let got = step(old, new, 2);
        let origins: Vec<usize> = got.iter().map(|(o, _)| *o).collect();
        assert_eq!(origins, [0, 2, 0, 2]);
    }
}
