//! The `turnback` command: parses arguments and calls the store. Nothing here
//! knows how the store works; `turnback_store` does everything.

mod cli;
mod commands;
mod context;
mod json;
mod output;
mod text;

fn main() -> std::process::ExitCode {
    commands::run(cli::parse())
}
