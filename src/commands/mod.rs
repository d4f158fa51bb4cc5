//! One module per command; `run` dispatches, has the renderer write the
//! command's report, and turns an error into its exit code and (through the
//! renderer) one line and a hint, or with `--json` one JSON object on stderr.

mod checkpoint;
mod commit;
mod common;
mod completions;
mod demo;
mod diff;
mod error;
mod log;
mod man;
mod mv;
mod prune;
mod redo;
mod revert;
mod rewind;
mod rm;
mod rollback;
mod run;
mod scan;
mod sessions;
mod turn;
mod undo;
mod write;

use std::io;
use std::process::ExitCode;

use crate::cli::Cli;
use crate::context::Context;
use crate::render::{Renderer, Report};
use turnback::output::ColorChoice;

pub(crate) use error::CliError;

/// The commands, in the order `--help` lists them. Each one's help line and
/// example are on its arguments' struct, in its own module.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    Write(write::WriteArgs),
    Rm(rm::RmArgs),
    Mv(mv::MvArgs),
    Checkpoint(checkpoint::CheckpointArgs),
    Commit(commit::CommitArgs),
    Rollback(rollback::RollbackArgs),
    Run(run::RunArgs),
    Turn(turn::TurnArgs),
    Undo(undo::UndoArgs),
    Revert(revert::RevertArgs),
    Rewind(rewind::RewindArgs),
    Redo(redo::RedoArgs),
    Log(log::LogArgs),
    Diff(diff::DiffArgs),
    Sessions(sessions::SessionsArgs),
    Prune(prune::PruneArgs),
    Demo(demo::DemoArgs),
    Completions(completions::CompletionsArgs),
    Man(man::ManArgs),
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
    Renderer::new(ColorChoice::Never, true).error(&CliError::usage(
        message,
        "`turnback --help` lists the commands and their flags",
    ));
    ExitCode::from(turnback::errors::EXIT_USAGE)
}

/// Runs the command, writes its report (or its error) and says how the
/// process ends. An error writing the report is returned, for `main`.
pub(crate) fn run(cli: Cli) -> io::Result<ExitCode> {
    let render = Renderer::new(cli.color.into(), cli.json);
    let mut ctx = None;
    let done = dispatch(&cli, render, &mut ctx);
    let mut code = 0;
    if let Ok(report) = &done {
        render.report(&**report)?;
        code = report.exit_code().unwrap_or(0);
    }
    // Whatever the command did, say which store directories it made private.
    if let Some(ctx) = &ctx {
        ctx.report_notices();
    }
    Ok(match done {
        Ok(_) => ExitCode::from(code),
        Err(e) => {
            render.error(&e);
            ExitCode::from(e.code())
        }
    })
}

/// Runs the command and returns its report. The commands that need no store
/// run before it is opened (so that they work where there is none); the
/// others leave the context they used in `ctx`.
fn dispatch(
    cli: &Cli,
    render: Renderer,
    ctx: &mut Option<Context>,
) -> Result<Box<dyn Report>, CliError> {
    match &cli.command {
        Command::Demo(args) => return demo::run(render.style(), args).map(boxed),
        Command::Completions(args) => return completions::run(args).map(boxed),
        Command::Man(args) => return man::run(args).map(boxed),
        _ => {}
    }
    let ctx = ctx.insert(Context::new(cli, render)?);
    match &cli.command {
        Command::Write(args) => write::run(ctx, args).map(boxed),
        Command::Rm(args) => rm::run(ctx, args).map(boxed),
        Command::Mv(args) => mv::run(ctx, args).map(boxed),
        Command::Checkpoint(args) if args.scan => checkpoint::run_scan(ctx, args).map(boxed),
        Command::Checkpoint(args) => checkpoint::run(ctx, args).map(boxed),
        Command::Commit(args) => commit::run(ctx, args),
        Command::Rollback(args) => rollback::run(ctx, args),
        Command::Run(args) => run::run(ctx, args).map(boxed),
        Command::Turn(args) => turn::run(ctx, args).map(boxed),
        Command::Undo(args) => undo::run(ctx, args).map(boxed),
        Command::Revert(args) => revert::run(ctx, args).map(boxed),
        Command::Rewind(args) => rewind::run(ctx, args),
        Command::Redo(args) => redo::run(ctx, args).map(boxed),
        Command::Log(args) => log::run(ctx, args).map(boxed),
        Command::Diff(args) => diff::run(ctx, args).map(boxed),
        Command::Sessions(args) => sessions::run(ctx, args).map(boxed),
        Command::Prune(args) => prune::run(ctx, args).map(boxed),
        Command::Demo(_) | Command::Completions(_) | Command::Man(_) => {
            unreachable!("run above")
        }
    }
}

/// A handler's report, for the renderer.
fn boxed(report: impl Report + 'static) -> Box<dyn Report> {
    Box::new(report)
}
