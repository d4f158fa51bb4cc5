//! `turnback run -- CMD ARGS...`: a command run inside a scan bracket, so
//! that one `turnback undo` takes back everything it changed.

use std::process::Command;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::scan_report::{Scanned, person_session};

/// Run a command; all it changes is one step to undo
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  turnback run -- cargo fmt\n  turnback undo      # the whole formatting, back\n\nWithout --session or TURNBACK_SESSION the changes go to your own session\nfor this workspace (made on first use; `turnback sessions` shows it).\nWhat the command changes is found by comparing the workspace (as git sees\nit: ignored files are left alone) before and after it."
)]
pub(crate) struct RunArgs {
    /// The message id the changes are recorded under (default: the command line)
    #[arg(long, short, value_name = "ID")]
    message: Option<String>,
    /// Files larger than this many bytes are not backed up: a change to one is reported, and an undo cannot restore it
    #[arg(long, value_name = "BYTES", default_value_t = turnback_store::DEFAULT_SIZE_LIMIT)]
    max_size: u64,
    /// The command and its arguments
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<std::ffi::OsString>,
}

/// The command line as a person would type it (for the log).
fn shown(args: &[std::ffi::OsString]) -> String {
    args.iter()
        .map(|a| {
            let a = a.to_string_lossy();
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn run(ctx: &Context, args: &RunArgs) -> Result<Scanned, CliError> {
    let ws = ctx.workspace()?;
    let session = match ctx.named_session() {
        Some(_) => ctx.agent_session()?,
        None => person_session(&ctx.store, &ws)?,
    };
    let line = shown(&args.command);
    let message = args.message.clone().unwrap_or_else(|| line.clone());
    let opts = turnback_store::ScanOptions {
        size_limit: args.max_size,
        // This process ends the bracket.
        owner_pid: None,
        ..Default::default()
    };
    // Watched while the command runs: the commit looks again only where
    // something happened, not at the whole workspace.
    let scan = session.begin_watched_scan(&ws, &message, Some(&line), &opts)?;
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]).current_dir(&ctx.cwd);
    crate::sys::default_signals_in_child(&mut cmd);
    let status = {
        // A Ctrl-C stops the command, and turnback records what it did.
        let _ignored = crate::sys::InterruptsIgnored::new();
        cmd.status()
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            // Nothing ran, so nothing changed: close the bracket.
            session.rollback_watched_scan(scan)?;
            return Err(CliError::new(
                format!("cannot run {}: {e}", args.command[0].to_string_lossy()),
                Some("is it installed, and on PATH?".into()),
            ));
        }
    };
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    // Recorded even when the command failed: what it did half way is undoable.
    let id = scan.id().to_owned();
    let report = session
        .commit_watched_scan(scan)
        .map_err(|e| CliError::from(e).scan_not_recorded(&id, session.id()))?;
    Ok(Scanned {
        report,
        exit_code: Some(code),
    })
}
