//! `turnback hook claude-code|codex|gemini|cursor`: what an agent runs before and
//! after every tool call, with the event as one JSON object on stdin.
//!
//! Not a report like the other commands: its output is the agent's hook
//! protocol. It exits 0 whatever happens (2 would block the agent's tool),
//! prints at most one JSON object with a `systemMessage` for the person, and
//! makes no permission decision; only `--strict` turns a failed backup into
//! a block (exit 2, the reason on stderr, which the agent shows its model).

use std::io::Write;
use std::process::ExitCode;

use turnback_store::{Settings, Store};

use crate::cli::Cli;
use crate::hooks::event::{Agent, EventKind};
use crate::hooks::{self, apply, last_error, outcome, payload};

/// What an agent's hooks run: back up the files its tools change
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example (what Claude Code runs, as `turnback install claude-code` configures it):\n  echo '{\"session_id\":\"s1\",\"cwd\":\"/work/app\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Edit\",\"tool_input\":{\"file_path\":\"/work/app/src/lib.rs\"},\"tool_use_id\":\"t1\"}' | turnback hook claude-code\n\nExit status 0 always, and nothing on stdout unless something went wrong:\nthen {\"systemMessage\": \"turnback: FILE NOT backed up: ...\"}. With --strict\na backup that failed blocks the tool (exit 2, the reason on stderr)."
)]
pub(crate) struct HookArgs {
    /// The agent whose hook this is
    #[arg(value_enum)]
    agent: Agent,
    /// Block the tool (exit 2) when its files could not be backed up
    #[arg(long)]
    strict: bool,
}

/// Runs the hook: never fails, says how the process ends.
pub(crate) fn run(cli: &Cli, args: &HookArgs) -> ExitCode {
    let store = match &cli.home {
        Some(home) => Ok(Store::new(home)),
        None => Store::open_default(),
    };
    // The caps and the rest of the settings hold for an agent's changes as
    // for every command's; settings that cannot be read leave the defaults
    // in force, and the person is told.
    let (store, bad_settings) = match store.map(|s| (Settings::load(), s)) {
        Ok((Ok(settings), s)) => (Ok(s.with_settings(settings)), None),
        Ok((Err(e), s)) => (Ok(s), Some(e)),
        Err(e) => (Err(e), None),
    };
    let mut stdin = std::io::stdin().lock();
    let (event_name, outcome) = match (store.as_ref(), payload::read_object(&mut stdin)) {
        (Err(e), read) => {
            // No store to back anything up into: a tool that changes files
            // runs unprotected, which is what `--strict` blocks on.
            let ev = read.ok().and_then(|p| hooks::parse(args.agent, &p).ok());
            let mut out = failure(format!("turnback: nothing is backed up: {e}"));
            out.backup_failed = ev
                .as_ref()
                .is_some_and(|ev| apply::protects_before(&ev.kind));
            (ev.map(|ev| ev.name), out)
        }
        (_, Err(bad)) => (None, failure(format!("turnback: event ignored: {bad}"))),
        (Ok(store), Ok(p)) => match hooks::parse(args.agent, &p) {
            Err(bad) => {
                let name = p
                    .opt_str("hook_event_name")
                    .ok()
                    .flatten()
                    .map(str::to_owned);
                (name, failure(format!("turnback: event ignored: {bad}")))
            }
            Ok(ev) => {
                let before_files = matches!(ev.kind, EventKind::Before(_));
                let mut out = apply::apply(store, &ev, writer_pid(args.agent));
                out.backup_failed &= before_files;
                // The store's daily prune, as after a command line's change:
                // once a tool's change is committed (never before a tool, so
                // that it never delays one), sparing the agent's session.
                if matches!(ev.kind, EventKind::After(_) | EventKind::Failed(_)) {
                    store.prune_if_due(Some(&ev.session));
                }
                (Some(ev.name), out)
            }
        },
    };
    let mut outcome = outcome;
    if let Some(e) = bad_settings {
        let said = format!("turnback: the settings were not read ({e}): the defaults are in force");
        outcome.messages.insert(0, said);
    }
    if outcome.messages.is_empty() {
        return ExitCode::SUCCESS;
    }
    let text = outcome.messages.join("\n");
    if let Ok(store) = &store {
        let event = event_name.as_deref().unwrap_or("?");
        last_error::record(store.home(), args.agent.name(), event, &text);
    }
    tell(&text, args.strict && outcome.backup_failed)
}

/// Says `text` to the person, and how the hook ends: with `block`, on
/// stderr and exit 2 (the agent blocks the tool and gives its model the
/// reason, as `--strict` asks); else as a `systemMessage`, exit 0.
fn tell(text: &str, block: bool) -> ExitCode {
    if block {
        eprintln!(
            "{text}\n(turnback --strict: the tool was blocked so that nothing changes unprotected)"
        );
        return ExitCode::from(2);
    }
    let line = serde_json::json!({ "systemMessage": text });
    // A closed stdout must not fail the hook: the agent would see an error.
    let _ = writeln!(std::io::stdout(), "{line}");
    ExitCode::SUCCESS
}

/// A hook line clap could not read (a newer or older hook line, an agent
/// this turnback does not know, a variable it cannot take): nothing is
/// backed up, the person is told, and the tool goes ahead (exit 0), unless
/// the line asks `--strict`, which blocks (exit 2) as a failed backup does.
pub(crate) fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let why = super::clap_usage(e);
    let text = format!(
        "turnback: this hook line could not be read ({}): nothing is backed up; run `turnback doctor`, then `turnback install` again",
        why.message()
    );
    tell(&text, std::env::args_os().any(|a| a == "--strict"))
}

fn failure(message: String) -> outcome::Outcome {
    outcome::Outcome {
        messages: vec![message],
        ..Default::default()
    }
}

/// The process that makes the writes between a checkpoint and its commit:
/// the agent. Claude Code names itself (`CLAUDE_PID`); otherwise it is the
/// hook's parent (past a shell the command line ran in).
fn writer_pid(agent: Agent) -> u32 {
    if agent == Agent::ClaudeCode
        && let Some(pid) = std::env::var("CLAUDE_PID")
            .ok()
            .and_then(|v| v.parse().ok())
    {
        return pid;
    }
    crate::sys::agent_pid()
}
