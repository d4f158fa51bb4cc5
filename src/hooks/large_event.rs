//! An event over the size a hook reads whole (`payload::MAX_EVENT_BYTES`):
//! a `Write` of a large file carries the whole file in `tool_input.content`
//! (and after it, again in `tool_response`). Its file must be backed up all
//! the same, so the event is read on as a stream, and the values the hooks
//! never look at (the contents a tool writes, what it answered) are skipped
//! unread ([`IgnoredAny`]) and not held. What is kept is capped still: past
//! the limit, the event is ignored as before.
//!
//! Only events over the limit are read this way: a call without an id is
//! named by a digest of its whole input (`event::digest_of`), which must not
//! change for the events it always named. A large call's Before and After
//! both come this way, and name it alike.

use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The fields of `tool_input` that carry a file's contents, not which file
/// (Claude Code's `Write`, `Edit`, `MultiEdit`, `NotebookEdit`; Gemini
/// CLI's `write_file`, `replace`; VS Code's `create_file`,
/// `replace_string_in_file`, `insert_edit_into_file`; Copilot CLI's
/// `create`, `str_replace`; Cursor's `Write`). Codex's patch is what names
/// its files: it is kept.
const CONTENTS: [&str; 13] = [
    "content",
    "old_string",
    "new_string",
    "edits",
    "new_source",
    "old_source",
    "oldString",
    "newString",
    "code",
    "file_text",
    "old_str",
    "new_str",
    "contents",
];

/// The fields of `tool_response` a hook reads (whether a call was cut
/// short or failed); the rest (the contents again) is skipped.
const RESPONSE: [&str; 2] = ["interrupted", "error"];

/// Reads the event object from `input` (all of it, the bytes already read
/// first), keeping at most `cap` bytes of what it does not skip.
pub(crate) fn read(input: impl Read, cap: u64) -> Result<Map<String, Value>, String> {
    let budget = Rc::new(Budget {
        kept: Cell::new(0),
        cap,
        skipping: Cell::new(false),
    });
    let counted = Counted {
        inner: std::io::BufReader::new(input),
        budget: budget.clone(),
    };
    let mut de = serde_json::Deserializer::from_reader(counted);
    let seed = Event(&budget);
    let read = seed.deserialize(&mut de).and_then(|m| de.end().map(|()| m));
    read.map_err(|e| {
        if budget.kept.get() > cap {
            format!(
                "the event is over {} MiB without the file's contents: ignored",
                cap >> 20
            )
        } else if e.is_eof() {
            format!("the event is truncated ({e})")
        } else {
            format!("the event is not a JSON object ({e})")
        }
    })
}

/// How much of the event is kept, and whether the parser is skipping.
struct Budget {
    kept: Cell<u64>,
    cap: u64,
    skipping: Cell<bool>,
}

/// The input, counting the bytes that are kept: past the cap, an error that
/// ends the parse (serde_json reads a byte at a time, so the count is exact
/// but for the byte it looks ahead).
struct Counted<R> {
    inner: R,
    budget: Rc<Budget>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.budget.skipping.get() {
            let kept = self.budget.kept.get() + n as u64;
            self.budget.kept.set(kept);
            if kept > self.budget.cap {
                return Err(std::io::Error::other("over the cap"));
            }
        }
        Ok(n)
    }
}

/// The event object: every field kept, `tool_input` and `tool_response`
/// filtered.
struct Event<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Event<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Event<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let keep: Keep = match key.as_str() {
                "tool_input" => Keep::AllBut(&CONTENTS),
                "tool_response" => Keep::Only(&RESPONSE),
                _ => Keep::All,
            };
            let value = map.next_value_seed(Filtered {
                keep,
                budget: self.0,
            })?;
            out.insert(key, value);
        }
        Ok(out)
    }
}

/// Which fields of an object are kept.
#[derive(Clone, Copy)]
enum Keep {
    All,
    AllBut(&'static [&'static str]),
    Only(&'static [&'static str]),
}

