//! The tools: their names, descriptions and input schemas, as a model reads
//! them; each call turned into one turnback request (the JSON requests of
//! `turnback serve`, docs/JSON.md), and its response into what the model
//! reads back.

use serde_json::{Map, Value, json};

/// One tool: what the model sees, and the turnback op it runs.
pub struct ToolDef {
    /// The tool's name.
    pub name: &'static str,
    /// What it does and when to use it, for the model.
    pub description: &'static str,
    /// The JSON schema of its arguments.
    pub schema: Value,
    /// True for the tools that change no file.
    pub read_only: bool,
    op: &'static str,
}

const SESSION: &str = "The turnback session (the agent's conversation id). Leave it out to use the session with the newest change in this workspace (for revert_file: the one that changed the file last).";
const DRY_RUN: &str = "true: change nothing, and answer what would happen, with a diff of each file. Use it first when unsure.";
const FORCE: &str = "true: overwrite files that changed since the session wrote them (by a person, a formatter or another agent). What is overwritten is backed up first, so `redo` can put it back. Only after a refusal, and when the user wants their changes gone.";

fn session() -> Value {
    json!({"type": "string", "description": SESSION})
}

/// The schema of a restoring tool: `session`, `dry_run`, `force`, and `more`.
fn restoring(more: Value, required: &[&str]) -> Value {
    let mut props = json!({
        "session": session(),
        "dry_run": {"type": "boolean", "description": DRY_RUN, "default": false},
        "force": {"type": "boolean", "description": FORCE, "default": false},
    });
    if let (Some(p), Value::Object(m)) = (props.as_object_mut(), more) {
        p.extend(m);
    }
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// Every tool, in the order `tools/list` gives them.
pub fn all() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "log",
            op: "log",
            read_only: true,
            description: "List what the coding agent changed through turnback in this workspace: every entry (one backed-up change of one file) of the session, oldest first, with its number (seq), the message or tool-call id that made it, the file, and the file's state before and after. Entries that were undone are not listed. `all: true` lists every session with changes here.",
            schema: json!({"type": "object", "properties": {
                "session": session(),
                "all": {"type": "boolean", "description": "true: every session with changes in this workspace, not only one", "default": false},
            }, "additionalProperties": false}),
        },
        ToolDef {
            name: "turns",
            op: "turns",
            read_only: true,
            description: "List the user turns of the session, oldest first: each turn's number, the user's prompt that began it, when, and how many entries and files it changed. A turn number is what `rewind` takes to put every file back as it was when that turn began.",
            schema: json!({"type": "object", "properties": {"session": session()}, "additionalProperties": false}),
        },
        ToolDef {
            name: "diff",
            op: "diff",
            read_only: true,
            description: "Show how each file the session changed differs from its first backup (what it was before the session touched it): a unified diff per file, or for binary or very large files only that they differ. `file` limits it to one file.",
            schema: json!({"type": "object", "properties": {
                "session": session(),
                "file": {"type": "string", "description": "Only this file (relative to the workspace)"},
            }, "additionalProperties": false}),
        },
        ToolDef {
            name: "undo",
            op: "undo",
            read_only: false,
            description: "Undo the session's newest change (all files of its newest message or tool call): each file is put back as it was before. Refused, changing nothing, when a file changed since the session wrote it; the error names the files and who changed them. `dry_run: true` previews with diffs. `redo` takes an undo back.",
            schema: restoring(json!({}), &[]),
        },
        ToolDef {
            name: "revert_file",
            op: "revert",
            read_only: false,
            description: "Revert the newest change to one file, in the session that made it: the file is put back as it was before that change. Refused, changing nothing, when the file changed since. `dry_run: true` previews with a diff. `redo` takes it back.",
            schema: restoring(
                json!({"file": {"type": "string", "description": "The file to revert (relative to the workspace)"}}),
                &["file"],
            ),
        },
        ToolDef {
            name: "rewind",
            op: "rewind",
            read_only: false,
            description: "Rewind the session: put every file back as it was when user turn `turn` began (see `turns`), or before the change made by message or tool-call id `message` (see `log`), reverting all later changes, newest first. Give one of `turn` or `message`. Refused, changing nothing, when a file changed since the session wrote it. `dry_run: true` previews with diffs. `redo` takes a rewind back.",
            schema: restoring(
                json!({
                    "turn": {"type": "integer", "minimum": 1, "description": "The turn to go back to the start of"},
                    "message": {"type": "string", "description": "The message or tool-call id to go back to (its own changes are reverted too)"},
                }),
                &[],
            ),
        },
        ToolDef {
            name: "redo",
            op: "redo",
            read_only: false,
            description: "Put back what the session's last undo, revert_file or rewind took away. Refused, changing nothing, when a file changed since. `dry_run: true` previews with diffs.",
            schema: restoring(json!({}), &[]),
        },
    ]
}

