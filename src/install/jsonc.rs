//! A parser of settings files that keeps where each value is in the text:
//! what lets install change turnback's entries and leave every other byte
//! as it was (`splice.rs`). JSON, and where the agent reads them (Gemini
//! CLI), `//` and `/* */` comments, whose places it records so that no edit
//! removes one. Numbers are kept as text here; only the `Value` a node is
//! read as rounds them, and that is never written back.

use std::ops::Range;

use serde_json::{Map, Value};

/// A value and the bytes of the text it spans.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub span: Range<usize>,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    /// A string, number, boolean or null.
    Scalar(Value),
}

/// One `"key": value` of an object; its span runs from the key's opening
/// quote to the value's end.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub key: String,
    pub span: Range<usize>,
    pub value: Node,
}

/// A parsed text: its value and where its comments are.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub root: Node,
    pub comments: Vec<Range<usize>>,
}

/// serde_json's own limit: deeper is refused rather than overflowing the stack.
const MAX_DEPTH: usize = 128;

impl Node {
    /// The value this node is (numbers beyond an f64 rounded).
    pub(crate) fn value(&self) -> Value {
        match &self.kind {
            Kind::Object(members) => {
                let mut m = Map::new();
                for member in members {
                    m.insert(member.key.clone(), member.value.value());
                }
                Value::Object(m)
            }
            Kind::Array(items) => Value::Array(items.iter().map(Node::value).collect()),
            Kind::Scalar(v) => v.clone(),
        }
    }

    /// The member `key` of an object (`None` for other values).
    pub(crate) fn member(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Object(members) => members.iter().find(|m| m.key == key),
            _ => None,
        }
    }

    /// The spans of the elements of an object or array, in order.
    pub(crate) fn element_spans(&self) -> Vec<Range<usize>> {
        match &self.kind {
            Kind::Object(members) => members.iter().map(|m| m.span.clone()).collect(),
            Kind::Array(items) => items.iter().map(|n| n.span.clone()).collect(),
            Kind::Scalar(_) => Vec::new(),
        }
    }
}

/// Parses `text`; comments only when `comments` (else they are an error,
/// as they are to the agent).
pub(crate) fn parse(text: &str, comments: bool) -> Result<Doc, String> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        allow_comments: comments,
        comments: Vec::new(),
    };
    p.skip_blank()?;
    let root = p.value(0)?;
    p.skip_blank()?;
    if p.pos < p.bytes.len() {
        return Err(p.error("trailing characters"));
    }
    Ok(Doc {
        root,
        comments: p.comments,
    })
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    allow_comments: bool,
    comments: Vec<Range<usize>>,
}

impl Parser<'_> {
    /// `what` at the current place, as serde_json says it: line and column.
    fn error(&self, what: &str) -> String {
        let before = &self.text[..self.pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("{what} at line {line} column {column}")
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skips white space and (where allowed) comments.
    fn skip_blank(&mut self) -> Result<(), String> {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'/' if self.allow_comments => {
                    let start = self.pos;
                    match self.bytes.get(self.pos + 1) {
                        Some(b'/') => {
                            let end = self.text[start..]
                                .find('\n')
                                .map_or(self.bytes.len(), |i| start + i);
                            self.pos = end;
                        }
                        Some(b'*') => {
                            let end = self.text[start + 2..]
                                .find("*/")
                                .ok_or_else(|| self.error("a comment that never ends"))?;
                            self.pos = start + 2 + end + 2;
                        }
                        _ => return Err(self.error("expected a comment")),
                    }
                    self.comments.push(start..self.pos);
                }
                _ => break,
            }
        }
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let start = self.pos;
        let kind = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Kind::Scalar(Value::String(self.string()?)),
            Some(_) => self.scalar()?,
            None => return Err(self.error("EOF while parsing a value")),
        };
        Ok(Node {
            span: start..self.pos,
            kind,
        })
    }

    fn object(&mut self, depth: usize) -> Result<Kind, String> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_blank()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Kind::Object(members));
        }
        loop {
            self.skip_blank()?;
            let start = self.pos;
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key"));
            }
            let key = self.string()?;
            self.skip_blank()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            self.skip_blank()?;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                span: start..value.span.end,
                value,
            });
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Kind::Object(members));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Kind, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_blank()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Kind::Array(items));
        }
        loop {
            self.skip_blank()?;
            items.push(self.value(depth + 1)?);
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Kind::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    /// A string, its escapes checked and undone by serde_json.
    fn string(&mut self) -> Result<String, String> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("EOF while parsing a string")),
                Some(b'\\') => self.pos += 2,
                Some(b'"') => break,
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        let raw = self
            .text
            .get(start..self.pos)
            .ok_or_else(|| self.error("EOF while parsing a string"))?;
        serde_json::from_str(raw).map_err(|e| {
            self.pos = start;
            self.error(&format!("invalid string ({e})"))
        })
    }

    /// A number, `true`, `false` or `null`, checked by serde_json.
    fn scalar(&mut self) -> Result<Kind, String> {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b.is_ascii_alphanumeric() || b"+-.".contains(&b) {
                self.pos += 1;
            } else {
                break;
            }
        }
        let raw = &self.text[start..self.pos];
        match serde_json::from_str::<Value>(raw) {
            Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) if !raw.is_empty() => {
                Ok(Kind::Scalar(v))
            }
            _ => {
                self.pos = start;
                Err(self.error("expected value"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_spans_are_those_of_the_text() {
        let text = "{\n  \"a\": [1, {\"b\": null}],\n  \"big\": 12345678901234567890123\n}";
        let doc = parse(text, false).unwrap();
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(doc.root.value(), expected);
        let a = doc.root.member("a").unwrap();
        assert_eq!(&text[a.span.clone()], "\"a\": [1, {\"b\": null}]");
        assert_eq!(&text[a.value.element_spans()[1].clone()], "{\"b\": null}");
        let big = doc.root.member("big").unwrap();
        assert_eq!(&text[big.value.span.clone()], "12345678901234567890123");
    }

    #[test]
    fn comments_only_where_allowed_and_their_places_kept() {
        let text = "// top\n{ /* a */ \"a\": 1 // one\n}";
        assert!(parse(text, false).is_err());
        let doc = parse(text, true).unwrap();
        let found: Vec<&str> = doc.comments.iter().map(|c| &text[c.clone()]).collect();
        assert_eq!(found, ["// top", "/* a */", "// one"]);
        assert_eq!(doc.root.value(), serde_json::json!({"a": 1}));
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for bad in [
            "",
            "{",
            "{\"a\" 1}",
            "{\"a\": 1,}",
            "[1 2]",
            "{\"a\": tru}",
            "{\"a\": 01}",
            "{\"a\": \"\\q\"}",
            "{} x",
            "{\"a\": /* open",
        ] {
            assert!(parse(bad, true).is_err(), "{bad}");
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        }
    }
}
