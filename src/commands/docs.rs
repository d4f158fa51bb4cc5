//! `turnback completions SHELL` and `turnback man`, generated from the clap
//! definition so they never drift from it.

use crate::cli;
use crate::commands::CliError;
use crate::render::Text;

pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Text, CliError> {
    let mut cmd = cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "turnback", &mut buf);
    Ok(Text(String::from_utf8_lossy(&buf).into_owned()))
}

pub(crate) fn man() -> Result<Text, CliError> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cli::command())
        .render(&mut buf)
        .map_err(|e| CliError::new(format!("could not render the manual page: {e}"), None))?;
    Ok(Text(String::from_utf8_lossy(&buf).into_owned()))
}
