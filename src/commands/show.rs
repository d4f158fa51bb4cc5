//! `turnback show #N`: one entry, what it did and its diff (or every entry
//! of a message).

use serde_json::Value;
use turnback::entry_view::{self, Shown};
use turnback::output::Out;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::naming::{self, Target};
use crate::render::Report;

/// Show one entry (#N) or a message's entries: what each did, and its diff
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  turnback show '#4'\n  turnback show 4\n  turnback show toolu_01A     # every entry of the message with this id (or unique prefix)"
)]
pub(crate) struct ShowArgs {
    /// The entry as #N or N (as `turnback log` prints it), or a message id or a unique prefix of one
    #[arg(value_name = "#N|MESSAGE", required_unless_present = "entry")]
    target: Option<String>,
    /// The entry, as `--entry N` (the same as `#N`)
    #[arg(long, value_name = "N", value_parser = naming::entry_number, conflicts_with = "target")]
    entry: Option<u64>,
}

/// The entries shown.
pub(crate) struct ShowReport {
    session: String,
    shown: Vec<Shown>,
}

impl Report for ShowReport {
    fn json(&self) -> Option<Value> {
        Some(entry_view::show_json(&self.session, &self.shown))
    }

    fn text(&self, out: &Out) -> String {
        entry_view::show(out, &self.session, &self.shown)
    }

    fn paged(&self) -> bool {
        true
    }
}

pub(crate) fn run(ctx: &Context, args: &ShowArgs) -> Result<ShowReport, CliError> {
    let session = ctx.person_session()?;
    let entries = session.entries()?;
    let target = match (&args.target, args.entry) {
        (Some(t), _) => t.clone(),
        (None, Some(n)) => format!("#{n}"),
        (None, None) => unreachable!("clap requires a target or --entry"),
    };
    let chosen: Vec<_> = match naming::target(&entries, &target)? {
        Target::Entry(n) => vec![session.entry(n)?],
        Target::Message(m) => {
            let of: Vec<_> = entries.into_iter().filter(|e| e.message_id == m).collect();
            if of.is_empty() {
                return Err(turnback_store::Error::MessageNotFound {
                    session: session.id().to_owned(),
                    message_id: m,
                }
                .into());
            }
            of
        }
    };
    let turns = session.turn_bounds()?;
    let mut shown = Vec::new();
    for entry in chosen {
        let (mut diffs, _) = session.entries_diff(&[entry.seq])?;
        shown.push(Shown {
            turn: turns.iter().find(|t| t.number == entry.turn).cloned(),
            diff: diffs.pop(),
            entry,
        });
    }
    Ok(ShowReport {
        session: session.id().to_owned(),
        shown,
    })
}
