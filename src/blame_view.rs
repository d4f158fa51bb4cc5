//! What a person reads, and the JSON, of `turnback blame FILE`: each line
//! with who last changed it, then a legend of each change (its session,
//! entry, turn with its prompt, message and time).

use serde_json::{Value, json};
use turnback_store::{Blame, Origin};

use crate::history::prompt;
use crate::json::{entry, rfc3339};
use crate::output::{Out, Role};
use crate::text::escape;
use crate::when::when;

/// The short name of an origin, at the start of each of its lines.
fn label(o: &Origin) -> String {
    match o {
        Origin::Before => "before".into(),
        Origin::ByHand { .. } => "by hand".into(),
        Origin::EntryOrByHand { .. } => "?".into(),
        Origin::Entry { session, entry, .. } => format!("{} #{}", escape(session), entry.seq),
    }
}

/// `turnback blame`: each line of the file now, with its origin's label,
/// then the legend of the origins that have lines.
pub fn blame(out: &Out, path: &str, b: &Blame) -> String {
    let mut labels: Vec<String> = b.origins.iter().map(label).collect();
    for (i, o) in b.origins.iter().enumerate() {
        if let Origin::EntryOrByHand { entry } = o {
            labels[i] = format!("{}?", labels[*entry]);
        }
    }
    let width = b
        .lines
        .iter()
        .map(|(o, _)| labels[*o].chars().count())
        .max()
        .unwrap_or(0);
    let digits = b.lines.len().max(1).to_string().len();
    let mut s = String::new();
    for (n, (o, line)) in b.lines.iter().enumerate() {
        let l = &labels[*o];
        let pad = width - l.chars().count();
        let role = match b.origins[*o] {
            Origin::Entry { .. } => Role::Path,
            Origin::ByHand { .. } | Origin::EntryOrByHand { .. } => Role::Warn,
            Origin::Before => Role::Dim,
        };
        s.push_str(&format!(
            "{}{} {:>digits$} | {line}\n",
            out.paint(role, l),
            " ".repeat(pad),
            n + 1
        ));
    }
    if b.lines.is_empty() {
        s.push_str(&format!("{} is empty\n", escape(path)));
    }
    s.push('\n');
    let mut used: Vec<usize> = b.lines.iter().map(|(o, _)| *o).collect();
    used.sort();
    used.dedup();
    for i in used {
        let what = match &b.origins[i] {
            Origin::Before => "in the file when a session first backed it up".to_owned(),
            Origin::ByHand { after: Some(a) } => {
                format!("changed without turnback after {}", labels[*a])
            }
            Origin::ByHand { after: None } => "changed without turnback".to_owned(),
            Origin::EntryOrByHand { entry } => format!(
                "{}, or changed without turnback after it (what {} left is kept by no backup)",
                labels[*entry], labels[*entry]
            ),
            Origin::Entry { entry, turn, .. } => {
                let message = if entry.message_id.is_empty() {
                    "(no message id)".into()
                } else {
                    escape(&entry.message_id)
                };
                let turn = turn
                    .as_ref()
                    .map(|t| format!("turn {} {}, ", t.number, prompt(&t.prompt, 60)))
                    .unwrap_or_default();
                format!("{turn}message {message}, {}", when(entry.time))
            }
        };
        s.push_str(&format!(
            "{:<width$}  {}\n",
            labels[i],
            out.paint(Role::Dim, &what)
        ));
    }
    s
}

/// The JSON of `turnback blame`.
pub fn blame_json(workspace: &std::path::Path, path: &str, b: &Blame) -> Value {
    let origins: Vec<Value> = b
        .origins
        .iter()
        .map(|o| match o {
            Origin::Before => json!({ "kind": "before" }),
            Origin::ByHand { after } => json!({ "kind": "by-hand", "after": after }),
            Origin::EntryOrByHand { entry } => {
                json!({ "kind": "entry-or-by-hand", "entry": entry })
            }
            Origin::Entry {
                session,
                entry: e,
                turn,
            } => json!({
                "kind": "entry",
                "session": session,
                "entry": entry(e),
                "turn": turn.as_ref().map(|t| json!({
                    "number": t.number,
                    "prompt": t.prompt,
                    "time": rfc3339(t.time),
                    "conversation_index": t.conversation_index,
                })),
            }),
        })
        .collect();
    let lines: Vec<Value> = b
        .lines
        .iter()
        .enumerate()
        .map(|(n, (o, text))| json!({ "line": n + 1, "origin": o, "text": text }))
        .collect();
    json!({
        "workspace": workspace,
        "path": path,
        "origins": origins,
        "lines": lines,
        "gaps": b.gaps,
    })
}
