//! `turnback serve --stdio`: JSON requests on standard input, one per line,
//! answered on standard output (the server is `serve/`). Here is how a
//! request runs: as its command line, through the same handler and report
//! as `--json`; only what reads standard input or holds a lock between
//! requests is different (`write`'s contents come in the request; a
//! checkpoint stays held until its `commit` or `rollback`).

use turnback::output::ColorChoice;
use turnback_store::Store;

use crate::cli::Cli;
use crate::cli_error::CliError;
use crate::commands::commit::Id;
use crate::commands::rollback::RolledBack;
use crate::commands::{Command, boxed, checkpoint, dispatch, in_context, write};
use crate::context::Context;
use crate::render::{Renderer, Report, Text};
use crate::reports::{EntryReport, reverted};
use crate::serve::{Defaults, Request, Server};

/// Answer JSON requests on standard input, one per line (for agents in other languages)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each line of standard input is one request, each line of standard output one\nresponse, with the same JSON as --json (docs/JSON.md, \"serve --stdio\").\nThe server ends at the end of its input.\n\nExample:\n  echo '{\"id\": 1, \"op\": \"log\", \"session\": \"agent-42\"}' | turnback serve --stdio"
)]
pub(crate) struct ServeArgs {
    /// Serve on standard input and output (the one transport)
    #[arg(long)]
    pub stdio: bool,
}

/// Serves until standard input ends; prints nothing of its own.
pub(crate) fn run(cli: &Cli, args: &ServeArgs) -> Result<Text, CliError> {
    if !args.stdio {
        return Err(CliError::usage(
            "serve needs --stdio",
            "`turnback serve --stdio` reads requests on standard input",
        ));
    }
    crate::serve::run_stdio(server(cli)?)?;
    Ok(Text(String::new()))
}

/// The server of `cli`'s store, session and workspace (`turnback mcp` runs
/// one too).
pub(crate) fn server(cli: &Cli) -> Result<Server, CliError> {
    let store = match &cli.home {
        Some(home) => Store::new(home),
        None => Store::open_default()?,
    };
    // Read once, as a command line reads them: retention, the caps and
    // compression, for every request.
    let store = store.with_settings(turnback_store::Settings::load()?);
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::new(format!("cannot read the current directory: {e}"), None))?;
    let defaults = Defaults {
        home: store.home().to_owned(),
        session: cli.session.clone(),
        workspace: cli.workspace.clone(),
    };
    Ok(Server::new(store, cwd, defaults, answer))
}

/// Runs one request: its command line, in a context of the server's.
fn answer(server: &Server, req: &Request) -> Result<Box<dyn Report>, CliError> {
    let cli = req.to_cli(&server.defaults)?;
    let render = Renderer::new(ColorChoice::Never, true);
    // The commands that need no store (install, uninstall and doctor read
    // and write agents' settings files) run as a process runs them.
    if let Command::Demo(_)
    | Command::Completions(_)
    | Command::Man(_)
    | Command::Install(_)
    | Command::Uninstall(_)
    | Command::Doctor(_) = &cli.command
    {
        return dispatch(&cli, render, &mut None);
    }
    let ctx = Context::serving(
        &cli,
        render,
        server.store.clone(),
        server.cwd.clone(),
        server.open.clone(),
    );
    let done = run_request(server, req, &cli, &ctx);
    // As after a command line's change: the store's daily prune (a look at
    // its stamp, hourly again for the server's long-lived store).
    if done.is_ok() && cli.command.changes_a_session() {
        ctx.prune_if_due();
    }
    done
}

/// Runs request `req`, parsed as `cli`, in `ctx`.
fn run_request(
    server: &Server,
    req: &Request,
    cli: &Cli,
    ctx: &Context,
) -> Result<Box<dyn Report>, CliError> {
    match &cli.command {
        Command::Write(args) => {
            let content = req.content.as_deref().ok_or_else(|| {
                CliError::usage(
                    "write needs the new contents",
                    "give them as \"content\" (UTF-8) or \"content_base64\"",
                )
            })?;
            write::write_from(ctx, args, content).map(boxed)
        }
        // A scan bracket holds no lock: it runs as a process runs it.
        Command::Checkpoint(args) if !args.scan => {
            let session = ctx.agent_session()?;
            let ws = ctx.workspace()?;
            let file = args
                .file
                .as_ref()
                .expect("clap requires FILE without --scan");
            let path = ctx.user_path(file);
            let seq = server
                .held
                .take(session.clone(), ws, path, args.message.clone())?;
            checkpoint::checkpointed(&session, seq).map(boxed)
        }
        Command::Commit(args) if matches!(args.id(), Id::Entry(_)) => {
            let Id::Entry(id) = args.id() else {
                unreachable!("matched above")
            };
            let session = ctx.agent_session()?;
            match server.held.commit(session.id(), id) {
                Some(done) => Ok(boxed(EntryReport {
                    session: session.id().to_owned(),
                    entry: done?,
                    prefix: "committed ",
                })),
                None => in_context(ctx, &cli.command),
            }
        }
        Command::Rollback(args) if matches!(args.id(), Id::Entry(_)) => {
            let session = ctx.agent_session()?;
            let (Id::Entry(id), flags) = (args.id(), args.flags) else {
                unreachable!("matched above")
            };
            if !server.held.holds(session.id(), id) {
                return in_context(ctx, &cli.command);
            }
            if flags.force {
                // A forced rollback by number takes the file's lock itself.
                server.held.release(session.id(), id);
                return in_context(ctx, &cli.command);
            }
            if flags.dry_run {
                return match server.held.preview(session.id(), id) {
                    Some(r) => Ok(boxed(reverted(&session, format!("rollback of {id}"), r?)?)),
                    None => in_context(ctx, &cli.command),
                };
            }
            let entry = session.entries()?.into_iter().find(|e| e.seq == id);
            match server.held.rollback(session.id(), id) {
                Some(done) => {
                    done?;
                    Ok(boxed(RolledBack {
                        session: session.id().to_owned(),
                        id,
                        entry,
                    }))
                }
                None => in_context(ctx, &cli.command),
            }
        }
        command => in_context(ctx, command),
    }
}
