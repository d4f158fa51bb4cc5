//! What a person reads about a session's history beyond one entry: its turns
//! (`turnback turns`), and the log with each turn's boundary and prompt. The
//! JSON of the same is in [`crate::json`]'s neighbour functions here, so a
//! shape and its text stay side by side.

use serde_json::{Value, json};
use turnback_store::{Entry, Turn, TurnSummary};

use crate::json::rfc3339;
use crate::output::{Out, Role};
use crate::text::{entry_line, escape, message_line, plural};
use crate::when::when;

/// A turn's prompt as a person reads it: quoted, escaped, cut to `max`
/// characters (with `…`) so that one long prompt keeps to its line.
pub fn prompt(p: &str, max: usize) -> String {
    let p = escape(p);
    let cut: String = p.chars().take(max).collect();
    if cut.len() < p.len() {
        format!("\"{cut}…\"")
    } else {
        format!("\"{cut}\"")
    }
}

/// `turnback turns`: newest first, a line each: number, time, files, prompt.
pub fn turns(out: &Out, session: &str, list: &[TurnSummary]) -> String {
    let mut s = format!(
        "{}\n",
        out.paint(
            Role::Header,
            &format!(
                "session {session}: {} {}",
                list.len(),
                plural(list.len(), "turn")
            )
        )
    );
    for t in list.iter().rev() {
        s.push_str(&format!(
            "turn {:<3} {}  {:>8}  {}\n",
            t.turn.number,
            out.paint(Role::Dim, &when(t.turn.time)),
            format!("{} {}", t.files, plural(t.files, "file")),
            prompt(&t.turn.prompt, 60)
        ));
    }
    if list.is_empty() {
        s.push_str("no turns: agents begin one with `turnback turn --prompt TEXT`\n");
    }
    s
}

/// The JSON of `turnback turns`: `{"session", "turns"}`, newest first.
pub fn turns_json(session: &str, list: &[TurnSummary]) -> Value {
    let turns: Vec<Value> = list
        .iter()
        .rev()
        .map(|t| {
            json!({
                "number": t.turn.number,
                "prompt": t.turn.prompt,
                "time": rfc3339(t.turn.time),
                "conversation_index": t.turn.conversation_index,
                "entries": t.entries,
                "files": t.files,
            })
        })
        .collect();
    json!({ "session": session, "turns": turns })
}

/// The `turns` of `log --json`: each turn in effect, oldest first, with the
/// entries (by `seq`) of `entries` that belong to it.
pub fn log_turns_json(turns: &[Turn], entries: &[Entry]) -> Value {
    let list: Vec<Value> = turns
        .iter()
        .map(|t| {
            let seqs: Vec<u64> = entries
                .iter()
                .filter(|e| e.turn == t.number)
                .map(|e| e.seq)
                .collect();
            json!({
                "number": t.number,
                "prompt": t.prompt,
                "time": rfc3339(t.time),
                "conversation_index": t.conversation_index,
                "entries": seqs,
            })
        })
        .collect();
    Value::Array(list)
}

/// The session's entries grouped by message (consecutive runs), oldest
/// first, each turn's boundary shown before its first message with its
/// prompt. A session without turns reads as [`crate::text::log`] always did.
pub fn log(out: &Out, session: &str, entries: &[Entry], turns: &[Turn]) -> String {
    let mut s = format!(
        "{}\n",
        out.paint(
            Role::Header,
            &format!(
                "session {session}: {} {}{}",
                entries.len(),
                plural(entries.len(), "change"),
                if turns.is_empty() {
                    String::new()
                } else {
                    format!(" in {} {}", turns.len(), plural(turns.len(), "turn"))
                }
            )
        )
    );
    let mut shown_turn: Option<u32> = None;
    let mut next_turn = turns.iter().peekable();
    let mut current: Option<&str> = None;
    for e in entries {
        // Every turn begun up to this entry's, those without entries too.
        while let Some(t) = next_turn.next_if(|t| t.number <= e.turn) {
            s.push_str(&turn_line(out, t));
            shown_turn = Some(t.number);
            current = None;
        }
        if shown_turn.is_none() && !turns.is_empty() && e.turn == 0 {
            s.push_str(&format!("{}\n", out.paint(Role::Header, "before any turn")));
            shown_turn = Some(0);
        }
        if current != Some(e.message_id.as_str()) {
            s.push_str(&message_line(out, e, &when(e.time)));
            current = Some(&e.message_id);
        }
        s.push_str(&format!("  {}\n", entry_line(out, e)));
    }
    for t in next_turn {
        s.push_str(&turn_line(out, t));
    }
    s
}

fn turn_line(out: &Out, t: &Turn) -> String {
    format!(
        "{} {}  {}\n",
        out.paint(Role::Header, &format!("turn {}", t.number)),
        prompt(&t.prompt, 72),
        out.paint(Role::Dim, &when(t.time))
    )
}
