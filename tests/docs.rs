//! The examples of `README.md`, `docs/USAGE.md`, `docs/DEVELOPING.md` and
//! `docs/JSON.md`, run for real: the docs cannot drift from the binary
//! unnoticed.
//!
//! Both files are read at test time. Every fenced example is extracted:
//!
//! - a fenced `console` block is an example command: its `$ ` lines are run
//!   in order through `sh` (all but the last as the example's own steps, which
//!   must succeed; a `# prints X` comment on one is checked too), and the last
//!   one is the command whose output the next `json` block shows
//!   (the one after it and before the next console block; two there is an
//!   error, none means the example shows no output);
//! - a fenced `sh` block is a shell example: run whole through `sh -e`.
//!
//! Each example must be in a table here ([`CONSOLE`], [`SHELL`]) saying how to
//! make it true (the set-up before it). The test fails when a doc has an
//! example the table does not know, or the table one the doc no longer has, so
//! a changed example must be run again here.
//!
//! **What a console example's output must match.** The documented JSON and
//! the real output are compared by shape, at every level:
//!
//! - objects have the same keys (a key gained or lost fails);
//! - arrays have the same length and each element the shape of the element
//!   documented at its place (the set-ups reproduce the example's situation,
//!   so the lengths are the documented ones);
//! - values have the same JSON type; an integer is not a fractional number;
//!   **a documented `null` must be `null` and a documented value must not
//!   be**: each set-up makes the documented situation, in which a field is
//!   null or not for a reason (`after` of a checkpoint not committed,
//!   `changed_by` when no session made the change), and a difference is a
//!   change of meaning, not noise. The docs' tables say where a field may be
//!   null in other situations; the examples show one situation each.
//! - the names an agent branches on and the numbers that identify things are
//!   compared as values too ([`VALUE_KEYS`]: `kind`, `status`, `action`,
//!   `reason`, `session`, `id`, `path`, `seq`, `entries`, `exists`, `sha256`,
//!   `size`, ...), since the docs say every example is real output: what is
//!   left free is what differs from run to run or machine to machine (times,
//!   absolute paths, the wording of messages, byte counts of the store).
//!
//! An example whose JSON is an error object (`{"error": ...}`) must print it
//! on standard error, as one line, with nothing on standard output, and exit
//! with its `exit_code` (and with the code a `(exit code N)` comment states);
//! any other example prints its one line of JSON on standard output, nothing on
//! standard error, and exits 0. An example that shows no JSON of its own is
//! compared with the one the table names ("the same shape as `undo`"), by shape
//! only.
//!
//! The examples run as their docs describe: `docs/JSON.md` in a scratch
//! workspace with `TURNBACK_HOME` set and `TURNBACK_SESSION=agent-42` (the
//! agent of its story) unless the table says otherwise; `README.md` with a
//! scratch `HOME`, so that `cd ~/src/my-project` is a real workspace there and
//! the store is the default `~/.local/state/turnback`. `turnback` is the built
//! binary, first on `PATH`.
//!
//! After the examples, what the docs say in sentences that a test can hold
//! them to: which commands need a session, that `docs/ARCHITECTURE.md` has a
//! row for every module, that every document and test the docs cite exists,
//! what prune keeps and reports, what the index holds (`docs/FORMAT.md`), and
//! that `turnback man` is one page naming every command and variable.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli_json::{Run, finish, one_json_line};
use crate::util::{bin, tree_digest};

/// One fenced block of a Markdown file.
#[derive(Debug, Clone)]
struct Block {
    /// The line of its opening fence (1-based).
    line: usize,
    /// The info string: `sh`, `console`, `json`, ...
    info: String,
    /// The lines between the fences.
    text: String,
}

/// The fenced blocks of `md`, in order.
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in md.lines().enumerate() {
        let trimmed = line.trim_start();
        match (&mut open, trimmed.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    line: i + 1,
                    info: info.trim().to_owned(),
                    text: String::new(),
                })
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => out.extend(open.take()),
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// A console example: its commands and the JSON it shows.
#[derive(Debug)]
struct ConsoleExample {
    line: usize,
    /// The block as written (the key of [`CONSOLE`]), `$ ` and all.
    text: String,
    /// The commands, without `$ `.
    commands: Vec<String>,
    /// The JSON block that shows the last command's output: its line and value.
    json: Option<(usize, Value)>,
}

/// Pairs every console block of `md` with the JSON block after it.
fn console_examples(file: &str, md: &str) -> Vec<ConsoleExample> {
    let mut out: Vec<ConsoleExample> = Vec::new();
    for b in blocks(md) {
        match b.info.as_str() {
            "console" => {
                let commands = b
                    .text
                    .lines()
                    .map(|l| {
                        l.strip_prefix("$ ")
                            .unwrap_or_else(|| {
                                panic!("{file}:{}: a console line without `$ `: {l:?}", b.line)
                            })
                            .to_owned()
                    })
                    .collect();
                out.push(ConsoleExample {
                    line: b.line,
                    text: b.text.trim_end().to_owned(),
                    commands,
                    json: None,
                });
            }
            "json" => {
                let v: Value = serde_json::from_str(&b.text).unwrap_or_else(|e| {
                    panic!("{file}:{}: the JSON example does not parse: {e}", b.line)
                });
                // A JSON block before any console block shows a shape, not
                // an example's output (none does now).
                let Some(last) = out.last_mut() else {
                    panic!("{file}:{}: a JSON block that no command prints", b.line);
                };
                if let Some((first, _)) = &last.json {
                    panic!(
                        "{file}:{}: a second JSON block after the command at line {} \
                         (the first is at line {first}): put each command's output \
                         right after it",
                        b.line, last.line
                    );
                }
                last.json = Some((b.line, v));
            }
            _ => {}
        }
    }
    out
}

/// How a console example is made true, and what it is compared with.
struct Console {
    /// The file it is in.
    file: &'static str,
    /// The block as written.
    block: &'static str,
    /// `TURNBACK_SESSION` of the example's commands; `None` leaves it unset.
    session: Option<&'static str>,
    /// Shell steps run before the example (in the workspace, `sh -e`, with
    /// `TURNBACK_SESSION=agent-42`, the agent of the story).
    setup: &'static [&'static str],
    /// What its output is compared with.
    shows: Shows,
}

