//! The one place that chooses the format. A command's handler returns a
//! report, plain data that knows how to be JSON and how to be text; the
//! renderer, made once from `--json` and `--color`, writes it one way or the
//! other. Handlers never print and never look at `--json`, so the same reports
//! can be sent elsewhere (a long-running mode, another protocol).

use std::io::IsTerminal;

use serde_json::Value;
use turnback::output::{ColorChoice, Out};

use crate::cli_error::CliError;

/// What a command has to say when it succeeds.
pub(crate) trait Report {
    /// The report as JSON (`docs/JSON.md`), or `None` for a report that is
    /// text whatever the format (the demo, a completion script, the manual
    /// page: what they print is for a person or a shell, not a program).
    fn json(&self) -> Option<Value>;

    /// The report as a person reads it, styled (coloured or not) by `out`.
    fn text(&self, out: &Out) -> String;

    /// The refusal a check reports (a dry run that found what would refuse
    /// the real command): written after the report, as the real command
    /// would write it, and the process exits with its code (3).
    fn refusal(&self) -> Option<CliError> {
        None
    }

    /// Whether the text may be long enough to page on a terminal (`log`,
    /// `diff`, `show`, `blame`).
    fn paged(&self) -> bool {
        false
    }

    /// The process's exit code when the command succeeded, if not 0
    /// (`run` exits with its command's).
    fn exit_code(&self) -> Option<u8> {
        None
    }

    /// For a command listed as changing a session
    /// (`Command::changes_a_session`) that may end without changing one
    /// (`ui`): whether it did, so that the daily prune runs only after a
    /// change.
    fn changed_a_session(&self) -> bool {
        true
    }
}

/// A report that is only text, printed as it is.
pub(crate) struct Text(pub(crate) String);

impl Report for Text {
    fn json(&self) -> Option<Value> {
        None
    }

    fn text(&self, _: &Out) -> String {
        self.0.clone()
    }
}

/// The format of everything a command prints, chosen once.
#[derive(Clone, Copy)]
pub(crate) struct Renderer {
    json: bool,
    style: Out,
    /// `--no-pager`.
    no_pager: bool,
}

impl Renderer {
    /// JSON with `--json` (and then no colour), else text coloured as
    /// `--color` and `NO_COLOR` say.
    pub(crate) fn new(color: ColorChoice, json: bool) -> Renderer {
        Renderer {
            json,
            // The text of a report that is text whatever the format (the
            // demo) is not coloured either: stdout is a program's.
            style: if json {
                Out { color: false }
            } else {
                Out::new(color)
            },
            no_pager: false,
        }
    }

    /// The same renderer, paging long text unless `no_pager`.
    pub(crate) fn paging(self, no_pager: bool) -> Renderer {
        Renderer { no_pager, ..self }
    }

    /// How text is styled: what a report's text is made with, and what a
    /// second turnback started by this one should use.
    pub(crate) fn style(&self) -> Out {
        self.style
    }

    /// True when the command may ask the person at the terminal (the rewind
    /// picker): standard input and output are a terminal, and the output is
    /// not JSON, which a program reads.
    pub(crate) fn can_ask(&self) -> bool {
        !self.json && std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
    }

    /// Writes a report to standard output; an error writing it is returned
    /// (`main` decides what a closed pipe means).
    pub(crate) fn report(&self, report: &dyn Report) -> std::io::Result<()> {
        match report.json() {
            Some(v) if self.json => self.style.json(&v),
            _ => {
                let text = report.text(&self.style);
                let pager = report.paged().then(|| {
                    crate::pager::choose(
                        std::io::stdout().is_terminal(),
                        self.no_pager,
                        self.json,
                        std::env::var_os("PAGER"),
                    )
                });
                match pager.flatten() {
                    Some(p) => crate::pager::page(&p, &text),
                    None => self.style.print(&text),
                }
            }
        }
    }

    /// Writes an error to standard error: one JSON object on one line, or
    /// the error and hint lines.
    pub(crate) fn error(&self, e: &CliError) {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = if self.json {
            writeln!(err, "{}", e.json())
        } else {
            write!(err, "{}", e.text())
        };
    }
}
