//! The command line as clap parses it: the global flags, and the subcommand
//! (each command's arguments are in its module in `commands/`). Nothing here
//! acts; `commands/` does.

use std::path::PathBuf;

use clap::Parser;
use turnback::output::ColorChoice;

use crate::commands::Command;

const GLOBAL: &str = "Global options";

const EXIT_CODES: &str = "\
Exit codes:
  0  done
  1  error (the message says what, and a hint what to do); a --session that
     does not exist is one
  2  usage: a flag or argument is missing or wrong, an agent's command names
     no session, or the config file does not parse
  3  refused: a file changed since the session wrote it, a symbolic link stands
     where it goes back, or it is in an unrelated workspace; nothing was touched";

/// A safety net under every file an AI coding agent edits.
///
/// Take back what an agent did, from any shell, while it runs or after:
/// `turnback undo` (its last change), `turnback rewind` (back to an earlier
/// prompt), `turnback revert FILE` (one file), `turnback log` (what it did).
/// Protect the agents once with `turnback install` (every one found here) or
/// `turnback install claude-code` (or codex, gemini, cursor, copilot, qwen,
/// droid); `turnback doctor` checks it.
#[derive(Debug, Parser)]
#[command(name = "turnback", version, about, long_about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The store home [default: $XDG_STATE_HOME/turnback, else ~/.local/state/turnback]
    #[arg(long, global = true, env = "TURNBACK_HOME", value_name = "DIR", help_heading = GLOBAL)]
    pub home: Option<PathBuf>,
    /// The session [default for undo, rewind, log, diff, show, turns, status: the newest one with changes here; for revert: the one that changed the file last; for redo: the one whose undo was last]
    #[arg(long, global = true, env = "TURNBACK_SESSION", value_name = "ID", help_heading = GLOBAL)]
    pub session: Option<String>,
    /// The workspace root [default: the current directory]
    #[arg(long, global = true, env = "TURNBACK_WORKSPACE", value_name = "DIR", help_heading = GLOBAL)]
    pub workspace: Option<PathBuf>,
    /// Print JSON: the API for agents in other languages (docs/JSON.md)
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// When to colour the output (NO_COLOR turns `auto` off)
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN", help_heading = GLOBAL)]
    pub color: ColorWhen,
    /// Say nothing on stderr about which session is used
    #[arg(long, short, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// Print long output directly instead of through $PAGER (else `less -FRX`) on a terminal
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_pager: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// The values of `--color`, as clap parses them. The presentation library's
/// `ColorChoice` knows nothing of clap: clap belongs to the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorWhen {
    // No doc comments on the variants: clap would show them in `--help`.
    // When standard output is a terminal and NO_COLOR is unset.
    Auto,
    Always,
    Never,
}

impl From<ColorWhen> for ColorChoice {
    fn from(w: ColorWhen) -> ColorChoice {
        match w {
            ColorWhen::Auto => ColorChoice::Auto,
            ColorWhen::Always => ColorChoice::Always,
            ColorWhen::Never => ColorChoice::Never,
        }
    }
}

/// The headings of the top-level `--help`, in the order it lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heading {
    /// What a person runs: undo, look, tidy up.
    People,
    /// What agents (and their hooks) run: the protected writes and the
    /// turn and checkpoint bookkeeping.
    Plumbing,
}

/// The heading `--help` lists a command under. A new command is for people
/// unless it has a line here.
pub(crate) fn heading(command: &str) -> Heading {
    match command {
        "write" | "rm" | "mv" | "checkpoint" | "commit" | "rollback" | "turn" | "hook" => {
            Heading::Plumbing
        }
        _ => Heading::People,
    }
}

/// The title of each heading.
fn title(h: Heading) -> &'static str {
    match h {
        Heading::People => "Commands",
        Heading::Plumbing => "Agent plumbing (what agents and their hooks run)",
    }
}

/// Parses the command line; a usage error is returned, not printed, so that
/// `--json` can report it as JSON too.
pub(crate) fn parse() -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let matches = without_empty_env(help_command()).try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// `cmd` with each argument whose environment variable is set but empty
/// (`TURNBACK_HOME=`) reading no variable: an empty variable counts as
/// unset, as a shell user means it, instead of a value clap refuses (a
/// usage error, which a hook must never turn into a block).
fn without_empty_env(mut cmd: clap::Command) -> clap::Command {
    let empty: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| {
            a.get_env()
                .is_some_and(|name| std::env::var_os(name).is_some_and(|v| v.is_empty()))
        })
        .map(|a| a.get_id().clone())
        .collect();
    for id in empty {
        cmd = cmd.mut_arg(id, |a| a.env(None::<&str>));
    }
    // Global arguments are copied into each subcommand when it is built.
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, without_empty_env);
    }
    cmd
}

/// True when the command line runs `turnback hook` (its first word that is
/// not a global option or an option's value): a usage error there must not
/// exit 2, which an agent reads as "block the tool".
pub(crate) fn is_hook_line(args: &[std::ffi::OsString]) -> bool {
    let mut words = args.iter().skip(1);
    while let Some(w) = words.next() {
        let w = w.to_string_lossy();
        if ["--home", "--session", "--workspace", "--color"].contains(&w.as_ref()) {
            words.next();
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        return w == "hook";
    }
    false
}

/// The clap command as it parses: [`command`], with the top-level help
/// listing the commands under their headings ([`heading`]): commands for
/// people first, agent plumbing second. clap lists subcommands under one
/// heading only, so they are hidden from its own list (they parse all the
/// same) and the template lists them.
fn help_command() -> clap::Command {
    let mut cmd = command();
    cmd.build();
    let subs: Vec<(String, String)> = cmd
        .get_subcommands()
        .map(|s| {
            let about = s.get_about().map(|a| a.to_string()).unwrap_or_default();
            (s.get_name().to_owned(), about)
        })
        .collect();
    let width = subs.iter().map(|(n, _)| n.len()).max().unwrap_or(0) + 2;
    let mut lists = String::new();
    for h in [Heading::People, Heading::Plumbing] {
        lists.push_str(&format!("{}:\n", title(h)));
        for (name, about) in subs.iter().filter(|(n, _)| heading(n) == h) {
            lists.push_str(&command_line(name, about, width));
        }
        lists.push('\n');
    }
    for (name, _) in &subs {
        cmd = cmd.mut_subcommand(name, |s| s.hide(true));
    }
    // Hidden subcommands leave `<COMMAND>` out of the usage line clap makes.
    cmd.override_usage("turnback [OPTIONS] <COMMAND>")
        .help_template(format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{lists}{{all-args}}{{after-help}}"
    ))
}

/// One command's line of the top-level help: its name in a column of
/// `width`, then its help, wrapped at 100 columns as clap wraps its own.
fn command_line(name: &str, about: &str, width: usize) -> String {
    let indent = 2 + width;
    let mut out = format!("  {name:<width$}");
    let mut col = indent;
    for (i, word) in about.split_whitespace().enumerate() {
        if i > 0 && col + 1 + word.len() > 100 {
            out.push_str(&format!("\n{:indent$}", ""));
            col = indent;
        } else if i > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
    }
    out.push('\n');
    out
}

/// The clap command, for completions and the manual page.
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}
