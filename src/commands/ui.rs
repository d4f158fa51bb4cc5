//! `ui`: the full-screen timeline of the workspace (`src/ui/`), live while
//! agents work, with a rewind one key away. Only on a terminal.

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;
use turnback::output::Out;

/// Browse the sessions here full-screen, live: entries by turn, diffs, rewind by key
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Keys: arrows or j/k move, Tab switches pane, Enter hides or shows a turn's entries,\n/ searches prompts and file names (n: the next match), d shows the entry's or its whole turn's diff,\nu rewinds to just before the selected entry or turn, r reverts the selected entry's file to before it,\nR redoes what the last u or r took back (dry run first, then y/n; f forces), ? lists the keys, q quits.\n\nExample:\n  turnback ui --workspace ~/src/my-project"
)]
pub(crate) struct UiArgs {}

/// What the view leaves: nothing to print; whether a key restored files
/// (then the store's daily prune runs, as after `turnback undo`).
pub(crate) struct UiDone {
    restored: bool,
}

impl Report for UiDone {
    fn json(&self) -> Option<serde_json::Value> {
        None
    }

    fn text(&self, _: &Out) -> String {
        String::new()
    }

    fn changed_a_session(&self) -> bool {
        self.restored
    }
}

/// Runs the view until the person quits; it prints nothing after.
pub(crate) fn run(ctx: &Context, _: &UiArgs) -> Result<UiDone, CliError> {
    if !ctx.render.can_ask() {
        return Err(CliError::usage(
            "`turnback ui` needs a terminal: standard input and output must be one (and no --json)",
            "`turnback log` prints the same history as text (`--all`: every session here, `--json`: for a program)",
        ));
    }
    let restored = crate::ui::run(ctx)?;
    Ok(UiDone { restored })
}