impl Keep {
    fn keeps(self, key: &str) -> bool {
        match self {
            Keep::All => true,
            Keep::AllBut(skipped) => !skipped.contains(&key),
            Keep::Only(kept) => kept.contains(&key),
        }
    }
}

/// A value whose object (if it is one) keeps only what `keep` says; any
/// other value is kept whole.
struct Filtered<'a> {
    keep: Keep,
    budget: &'a Budget,
}

impl<'de> DeserializeSeed<'de> for Filtered<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if let Keep::All = self.keep {
            return serde::Deserialize::deserialize(d);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Filtered<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.keep.keeps(&key) {
                out.insert(key, map.next_value()?);
            } else {
                self.budget.skipping.set(true);
                let skipped = map.next_value::<IgnoredAny>();
                self.budget.skipping.set(false);
                skipped?;
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(content: &str, prompt: &str) -> String {
        serde_json::json!({
            "session_id": "s1",
            "prompt": prompt,
            "tool_input": {"file_path": "/w/a.txt", "content": content, "edits": [{"old_string": content}]},
            "tool_response": {"content": content, "originalFile": content, "interrupted": true},
        })
        .to_string()
    }

    #[test]
    fn the_contents_are_skipped_and_what_names_the_file_is_kept() {
        let text = event(&"x".repeat(10_000), "hi");
        let m = read(text.as_bytes(), 1_000).unwrap();
        assert_eq!(m["session_id"], "s1");
        assert_eq!(m["prompt"], "hi");
        assert_eq!(
            m["tool_input"],
            serde_json::json!({"file_path": "/w/a.txt"})
        );
        assert_eq!(m["tool_response"], serde_json::json!({"interrupted": true}));
    }

    #[test]
    fn the_other_hosts_contents_are_skipped_too() {
        let big = "x".repeat(10_000);
        for (input, path) in [
            (
                serde_json::json!({"filePath": "/w/a", "content": big}),
                "filePath",
            ),
            (
                serde_json::json!({"filePath": "/w/a", "oldString": big, "newString": big}),
                "filePath",
            ),
            (
                serde_json::json!({"path": "/w/a", "file_text": big}),
                "path",
            ),
            (
                serde_json::json!({"path": "/w/a", "old_str": big, "new_str": big}),
                "path",
            ),
            (
                serde_json::json!({"file_path": "/w/a", "contents": big}),
                "file_path",
            ),
        ] {
            let text = serde_json::json!({"session_id": "s1", "tool_input": input}).to_string();
            let m = read(text.as_bytes(), 1_000).unwrap();
            assert_eq!(m["tool_input"], serde_json::json!({ path: "/w/a" }));
        }
    }

    #[test]
    fn a_call_named_by_its_input_is_named_alike_before_and_after() {
        // Gemini CLI's Before has no `tool_response`; the digest is of the
        // input, which both read alike.
        let before =
            serde_json::json!({"tool_input": {"file_path": "a", "content": "x".repeat(5_000)}});
        let after = serde_json::json!({"tool_input": {"file_path": "a", "content": "x".repeat(5_000)}, "tool_response": {"llmContent": "ok"}});
        let read_input =
            |v: &Value| read(v.to_string().as_bytes(), 1_000).unwrap()["tool_input"].clone();
        assert_eq!(read_input(&before), read_input(&after));
    }

    #[test]
    fn what_is_kept_is_capped_and_what_is_skipped_is_not() {
        let over = read(event("small", &"p".repeat(2_000)).as_bytes(), 1_000).unwrap_err();
        assert!(over.contains("without the file's contents"), "{over}");
        let cut = event(&"x".repeat(2_000), "hi");
        let truncated = read(&cut.as_bytes()[..cut.len() - 40], 1_000).unwrap_err();
        assert!(truncated.contains("truncated"), "{truncated}");
        assert!(
            read(&b"[1, 2]"[..], 1_000)
                .unwrap_err()
                .contains("not a JSON object")
        );
    }
}
