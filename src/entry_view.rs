//! What a person reads, and the JSON, of `turnback show` (one entry: what it
//! did, and its diff).

use serde_json::{Value, json};
use turnback_store::{Entry, FileDiff, Turn};

use crate::history::prompt;
use crate::output::{Out, Role};
use crate::text::{change, diff_body, escape};
use crate::when::when;

/// One entry shown: the entry, its turn (when it has one), and its diff
/// (`None` when what it left is not known any more).
pub struct Shown {
    /// The entry.
    pub entry: Entry,
    /// The turn it was made in.
    pub turn: Option<Turn>,
    /// Its file before the change against what the change left.
    pub diff: Option<FileDiff>,
}

/// `turnback show`: each entry's facts, then its diff.
pub fn show(out: &Out, session: &str, shown: &[Shown]) -> String {
    let mut s = String::new();
    for (i, x) in shown.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let e = &x.entry;
        s.push_str(&format!(
            "{}\n",
            out.paint(
                Role::Header,
                &format!("entry #{} of session {session}", e.seq)
            )
        ));
        let message = if e.message_id.is_empty() {
            "(no message id)".into()
        } else {
            escape(&e.message_id)
        };
        s.push_str(&format!("message  {message}\n"));
        if let Some(t) = &x.turn {
            s.push_str(&format!(
                "turn     {} {}\n",
                t.number,
                prompt(&t.prompt, 72)
            ));
        }
        s.push_str(&format!("time     {}\n", when(e.time)));
        s.push_str(&format!(
            "file     {}\n",
            out.paint(Role::Path, &escape(&e.path))
        ));
        s.push_str(&format!("change   {}\n", change(e)));
        match &x.diff {
            Some(d) => s.push_str(&diff_body(out, d)),
            None => s.push_str(
                "(what the change left is not kept any more: the file changed since, and no backup holds it)\n",
            ),
        }
    }
    s
}

/// The JSON of `turnback show`: `{"session", "entries": [{"entry", "turn", "diff"}]}`.
pub fn show_json(session: &str, shown: &[Shown]) -> Value {
    let list: Vec<Value> = shown
        .iter()
        .map(|x| {
            json!({
                "entry": crate::json::entry(&x.entry),
                "turn": x.turn.as_ref().map(|t| json!({
                    "number": t.number,
                    "prompt": t.prompt,
                    "time": crate::json::rfc3339(t.time),
                    "conversation_index": t.conversation_index,
                })),
                "diff": x.diff.as_ref().map(|d| crate::json::diff_body(&d.body)),
            })
        })
        .collect();
    json!({ "session": session, "entries": list })
}