/// The turnback request of a call of tool `name` with `arguments`; `Err` is
/// the text of a call the tool cannot make (an unknown tool or argument).
pub fn request(name: &str, arguments: &Map<String, Value>) -> Result<Value, String> {
    let tool = all()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("turnback has no tool {name:?}"))?;
    let props = tool.schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut args = Map::new();
    let mut session = Value::Null;
    for (k, v) in arguments {
        if !props.contains_key(k) {
            let known: Vec<&String> = props.keys().collect();
            return Err(format!(
                "{name} has no argument {k:?}; its arguments: {known:?}"
            ));
        }
        // Checked here, against the schema the model read: past here the
        // error would be `turnback serve`'s, whose hint is about its lines.
        if let Some(want) = props[k]["type"].as_str()
            && !v.is_null()
            && !of_type(v, want)
        {
            return Err(format!(
                "{name}: argument {k:?} must be {}, not {v}; tools/list gives each tool's arguments and their types",
                match want {
                    "boolean" => "true or false",
                    "integer" => "a whole number",
                    "string" => "a string",
                    other => other,
                }
            ));
        }
        match k.as_str() {
            "session" => session = v.clone(),
            _ => {
                args.insert(k.clone(), v.clone());
            }
        }
    }
    if tool.name == "rewind" && !args.contains_key("turn") && !args.contains_key("message") {
        return Err(
            "rewind needs `turn` (see the turns tool) or `message` (see the log tool)".into(),
        );
    }
    let mut req = json!({"id": 1, "op": tool.op, "args": args});
    if !session.is_null() {
        req["session"] = session;
    }
    Ok(req)
}

/// True when `v` is of the JSON schema type `want`.
fn of_type(v: &Value, want: &str) -> bool {
    match want {
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "string" => v.is_string(),
        _ => true,
    }
}

/// What the model reads of a refusal or an error: the message, and for a
/// refusal each file that changed and how to go on.
pub fn error_text(tool: &str, error: &Value) -> String {
    let s = |k: &str| error[k].as_str().unwrap_or_default().to_owned();
    let mut text = format!("turnback {}: {}", s("kind"), s("message"));
    if let Some(conflicts) = error["conflicts"].as_array() {
        text.push_str("\nNothing was changed. These files are not as the session left them:");
        for c in conflicts {
            let path = c["path"].as_str().unwrap_or_default();
            let why = match (&c["reason"], &c["changed_by"]) {
                (r, _) if r == "never-committed" => {
                    "its checkpoint was never committed, so what the change left is unknown"
                        .to_owned()
                }
                (_, by) if by.is_object() => format!(
                    "changed since, by session {} (message {:?})",
                    by["session"].as_str().unwrap_or("?"),
                    by["message_id"].as_str().unwrap_or("")
                ),
                _ => "changed since, outside turnback (a person, an editor or a formatter)"
                    .to_owned(),
            };
            text.push_str(&format!("\n- {path}: {why}"));
        }
        text.push_str(&format!(
            "\nCall {tool} again with dry_run: true to see the differences, or with force: true to overwrite them (what is overwritten is backed up first; redo puts it back). Ask the user before forcing: the changes may be theirs."
        ));
    } else if let Some(hint) = error["hint"].as_str() {
        text.push_str(&format!("\nhint: {hint}"));
    }
    text
}
