//! One module per command; `run` dispatches, has the renderer write the
//! command's report, and turns an error into its exit code and (through the
//! renderer) one line and a hint, or with `--json` one JSON object on stderr.

mod bracket;
mod demo;
mod docs;
mod error;
mod inspect;
mod revert;
mod sessions;
mod write;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::context::Context;
use crate::render::{Renderer, Report};
use turnback::output::ColorChoice;

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
    Renderer::new(ColorChoice::Never, true).error(&CliError::usage(
        message,
        "`turnback --help` lists the commands and their flags",
    ));
    ExitCode::from(turnback::errors::EXIT_USAGE)
}

pub(crate) fn run(cli: Cli) -> ExitCode {
    let render = Renderer::new(cli.color, cli.json);
    match dispatch(&cli, render) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            render.error(&e);
            ExitCode::from(e.code())
        }
    }
}

/// Runs the command and writes its report. Only the commands that need no
/// store run before the store is opened.
fn dispatch(cli: &Cli, render: Renderer) -> Result<(), CliError> {
    let report = match &cli.command {
        Command::Demo => Some(demo::run(render.style()).map(boxed)),
        Command::Completions { shell } => Some(docs::completions(*shell).map(boxed)),
        Command::Man => Some(docs::man().map(boxed)),
        _ => None,
    };
    if let Some(report) = report {
        return report.map(|r| render.report(&*r));
    }
    let ctx = Context::new(cli, render)?;
    let report = match &cli.command {
        Command::Write(args) => write::write(&ctx, args).map(boxed),
        Command::Rm(args) => write::rm(&ctx, args).map(boxed),
        Command::Mv { from, to, message } => write::mv(&ctx, from, to, message).map(boxed),
        Command::Turn {
            prompt,
            conversation_index,
        } => write::turn(&ctx, prompt, *conversation_index).map(boxed),
        Command::Checkpoint(args) => bracket::checkpoint(&ctx, args).map(boxed),
        Command::Commit { id } => bracket::commit(&ctx, *id).map(boxed),
        Command::Rollback { id, flags } => bracket::rollback(&ctx, *id, flags),
        Command::Undo(flags) => revert::undo(&ctx, flags).map(boxed),
        Command::Revert { file, flags } => revert::revert(&ctx, file, flags).map(boxed),
        Command::Rewind {
            message,
            turn,
            flags,
        } => revert::rewind(&ctx, message.as_deref(), *turn, flags),
        Command::Redo(flags) => revert::redo(&ctx, flags).map(boxed),
        Command::Log { all } => inspect::log(&ctx, *all).map(boxed),
        Command::Diff { file, stat } => inspect::diff(&ctx, file.as_deref(), *stat).map(boxed),
        Command::Sessions => sessions::list(&ctx).map(boxed),
        Command::Prune { dry_run } => sessions::prune(&ctx, *dry_run).map(boxed),
        Command::Demo | Command::Completions { .. } | Command::Man => unreachable!("handled above"),
    };
    let written = report.map(|r| render.report(&*r));
    // Whatever the command did, say which store directories it made private.
    ctx.report_notices();
    written
}

/// A handler's report, for the renderer.
fn boxed(report: impl Report + 'static) -> Box<dyn Report> {
    Box::new(report)
}
