//! The command line, as clap parses it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A safety net under every file an AI coding agent edits.
#[derive(Debug, Parser)]
#[command(
    name = "turnback",
    version,
    about,
    after_help = "Exit codes: 0 done, 1 error, 2 usage, 3 refused because a file changed since (nothing was touched)."
)]
pub(crate) struct Cli {
    /// The store home (default: $TURNBACK_HOME, else ~/.local/state/turnback).
    #[arg(long, global = true, env = "TURNBACK_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The session to use.
    #[arg(long, global = true, env = "TURNBACK_SESSION", value_name = "ID")]
    pub session: Option<String>,
    /// The workspace root (default: the current directory).
    #[arg(long, global = true, env = "TURNBACK_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Replace FILE with the bytes on standard input, backed up first.
    #[command(
        after_help = "Example: echo 'fn main() {}' | turnback write src/main.rs --message call-7"
    )]
    Write {
        /// The file to write.
        file: PathBuf,
        /// The id of the message or tool call making the change.
        #[arg(long, short, default_value = "")]
        message: String,
    },
    /// Delete FILE, backed up first.
    #[command(after_help = "Example: turnback rm old.txt --message call-8")]
    Rm {
        /// The file to delete.
        file: PathBuf,
        /// The id of the message or tool call making the change.
        #[arg(long, short, default_value = "")]
        message: String,
    },
    /// Revert the session's newest change.
    #[command(after_help = "Example: turnback undo --dry-run")]
    Undo(RevertFlags),
    /// Revert the newest change to FILE.
    #[command(after_help = "Example: turnback revert src/lib.rs")]
    Revert {
        /// The file to revert.
        file: PathBuf,
        #[command(flatten)]
        flags: RevertFlags,
    },
    /// Revert every change since MESSAGE (included), newest first.
    #[command(after_help = "Example: turnback rewind call-7 --dry-run")]
    Rewind {
        /// The message id to rewind to (its changes are reverted too).
        message: String,
        #[command(flatten)]
        flags: RevertFlags,
    },
    /// List the session's changes, oldest first.
    #[command(after_help = "Example: turnback log --json")]
    Log,
    /// List every session in the store.
    #[command(after_help = "Example: turnback sessions")]
    Sessions,
    /// Run a short scripted agent session in a scratch directory and undo parts of it.
    #[command(after_help = "Example: turnback demo")]
    Demo,
}

#[derive(Debug, Args, Clone, Copy)]
pub(crate) struct RevertFlags {
    /// Restore even files that changed since the session wrote them.
    #[arg(long)]
    pub force: bool,
    /// Show what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub(crate) fn parse() -> Cli {
    Cli::parse()
}
