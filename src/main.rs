//! The `turnback` command: parses arguments and calls the store. Nothing here
//! knows how the store works; `turnback_store` does everything.

mod cli;
mod cli_error;
mod commands;
mod context;
mod hooks;
mod install;
mod naming;
mod pager;
mod render;
mod reports;
mod scan_report;
mod serve;
mod sys;
mod ui;

use std::process::ExitCode;

fn main() -> ExitCode {
    let done = match cli::parse() {
        Ok(cli) => commands::run(cli),
        // A hook's line its agent runs on every tool call: never exit 2
        // (a block) by accident.
        Err(e) if cli::is_hook_line(&std::env::args_os().collect::<Vec<_>>()) => {
            Ok(commands::hook::usage_error(&e))
        }
        Err(e) => Ok(commands::usage_error(e)),
    };
    match done {
        Ok(code) => code,
        // The reader of a pipe has gone (`turnback log | head`): it has what
        // it wanted, which is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: could not write the output: {e}");
            ExitCode::from(turnback::errors::EXIT_ERROR)
        }
    }
}