enum Shows {
    /// The JSON block that follows it.
    Own,
    /// No JSON of its own: the shape of the example with this block.
    Like(&'static str),
}

/// The agent of `docs/JSON.md`'s story.
const AGENT: Option<&str> = Some("agent-42");

// The steps of `docs/JSON.md`'s story, in its order. The contents are the
// documented ones: their sizes and hashes are what the examples show.
const FILES: &str = "mkdir -p src
printf 'pub fn answer() -> u32 {\\n    41\\n}\\n' > src/lib.rs
printf '# Notes\\n' > NOTES.md
printf '# Project\\n' > README.md";
const WRITE: &str = "printf 'pub fn answer() -> u32 {\\n    42\\n}\\n' | turnback write src/lib.rs --message call-1";
const RM: &str = "turnback rm NOTES.md --message call-2";
const CHECKPOINT: &str = "turnback checkpoint src/main.rs --message call-3";
const COMMIT: &str = "printf 'fn main() {}\\n' > src/main.rs
turnback commit 3";
const BY_HAND: &str = "printf '# Notes, by hand\\n' > NOTES.md";
/// Another agent in the same workspace: a file of its own, then `NOTES.md`.
const AGENT7_OTHER: &str =
    "printf 'x\\n' | turnback --session agent-7 write other.txt --message tool-9";
const AGENT7_NOTES: &str =
    "printf '# Notes, agent-7\\n' | turnback --session agent-7 write NOTES.md --message tool-10";
/// The three committed changes of agent-42 that most examples start from.
const STORY: &[&str] = &[FILES, WRITE, RM, CHECKPOINT, COMMIT];
/// `notes.md` of the `mv` and `redo` examples.
const NOTES: &str = "printf '# notes\\n' > notes.md";

const JSON_MD: &str = "docs/JSON.md";

/// Every console example of the docs, in their order.
const CONSOLE: &[Console] = &[
    Console {
        file: JSON_MD,
        block: "$ turnback checkpoint --scan --message call-9 --json",
        session: AGENT,
        setup: &[FILES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback run --message call-10 --json -- sh -c 'echo formatted > NOTES.md; rm README.md; echo new > NEW.md'",
        session: AGENT,
        setup: &[FILES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback rewind call-2 --json   # agent-7 changed NOTES.md since (exit code 3)",
        session: AGENT,
        setup: &[FILES, WRITE, RM, AGENT7_OTHER, AGENT7_NOTES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback write x.txt --json          # no session given (exit code 2)",
        session: None,
        setup: &[],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback --session nosuch log --json  # exit code 1",
        session: None,
        setup: &[FILES, WRITE],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback --session agent-7 log --json # its index.json is damaged (exit code 1)",
        session: None,
        setup: &[
            FILES,
            AGENT7_OTHER,
            "printf '{\\n' > \"$TURNBACK_HOME/sessions/agent-7/index.json\"",
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: r"$ printf 'pub fn answer() -> u32 {\n    42\n}\n' | turnback write src/lib.rs --message call-1 --json",
        session: AGENT,
        setup: &[FILES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: r"$ printf 'pub fn answer() -> u32 {\n    42\n}\n' | turnback write src/lib.rs --message call-5 --json   # the same bytes again",
        session: AGENT,
        setup: &[FILES, WRITE],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ printf 'pub fn' | turnback write src/lib.rs --expect-size 34 --json   # cut short (exit code 1)",
        session: AGENT,
        setup: &[FILES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback rm NOTES.md --message call-2 --json",
        session: AGENT,
        setup: &[FILES, WRITE],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback checkpoint src/main.rs --message call-3 --json",
        session: AGENT,
        setup: &[FILES, WRITE, RM],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ printf 'fn main() {}\\n' > src/main.rs\n$ turnback commit 3 --json",
        session: AGENT,
        setup: &[FILES, WRITE, RM, CHECKPOINT],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback checkpoint README.md --message call-4   # prints 4\n\
                $ echo half > README.md\n\
                $ turnback rollback 4 --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback log --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback log --all --json",
        session: None,
        setup: &[FILES, WRITE, RM, CHECKPOINT, COMMIT, AGENT7_OTHER],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback diff --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback diff README.md --json   # a file agent-42 never changed",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback undo --dry-run --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback undo --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback revert src/lib.rs --dry-run --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback revert src/lib.rs --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback rewind call-2 --dry-run --json",
        session: AGENT,
        setup: STORY,
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ printf '# Notes, by hand\\n' > NOTES.md\n$ turnback rewind call-2 --dry-run --json   # a check: exit code 3",
        session: AGENT,
        setup: &[FILES, WRITE, RM],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback rewind call-2 --json",
        session: AGENT,
        setup: &[FILES, WRITE, RM, BY_HAND],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback rewind call-2 --force --json",
        session: AGENT,
        setup: &[FILES, WRITE, RM, AGENT7_OTHER, AGENT7_NOTES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback rewind --turn 3 --json",
        session: AGENT,
        setup: &[
            FILES,
            "turnback turn --prompt 'change the answer'",
            WRITE,
            "turnback turn --prompt 'drop the notes'",
            RM,
            "turnback turn --prompt 'add a main'",
            "printf 'fn main() {}\\n' | turnback write src/main.rs --message call-3",
        ],
        shows: Shows::Like("$ turnback undo --json"),
    },
    Console {
        file: JSON_MD,
        block: "$ turnback redo --dry-run --json",
        session: AGENT,
        setup: &[
            NOTES,
            "turnback mv notes.md docs/notes.md --message call-3",
            "turnback undo",
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback turn --prompt \"move the notes into docs\" --conversation-index 6 --json",
        session: AGENT,
        setup: &[],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback show '#1' --json",
        session: AGENT,
        setup: &[
            FILES,
            "turnback turn --prompt 'change the answer' --conversation-index 0",
            WRITE,
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ printf 'pub fn answer() -> u32 {\\n    43\\n}\\n' > src/lib.rs\n$ turnback status --json",
        session: AGENT,
        setup: &[
            FILES,
            WRITE,
            "turnback checkpoint src/main.rs --message call-3",
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback blame src/lib.rs --json",
        session: AGENT,
        setup: &[
            FILES,
            "turnback turn --prompt 'change the answer' --conversation-index 0",
            WRITE,
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback turns --json",
        session: AGENT,
        setup: &[
            FILES,
            "turnback turn --prompt 'change the answer' --conversation-index 0",
            WRITE,
            "turnback turn --prompt 'drop the notes' --conversation-index 4",
            RM,
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback mv notes.md docs/notes.md --message call-3 --json",
        session: AGENT,
        setup: &[NOTES],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback sessions --json",
        session: None,
        setup: &[
            FILES,
            WRITE,
            RM,
            CHECKPOINT,
            COMMIT,
            AGENT7_OTHER,
            // A third agent, whose only change was undone.
            "printf '# Draft\\n' | turnback --session agent-3 write draft.md --message m-1",
            "turnback --session agent-3 undo",
        ],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ printf '# mine\\nkeep_days = 7\\n' > ~/.config/turnback/config.toml\n$ TURNBACK_MAX_ENTRIES=500 turnback config --json",
        session: None,
        // `~` is a scratch HOME here (`XDG_CONFIG_HOME` is unset).
        setup: &["mkdir -p ~/.config/turnback"],
        shows: Shows::Own,
    },
    Console {
        file: JSON_MD,
        block: "$ turnback prune --dry-run --json",
        session: None,
        setup: &[
            // agent-1 last changed 100 days ago; 20 sessions since, today.
            "printf 'old\\n' > old.txt",
            "printf 'new\\n' | turnback --session agent-1 write old.txt",
            "touch -c -d '100 days ago' \"$TURNBACK_HOME\"/sessions/agent-1/index.json \
             \"$TURNBACK_HOME\"/sessions/agent-1/journal.jsonl",
            "for i in $(seq 2 21); do \
               printf 'x\\n' | turnback --session agent-$i write f$i.txt >/dev/null; done",
        ],
        shows: Shows::Own,
    },
];

/// Keys whose values (not only their types) must be as documented; see the
/// module's documentation. Each is a name an agent branches on or a number
/// that identifies a thing, the same on every run of the example.
const VALUE_KEYS: &[&str] = &[
    "kind",
    "status",
    "action",
    "reason",
    "applied",
    "exists",
    "session",
    "id",
    "message_id",
    "path",
    "seq",
    "version",
    "entries",
    "turn",
    "rolled_back",
    "exit_code",
    "kept",
    "blobs_removed",
    "sha256",
    "size",
    "insertions",
    "deletions",
    "unified",
];

/// The JSON type of `v`, for messages and comparison.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a fractional number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every way `real` differs from the documented `doc` (see the module's
/// documentation), each with its place (`$.files[0].status`). `values`:
/// whether [`VALUE_KEYS`] are compared by value too; `key`: the object key
/// `doc` is the value of (an array's elements inherit it).
fn compare(
    doc: &Value,
    real: &Value,
    at: &str,
    key: Option<&str>,
    values: bool,
    out: &mut Vec<String>,
) {
    match (doc, real) {
        (Value::Object(d), Value::Object(r)) => {
            for k in d.keys().filter(|k| !r.contains_key(*k)) {
                out.push(format!("{at}: key {k:?} is documented but not printed"));
            }
            for k in r.keys().filter(|k| !d.contains_key(*k)) {
                out.push(format!("{at}: key {k:?} is printed but not documented"));
            }
            for (k, dv) in d {
                if let Some(rv) = r.get(k) {
                    compare(dv, rv, &format!("{at}.{k}"), Some(k), values, out);
                }
            }
        }
        (Value::Array(d), Value::Array(r)) => {
            if d.len() != r.len() {
                out.push(format!(
                    "{at}: {} elements documented, {} printed",
                    d.len(),
                    r.len()
                ));
            }
            for (i, (dv, rv)) in d.iter().zip(r).enumerate() {
                compare(dv, rv, &format!("{at}[{i}]"), key, values, out);
            }
        }
        _ if type_name(doc) != type_name(real) => out.push(format!(
            "{at}: documented as {} ({doc}), printed as {} ({real})",
            type_name(doc),
            type_name(real)
        )),
        _ => {
            let checked = values && key.is_some_and(|k| VALUE_KEYS.contains(&k));
            if checked && doc != real {
                out.push(format!("{at}: documented {doc}, printed {real}"));
            }
        }
    }
}

/// The process's exit code a comment on `line` states (`(exit code 3)`,
/// `# exit code 1`), if any.
fn stated_exit_code(line: &str) -> Option<i32> {
    let (_, rest) = line.split_once("exit code ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(digits.parse().expect("an exit code is a number"))
}

/// What a `# prints X` comment on `line` says the command prints, if any.
fn stated_print(line: &str) -> Option<&str> {
    line.split_once("# prints ").map(|(_, s)| s.trim())
}

/// `sh -c SCRIPT` (with `-e` when `errexit`) in `dir`, `turnback` first on
/// `PATH`, the environment `prepare` sets; killed after the shared timeout.
fn sh(dir: &Path, script: &str, errexit: bool, prepare: impl FnOnce(&mut Command)) -> Run {
    let bin_dir = bin().parent().unwrap().to_owned();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin_dir];
    dirs.extend(std::env::split_paths(&path));
    let mut cmd = Command::new("sh");
    if errexit {
        cmd.arg("-e");
    }
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .env_remove("TURNBACK_HOME")
        .env_remove("TURNBACK_SESSION")
        .env_remove("TURNBACK_WORKSPACE")
        .env_remove("FAILPOINTS")
        .stdout(Stdio::piped());
    prepare(&mut cmd);
    finish(cmd, None)
}

/// The examples of `file` (relative to the repository), read now.
fn read_doc(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fails unless `found` (in a doc) and `known` (in a table) are the same set,
/// naming each one that is only on one side.
fn same_examples(what: &str, found: &[String], known: &[String]) {
    let found_set: BTreeSet<&String> = found.iter().collect();
    let known_set: BTreeSet<&String> = known.iter().collect();
    let mut problems = Vec::new();
    for f in found_set.difference(&known_set) {
        problems.push(format!(
            "{what}: an example the test does not know (add it to the table, with a set-up \
             that makes it true):\n{f}"
        ));
    }
    for k in known_set.difference(&found_set) {
        problems.push(format!(
            "{what}: the table names an example the doc no longer has:\n{k}"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert_eq!(
        found.len(),
        found_set.len(),
        "{what}: an example appears twice"
    );
}

/// The console examples of the files [`CONSOLE`] covers, by file.
fn all_console_examples() -> Vec<(&'static str, ConsoleExample)> {
    let mut files: Vec<&'static str> = CONSOLE.iter().map(|c| c.file).collect();
    files.extend([README, JSON_MD]);
    files.sort();
    files.dedup();
    files
        .into_iter()
        .flat_map(|f| {
            console_examples(f, &read_doc(f))
                .into_iter()
                .map(move |e| (f, e))
        })
        .collect()
}

#[test]
fn every_console_example_of_the_docs_is_in_the_table_and_no_other() {
    let found: Vec<String> = all_console_examples()
        .iter()
        .map(|(f, e)| format!("{f}: {}", e.text))
        .collect();
    let known: Vec<String> = CONSOLE
        .iter()
        .map(|c| format!("{}: {}", c.file, c.block))
        .collect();
    same_examples("console examples", &found, &known);
}

/// Runs one console example as its table entry says; every way its output
/// differs from the docs, as messages naming the example.
fn run_console(c: &Console, ex: &ConsoleExample, shown: Option<&Value>) -> Vec<String> {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    // A scratch HOME: the settings are read from its `~/.config` (a config
    // example writes one there), never from the user's.
    let user = tempfile::tempdir().unwrap();
    let with = |session: Option<&'static str>| {
        let home = home.path();
        let user = user.path();
        move |cmd: &mut Command| {
            cmd.env("TURNBACK_HOME", home)
                .env("HOME", user)
                .env_remove("XDG_CONFIG_HOME");
            if let Some(s) = session {
                cmd.env("TURNBACK_SESSION", s);
            }
        }
    };
    let env = with(c.session);
    let name = format!("{}:{} `{}`", c.file, ex.line, ex.commands.last().unwrap());
    for step in c.setup {
        let r = sh(
            ws.path(),
            &format!("{{\n{step}\n}} >/dev/null"),
            true,
            with(AGENT),
        );
        assert_eq!(
            r.code(),
            0,
            "{name}: set-up step {step:?} failed: {}",
            r.stderr
        );
    }
    let (last, steps) = ex.commands.split_last().unwrap();
    for step in steps {
        let r = sh(ws.path(), step, true, env);
        assert_eq!(
            r.code(),
            0,
            "{name}: its step {step:?} failed: {}",
            r.stderr
        );
        if let Some(printed) = stated_print(step) {
            assert_eq!(
                r.stdout.trim(),
                printed,
                "{name}: {step:?} printed otherwise"
            );
        }
    }
    let r = sh(ws.path(), last, false, env);
    let Some(shown) = shown else {
        panic!("{name}: no JSON to compare with");
    };
    let mut problems = Vec::new();
    let error = shown.get("error").is_some();
    let code = r.code();
    // A dry run that finds a conflict is a check: it shows its plan and
    // exits 3 with the refusal on standard error, as its comment says.
    let check = !error && stated_exit_code(last) == Some(3);
    let expected_code = match error {
        true => shown["error"]["exit_code"].as_i64().map(|c| c as i32),
        false if check => Some(3),
        false => Some(0),
    };
    if let Some(stated) = stated_exit_code(last)
        && Some(stated) != expected_code
    {
        problems.push(format!(
            "the comment says exit code {stated}, the JSON shown {expected_code:?}"
        ));
    }
    if Some(code) != expected_code {
        problems.push(format!("exited {code}, documented {expected_code:?}"));
    }
    let (printed, other, stream) = match error {
        true => (&r.stderr, &r.stdout, "standard error"),
        false => (&r.stdout, &r.stderr, "standard output"),
    };
    let refusal_of_a_check = || {
        let v = one_json_line(other, &name);
        v["error"]["kind"] == "refused" && v["error"]["exit_code"] == 3
    };
    if check && !refusal_of_a_check() {
        problems.push(format!(
            "a check printed no refusal on standard error: {other:?}"
        ));
    } else if !check && !other.is_empty() {
        problems.push(format!(
            "printed on the stream that should be empty: {other:?}"
        ));
    }
    if printed.is_empty() {
        problems.push(format!("printed nothing on {stream}"));
    } else {
        let real = one_json_line(printed, &name);
        let values = matches!(c.shows, Shows::Own);
        compare(shown, &real, "$", None, values, &mut problems);
    }
    problems
        .into_iter()
        .map(|p| format!("{name}: {p}"))
        .collect()
}

/// Every console example of `README.md` and `docs/JSON.md`, run in the
/// situation its table entry makes: what it prints has the documented shape
/// (and, where it shows its own output, the documented values of
/// [`VALUE_KEYS`]), on the documented stream, with the documented exit code.
#[test]
fn every_console_example_prints_what_the_docs_show() {
    let examples = all_console_examples();
    let find = |file: &str, block: &str| {
        examples
            .iter()
            .find(|(f, e)| *f == file && e.text == block)
            .map(|(_, e)| e)
    };
    let mut problems = Vec::new();
    for c in CONSOLE {
        let Some(ex) = find(c.file, c.block) else {
            continue; // reported by the table test
        };
        let shown = match c.shows {
            Shows::Own => ex.json.as_ref().map(|(_, v)| v),
            Shows::Like(other) => {
                if let Some((line, _)) = &ex.json {
                    problems.push(format!(
                        "{}:{}: shows its own JSON (line {line}), but the table compares it \
                         with another example's",
                        c.file, ex.line
                    ));
                }
                find(c.file, other)
                    .and_then(|o| o.json.as_ref())
                    .map(|(_, v)| v)
            }
        };
        if shown.is_none() {
            problems.push(format!(
                "{}:{}: shows no JSON, and the table names none to compare with",
                c.file, ex.line
            ));
            continue;
        }
        problems.extend(run_console(c, ex, shown));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// How a shell example of `README.md` is run.
struct Shell {
    /// The block as written.
    block: &'static str,
    /// How it is run, and what is checked after.
    run: ShellRun,
}

enum ShellRun {
    /// Through `sh -e` in `dir`, after the set-up steps (in `dir` too), with
    /// `TURNBACK_SESSION` when given; then `check` looks at the scratch home.
    Sh {
        dir: Dir,
        session: Option<&'static str>,
        setup: &'static [&'static str],
        check: fn(&ReadmeHome, &Run),
    },
    /// Not as written: `instead` (a command line of the built binary) runs in
    /// its place, for `why`.
    Instead {
        instead: &'static str,
        why: &'static str,
    },
    /// Not run, for `why` (printed as a skip).
    Skip { why: &'static str },
}

/// Where a shell example runs.
#[derive(Clone, Copy)]
enum Dir {
    /// The scratch `HOME`.
    Home,
    /// `~/src/my-project`, the workspace of the README's examples.
    Project,
    /// `~/src/my-app`, the project of the README's quick start.
    App,
}

const README: &str = "README.md";
/// The reference the README's longer examples moved to, and the
/// contributor's guide: their shell examples continue the README's story.
const USAGE: &str = "docs/USAGE.md";
const DEVELOPING: &str = "docs/DEVELOPING.md";
/// The files whose shell examples [`SHELL`] lists, in the story's order.
const SHELL_FILES: [&str; 3] = [README, USAGE, DEVELOPING];

/// Every `sh` block of [`SHELL_FILES`], in order.
fn shell_blocks() -> Vec<String> {
    SHELL_FILES
        .iter()
        .flat_map(|f| blocks(&read_doc(f)))
        .filter(|b| b.info == "sh")
        .map(|b| b.text.trim_end().to_owned())
        .collect()
}

/// The scratch `HOME` the README's examples run in.
struct ReadmeHome {
    home: tempfile::TempDir,
}

impl ReadmeHome {
    fn project(&self) -> PathBuf {
        self.home.path().join("src/my-project")
    }

    fn app(&self) -> PathBuf {
        self.home.path().join("src/my-app")
    }

    /// `turnback --json ARGS` there, which must succeed; its output.
    fn json(&self, args: &str) -> Value {
        let r = sh(
            &self.project(),
            &format!("turnback --json {args}"),
            true,
            |c| self.prepare(c),
        );
        assert_eq!(r.code(), 0, "turnback {args}: {}", r.stderr);
        one_json_line(&r.stdout, args)
    }

    /// The environment of a person's shell there: a home of their own, the
    /// default store under it.
    fn prepare(&self, cmd: &mut Command) {
        cmd.env("HOME", self.home.path())
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_DATA_HOME");
    }
}

/// The workspace of the README's examples before the agent starts.
const PROJECT: &str = "mkdir -p src/my-project/src && cd src/my-project
printf 'pub fn answer() -> u32 { 41 }\\n' > src/lib.rs
printf 'scratch\\n' > scratch.txt
printf '[package]\\nname = \"my-project\"\\nedition = \"2021\"\\n' > Cargo.toml";

/// The agent of the README's examples (as its first example exports it).
const README_AGENT: Option<&str> = Some("conv-2026-11-30-a");

/// After the quick start's install: Claude Code's hooks are in the
/// project's settings, and doctor said it works.
fn readme_quick_start_installed(h: &ReadmeHome, r: &Run) {
    let settings = std::fs::read_to_string(h.app().join(".claude/settings.local.json")).unwrap();
    assert!(settings.contains("\"claude-code\""), "{settings}");
    assert!(
        r.stdout.trim_end().ends_with("protection: working"),
        "{}",
        r.stdout
    );
}

/// The agent of the quick start: one prompt, two edits of a new file, as
/// Claude Code's hooks would record them (a session named by its id).
const QUICK_START_AGENT: &str = "export TURNBACK_SESSION=4f2a9c1e-claude
turnback turn --prompt 'add a greeting' >/dev/null
printf 'hello\\n' | turnback write hello.txt --message toolu_01
printf 'hello, world\\n' | turnback write hello.txt --message toolu_02";

/// After the quick start's five commands: log and diff showed the agent's
/// work, undo took the second edit back, redo put it back, and the rewind
/// to the first prompt left the project as it was before the agent.
fn readme_quick_start_took_it_back(h: &ReadmeHome, r: &Run) {
    assert!(r.stdout.contains("hello.txt"), "{}", r.stdout);
    assert!(r.stdout.contains("1 file changed"), "{}", r.stdout);
    assert!(!h.app().join("hello.txt").exists());
}

/// The messages of the entries the README's agent example leaves.
fn readme_agent_wrote(h: &ReadmeHome, _: &Run) {
    let log = h.json("--session conv-2026-11-30-a log");
    let messages: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message_id"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["call-1", "call-1", "call-2", "call-3"]);
    assert!(log["entries"][3]["after"].is_object(), "call-3 committed");
    let toml = std::fs::read_to_string(h.project().join("Cargo.toml")).unwrap();
    assert!(toml.contains("edition = \"2024\""), "{toml}");
    assert!(!h.project().join("scratch.txt").exists());
    // The store is the default one, under the person's home.
    assert!(
        h.home
            .path()
            .join(".local/state/turnback/sessions/conv-2026-11-30-a")
            .is_dir()
    );
}

/// After the person's example (undo, revert, rewind to `call-1`): the project
/// is exactly as it was before the agent began.
fn readme_person_took_it_all_back(h: &ReadmeHome, _: &Run) {
    let start = tempfile::tempdir().unwrap();
    let r = sh(start.path(), PROJECT, true, |_| {});
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        tree_digest(&h.project()),
        tree_digest(&start.path().join("src/my-project"))
    );
}

/// After the turn and the move: the file is moved, the turn begun.
fn readme_turn_and_move(h: &ReadmeHome, r: &Run) {
    assert_eq!(r.stdout.lines().next(), Some("1"), "the turn number");
    assert!(h.project().join("src/parser/mod.rs").is_file());
    assert!(!h.project().join("src/parser.rs").exists());
    let log = h.json("--session conv-2026-11-30-a log");
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["message_id"], "call-4");
}

/// Every shell example of `README.md`, in its order.
const SHELL: &[Shell] = &[
    Shell {
        block: "cargo run --release -- demo\ncargo test --workspace",
        run: ShellRun::Instead {
            instead: "turnback demo",
            why: "`cargo run -- demo` runs the binary this suite has built; \
                  `cargo test --workspace` is this suite, which cannot run itself",
        },
    },
    Shell {
        block: "cd ~/src/my-app
turnback install claude-code    # or: turnback install codex, turnback install gemini
turnback doctor                 # ends with \"protection: working\"",
        run: ShellRun::Sh {
            dir: Dir::Home,
            session: None,
            setup: &["mkdir -p src/my-app"],
            check: readme_quick_start_installed,
        },
    },
    Shell {
        block: "turnback log                    # what the agent changed, by prompt and tool call
turnback diff --stat            # each file it changed, against its first backup
turnback undo                   # take its last change back
turnback redo                   # no: put it back
turnback rewind --turn 1        # every file as it was when your first prompt began",
        run: ShellRun::Sh {
            dir: Dir::App,
            session: None,
            setup: &[QUICK_START_AGENT],
            check: readme_quick_start_took_it_back,
        },
    },
    Shell {
        block: "export TURNBACK_SESSION=conv-2026-11-30-a     # the agent's conversation id
cd ~/src/my-project                           # the workspace (or --workspace DIR)

# The agent's write tool: new contents on standard input.
printf 'pub fn answer() -> u32 { 42 }\\n' | turnback write src/lib.rs --message call-1
# Say what you send, and a producer cut short writes nothing (exit code 1).
printf 'pub fn answer() -> u32 { 43 }\\n' | turnback write src/lib.rs --message call-1 --expect-size 30
# Its delete tool.
turnback rm scratch.txt --message call-2
# A tool that edits in place: checkpoint, edit, then commit (or roll back).
id=$(turnback checkpoint Cargo.toml --message call-3)
sed -i 's/edition = \"2021\"/edition = \"2024\"/' Cargo.toml \\
  && turnback commit \"$id\" || turnback rollback \"$id\"",
        run: ShellRun::Sh {
            dir: Dir::Home,
            session: None,
            setup: &[PROJECT],
            check: readme_agent_wrote,
        },
    },
    Shell {
        block: "turnback log                    # what the newest session here did, by message
turnback diff --stat            # each changed file against its first backup
turnback undo --dry-run         # what undoing the newest change would do, with a diff
turnback undo                   # do it
turnback revert src/lib.rs      # the newest change to one file (the session is found for you)
turnback rewind call-1          # everything since that message, newest first",
        run: ShellRun::Sh {
            dir: Dir::Project,
            session: None,
            setup: &[],
            check: readme_person_took_it_all_back,
        },
    },
    Shell {
        block: "turnback turn --prompt \"split the parser module\" --conversation-index 14   # prints the turn number
turnback mv src/parser.rs src/parser/mod.rs --message call-4",
        run: ShellRun::Sh {
            dir: Dir::Project,
            session: README_AGENT,
            setup: &["printf 'pub fn parse() {}\\n' > src/parser.rs"],
            check: readme_turn_and_move,
        },
    },
    Shell {
        block: "cargo install cargo-fuzz
cd fuzz && TMPDIR=/dev/shm RUSTC_BOOTSTRAP=1 cargo fuzz run operations -- -max_total_time=600",
        run: ShellRun::Skip {
            why: "it installs cargo-fuzz from the network and fuzzes for ten minutes",
        },
    },
];

#[test]
fn every_shell_example_of_the_readme_is_in_the_table_and_no_other() {
    let found = shell_blocks();
    let known: Vec<String> = SHELL.iter().map(|s| s.block.to_owned()).collect();
    same_examples(
        "README.md, USAGE.md, DEVELOPING.md shell examples",
        &found,
        &known,
    );
    assert_eq!(found, known, "the table lists them in the docs' order");
}

/// Every shell example of `README.md`, in order, in one scratch home (they tell
/// one story): each runs as written and does what the README says it does.
#[test]
fn every_shell_example_of_the_readme_runs_as_written() {
    let h = ReadmeHome {
        home: tempfile::tempdir().unwrap(),
    };
    let present: BTreeSet<String> = shell_blocks().into_iter().collect();
    for s in SHELL.iter().filter(|s| present.contains(s.block)) {
        let first = s.block.lines().next().unwrap_or_default();
        match &s.run {
            ShellRun::Skip { why } => {
                eprintln!("skipped: README.md example `{first}`: {why}");
            }
            ShellRun::Instead { instead, why } => {
                eprintln!("README.md example `{first}` runs as `{instead}`: {why}");
                let r = sh(h.home.path(), instead, true, |c| h.prepare(c));
                assert_eq!(r.code(), 0, "{instead}: {}", r.stderr);
            }
            ShellRun::Sh {
                dir,
                session,
                setup,
                check,
            } => {
                let dir = match dir {
                    Dir::Home => h.home.path().to_owned(),
                    Dir::Project => h.project(),
                    Dir::App => h.app(),
                };
                let prepare = |c: &mut Command| {
                    h.prepare(c);
                    if let Some(s) = session {
                        c.env("TURNBACK_SESSION", s);
                    }
                };
                for step in *setup {
                    let r = sh(&dir, step, true, prepare);
                    assert_eq!(r.code(), 0, "set-up {step:?}: {}", r.stderr);
                }
                let r = sh(&dir, s.block, true, prepare);
                assert_eq!(
                    r.code(),
                    0,
                    "README.md example `{first}` failed:\n{}\n{}",
                    r.stdout,
                    r.stderr
                );
                assert!(
                    !r.stderr.contains("error"),
                    "README.md example `{first}`: {}",
                    r.stderr
                );
                check(&h, &r);
            }
        }
    }
}

/// The comparison itself: a key gained or lost, a changed type, a documented
/// null that is a value now, an array of another length, a changed name.
#[test]
fn the_comparison_catches_every_kind_of_drift() {
    let doc: Value = serde_json::json!({
        "session": "a", "applied": false, "n": 1,
        "files": [{ "path": "f", "changed_by": null, "status": "safe" }]
    });
    let differs = |real: Value| {
        let mut out = Vec::new();
        compare(&doc, &real, "$", None, true, &mut out);
        out
    };
    assert_eq!(differs(doc.clone()), Vec::<String>::new());
    let mut gained = doc.clone();
    gained["files"][0]["extra"] = 1.into();
    assert!(differs(gained)[0].contains("\"extra\" is printed but not documented"));
    let mut lost = doc.clone();
    lost.as_object_mut().unwrap().remove("applied");
    assert!(differs(lost)[0].contains("\"applied\" is documented but not printed"));
    let mut retyped = doc.clone();
    retyped["n"] = "1".into();
    assert!(differs(retyped)[0].contains("documented as an integer"));
    let mut fractional = doc.clone();
    fractional["n"] = 1.5.into();
    assert!(differs(fractional)[0].contains("printed as a fractional number"));
    let mut not_null = doc.clone();
    not_null["files"][0]["changed_by"] = serde_json::json!({"session": "b"});
    assert!(differs(not_null)[0].contains("$.files[0].changed_by: documented as null"));
    let mut longer = doc.clone();
    longer["files"]
        .as_array_mut()
        .unwrap()
        .push(doc["files"][0].clone());
    assert!(differs(longer)[0].contains("1 elements documented, 2 printed"));
    let mut renamed = doc.clone();
    renamed["files"][0]["status"] = "changed-since".into();
    assert!(differs(renamed)[0].contains("documented \"safe\", printed \"changed-since\""));
    // A number that is not one of the compared values may differ.
    let mut other_n = doc.clone();
    other_n["n"] = 2.into();
    assert!(differs(other_n).is_empty());
}

// Claims the docs make in sentences, checked against the code and the binary.

/// The commands of the top-level `--help`, but `help`.
fn commands_of_the_help(dir: &Path) -> Vec<String> {
    let r = sh(dir, "turnback --help", true, |_| {});
    assert_eq!(r.code(), 0, "{}", r.stderr);
    // The commands for people, then the agent plumbing (a heading each).
    let listed = |heading: &str| -> Vec<String> {
        r.stdout
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("a {heading:?} section"))
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter(|l| !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(str::to_owned)
            .collect()
    };
    let mut commands = listed("\nCommands:");
    commands.extend(listed("\nAgent plumbing"));
    commands
}

/// `docs/JSON.md` lists the agent's commands, which need a session and make
/// it: exactly the commands that, run without one, are the usage error `no
/// session given` (a person's commands look for a session instead).
#[test]
fn the_commands_json_md_says_need_a_session_are_those_that_do() {
    let doc = read_doc(JSON_MD);
    let (_, list) = doc
        .split_once("The agent's commands (")
        .expect("JSON.md lists the agent's commands");
    let (list, _) = list.split_once(')').unwrap();
    let documented: BTreeSet<String> = list
        .split(',')
        .map(|c| c.trim().trim_matches('`').to_owned())
        .collect();
    // The smallest command line of each command (the file exists).
    let args = |c: &str| match c {
        "write" | "rm" | "checkpoint" | "revert" | "diff" => format!("{c} f.txt"),
        "mv" => "mv f.txt g.txt".into(),
        "commit" | "rollback" => format!("{c} 1"),
        "turn" => "turn --prompt p".into(),
        "rewind" => "rewind m".into(),
        "prune" => "prune --dry-run".into(),
        "completions" => "completions bash".into(),
        other => other.into(),
    };
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f.txt"), "f\n").unwrap();
    let mut need = BTreeSet::new();
    for c in commands_of_the_help(ws.path()) {
        let line = format!("turnback --json {} </dev/null", args(&c));
        let r = sh(ws.path(), &line, false, |cmd| {
            cmd.env("TURNBACK_HOME", home.path());
        });
        let error: Option<Value> = serde_json::from_str(r.stderr.trim()).ok();
        let error = error.as_ref().and_then(|e| e.get("error"));
        if error.is_some_and(|e| e["message"] == "no session given") {
            assert_eq!(r.code(), 2, "{line}: {}", r.stderr);
            need.insert(c);
        }
    }
    assert_eq!(
        documented, need,
        "JSON.md's list of the agent's commands (left) is not the commands that need a session"
    );
}

/// The module tables of `docs/ARCHITECTURE.md` name every source file of the
/// store and of the command line.
#[test]
fn architecture_md_names_every_module() {
    let doc = read_doc("docs/ARCHITECTURE.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for (dir, strip) in [
        ("crates/turnback-store/src", "crates/turnback-store/src/"),
        ("src", "src/"),
        ("src/commands", "src/"),
        ("src/hooks", "src/"),
        ("src/install", "src/"),
        ("src/ui", "src/"),
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let name = rel.strip_prefix(strip).unwrap().to_owned();
            if !doc.contains(&format!("| `{name}` |")) {
                missing.push(rel);
            }
        }
    }
    // The platform modules are one row, `sys/`.
    assert!(doc.contains("| `sys/` |"));
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md has no row for {missing:?}"
    );
}

/// Every document the project cites exists: in the prose of `README.md` and
/// `docs/*.md` (outside fenced blocks) and in the comments of the sources and
/// tests, a name in capitals such as `DESIGN.md` or `docs/FORMAT.md` outside
/// backticks, or one in `docs/` in them. A capital name in backticks, or
/// one a source file also uses in its code, is as often a file of an example
/// workspace (`NOTES.md`) and not a citation.
#[test]
fn every_document_the_project_cites_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = vec![root.join("README.md")];
    for dir in [
        "docs",
        "tests",
        "src",
        "src/commands",
        "crates/turnback-store/src",
        "examples",
    ] {
        for e in std::fs::read_dir(root.join(dir)).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md" || x == "rs") {
                files.push(p);
            }
        }
    }
    let mut missing = BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let markdown = f.extension().is_some_and(|x| x == "md");
        // A Rust file's code, without its comments: where example files are named.
        let code: String = match markdown {
            true => String::new(),
            false => text
                .lines()
                .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let mut fenced = false;
        for line in text.lines() {
            let prose = match markdown {
                true => {
                    if line.trim_start().starts_with("```") {
                        fenced = !fenced;
                        continue;
                    }
                    if fenced {
                        continue;
                    }
                    line
                }
                false => match line.split_once("//") {
                    Some((_, comment)) => comment,
                    None => continue,
                },
            };
            for (n, piece) in prose.split('`').enumerate() {
                let quoted = n % 2 == 1;
                for word in
                    piece.split(|c: char| !(c.is_ascii_alphanumeric() || "._-/".contains(c)))
                {
                    let word = word.trim_end_matches('.');
                    let Some(name) = word.strip_suffix(".md") else {
                        continue;
                    };
                    let base = name.strip_prefix("docs/").unwrap_or(name);
                    let capitals = !base.is_empty()
                        && base.chars().all(|c| c.is_ascii_uppercase() || c == '_');
                    let cited = match quoted {
                        true => name.starts_with("docs/") && capitals,
                        false => capitals,
                    };
                    let exists = [root.join(word), root.join("docs").join(word)]
                        .iter()
                        .any(|p| p.is_file());
                    if cited && !exists && !code.contains(word) {
                        let shown = f.strip_prefix(root).unwrap().display().to_string();
                        missing.insert(format!("{shown} cites {word}"));
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "no such document: {missing:#?}");
}

/// Every test `docs/RELIABILITY.md` names as a proof (`file::function`)
/// exists: in `tests/FILE.rs`, or as a unit test in the store's or the
/// command line's `FILE.rs`, or in `crates/turnback-store/tests/FILE.rs`.
#[test]
fn every_test_reliability_md_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = read_doc("docs/RELIABILITY.md");
    let mut missing = Vec::new();
    for quoted in doc.split('`').skip(1).step_by(2) {
        let parts: Vec<&str> = quoted.split("::").collect();
        let is_name = parts.len() >= 2
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            });
        // Not a test: a placeholder and the standard library.
        if !is_name || quoted == "file::function" || parts[0] == "std" {
            continue;
        }
        let (function, module) = parts.split_last().unwrap();
        let module = module.join("/");
        let found = [
            format!("tests/{module}.rs"),
            format!("crates/turnback-store/src/{module}.rs"),
            format!("crates/turnback-store/tests/{module}.rs"),
            format!("src/{module}.rs"),
        ]
        .iter()
        .filter_map(|p| std::fs::read_to_string(root.join(p)).ok())
        .any(|text| text.contains(&format!("fn {function}(")));
        if !found {
            missing.push(quoted.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/RELIABILITY.md names tests that do not exist: {missing:#?}"
    );
}

/// What `docs/JSON.md` says prune keeps and reports: a backup that only a
/// record for redo names (what a forced undo overwrote) is kept however old,
/// and a removed session's `last_change` is the newer of its `index.json`'s
/// and `journal.jsonl`'s modification times.
#[test]
fn prune_keeps_what_redo_needs_and_reports_the_newer_index_time() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let env = |cmd: &mut Command| {
        cmd.env("TURNBACK_HOME", home.path());
    };
    let sessions = home.path().join("sessions");
    let script = "printf 'one\\n' > f.txt
printf 'two\\n' | turnback --session keeper write f.txt
printf 'by hand\\n' > f.txt
turnback --session keeper undo --force
touch -d '2 hours ago' \"$TURNBACK_HOME\"/sessions/keeper/blobs/*
printf 'a\\n' | turnback --session old write old.txt
printf 'b\\n' | turnback --session old write old.txt
touch -d '100 days ago' \"$TURNBACK_HOME\"/sessions/old/index.json
old_time=$(date -u -d '40 days ago' +%Y-%m-%dT%H:%M:%S)
echo \"${old_time%T*}\" > journal-time
touch -d \"${old_time}Z\" \"$TURNBACK_HOME\"/sessions/old/journal.jsonl
for i in $(seq 1 20); do printf 'x\\n' | turnback --session new-$i write n$i.txt; done";
    let r = sh(
        ws.path(),
        &format!("{{\n{script}\n}} >/dev/null"),
        true,
        env,
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let blobs: Vec<String> = std::fs::read_dir(sessions.join("keeper/blobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let hand = crate::util::sha256_hex(b"by hand\n");
    assert!(
        blobs.contains(&hand),
        "the forced undo backed up the hand edit: {blobs:?}"
    );
    let r = sh(ws.path(), "turnback prune --json", true, env);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = one_json_line(&r.stdout, "prune");
    assert_eq!(report["blobs_removed"], 0, "{report}");
    assert!(sessions.join("keeper/blobs").join(&hand).is_file());
    let removed = report["removed"].as_array().unwrap();
    assert_eq!(removed.len(), 1, "{report}");
    assert_eq!(removed[0]["id"], "old");
    // The day the script touched the journal to, written by the same
    // `date` call: never a day off when the test runs across midnight.
    let journal_time = ws.path().join("journal-time");
    let day = std::fs::read_to_string(&journal_time).unwrap();
    let last_change = removed[0]["last_change"].as_str().unwrap();
    assert!(
        last_change.starts_with(day.trim()),
        "last_change {last_change} is not the journal's day {day} (the index's is 100 days ago)"
    );
    // And redo still has what it needs.
    let r = sh(ws.path(), "turnback --session keeper redo", true, env);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "by hand\n"
    );
}

/// What `docs/FORMAT.md` says the index holds, seen in a real session's
/// `index.json` and `journal.jsonl`: `in_flight.temp` is `null` for a write's
/// entry recorded before it makes its directories and for a remove, and a
/// history record is `{id, kind, time, entries, turns, files, removed_dirs}`
/// with `removed_dirs` the directories the revert removed, outermost first.
#[test]
fn format_md_describes_what_the_index_holds() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let env = |cmd: &mut Command| {
        cmd.env("TURNBACK_HOME", home.path())
            .env("TURNBACK_SESSION", "fmt");
    };
    let script = "printf 'q\\n' | turnback write new/dir/f.txt
turnback undo
printf 'r\\n' > r.txt
turnback rm r.txt";
    let r = sh(
        ws.path(),
        &format!("{{\n{script}\n}} >/dev/null"),
        true,
        env,
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let dir = home.path().join("sessions/fmt");
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let ops: Vec<Value> = journal
        .lines()
        .flat_map(|l| {
            let line: Value = serde_json::from_str(l).unwrap();
            line["ops"].as_array().unwrap().clone()
        })
        .collect();
    let entries: Vec<&Value> = snapshot["entries"]
        .as_array()
        .unwrap()
        .iter()
        .chain(ops.iter().filter_map(|op| op.get("entry")))
        .collect();
    // The write's early record (the session's first change: the snapshot).
    let early = entries
        .iter()
        .find(|e| e["path"] == "new/dir/f.txt" && e["after"].is_null())
        .expect("the write's entry recorded before its directories");
    assert_eq!(
        early["in_flight"],
        serde_json::json!({ "temp": null }),
        "{early}"
    );
    assert_eq!(early["created_dirs"], serde_json::json!(["new", "new/dir"]));
    // Its completed entry names its temporary.
    let written = entries
        .iter()
        .find(|e| e["path"] == "new/dir/f.txt" && !e["after"].is_null())
        .expect("the write's entry");
    assert!(written["in_flight"]["temp"].is_string(), "{written}");
    let removed = entries
        .iter()
        .find(|e| e["path"] == "r.txt")
        .expect("the remove's entry");
    assert_eq!(
        removed["in_flight"],
        serde_json::json!({ "temp": null }),
        "{removed}"
    );
    // The undo's record.
    let record = ops
        .iter()
        .find_map(|op| op.get("record"))
        .expect("the undo's record");
    let documented = [
        "id",
        "kind",
        "time",
        "entries",
        "turns",
        "files",
        "removed_dirs",
    ];
    for k in record.as_object().unwrap().keys() {
        assert!(
            documented.contains(&k.as_str()),
            "{k} is not in FORMAT.md: {record}"
        );
    }
    assert_eq!(record["kind"], "undo");
    let dirs: Vec<&Value> = record["removed_dirs"].as_array().unwrap().iter().collect();
    let paths: Vec<&str> = dirs.iter().map(|d| d["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["new", "new/dir"], "{record}");
    let root = std::fs::canonicalize(ws.path()).unwrap();
    for d in dirs {
        assert_eq!(d["workspace"]["path"], root.to_str().unwrap(), "{d}");
        assert!(
            d["workspace"]["dev"].is_u64() && d["workspace"]["ino"].is_u64(),
            "{d}"
        );
    }
}

/// `turnback man` is the whole manual on one page: it names no page that is
/// not shipped (`turnback-write(1)`: there is one page, no page per command),
/// gives every command its own part with its synopsis and example, and has an
/// ENVIRONMENT section naming every variable the command line reads. Rendered
/// with `man` where it is installed, the text says the same.
#[test]
fn the_manual_page_is_one_page_with_every_command_and_variable() {
    let dir = tempfile::tempdir().unwrap();
    let run = |script: &str| {
        let r = sh(dir.path(), script, true, |_| {});
        assert_eq!(r.code(), 0, "{script}: {}", r.stderr);
        r.stdout
    };
    let help = run("turnback --help");
    let commands = commands_of_the_help(dir.path());
    assert!(commands.len() >= 15, "{commands:?}");
    // Every `[env: NAME=]` of the help, and NO_COLOR, which `--color` reads.
    let mut variables: Vec<&str> = help
        .split("[env: ")
        .skip(1)
        .filter_map(|s| s.split('=').next())
        .collect();
    assert!(variables.contains(&"TURNBACK_HOME"), "{help}");
    variables.push("NO_COLOR");
    // And the settings' variables, which the store reads (README, "Settings").
    variables.push("XDG_CONFIG_HOME");
    variables.extend(turnback_store::SETTING_KEYS.map(|(_, var)| var));
    let page = run("turnback man");
    let mut problems = Vec::new();
    for c in &commands {
        if page.contains(&format!("turnback\\-{c}(")) || page.contains(&format!("turnback-{c}(")) {
            problems.push(format!(
                "points at a page turnback-{c}(1), which is not shipped"
            ));
        }
        let heading = format!(".SS \"turnback {c}\"");
        if !page.lines().any(|l| l == heading) {
            problems.push(format!("has no part for `turnback {c}` ({heading})"));
        }
    }
    let environment = page
        .split(".SH ENVIRONMENT\n")
        .nth(1)
        .map(|s| s.split("\n.SH ").next().unwrap_or_default());
    match environment {
        None => problems.push("has no ENVIRONMENT section".into()),
        Some(section) => {
            for v in &variables {
                if !section.contains(v) {
                    problems.push(format!("its ENVIRONMENT section does not name {v}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "turnback man:\n{}\n\n{page}",
        problems.join("\n")
    );
    // The page renders, and reads as the help does.
    // `col -b` takes the overstrikes out of what `man` prints.
    let has = |tool: &str| sh(dir.path(), &format!("command -v {tool}"), false, |_| {}).code() == 0;
    if let Some(missing) = ["man", "col"].into_iter().find(|t| !has(t)) {
        eprintln!("skipped: rendering the manual page: no `{missing}` on this machine");
        return;
    }
    let text = run("turnback man | MANWIDTH=100 man -l - 2>&1 | col -b");
    for v in &variables {
        assert!(
            text.contains(v),
            "the rendered page does not name {v}:\n{text}"
        );
    }
    for c in &commands {
        assert!(
            text.contains(&format!("turnback {c}")),
            "the rendered page has no `turnback {c}`:\n{text}"
        );
    }
    assert!(!text.contains("turnback-write(1)"), "{text}");
}

/// Every command the README names in prose or a table (`` `turnback undo` ``,
/// `` `turnback rewind --turn N` ``) exists, with the flags it shows: the
/// quick start's blocks run above, and this holds the rest of the first
/// page (the table of everyday commands, the agents, troubleshooting).
#[test]
fn every_command_and_flag_the_readme_names_exists() {
    let readme = read_doc(README);
    let mut named: BTreeSet<(String, Vec<String>)> = BTreeSet::new();
    for quoted in readme.split('`').skip(1).step_by(2) {
        let Some(rest) = quoted.strip_prefix("turnback ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(command) = words.next() else {
            continue;
        };
        if !command.chars().all(|c| c.is_ascii_lowercase()) {
            continue;
        }
        let flags = words
            .filter(|w| w.starts_with("--"))
            .map(str::to_owned)
            .collect();
        named.insert((command.to_owned(), flags));
    }
    assert!(named.len() >= 15, "{named:?}");
    let home = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for (command, flags) in &named {
        let r = sh(
            home.path(),
            &format!("turnback {command} --help"),
            true,
            |_| {},
        );
        if r.code() != 0 {
            problems.push(format!("`turnback {command}`: {}", r.stderr));
            continue;
        }
        for f in flags {
            if !r.stdout.contains(f.as_str()) {
                problems.push(format!("`turnback {command}` has no {f}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
