//! One module per command; `run` dispatches, has the renderer write the
//! command's report, and turns an error into its exit code and (through the
//! renderer) one line and a hint, or with `--json` one JSON object on stderr.

mod blame;
mod checkpoint;
mod commit;
mod completions;
mod config;
mod demo;
mod diff;
mod doctor;
pub(crate) mod hook;
mod install;
mod log;
mod man;
mod mcp;
mod mv;
mod prune;
mod redo;
mod revert;
mod rewind;
mod rm;
mod rollback;
mod run;
mod serve;
mod sessions;
mod show;
mod status;
mod turn;
mod turns;
mod ui;
mod undo;
mod write;

use std::io;
use std::process::ExitCode;

use crate::cli::Cli;
use crate::context::Context;
use crate::render::{Renderer, Report};
use turnback::output::ColorChoice;

use crate::cli_error::CliError;

/// The commands, in the order `--help` lists them under their heading
/// (`cli::heading`: a command for agents adds its name there, in one line).
/// Each one's help line and example are on its arguments' struct, in its
/// own module.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    Write(write::WriteArgs),
    Rm(rm::RmArgs),
    Mv(mv::MvArgs),
    Checkpoint(checkpoint::CheckpointArgs),
    Commit(commit::CommitArgs),
    Rollback(rollback::RollbackArgs),
    Turn(turn::TurnArgs),
    Undo(undo::UndoArgs),
    Rewind(rewind::RewindArgs),
    Revert(revert::RevertArgs),
    Redo(redo::RedoArgs),
    Log(log::LogArgs),
    Diff(diff::DiffArgs),
    Show(show::ShowArgs),
    Turns(turns::TurnsArgs),
    Blame(blame::BlameArgs),
    Ui(ui::UiArgs),
    Status(status::StatusArgs),
    Run(run::RunArgs),
    Install(install::InstallArgs),
    Uninstall(install::UninstallArgs),
    Doctor(doctor::DoctorArgs),
    Sessions(sessions::SessionsArgs),
    Prune(prune::PruneArgs),
    Config(config::ConfigArgs),
    Demo(demo::DemoArgs),
    Serve(serve::ServeArgs),
    Mcp(mcp::McpArgs),
    Completions(completions::CompletionsArgs),
    Man(man::ManArgs),
    Hook(hook::HookArgs),
}

impl Command {
    /// True for the commands that change a session (after which the store
    /// prunes, once a day).
    pub(crate) fn changes_a_session(&self) -> bool {
        use Command as C;
        matches!(
            self,
            C::Write(_)
                | C::Rm(_)
                | C::Mv(_)
                | C::Checkpoint(_)
                | C::Commit(_)
                | C::Rollback(_)
                | C::Turn(_)
                | C::Undo(_)
                | C::Revert(_)
                | C::Rewind(_)
                | C::Redo(_)
                | C::Run(_)
                // When a key restored something (`UiDone`).
                | C::Ui(_)
        )
    }
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
    Renderer::new(ColorChoice::Never, true).error(&clap_usage(&e));
    ExitCode::from(turnback::errors::EXIT_USAGE)
}

/// The usage error of a command line clap rejected: its first line.
pub(crate) fn clap_usage(e: &clap::Error) -> CliError {
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    let message = first.strip_prefix("error: ").unwrap_or(first);
    CliError::usage(
        message,
        "`turnback --help` lists the commands and their flags",
    )
}

/// Runs the command, writes its report (or its error) and says how the
/// process ends. An error writing the report is returned, for `main`.
pub(crate) fn run(cli: Cli) -> io::Result<ExitCode> {
    // A hook speaks its agent's protocol, not a report (commands/hook.rs).
    if let Command::Hook(args) = &cli.command {
        return Ok(hook::run(&cli, args));
    }
    let render = Renderer::new(cli.color.into(), cli.json).paging(cli.no_pager);
    let mut ctx = None;
    let mut done = dispatch(&cli, render, &mut ctx);
    let mut code = 0;
    if let Ok(report) = &done {
        render.report(&**report)?;
        code = report.exit_code().unwrap_or(0);
        let changed = cli.command.changes_a_session() && report.changed_a_session();
        // A check that found a refusal ends as the real command would.
        if let Some(refusal) = report.refusal() {
            done = Err(refusal);
        }
        // Once its output is written: the daily prune, after a change.
        if let Some(ctx) = ctx.as_ref().filter(|_| changed) {
            ctx.prune_if_due();
        }
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
        Command::Install(args) => return install::run(cli, args),
        Command::Uninstall(args) => return install::uninstall(cli, args).map(boxed),
        Command::Doctor(args) => return doctor::run(cli, args).map(boxed),
        Command::Serve(args) => return serve::run(cli, args).map(boxed),
        Command::Mcp(args) => return mcp::run(cli, args).map(boxed),
        _ => {}
    }
    let ctx = ctx.insert(Context::new(cli, render)?);
    // The full-screen view is a person's, never a request of `serve`.
    if let Command::Ui(args) = &cli.command {
        return ui::run(ctx, args).map(boxed);
    }
    in_context(ctx, &cli.command)
}

/// Runs a command that needs the store, in `ctx` (a process's own, or one
/// request's of `turnback serve`), and returns its report.
pub(crate) fn in_context(ctx: &Context, command: &Command) -> Result<Box<dyn Report>, CliError> {
    match command {
        Command::Write(args) => write::run(ctx, args).map(boxed),
        Command::Rm(args) => rm::run(ctx, args).map(boxed),
        Command::Mv(args) => mv::run(ctx, args).map(boxed),
        Command::Checkpoint(args) if args.scan => checkpoint::run_scan(ctx, args).map(boxed),
        Command::Checkpoint(args) => checkpoint::run(ctx, args).map(boxed),
        Command::Commit(args) => commit::run(ctx, args),
        Command::Rollback(args) => rollback::run(ctx, args),
        Command::Run(args) => run::run(ctx, args).map(boxed),
        Command::Turn(args) => turn::run(ctx, args).map(boxed),
        Command::Status(args) => status::run(ctx, args).map(boxed),
        Command::Undo(args) => undo::run(ctx, args).map(boxed),
        Command::Revert(args) => revert::run(ctx, args).map(boxed),
        Command::Rewind(args) => rewind::run(ctx, args),
        Command::Redo(args) => redo::run(ctx, args).map(boxed),
        Command::Log(args) => log::run(ctx, args).map(boxed),
        Command::Turns(args) => turns::run(ctx, args).map(boxed),
        Command::Diff(args) => diff::run(ctx, args).map(boxed),
        Command::Show(args) => show::run(ctx, args).map(boxed),
        Command::Blame(args) => blame::run(ctx, args).map(boxed),
        Command::Sessions(args) => sessions::run(ctx, args).map(boxed),
        Command::Prune(args) => prune::run(ctx, args).map(boxed),
        Command::Config(args) => config::run(ctx, args).map(boxed),
        Command::Demo(_)
        | Command::Completions(_)
        | Command::Man(_)
        | Command::Hook(_)
        | Command::Install(_)
        | Command::Uninstall(_)
        | Command::Doctor(_)
        | Command::Serve(_)
        | Command::Mcp(_)
        | Command::Ui(_) => {
            unreachable!("run above")
        }
    }
}

/// A handler's report, for the renderer.
fn boxed(report: impl Report + 'static) -> Box<dyn Report> {
    Box::new(report)
}
