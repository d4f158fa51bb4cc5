//! `turnback man`: the manual page, generated from the clap definition so it
//! never drifts from it.

use crate::cli;
use crate::commands::CliError;
use crate::render::Text;

/// Print the manual page (roff)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback man | man -l -")]
pub(crate) struct ManArgs {}

pub(crate) fn run(_: &ManArgs) -> Result<Text, CliError> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cli::command())
        .render(&mut buf)
        .map_err(|e| CliError::new(format!("could not render the manual page: {e}"), None))?;
    Ok(Text(String::from_utf8_lossy(&buf).into_owned()))
}
