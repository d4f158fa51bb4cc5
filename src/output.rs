//! Where output goes and how it looks: colour on or off, and writing that
//! returns its error (a closed pipe) to the caller, who decides what it means.

use std::io::{self, IsTerminal, Write};

use anstyle::{AnsiColor, Style};

/// When to colour the output (the command line's `--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// When standard output is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always.
    Always,
    /// Never.
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

/// How text looks (coloured or not), and writing it to standard output.
/// Whether the output is text at all is not its business: text is what it
/// styles.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    /// Colour on.
    pub color: bool,
}

impl Out {
    /// Colour as `choice` says: for `Auto`, when standard output is a
    /// terminal and `NO_COLOR` is unset (or empty).
    pub fn new(choice: ColorChoice) -> Out {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && std::io::stdout().is_terminal(),
        };
        Out { color }
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

    /// Writes a block of text to standard output as it is. An error (the
    /// reader of a pipe has gone: `turnback log | head`) is returned: what to
    /// do about it is the program's choice, not this library's.
    pub fn print(&self, text: &str) -> io::Result<()> {
        write_all(&mut io::stdout().lock(), text)
    }

    /// Writes one line to standard output.
    pub fn line(&self, text: &str) -> io::Result<()> {
        self.print(&format!("{text}\n"))
    }

    /// Writes a JSON value on one line to standard output.
    pub fn json(&self, value: &serde_json::Value) -> io::Result<()> {
        self.print(&format!("{value}\n"))
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

/// Writes `text` whole and flushes it.
pub fn write_all(w: &mut dyn Write, text: &str) -> io::Result<()> {
    w.write_all(text.as_bytes())?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child process of the test below.
    const CHILD: &str = "TURNBACK_TEST_CLOSED_PIPE_CHILD";

    /// An agent embedding this library writes through `Out`: when the reader
    /// of its standard output goes away, the write must fail and return, not
    /// end the agent. The test runs itself again as a child whose standard
    /// output is a pipe the parent closes once the child has written to it.
    #[test]
    fn a_closed_pipe_is_an_error_returned_not_the_end_of_the_process() {
        if std::env::var_os(CHILD).is_some() {
            let out = Out::new(ColorChoice::Never);
            let _ = out.print("ready\n");
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_secs(20) {
                if let Err(e) = out.print("more\n") {
                    eprintln!("returned: Err({e:?})");
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            eprintln!("no error after 20 s");
            return;
        }
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "output::tests::a_closed_pipe_is_an_error_returned_not_the_end_of_the_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() > 0 {
            if line.ends_with("ready\n") {
                break;
            }
            line.clear();
        }
        assert!(line.ends_with("ready\n"), "the child never wrote: {line:?}");
        drop(stdout);
        let done = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(
            stderr.contains("returned: Err") && stderr.contains("BrokenPipe"),
            "writing to a closed pipe did not return the error; the process ended \
             ({}) with stderr {stderr:?}",
            done.status
        );
    }
}
