//! One module per command; `run` dispatches and turns an error into one line,
//! a hint and an exit code (or, with `--json`, one JSON object on stderr).

mod bracket;
mod demo;
mod docs;
mod inspect;
mod revert;
mod sessions;
mod write;

use std::io::Write;
use std::process::ExitCode;

use turnback_store::{Error, UnsafeReason};

use crate::cli::{Cli, Command};
use crate::context::Context;
use turnback::json;
use turnback::output::Out;
use turnback::text;

/// Exit code of an error.
pub(crate) const EXIT_ERROR: u8 = 1;
/// Exit code of a usage error.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code of "refused because a file changed since; nothing was touched".
pub(crate) const EXIT_REFUSED: u8 = 3;

/// An error as the user sees it.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    hint: Option<String>,
    pub(crate) code: u8,
    kind: &'static str,
    /// The files that refused a revert, as JSON (boxed: errors stay small).
    conflicts: Box<serde_json::Value>,
    /// Fields of the JSON object that only some kinds have (`json::error_details`).
    details: Option<Box<serde_json::Value>>,
}

impl CliError {
    pub(crate) fn new(message: impl Into<String>, hint: Option<String>) -> Self {
        CliError {
            message: message.into(),
            hint,
            code: EXIT_ERROR,
            kind: "error",
            conflicts: Box::new(serde_json::Value::Null),
            details: None,
        }
    }

    /// Names the kind of error in the JSON object.
    pub(crate) fn kind(self, kind: &'static str) -> Self {
        CliError { kind, ..self }
    }

    pub(crate) fn usage(message: impl Into<String>, hint: &str) -> Self {
        CliError {
            code: EXIT_USAGE,
            kind: "usage",
            ..CliError::new(message, Some(hint.into()))
        }
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        let code = match &e {
            Error::Refused { .. } | Error::OutsideScope { .. } => EXIT_REFUSED,
            Error::InvalidSessionId { .. } => EXIT_USAGE,
            _ => EXIT_ERROR,
        };
        CliError {
            message: e.to_string(),
            hint: hint(&e),
            code,
            kind: json::error_kind(&e),
            conflicts: Box::new(json::conflicts(&e)),
            details: json::error_details(&e).map(Box::new),
        }
    }
}

/// What the user can do next, for the errors where there is something.
fn hint(e: &Error) -> Option<String> {
    let h = match e {
        Error::Refused { .. } => "--dry-run shows the changes; --force overwrites them",
        Error::NoHome => "set TURNBACK_HOME or pass --home DIR",
        Error::SessionNotFound { .. } => "`turnback sessions` lists the sessions of this store",
        Error::InvalidSessionId { .. } => {
            "a session id is 1 to 128 of A-Z a-z 0-9 . _ - and does not start with '.'"
        }
        Error::CorruptIndex { path, .. } => {
            return Some(format!(
                "move {} aside to start the session over; its backups stay where they are",
                path.display()
            ));
        }
        Error::NewerFormat { .. } => "this store was written by a newer turnback: use that one",
        Error::FileBusy { .. } | Error::SessionBusy { .. } => {
            "another agent is working on it; try again in a moment"
        }
        Error::OutsideWorkspace { .. } => {
            "pass --workspace DIR to protect files under another root"
        }
        Error::NotRegularFile { .. } => "turnback protects regular files only",
        Error::FileNotFound { .. } => "check the path; nothing was changed",
        Error::Io { source, path, .. } => {
            return Some(match source.kind() {
                std::io::ErrorKind::NotFound => format!("check that {} exists", path.display()),
                std::io::ErrorKind::PermissionDenied => {
                    format!("check the permissions of {}", path.display())
                }
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                    "free some space and try again; nothing was lost".into()
                }
                _ => "nothing was lost; try again once the cause is fixed".into(),
            });
        }
        Error::WorkspaceMoved { .. } | Error::UnsafePath { .. } => {
            "put the directory back as it was and try again; nothing was written"
        }
        Error::BlobMissing { .. } | Error::BlobCorrupt { .. } => {
            "this backup cannot be restored; the session's other files are unaffected"
        }
        Error::NothingToRedo { .. } => "there is no undo, revert or rewind left to take back",
        Error::TurnNotFound { .. } => "`turnback rewind` on a terminal lists the turns",
        Error::NotRead { .. } | Error::ChangedSinceRead { .. } => {
            "read the file again, then write it"
        }
        Error::NothingToUndo { .. }
        | Error::NoChangeToFile { .. }
        | Error::MessageNotFound { .. } => {
            "`turnback log` lists what this session can revert; --session picks another"
        }
        Error::NoSuchEntry { .. } => "`turnback log` lists the session's entries",
        Error::AlreadyCommitted { .. } => "undo or revert it instead",
        Error::ContentsMismatch { .. } => "the file was not touched: send the whole contents again",
        Error::UnsafeStore { path, reason } => {
            let path = path.display();
            return Some(match reason {
                UnsafeReason::WritableByOthers { .. } => {
                    format!("chmod go-w {path}, or pass --home DIR to use another store")
                }
                UnsafeReason::SymbolicLink => format!(
                    "turnback never makes {path} a symbolic link: remove it if you did not, or pass --home DIR to use another store"
                ),
                UnsafeReason::ForeignWorkspace { .. } => {
                    "this session is not yours to restore: pass --session for one of your own".into()
                }
                _ => "it belongs to another user: pass --home DIR (or set TURNBACK_HOME) to use a store of your own".into(),
            });
        }
        Error::InsideStore { home, .. } => {
            return Some(format!(
                "the store home {} is inside this workspace: its files are not the agent's to change (pass --home DIR for a store outside the workspace)",
                home.display()
            ));
        }
        Error::OutsideScope { workspace, .. } => {
            let w = workspace.display();
            return Some(format!("run it in {w} or pass --workspace {w}"));
        }
        _ => return None,
    };
    Some(h.to_owned())
}

