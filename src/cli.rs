//! The command line as clap parses it: the global flags, and the subcommand
//! (each command's arguments are in its module in `commands/`). Nothing here
//! acts; `commands/` does.

use std::path::PathBuf;

use clap::Parser;
use turnback::output::ColorChoice;

use crate::commands::Command;

const GLOBAL: &str = "Global options";

const EXIT_CODES: &str = "\
Exit codes:
  0  done
  1  error (the message says what, and a hint what to do)
  2  usage: a flag, argument or session is missing or wrong
  3  refused: a file changed since the session wrote it, or is in an unrelated
     workspace; nothing was touched";

/// A safety net under every file an AI coding agent edits.
///
/// Agents write through turnback (`turnback write`, `turnback rm`), which backs each
/// file up first; people undo from any shell (`turnback undo`, `turnback revert
/// FILE`, `turnback rewind MESSAGE`), while the agent runs or after.
#[derive(Debug, Parser)]
#[command(name = "turnback", version, about, long_about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The store home [default: ~/.local/state/turnback]
    #[arg(long, global = true, env = "TURNBACK_HOME", value_name = "DIR", help_heading = GLOBAL)]
    pub home: Option<PathBuf>,
    /// The session [default for undo, rewind, log, diff: the newest one with changes here; for revert: the one that changed the file last]
    #[arg(long, global = true, env = "TURNBACK_SESSION", value_name = "ID", help_heading = GLOBAL)]
    pub session: Option<String>,
    /// The workspace root [default: the current directory]
    #[arg(long, global = true, env = "TURNBACK_WORKSPACE", value_name = "DIR", help_heading = GLOBAL)]
    pub workspace: Option<PathBuf>,
    /// Print JSON: the API for agents in other languages (docs/JSON.md)
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// When to colour the output (NO_COLOR turns `auto` off)
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN", help_heading = GLOBAL)]
    pub color: ColorWhen,
    /// Say nothing on stderr about which session is used
    #[arg(long, short, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// Print long output directly instead of through $PAGER (else `less -FRX`) on a terminal
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_pager: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// The values of `--color`, as clap parses them. The presentation library's
/// `ColorChoice` knows nothing of clap: clap belongs to the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorWhen {
    // No doc comments on the variants: clap would show them in `--help`.
    // When standard output is a terminal and NO_COLOR is unset.
    Auto,
    Always,
    Never,
}

impl From<ColorWhen> for ColorChoice {
    fn from(w: ColorWhen) -> ColorChoice {
        match w {
            ColorWhen::Auto => ColorChoice::Auto,
            ColorWhen::Always => ColorChoice::Always,
            ColorWhen::Never => ColorChoice::Never,
        }
    }
}

/// Parses the command line; a usage error is returned, not printed, so that
/// `--json` can report it as JSON too.
pub(crate) fn parse() -> Result<Cli, clap::Error> {
    Cli::try_parse()
}

/// The clap command, for completions and the manual page.
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}
