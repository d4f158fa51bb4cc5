//! Where output goes and how it looks: colour on or off, JSON or text, and a
//! quiet exit when the reader of a pipe has gone.

use std::io::{IsTerminal, Write};

use anstyle::{AnsiColor, Style};

/// `--color`: when to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[allow(missing_docs)] // clap would show doc comments as help
pub enum ColorChoice {
    // When standard output is a terminal and NO_COLOR is unset.
    Auto,
    Always,
    Never,
}

/// The styles output uses, by role.
#[derive(Clone, Copy)]
pub enum Role {
    Added,
    Removed,
    Hunk,
    Header,
    Path,
    Dim,
    Warn,
}

impl Role {
    fn style(self) -> Style {
        match self {
            Role::Added => AnsiColor::Green.on_default(),
            Role::Removed => AnsiColor::Red.on_default(),
            Role::Hunk => AnsiColor::Cyan.on_default(),
            Role::Header => Style::new().bold(),
            Role::Path => Style::new().bold(),
            Role::Dim => Style::new().dimmed(),
            Role::Warn => AnsiColor::Yellow.on_default().bold(),
        }
    }
}

/// How to print.
#[derive(Clone, Copy)]
pub struct Out {
    pub color: bool,
    pub json: bool,
}

impl Out {
    pub fn new(choice: ColorChoice, json: bool) -> Out {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && std::io::stdout().is_terminal(),
        };
        Out {
            color: color && !json,
            json,
        }
    }

    /// `text` in the style of `role`, when colour is on.
    pub fn paint(&self, role: Role, text: &str) -> String {
        if self.color {
            let s = role.style();
            format!("{}{text}{}", s.render(), s.render_reset())
        } else {
            text.to_owned()
        }
    }

    /// Prints a block of text as it is.
    pub fn print(&self, text: &str) {
        emit(text);
    }

    /// Prints one line.
    pub fn line(&self, text: &str) {
        emit(&format!("{text}\n"));
    }

    /// Prints a JSON value on one line.
    pub fn json(&self, value: &serde_json::Value) {
        emit(&format!("{value}\n"));
    }

    /// A unified diff with added, removed and hunk lines coloured.
    pub fn diff(&self, unified: &str) -> String {
        unified
            .split_inclusive('\n')
            .map(|l| {
                let role = if l.starts_with("+++") || l.starts_with("---") {
                    Some(Role::Header)
                } else if l.starts_with('+') {
                    Some(Role::Added)
                } else if l.starts_with('-') {
                    Some(Role::Removed)
                } else if l.starts_with("@@") {
                    Some(Role::Hunk)
                } else {
                    None
                };
                match role {
                    Some(r) => {
                        let body = l.strip_suffix('\n').unwrap_or(l);
                        let nl = if l.ends_with('\n') { "\n" } else { "" };
                        format!("{}{nl}", self.paint(r, body))
                    }
                    None => l.to_owned(),
                }
            })
            .collect()
    }
}

/// Writes to standard output; a closed pipe (`turnback log | head`) ends the
/// program quietly instead of with an error.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: could not write the output: {e}");
        std::process::exit(1);
    }
}
