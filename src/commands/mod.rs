//! One function per command; `run` dispatches and turns errors into one line, a
//! hint and an exit code.

mod demo;

use std::io::Write;
use std::process::ExitCode;

use turnback_store::{Error, RevertOptions, RevertReport};

use crate::cli::{Cli, Command, RevertFlags};
use crate::context::Context;
use crate::report;

/// Exit code for "refused because a file changed since; nothing was touched".
const EXIT_REFUSED: u8 = 3;
const EXIT_USAGE: u8 = 2;

/// An error as the user sees it.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    hint: Option<String>,
    code: u8,
}

impl CliError {
    pub(crate) fn new(message: impl Into<String>, hint: Option<String>) -> Self {
        CliError {
            message: message.into(),
            hint,
            code: 1,
        }
    }

    pub(crate) fn usage(message: &str, hint: &str) -> Self {
        CliError {
            message: message.into(),
            hint: Some(hint.into()),
            code: EXIT_USAGE,
        }
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        let hint = match &e {
            Error::Refused { .. } => Some(
                "nothing was touched; add --dry-run to see the files, or --force to overwrite those changes".into(),
            ),
            Error::NoHome => Some("set TURNBACK_HOME or pass --home DIR".into()),
            Error::SessionNotFound { .. } => Some("`turnback sessions` lists the sessions of this store".into()),
            Error::InvalidSessionId { .. } => Some("a session id is 1 to 128 of A-Z a-z 0-9 . _ -".into()),
            Error::CorruptIndex { path, .. } => Some(format!(
                "move {} aside to start the session over; its backups stay in the session directory",
                path.display()
            )),
            Error::NewerFormat { .. } => Some("use a newer turnback for this store".into()),
            Error::FileBusy { .. } | Error::SessionBusy { .. } => Some("another agent is working on it; try again".into()),
            Error::OutsideWorkspace { .. } => Some("pass --workspace DIR to protect files under another root".into()),
            Error::WorkspaceMoved { .. } | Error::UnsafePath { .. } => {
                Some("put the directory back as it was, then try again; nothing was written".into())
            }
            Error::BlobMissing { .. } | Error::BlobCorrupt { .. } => {
                Some("that backup cannot be restored; other files of the session are unaffected".into())
            }
            _ => None,
        };
        let code = if e.is_refusal() { EXIT_REFUSED } else { 1 };
        CliError {
            message: e.to_string(),
            hint,
            code,
        }
    }
}

pub(crate) fn run(cli: Cli) -> ExitCode {
    match dispatch(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "error: {}", e.message);
            if let Some(hint) = &e.hint {
                let _ = writeln!(err, "hint: {hint}");
            }
            ExitCode::from(e.code)
        }
    }
}

fn dispatch(cli: &Cli) -> Result<(), CliError> {
    if let Command::Demo = cli.command {
        return demo::run();
    }
    let ctx = Context::new(cli)?;
    match &cli.command {
        Command::Write { file, message } => {
            let session = ctx.agent_session()?;
            let ws = ctx.workspace()?;
            let e = session.write(&ws, ctx.user_path(file), std::io::stdin().lock(), message)?;
            print_entry(cli, &e);
        }
        Command::Rm { file, message } => {
            let session = ctx.agent_session()?;
            let ws = ctx.workspace()?;
            let e = session.remove(&ws, ctx.user_path(file), message)?;
            print_entry(cli, &e);
        }
        Command::Undo(flags) => {
            let session = ctx.person_session()?;
            print_revert(cli, &session.undo(options(flags))?);
        }
        Command::Revert { file, flags } => {
            let ws = ctx.workspace()?;
            let path = ctx.user_path(file);
            let session = ctx.session_for_file(&ws, &path)?;
            print_revert(cli, &session.revert(&ws, &path, options(flags))?);
        }
        Command::Rewind { message, flags } => {
            let session = ctx.person_session()?;
            print_revert(cli, &session.rewind(message, options(flags))?);
        }
        Command::Log => {
            let session = ctx.person_session()?;
            let entries = session.entries()?;
            if cli.json {
                let v = serde_json::json!({
                    "session": session.id(),
                    "entries": entries.iter().map(report::entry_json).collect::<Vec<_>>(),
                });
                println!("{v}");
            } else {
                println!("session {}", session.id());
                for e in &entries {
                    println!("{}", report::entry_line(e));
                }
            }
        }
        Command::Sessions => {
            let list = ctx.store.sessions()?;
            if cli.json {
                println!("{}", report::sessions_json(&list));
            } else {
                for s in &list {
                    let ws: Vec<String> = s
                        .workspaces
                        .iter()
                        .map(|w| w.display().to_string())
                        .collect();
                    println!(
                        "{}  {} entries  {} bytes  {}",
                        s.id,
                        s.entries,
                        s.bytes,
                        ws.join(", ")
                    );
                }
            }
        }
        Command::Demo => unreachable!("handled above"),
    }
    Ok(())
}

fn options(flags: &RevertFlags) -> RevertOptions {
    RevertOptions {
        force: flags.force,
        dry_run: flags.dry_run,
    }
}

fn print_entry(cli: &Cli, e: &turnback_store::Entry) {
    if cli.json {
        println!("{}", report::entry_json(e));
    } else {
        println!("{}", report::entry_line(e));
    }
}

fn print_revert(cli: &Cli, r: &RevertReport) {
    if cli.json {
        println!("{}", report::revert_json(r));
    } else {
        print!("{}", report::revert_text(r));
    }
}
