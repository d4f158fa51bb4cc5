//! The command line as clap parses it. Nothing here acts; `commands/` does.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use turnback::output::ColorChoice;

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
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN", help_heading = GLOBAL)]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Replace FILE with standard input, backed up first (for agents)
    #[command(
        after_help = "Standard input must be a pipe or a file: a closed one is an error and a\nterminal is refused, so that neither empties FILE. With --expect-size or\n--expect-sha256, contents that are not what was meant (a producer that stopped\nhalf way) are refused and nothing is written.\n\nExample:\n  printf 'fn main() {}\\n' | turnback write src/main.rs --message call-7 --expect-size 13"
    )]
    Write(WriteArgs),
    /// Delete FILE, backed up first (for agents)
    #[command(after_help = "Example:\n  turnback rm old_notes.txt --message call-8")]
    Rm(FileArgs),
    /// Move FROM to TO as one undoable step (for agents)
    #[command(
        after_help = "Example:\n  turnback mv src/old_name.rs src/new_name.rs --message call-9"
    )]
    Mv {
        /// The file to move
        from: PathBuf,
        /// Where it goes
        to: PathBuf,
        /// The id of the message or tool call making the change
        #[arg(long, short, default_value = "", value_name = "ID")]
        message: String,
    },
    /// Back FILE up before changing it yourself; prints the entry number (for agents)
    #[command(
        after_help = "Example:\n  id=$(turnback checkpoint src/lib.rs --message call-9)\n  my-editor src/lib.rs && turnback commit \"$id\" || turnback rollback \"$id\""
    )]
    Checkpoint(FileArgs),
    /// Record the file of checkpoint ID as written (for agents)
    #[command(after_help = "Example:\n  turnback commit 12")]
    Commit {
        /// The entry number `turnback checkpoint` printed
        id: u64,
    },
    /// Put the file of checkpoint ID back and drop the entry (for agents)
    #[command(
        after_help = "Example:\n  turnback rollback 12\n\nRefused (exit code 3) when a change to the file was recorded since the\ncheckpoint, by this session or another; --force rolls back over it, backing\nup what it overwrites (`turnback redo` puts it back)."
    )]
    Rollback {
        /// The entry number `turnback checkpoint` printed
        id: u64,
        #[command(flatten)]
        flags: RevertFlags,
    },
    /// Begin a user turn; prints its number (for agents)
    #[command(
        after_help = "Example:\n  turnback turn --prompt \"add a --verbose flag\" --conversation-index 14"
    )]
    Turn {
        /// The user's prompt that opens the turn (shown by the rewind picker)
        #[arg(long)]
        prompt: String,
        /// Where the turn starts in the agent's conversation
        #[arg(long, value_name = "N")]
        conversation_index: Option<u64>,
    },
    /// Revert the session's newest change
    #[command(after_help = "Example:\n  turnback undo --dry-run")]
    Undo(RevertFlags),
    /// Revert the newest change to FILE (in the session that changed it last)
    #[command(after_help = "Example:\n  turnback revert src/lib.rs")]
    Revert {
        /// The file to revert
        file: PathBuf,
        #[command(flatten)]
        flags: RevertFlags,
    },
    /// Revert every change since MESSAGE, or since turn N began (or pick a turn)
    #[command(
        after_help = "Examples:\n  turnback rewind call-7 --dry-run\n  turnback rewind --turn 3\n  turnback rewind            # pick a turn, see the preview, confirm"
    )]
    Rewind {
        /// The message id to go back to (its changes are reverted too)
        #[arg(conflicts_with = "turn")]
        message: Option<String>,
        /// The turn to go back to the start of
        #[arg(long, value_name = "N")]
        turn: Option<u32>,
        #[command(flatten)]
        flags: RevertFlags,
    },
    /// Put back what the last undo, revert or rewind took away
    #[command(after_help = "Example:\n  turnback redo --dry-run")]
    Redo(RevertFlags),
    /// List the session's changes, grouped by message, newest last
    #[command(after_help = "Example:\n  turnback log --all")]
    Log {
        /// Every session with changes in this workspace
        #[arg(long)]
        all: bool,
    },
    /// Show each changed file against its first backup
    #[command(after_help = "Example:\n  turnback diff src/lib.rs\n  turnback diff --stat")]
    Diff {
        /// Only this file
        file: Option<PathBuf>,
        /// Only a summary line per file
        #[arg(long)]
        stat: bool,
    },
    /// List every session in the store
    #[command(after_help = "Example:\n  turnback sessions --json")]
    Sessions,
    /// Delete old sessions (keeps the 20 newest and any changed in 30 days)
    #[command(after_help = "Example:\n  turnback prune --dry-run")]
    Prune {
        /// Show what would be deleted; delete nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Run a short scripted agent session in a scratch directory and undo parts of it
    #[command(after_help = "Example:\n  turnback demo")]
    Demo,
    /// Print a shell completion script
    #[command(
        after_help = "Example:\n  turnback completions bash > ~/.local/share/bash-completion/completions/turnback"
    )]
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff)
    #[command(after_help = "Example:\n  turnback man | man -l -")]
    Man,
}

#[derive(Debug, Args)]
pub(crate) struct FileArgs {
    /// The file, relative to the current directory
    pub file: PathBuf,
    /// The id of the message or tool call making the change
    #[arg(long, short, default_value = "", value_name = "ID")]
    pub message: String,
}

#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    #[command(flatten)]
    pub file: FileArgs,
    /// Refuse the new contents unless they are exactly N bytes
    #[arg(long, value_name = "N")]
    pub expect_size: Option<u64>,
    /// Refuse the new contents unless their SHA-256 is HASH (hex)
    #[arg(long, value_name = "HASH", value_parser = parse_sha256)]
    pub expect_sha256: Option<String>,
}

/// A SHA-256 in hex, either case; kept in lower case.
fn parse_sha256(s: &str) -> Result<String, String> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err("a SHA-256 is 64 hexadecimal digits".into())
    }
}

#[derive(Debug, Args, Clone, Copy)]
pub(crate) struct RevertFlags {
    /// Overwrite files that changed since the session wrote them
    #[arg(long)]
    pub force: bool,
    /// Show what would happen, with a diff; change nothing
    #[arg(long)]
    pub dry_run: bool,
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
