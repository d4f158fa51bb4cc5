//! One module per command; `run` dispatches and turns an error into one line,
//! a hint and an exit code (or, with `--json`, one JSON object on stderr).

mod bracket;
mod demo;
mod docs;
mod error;
mod inspect;
mod revert;
mod sessions;
mod write;

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::context::Context;
use turnback::output::Out;

pub(crate) use error::CliError;

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
    ExitCode::from(turnback::errors::EXIT_USAGE)
}

pub(crate) fn run(cli: Cli) -> ExitCode {
    let out = Out::new(cli.color, cli.json);
    match dispatch(&cli, &out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e, cli.json);
            ExitCode::from(e.code())
        }
    }
}

fn report(e: &CliError, json: bool) {
    let mut err = std::io::stderr().lock();
    let _ = if json {
        writeln!(err, "{}", e.json())
    } else {
        write!(err, "{}", e.text())
    };
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
