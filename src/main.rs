//! The `turnback` command: parses arguments and calls the store. Nothing here
//! knows how the store works.

mod cli;
mod commands;
mod context;
mod report;

fn main() -> std::process::ExitCode {
    commands::run(cli::parse())
}
