//! turnback's hooks put into a settings file's text, or taken out of it,
//! and nothing else touched: each handler, group or event of turnback's is
//! spliced in or out where it is (`splice.rs`), so the rest of the file
//! keeps its layout, its comments and its numbers byte for byte (re-writing
//! the whole file from its value would round a number like
//! `12345678901234567890123`). The result must mean exactly what `merge` or
//! `remove_ours` made of the file's value, or it is refused: the two are
//! written independently, and a file is never written on a disagreement.

use serde_json::{Map, Value, json};

use super::jsonc::{self, Kind, Node};
use super::settings::Settings;
use super::splice::{self, Edit, Item, Style};
use super::{Layout, Wanted, entry};

/// The text of `s` with turnback's handlers (`is_ours`) taken out and
/// `add` put in, each at the end of its event's list (as `layout` holds
/// them); a file without `hooks` gets the members of `preamble` before it;
/// `expected` is what it must then say.
pub(crate) fn hooks(
    s: &Settings,
    add: &[Wanted],
    layout: Layout,
    preamble: &[(&str, Value)],
    is_ours: &dyn Fn(&Value) -> bool,
    expected: &Map<String, Value>,
) -> Result<String, String> {
    let text = &s.text;
    let root = &s.doc.root;
    let style = Style::of(text, root);
    let Kind::Object(members) = &root.kind else {
        return Err("it is not a JSON object".into());
    };
    let at: Vec<usize> = (0..members.len())
        .filter(|&i| members[i].key == "hooks")
        .collect();
    let mut edits = Vec::new();
    match at.as_slice() {
        [] if add.is_empty() => {}
        [] => {
            let events = new_events(add, layout, &[]);
            let hooks = Value::Object(events.into_iter().collect());
            let mut items: Vec<Item> = preamble
                .iter()
                .map(|(k, v)| Item::Member((*k).to_owned(), v.clone()))
                .collect();
            items.push(Item::Member("hooks".into(), hooks));
            edits.extend(splice::container(text, &style, root, &[], &items));
        }
        [i] => {
            let hooks = &members[*i].value;
            if hooks_emptied(text, &style, hooks, add, layout, is_ours, &mut edits)? {
                edits.extend(splice::container(text, &style, root, &[*i], &[]));
            }
        }
        _ => return Err("it has `hooks` twice".into()),
    }
    let new = splice::apply(text, edits, &s.doc.comments)?;
    let means = jsonc::parse(&new, s.comments).map(|d| d.root.value());
    if means.ok().map(|v| v.to_string()) != Some(Value::Object(expected.clone()).to_string()) {
        return Err(
            "turnback could not change only its own entries (a bug in turnback; please report it)"
                .into(),
        );
    }
    Ok(new)
}

/// The edits inside the `hooks` object `hooks`; true when every event in it
/// goes and none comes (then `hooks` itself goes instead).
fn hooks_emptied(
    text: &str,
    style: &Style,
    hooks: &Node,
    add: &[Wanted],
    layout: Layout,
    is_ours: &dyn Fn(&Value) -> bool,
    edits: &mut Vec<Edit>,
) -> Result<bool, String> {
    let Kind::Object(events) = &hooks.kind else {
        if add.is_empty() {
            return Ok(false);
        }
        return Err("its `hooks` is not an object".into());
    };
    let mut gone = Vec::new();
    for (e, event) in events.iter().enumerate() {
        let groups: Vec<Item> = add
            .iter()
            .filter(|w| w.event == event.key)
            .map(|w| Item::Element(entry(w, layout)))
            .collect();
        let Kind::Array(list) = &event.value.kind else {
            if groups.is_empty() {
                continue;
            }
            return Err(format!("its `hooks.{}` is not a list", event.key));
        };
        let mut emptied = Vec::new();
        for (g, grp) in list.iter().enumerate() {
            if layout == Layout::Flat {
                if is_ours(&grp.value()) {
                    emptied.push(g);
                }
                continue;
            }
            let Some(handlers) = grp.member("hooks").map(|m| &m.value) else {
                continue;
            };
            let Kind::Array(hs) = &handlers.kind else {
                continue;
            };
            let ours: Vec<usize> = (0..hs.len()).filter(|&h| is_ours(&hs[h].value())).collect();
            if ours.is_empty() {
                continue;
            }
            if ours.len() == hs.len() {
                emptied.push(g);
            } else {
                edits.extend(splice::container(text, style, handlers, &ours, &[]));
            }
        }
        if !emptied.is_empty() && emptied.len() == list.len() && groups.is_empty() {
            gone.push(e);
        } else if !emptied.is_empty() || !groups.is_empty() {
            edits.extend(splice::container(
                text,
                style,
                &event.value,
                &emptied,
                &groups,
            ));
        }
    }
    let present: Vec<&str> = events.iter().map(|e| e.key.as_str()).collect();
    let new: Vec<Item> = new_events(add, layout, &present)
        .into_iter()
        .map(|(k, v)| Item::Member(k, v))
        .collect();
    if !gone.is_empty() && gone.len() == events.len() && new.is_empty() {
        return Ok(true);
    }
    edits.extend(splice::container(text, style, hooks, &gone, &new));
    Ok(false)
}

/// The events of `add` not in `present`, each with its entries, in the
/// order they first come.
fn new_events(add: &[Wanted], layout: Layout, present: &[&str]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for w in add.iter().filter(|w| !present.contains(&w.event)) {
        match out.iter_mut().find(|(k, _)| k == w.event) {
            Some((_, Value::Array(list))) => list.push(entry(w, layout)),
            _ => out.push((w.event.to_owned(), json!([entry(w, layout)]))),
        }
    }
    out
}
