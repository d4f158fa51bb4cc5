//! `turnback completions SHELL`: a completion script, generated from the
//! clap definition so it never drifts from it.

use crate::cli;
use crate::cli_error::CliError;
use crate::render::Text;

/// Print a shell completion script
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  turnback completions bash > ~/.local/share/bash-completion/completions/turnback"
)]
pub(crate) struct CompletionsArgs {
    /// The shell
    shell: clap_complete::Shell,
}

pub(crate) fn run(args: &CompletionsArgs) -> Result<Text, CliError> {
    let mut cmd = cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "turnback", &mut buf);
    Ok(Text(String::from_utf8_lossy(&buf).into_owned()))
}
