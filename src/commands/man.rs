//! `turnback man`: the manual page, generated from the clap definition so it
//! never drifts from it.

use crate::cli;
use crate::cli_error::CliError;
use crate::render::Text;

/// Print the manual page (roff)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback man | man -l -")]
pub(crate) struct ManArgs {}

pub(crate) fn run(_: &ManArgs) -> Result<Text, CliError> {
    let page = render_man()
        .map_err(|e| CliError::new(format!("could not render the manual page: {e}"), None))?;
    Ok(Text(page))
}

/// The whole manual as one page. `clap_mangen`'s own page lists the commands
/// as `turnback-write(1)` and so on, pages that are not shipped (nor generated
/// anywhere); here every command gets its own part of this page instead (its
/// synopsis, description, options and example), and the variables the
/// options read get an ENVIRONMENT section.
fn render_man() -> std::io::Result<String> {
    let mut cmd = cli::command();
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let mut page = String::from_utf8_lossy(&out).into_owned();

    page.push_str(".SH COMMANDS\n");
    page.push_str(
        "Each command also takes the global options above; \\fBturnback help\\fR \\fICOMMAND\\fR \
         prints the same as its part here.\n",
    );
    let globals: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().to_string())
        .collect();
    // In the order of `--help`: the commands for people, then the plumbing.
    for h in [cli::Heading::People, cli::Heading::Plumbing] {
        let subs = cmd.get_subcommands().filter(|s| s.get_name() != "help");
        for sub in subs.filter(|s| cli::heading(s.get_name()) == h) {
            page.push_str(&command_part(sub, &globals)?);
        }
    }

    page.push_str(".SH ENVIRONMENT\n");
    for arg in cmd.get_arguments() {
        let (Some(var), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        page.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}. Read when \\fB\\-\\-{}\\fR is not given.\n",
            escape(&var.to_string_lossy()),
            escape(&help),
            escape(long),
        ));
    }
    page.push_str(
        ".TP\n\\fBNO_COLOR\\fR\nWhen set and not empty, \\fB\\-\\-color auto\\fR \
         (the default) does not colour.\n",
    );
    page.push_str(
        ".TP\n\\fBPAGER\\fR\nThe pager of long \\fBlog\\fR, \\fBdiff\\fR, \\fBshow\\fR and \\fBblame\\fR \
         output on a terminal (else \\fBless \\-FRX\\fR; empty or \\fBcat\\fR: none). \\fB\\-\\-no\\-pager\\fR \
         turns it off.\n",
    );
    page.push_str(
        ".TP\n\\fBTURNBACK_NOW\\fR\nAn RFC 3339 time taken as now for how long ago a time \
         was, and for \\fB\\-\\-since\\fR and \\fB\\-\\-until\\fR (tests and demos). Times \
         are shown in the local time zone (\\fBTZ\\fR).\n",
    );
    // The settings' variables, which the store's settings read, not clap.
    page.push_str(
        ".TP\n\\fBXDG_CONFIG_HOME\\fR\nWhere the config file is: \
         \\fB$XDG_CONFIG_HOME/turnback/config.toml\\fR, else \
         \\fB~/.config/turnback/config.toml\\fR; \\fBturnback config\\fR shows the settings in force.\n",
    );
    for (key, var) in turnback_store::SETTING_KEYS {
        page.push_str(&format!(
            ".TP\n\\fB{var}\\fR\nOverrides \\fB{}\\fR of the config file{}.\n",
            escape(key),
            match key {
                "max_bytes" | "max_baseline_bytes" => " (bytes, or with a unit: 500M, 2G)",
                "compress_backups" => " (true or false)",
                _ => "",
            },
        ));
    }

    let mut tail = Vec::new();
    man.render_extra_section(&mut tail)?;
    // The top-level "after help" is the table of exit codes.
    page.push_str(&String::from_utf8_lossy(&tail).replacen(".SH EXTRA", ".SH \"EXIT STATUS\"", 1));
    let mut version = Vec::new();
    man.render_version_section(&mut version)?;
    page.push_str(&String::from_utf8_lossy(&version));
    Ok(once_preamble(&page))
}

/// `page` with the preamble that every rendered section starts with (it
/// defines the string `Aq`) kept only where the page starts.
fn once_preamble(page: &str) -> String {
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    match page.strip_prefix(PREAMBLE) {
        Some(rest) => format!("{PREAMBLE}{}", rest.replace(PREAMBLE, "")),
        None => page.to_owned(),
    }
}

/// One command's part of the page: a subsection headed `turnback NAME`,
/// holding what `clap_mangen` would put on a page of its own, its sections
/// turned into paragraphs. The global options and `--help` are left out
/// (the page lists them once).
fn command_part(sub: &clap::Command, globals: &[String]) -> std::io::Result<String> {
    let mut sub = sub.clone();
    for id in globals.iter().map(String::as_str).chain(["help"]) {
        if sub.get_arguments().any(|a| a.get_id() == id) {
            sub = sub.mut_arg(id, |a| a.hide(true));
        }
    }
    let name = sub.get_name().to_owned();
    let man = clap_mangen::Man::new(sub.clone());
    let mut out = Vec::new();
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if sub.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if sub.get_after_help().is_some() || sub.get_after_long_help().is_some() {
        man.render_extra_section(&mut out)?;
    }
    let mut part = format!(".SS \"turnback {name}\"\n");
    for line in String::from_utf8_lossy(&out).lines() {
        match line.strip_prefix(".SH ") {
            // The synopsis opens the part; the other sections are paragraphs.
            Some("SYNOPSIS") => {}
            Some(_) => part.push_str(".PP\n"),
            None => {
                part.push_str(line);
                part.push('\n');
            }
        }
    }
    Ok(part)
}

/// `text` as roff body text: backslashes and hyphens escaped, and a line that
/// would start with a control character kept as text.
fn escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}
