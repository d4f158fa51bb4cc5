//! The picker of turns for `rewind` on a terminal: newest first, a page at a
//! time (sessions can be long), each with its time, prompt and the files it
//! changed; then a confirmation that names the number of files.
//!
//! It reads lines, so it works on any terminal and in tests through a pipe.

use std::io::{self, BufRead, Write};

use turnback_store::TurnSummary;

use crate::output::{Out, Role};
use crate::text;

/// Turns shown at once.
pub const PAGE: usize = 10;

/// The longest prompt shown on a line.
const PROMPT_WIDTH: usize = 60;

/// Asks which turn to rewind to; `None` when the person quits (or input ends).
pub fn pick_turn(
    session: &str,
    turns: &[TurnSummary],
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    out: &Out,
) -> io::Result<Option<u32>> {
    let newest_first: Vec<&TurnSummary> = turns.iter().rev().collect();
    let pages = newest_first.len().div_ceil(PAGE).max(1);
    let mut page = 0;
    loop {
        let shown = &newest_first
            [(page * PAGE).min(newest_first.len())..((page + 1) * PAGE).min(newest_first.len())];
        writeln!(
            output,
            "{}",
            out.paint(
                Role::Header,
                &format!(
                    "Turns of session {session}, newest first ({}-{} of {}):",
                    page * PAGE + 1,
                    page * PAGE + shown.len(),
                    newest_first.len()
                )
            )
        )?;
        for t in shown {
            writeln!(output, "  {}", turn_line(out, t))?;
        }
        let paging = match (page > 0, page + 1 < pages) {
            (true, true) => "; n: older, p: newer",
            (false, true) => "; n: older",
            (true, false) => "; p: newer",
            (false, false) => "",
        };
        write!(
            output,
            "Rewind to the start of which turn? (number{paging}; q: quit) "
        )?;
        output.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(output)?;
            return Ok(None);
        }
        match line.trim() {
            "" | "q" | "quit" => return Ok(None),
            "n" if page + 1 < pages => page += 1,
            "p" if page > 0 => page -= 1,
            other => match other.parse::<u32>() {
                Ok(n) if turns.iter().any(|t| t.turn.number == n) => return Ok(Some(n)),
                _ => writeln!(output, "{other:?} is not one of the turns listed")?,
            },
        }
    }
}

/// One turn as the picker lists it.
pub fn turn_line(out: &Out, t: &TurnSummary) -> String {
    let prompt: String = t
        .turn
        .prompt
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let prompt = if prompt.chars().count() > PROMPT_WIDTH {
        format!(
            "{}...",
            prompt.chars().take(PROMPT_WIDTH - 3).collect::<String>()
        )
    } else {
        prompt
    };
    format!(
        "{:>4}  {}  {:>2} {}  {}",
        t.turn.number,
        out.paint(Role::Dim, &text::time(t.turn.time)),
        t.files,
        if t.files == 1 { "file " } else { "files" },
        out.paint(Role::Path, &format!("{prompt:?}"))
    )
}

/// Asks a yes/no question; only "y" or "yes" is yes.
pub fn confirm(
    question: &str,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> io::Result<bool> {
    write!(output, "{question} [y/N] ")?;
    output.flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnback_store::Turn;

    fn turns(n: u32) -> Vec<TurnSummary> {
        (1..=n)
            .map(|i| TurnSummary {
                turn: Turn {
                    number: i,
                    prompt: format!("prompt {i}\nwith a second line"),
                    time: time::OffsetDateTime::UNIX_EPOCH,
                    conversation_index: Some(u64::from(i) * 2),
                },
                entries: i as usize,
                files: 1,
            })
            .collect()
    }

    fn run(n: u32, typed: &str) -> (Option<u32>, String) {
        let out = Out { color: false };
        let mut shown = Vec::new();
        let got = pick_turn("s", &turns(n), &mut typed.as_bytes(), &mut shown, &out).unwrap();
        (got, String::from_utf8(shown).unwrap())
    }

    #[test]
    fn lists_newest_first_and_returns_the_number_typed() {
        let (got, shown) = run(3, "2\n");
        assert_eq!(got, Some(2));
        let first = shown.lines().nth(1).unwrap();
        assert!(first.trim_start().starts_with("3 "), "{shown}");
        assert!(shown.contains("\"prompt 3 with a second line\""), "{shown}");
    }

    #[test]
    fn pages_through_a_long_session() {
        let (got, shown) = run(25, "n\nn\n3\n");
        assert_eq!(got, Some(3));
        assert!(
            shown.contains("(1-10 of 25)")
                && shown.contains("(11-20 of 25)")
                && shown.contains("(21-25 of 25)")
        );
        assert!(shown.contains("n: older, p: newer"));
    }

    #[test]
    fn quits_on_q_empty_or_end_of_input_and_rejects_unknown_turns() {
        assert_eq!(run(3, "q\n").0, None);
        assert_eq!(run(3, "\n").0, None);
        assert_eq!(run(3, "").0, None);
        let (got, shown) = run(3, "9\nx\n1\n");
        assert_eq!(got, Some(1));
        assert!(shown.contains("\"9\" is not one of the turns listed"));
    }

    #[test]
    fn confirm_needs_a_yes() {
        let mut sink = Vec::new();
        assert!(confirm("go?", &mut &b"y\n"[..], &mut sink).unwrap());
        assert!(confirm("go?", &mut &b"YES\n"[..], &mut sink).unwrap());
        assert!(!confirm("go?", &mut &b"\n"[..], &mut sink).unwrap());
        assert!(!confirm("go?", &mut &b""[..], &mut sink).unwrap());
    }
}
