//! Changing a JSON text where it changes and nowhere else: elements taken
//! out of an object or a list, new ones put at its end in the layout of
//! their neighbours, every other byte (layout, numbers, comments) kept. An
//! edit that would delete a comment is refused rather than made.

use std::ops::Range;

use serde_json::Value;

use super::jsonc::Node;

/// `span` of the text replaced by `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub span: Range<usize>,
    pub text: String,
}

/// An element to put in: a member of an object, or an item of a list.
pub(crate) enum Item {
    Member(String, Value),
    Element(Value),
}

/// How the file is laid out: its indent, or all on one line.
pub(crate) struct Style {
    unit: String,
    one_line: bool,
}

impl Style {
    /// The layout of `text`: the indent of its first indented line (two
    /// spaces if none), and whether its value `root` is on one line (an
    /// empty `{}` is not: what goes in it is laid out on lines).
    pub(crate) fn of(text: &str, root: &Node) -> Style {
        let unit = text
            .lines()
            .map(|l| &l[..l.len() - l.trim_start().len()])
            .find(|ws| !ws.is_empty())
            .unwrap_or("  ")
            .to_owned();
        Style {
            unit,
            one_line: !text[root.span.clone()].contains('\n') && !root.element_spans().is_empty(),
        }
    }

    /// `item` written at `indent` (on one line when `inline`).
    fn render(&self, item: &Item, indent: &str, inline: bool) -> String {
        let (key, value) = match item {
            Item::Member(k, v) => (Some(k), v),
            Item::Element(v) => (None, v),
        };
        let body = if inline {
            value.to_string()
        } else {
            // serde_json indents by two spaces; each two become the file's
            // unit (no string holds a raw newline, so every line's leading
            // spaces are indent).
            let pretty =
                serde_json::to_string_pretty(value).expect("a JSON value always serializes");
            pretty
                .lines()
                .map(|l| {
                    let body = l.trim_start_matches(' ');
                    self.unit.repeat((l.len() - body.len()) / 2) + body
                })
                .collect::<Vec<_>>()
                .join(&format!("\n{indent}"))
        };
        match key {
            Some(k) => format!(
                "{}{}{body}",
                Value::from(k.as_str()),
                if inline { ":" } else { ": " }
            ),
            None => body,
        }
    }
}

/// The white space that starts the line `pos` is on, and whether only white
/// space comes before `pos` on it.
fn line_indent(text: &str, pos: usize) -> (&str, bool) {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..pos];
    let indent = &before[..before.len() - before.trim_start().len()];
    (indent, indent.len() == before.len())
}

