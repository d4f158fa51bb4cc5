//! What several commands share: the FILE and `--message` arguments, the
//! revert flags, and the reports of an entry and of a revert.

use std::path::PathBuf;

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{Conflict, Entry, Error, FileDiff, RevertOptions, RevertReport, Session};

use crate::cli_error::CliError;
use crate::render::Report;

// No doc comments on the flattened structs below: clap would make them the
// about of every command that flattens them.

// FILE and `--message`, of an agent's command on one file.
#[derive(Debug, clap::Args)]
pub(crate) struct FileArgs {
    /// The file, relative to the current directory
    pub file: PathBuf,
    /// The id of the message or tool call making the change
    #[arg(long, short, default_value = "", value_name = "ID")]
    pub message: String,
}

// `--force` and `--dry-run`, of every command that restores files.
#[derive(Debug, clap::Args, Clone, Copy)]
pub(crate) struct RevertFlags {
    /// Overwrite files that changed since the session wrote them
    #[arg(long, short)]
    pub force: bool,
    /// Show what would happen, with a diff; change nothing. Exits 3 when the real command would be refused
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

impl RevertFlags {
    /// The store's options for these flags.
    pub(crate) fn options(&self) -> RevertOptions {
        RevertOptions {
            force: self.force,
            dry_run: self.dry_run,
        }
    }
}

/// One entry a command made or changed: its line, or `{"session", "entry"}`.
pub(crate) struct EntryReport {
    pub(crate) session: String,
    pub(crate) entry: Entry,
    /// What the text line starts with ("committed ").
    pub(crate) prefix: &'static str,
}

impl Report for EntryReport {
    fn json(&self) -> Option<Value> {
        Some(json::session_entry(&self.session, &self.entry))
    }

    fn text(&self, out: &Out) -> String {
        format!("{}{}\n", self.prefix, text::entry_line(out, &self.entry))
    }
}

/// A revert done, or previewed with each file's diff.
pub(crate) struct Reverted {
    /// What was reverted, as the text names it ("undo", "rewind to before m").
    what: String,
    pub(crate) report: RevertReport,
    /// A preview's diff of each file (in the order of `report.files`); empty
    /// for a revert done.
    diffs: Vec<Option<FileDiff>>,
    /// A preview made with `--force`: the real command would not refuse.
    forced: bool,
}

impl Reverted {
    /// The same report, of a command given `--force` when `forced`.
    pub(crate) fn forced(self, forced: bool) -> Reverted {
        Reverted { forced, ..self }
    }
}

impl Report for Reverted {
    fn json(&self) -> Option<Value> {
        let mut v = json::revert(&self.report, &self.diffs);
        // Only a forced revert past what the caps evicted has it.
        if !self.report.evicted.is_empty() {
            v["evicted"] = serde_json::json!(self.report.evicted);
        }
        Some(v)
    }

    fn text(&self, out: &Out) -> String {
        let mut t = text::revert(out, &self.what, &self.report, &self.diffs);
        for f in &self.report.evicted {
            t.push_str(&format!(
                "left {} as it is: the session's caps evicted the changes it would need\n",
                text::escape_path(f)
            ));
        }
        t
    }

    /// A dry run (not forced) that found a file the real command would
    /// refuse for: the real command's refusal, naming the same files.
    fn refusal(&self) -> Option<CliError> {
        if self.report.applied || self.forced {
            return None;
        }
        let conflicts: Vec<Conflict> = self
            .report
            .files
            .iter()
            .filter_map(|f| {
                Some(Conflict {
                    workspace: f.workspace.clone(),
                    path: f.path.clone(),
                    seq: f.seqs.first().copied().unwrap_or(0),
                    reason: f.status.conflict()?.clone(),
                })
            })
            .collect();
        if conflicts.is_empty() {
            return None;
        }
        Some(CliError::from(Error::Refused {
            session: self.report.session.clone(),
            conflicts,
        }))
    }
}

/// The report of a revert; a preview (dry run) comes with each file's diff.
pub(crate) fn reverted(
    session: &Session,
    what: String,
    report: RevertReport,
) -> Result<Reverted, CliError> {
    let diffs: Vec<Option<FileDiff>> = if report.applied {
        Vec::new()
    } else {
        report
            .files
            .iter()
            .map(|f| session.revert_diff(f).map(Some))
            .collect::<Result<_, _>>()?
    };
    Ok(Reverted {
        what,
        report,
        diffs,
        forced: false,
    })
}
