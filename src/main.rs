//! The `turnback` command: parses arguments and calls the store. Nothing here
//! knows how the store works; `turnback_store` does everything.

mod cli;
mod commands;
mod context;
mod render;
mod sys;

fn main() -> std::process::ExitCode {
    match cli::parse() {
        Ok(cli) => commands::run(cli),
        Err(e) => commands::usage_error(e),
    }
}