/// A command line clap could not parse (or `--help`, `--version`): clap's own
/// text, or with `--json` anywhere in the arguments the JSON error object.
pub(crate) fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let informational = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    let wants_json = std::env::args_os().any(|a| a == "--json");
    if informational || !wants_json {
        let _ = e.print();
        return ExitCode::from(e.exit_code() as u8);
    }
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    let message = first.strip_prefix("error: ").unwrap_or(first);
    report(
        &CliError::usage(
            message,
            "`turnback --help` lists the commands and their flags",
        ),
        true,
    );
    ExitCode::from(EXIT_USAGE)
}

pub(crate) fn run(cli: Cli) -> ExitCode {
    let out = Out::new(cli.color, cli.json);
    match dispatch(&cli, &out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e, cli.json);
            ExitCode::from(e.code)
        }
    }
}

fn report(e: &CliError, json: bool) {
    let mut err = std::io::stderr().lock();
    if json {
        let mut v = serde_json::json!({ "error": {
            "kind": e.kind,
            "message": e.message,
            "hint": e.hint,
            "exit_code": e.code,
            "conflicts": e.conflicts,
        }});
        if let (Some(serde_json::Value::Object(more)), Some(obj)) =
            (e.details.as_deref(), v["error"].as_object_mut())
        {
            obj.extend(more.clone());
        }
        let _ = writeln!(err, "{v}");
        return;
    }
    let _ = write!(err, "{}", error_text(e));
}

/// An error as a person reads it: one line, and a hint line where there is one.
/// Control characters are escaped: a message names files and ids an agent
/// chose, which must not forge lines or reach the terminal raw.
pub(crate) fn error_text(e: &CliError) -> String {
    let message = text::escape(&e.message);
    match &e.hint {
        Some(hint) => format!("error: {message}\nhint: {}\n", text::escape(hint)),
        None => format!("error: {message}\n"),
    }
}

fn dispatch(cli: &Cli, out: &Out) -> Result<(), CliError> {
    match &cli.command {
        Command::Demo => return demo::run(out),
        Command::Completions { shell } => return docs::completions(*shell),
        Command::Man => return docs::man(),
        _ => {}
    }
    let ctx = Context::new(cli)?;
    let done = match &cli.command {
        Command::Write(args) => write::write(&ctx, out, args),
        Command::Rm(args) => write::rm(&ctx, out, args),
        Command::Mv { from, to, message } => write::mv(&ctx, out, from, to, message),
        Command::Turn {
            prompt,
            conversation_index,
        } => write::turn(&ctx, out, prompt, *conversation_index),
        Command::Checkpoint(args) => bracket::checkpoint(&ctx, out, args),
        Command::Commit { id } => bracket::commit(&ctx, out, *id),
        Command::Rollback { id, flags } => bracket::rollback(&ctx, out, *id, flags),
        Command::Undo(flags) => revert::undo(&ctx, out, flags),
        Command::Revert { file, flags } => revert::revert(&ctx, out, file, flags),
        Command::Rewind {
            message,
            turn,
            flags,
        } => revert::rewind(&ctx, out, message.as_deref(), *turn, flags),
        Command::Redo(flags) => revert::redo(&ctx, out, flags),
        Command::Log { all } => inspect::log(&ctx, out, *all),
        Command::Diff { file, stat } => inspect::diff(&ctx, out, file.as_deref(), *stat),
        Command::Sessions => sessions::list(&ctx, out),
        Command::Prune { dry_run } => sessions::prune(&ctx, out, *dry_run),
        Command::Demo | Command::Completions { .. } | Command::Man => unreachable!("handled above"),
    };
    // Whatever the command did, say which store directories it made private.
    ctx.report_notices();
    done
}