/// The edits that take the elements at `remove` (ascending indices) out of
/// the object or list `container`, and put `add` at its end. Between the
/// elements that stay, the separators stay as they were; a separator that
/// holds a comment loses only its comma.
pub(crate) fn container(
    text: &str,
    style: &Style,
    container: &Node,
    remove: &[usize],
    add: &[Item],
) -> Vec<Edit> {
    let spans = container.element_spans();
    let n = spans.len();
    let keep: Vec<bool> = (0..n).map(|i| !remove.contains(&i)).collect();
    let mut edits = Vec::new();
    let delete = |span: Range<usize>| Edit {
        span,
        text: String::new(),
    };
    // The separator before element `k` (k >= 1): all of it when it is only
    // white space and a comma, else just its comma.
    let gap = |k: usize| -> Edit {
        let span = spans[k - 1].end..spans[k].start;
        let between = &text[span.clone()];
        if between.trim() == "," {
            delete(span)
        } else {
            let comma = span.start + between.find(',').expect("elements are separated by commas");
            delete(comma..comma + 1)
        }
    };
    let mut i = 0;
    while i < n {
        if keep[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < n && !keep[j + 1] {
            j += 1;
        }
        edits.extend((i..=j).map(|k| delete(spans[k].clone())));
        if i > 0 {
            edits.extend((i..=j).map(gap));
        } else if j + 1 < n {
            edits.extend((1..=j + 1).map(gap));
        } else {
            edits.extend((1..n).map(gap));
        }
        i = j + 1;
    }
    let open = container.span.start + 1;
    let close = container.span.end - 1;
    let last_kept = (0..n).rev().find(|&k| keep[k]);
    if add.is_empty() {
        // Emptied: `{}`, unless a comment is in it.
        if n > 0 && last_kept.is_none() {
            for span in [open..spans[0].start, spans[n - 1].end..close] {
                if text[span.clone()].trim().is_empty() {
                    edits.push(delete(span));
                }
            }
        }
        return edits;
    }
    // Where the new elements go, and at which indent.
    let (at, indent, inline, first_sep) = match (last_kept, n) {
        (Some(k), _) => {
            let (indent, own_line) = line_indent(text, spans[k].start);
            (
                spans[k].end,
                indent.to_owned(),
                style.one_line || !own_line,
                true,
            )
        }
        (None, 1..) => {
            let (indent, own_line) = line_indent(text, spans[0].start);
            (
                spans[0].start,
                indent.to_owned(),
                style.one_line || !own_line,
                false,
            )
        }
        (None, 0) => {
            let (outer, _) = line_indent(text, container.span.start);
            (
                open,
                format!("{outer}{}", style.unit),
                style.one_line,
                false,
            )
        }
    };
    let sep = if inline {
        // As the elements already there are separated, if they are.
        match spans.get(..2) {
            Some([a, b]) if text[a.end..b.start].trim() == "," => text[a.end..b.start].to_owned(),
            _ if style.one_line => ",".to_owned(),
            _ => ", ".to_owned(),
        }
    } else {
        format!(",\n{indent}")
    };
    let mut new = String::new();
    for (k, item) in add.iter().enumerate() {
        if k > 0 || first_sep {
            new.push_str(&sep);
        }
        new.push_str(&style.render(item, &indent, inline));
    }
    if n == 0 {
        // An empty `{}` or `[]`: the new elements on lines of their own,
        // the closing bracket back at the container's indent.
        let (outer, _) = line_indent(text, container.span.start);
        if !inline {
            new = format!("\n{indent}{new}\n{outer}");
        }
        // White space alone inside the brackets goes; a comment stays.
        if text[open..close].trim().is_empty() {
            edits.push(Edit {
                span: open..close,
                text: new,
            });
            return edits;
        }
    }
    edits.push(Edit {
        span: at..at,
        text: new,
    });
    edits
}

/// `text` with `edits` made; refused when two overlap (a bug) or one would
/// delete any of `comments`.
pub(crate) fn apply(
    text: &str,
    mut edits: Vec<Edit>,
    comments: &[Range<usize>],
) -> Result<String, String> {
    edits.sort_by_key(|e| (e.span.start, e.span.end));
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for e in &edits {
        if e.span.start < done {
            return Err("two changes to the same place (a bug in turnback)".into());
        }
        if comments
            .iter()
            .any(|c| c.start < e.span.end && e.span.start < c.end)
        {
            return Err("a comment is inside turnback's entries; move it out of them".into());
        }
        out.push_str(&text[done..e.span.start]);
        out.push_str(&e.text);
        done = e.span.end;
    }
    out.push_str(&text[done..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::install::jsonc::parse;

    /// `text` with the elements `remove` of its value taken out and `add` put in.
    fn spliced(text: &str, remove: &[usize], add: &[Item]) -> String {
        let doc = parse(text, true).unwrap();
        let style = Style::of(text, &doc.root);
        let edits = container(text, &style, &doc.root, remove, add);
        apply(text, edits, &doc.comments).unwrap()
    }

    #[test]
    fn taking_out_keeps_the_separators_of_what_stays() {
        let text = "[\n  1,\n  2,\n  3\n]";
        assert_eq!(spliced(text, &[0], &[]), "[\n  2,\n  3\n]");
        assert_eq!(spliced(text, &[1], &[]), "[\n  1,\n  3\n]");
        assert_eq!(spliced(text, &[2], &[]), "[\n  1,\n  2\n]");
        assert_eq!(spliced(text, &[0, 2], &[]), "[\n  2\n]");
        assert_eq!(spliced(text, &[0, 1, 2], &[]), "[]");
        assert_eq!(spliced("[1, 2, 3]", &[1], &[]), "[1, 3]");
        assert_eq!(spliced("[1, // one\n 2]", &[1], &[]), "[1 // one\n ]");
    }

    #[test]
    fn putting_in_follows_the_neighbours_and_comes_out_again() {
        let text = "{\n    \"a\": 1 // one\n}";
        let add = [Item::Member("b".into(), json!({"c": [2]}))];
        let with = spliced(text, &[], &add);
        assert_eq!(
            with,
            "{\n    \"a\": 1,\n    \"b\": {\n        \"c\": [\n            2\n        ]\n    } // one\n}"
        );
        assert_eq!(spliced(&with, &[1], &[]), text);
        assert_eq!(
            spliced("{}", &[], &add),
            "{\n  \"b\": {\n    \"c\": [\n      2\n    ]\n  }\n}"
        );
        assert_eq!(spliced(&spliced("{}", &[], &add), &[0], &[]), "{}");
        assert_eq!(
            spliced("[1, 2]", &[], &[Item::Element(json!(3))]),
            "[1, 2, 3]"
        );
        assert_eq!(
            spliced("{\"a\":1}", &[], &add),
            "{\"a\":1,\"b\":{\"c\":[2]}}"
        );
        assert_eq!(
            spliced("[\n  1\n]", &[0], &[Item::Element(json!(3))]),
            "[\n  3\n]"
        );
    }

    #[test]
    fn a_comment_is_never_deleted() {
        let text = "[1, /* mine */ 2]";
        let doc = parse(text, true).unwrap();
        let style = Style::of(text, &doc.root);
        let edits = container(text, &style, &doc.root.clone(), &[], &[]);
        assert!(apply(text, edits, &doc.comments).is_ok());
        let inner = parse("[[1, /* mine */ 2]]", true).unwrap();
        let edits = container("[[1, /* mine */ 2]]", &style, &inner.root, &[0], &[]);
        assert!(apply("[[1, /* mine */ 2]]", edits, &inner.comments).is_err());
    }
}
