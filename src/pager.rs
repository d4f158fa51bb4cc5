//! A pager for long output on a terminal, as git and jj have: `$PAGER`, else
//! `less -FRX` (which quits at once when the text fits on one screen, passes
//! colour through and leaves the text on the screen). Never for JSON, never
//! when standard output is not a terminal, never with `--no-pager`.

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, Stdio};

/// The pager when nothing else is said.
pub(crate) const DEFAULT: &str = "less -FRX";

/// The shell command that pages, or `None` to print directly: what `log`,
/// `diff`, `show` and `blame` decide from the terminal, `--no-pager`,
/// `--json` and `$PAGER` (empty or `cat`: no pager).
pub(crate) fn choose(
    stdout_is_terminal: bool,
    no_pager: bool,
    json: bool,
    pager: Option<OsString>,
) -> Option<String> {
    if !stdout_is_terminal || no_pager || json {
        return None;
    }
    match pager {
        None => Some(DEFAULT.to_owned()),
        Some(p) => {
            let p = p.to_string_lossy().trim().to_owned();
            (!p.is_empty() && p != "cat").then_some(p)
        }
    }
}

/// Writes `text` through `pager` (run by `sh -c`, as git runs it) and waits
/// for it. A pager that cannot be started is not an error: the text is
/// printed directly. The person quitting the pager early is not one either.
pub(crate) fn page(pager: &str, text: &str) -> std::io::Result<()> {
    let child = Command::new("sh")
        .args(["-c", pager])
        .stdin(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return std::io::stdout().lock().write_all(text.as_bytes());
    };
    if let Some(mut input) = child.stdin.take() {
        match input.write_all(text.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
            _ => {}
        }
    }
    child.wait()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_only_text_on_a_terminal_unless_told_not_to() {
        let less = Some(DEFAULT.to_owned());
        assert_eq!(choose(true, false, false, None), less);
        assert_eq!(choose(false, false, false, None), None, "a pipe");
        assert_eq!(choose(true, true, false, None), None, "--no-pager");
        assert_eq!(choose(true, false, true, None), None, "--json");
        let most = Some(OsString::from("most -s"));
        assert_eq!(choose(true, false, false, most), Some("most -s".into()));
        assert_eq!(choose(true, false, false, Some("".into())), None);
        assert_eq!(choose(true, false, false, Some("cat".into())), None);
        assert_eq!(choose(false, false, false, Some("most".into())), None);
    }
}
