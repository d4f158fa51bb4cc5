//! Telling turnback's own hook lines from anyone else's, by their shape:
//! a program whose file name begins with `turnback` (`.turnback` too: a Nix
//! wrapper runs `.turnback-wrapped`), then `hook AGENT`, then nothing but
//! flags (`--strict`). The binary may be called anything of that shape (a
//! versioned copy `turnback-0.1`, a wrapper): what install wrote is still
//! recognised, so a second install replaces it, uninstall removes it and
//! doctor counts it. A line with anything else in it (a redirect, a second
//! command, a variable) is a line the user wrote: never turnback's.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// turnback's own hook line, as found in a handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookLine {
    /// The binary it runs.
    pub program: PathBuf,
    /// The flags after `hook AGENT`, as written.
    pub flags: Vec<String>,
}

/// turnback's hook line for `agent` in `handler`: in exec form (`command`
/// the binary, `args` its arguments, as Claude Code takes them) or as a
/// shell command line (`command` alone). `None` when it is not turnback's.
pub(crate) fn of(handler: &Value, agent: &str) -> Option<HookLine> {
    match words(handler)?.as_slice() {
        [program, hook, a, flags @ ..]
            if hook == "hook"
                && a == agent
                && is_turnback_program(program)
                && flags.iter().all(|f| is_flag(f)) =>
        {
            Some(HookLine {
                program: PathBuf::from(program),
                flags: flags.to_vec(),
            })
        }
        _ => None,
    }
}

/// The words a handler runs: its binary and `args` (exec form), or its shell
/// command line split into words.
fn words(handler: &Value) -> Option<Vec<String>> {
    // Copilot CLI's handlers have their command line in `bash`.
    let command = handler
        .get("command")
        .or_else(|| handler.get("bash"))?
        .as_str()?;
    match handler.get("args") {
        Some(Value::Array(args)) => std::iter::once(Some(command.to_owned()))
            .chain(args.iter().map(|a| a.as_str().map(str::to_owned)))
            .collect(),
        Some(_) => None,
        None => shell_words(command),
    }
}

/// The flags after `hook AGENT` on a handler `of` says is turnback's.
pub(crate) fn flags(handler: &Value) -> Vec<String> {
    let words = words(handler).unwrap_or_default();
    words.into_iter().skip(3).filter(|w| is_flag(w)).collect()
}

/// `handler` (one install made) with `flags` after its `hook AGENT`: the
/// flags a user added to turnback's line (`--strict`) outlive a re-install.
pub(crate) fn with_flags(handler: &Value, flags: &[String]) -> Value {
    let mut h = handler.clone();
    if flags.is_empty() {
        return h;
    }
    if let Some(Value::Array(args)) = h.get_mut("args") {
        args.extend(flags.iter().map(|f| Value::from(f.as_str())));
    } else if let Some(Value::String(command)) = match h.get("command") {
        Some(_) => h.get_mut("command"),
        None => h.get_mut("bash"),
    } {
        // Flags are `--` and lower-case letters, digits and dashes: no
        // quoting needed.
        for f in flags {
            command.push(' ');
            command.push_str(f);
        }
    }
    h
}

/// True when `program`'s file name is of turnback's shape.
fn is_turnback_program(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("turnback") || n.starts_with(".turnback"))
}

/// A long flag and nothing else: `--strict`, not `--out=/tmp/x` or `2>&1`.
fn is_flag(word: &str) -> bool {
    word.strip_prefix("--").is_some_and(|f| {
        f.starts_with(|c: char| c.is_ascii_lowercase())
            && f.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    })
}

/// The words of a plain shell command line: split at blanks, quotes
/// (`'…'`, `"…"`) and backslashes undone. `None` for anything a shell would
/// do more with (a pipe, a redirect, `;`, `&&`, a variable, a glob): such a
/// line is the user's own, whatever it runs.
pub(crate) fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => {
                            let n = chars.next()?;
                            if !matches!(n, '"' | '\\' | '$' | '`') {
                                w.push('\\');
                            }
                            w.push(n);
                        }
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c if "|&;<>()$`*?[]{}#".contains(c) => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::install::shell_quote;

    #[test]
    fn shell_quoting_round_trips_through_shell_words() {
        for p in [
            "/usr/bin/turnback",
            "/opt/my tools/turnback",
            "/x/it's/turnback",
            "/x/a\"b$c/turnback",
        ] {
            let line = format!("{} hook codex", shell_quote(p));
            let words = shell_words(&line).unwrap();
            assert_eq!(words, [p, "hook", "codex"], "{line}");
        }
    }

    #[test]
    fn turnbacks_lines_are_known_by_their_shape_whatever_the_binary_is_called() {
        let shell = |c: &str| of(&json!({ "command": c }), "gemini");
        for program in [
            "/usr/bin/turnback",
            "turnback",
            "/home/me/bin/turnback-0.1",
            "/nix/store/0abc-turnback-0.1.0/bin/.turnback-wrapped",
        ] {
            let line = shell(&format!("{program} hook gemini")).unwrap();
            assert_eq!(line.program, Path::new(program));
            assert!(line.flags.is_empty());
        }
        assert_eq!(
            shell("'/opt/my tools/turnback' hook gemini --strict")
                .unwrap()
                .flags,
            ["--strict"]
        );
        for not_ours in [
            "/usr/bin/turnback hook codex",
            "/usr/bin/turnback hook gemini 2>>/tmp/log",
            "/usr/bin/turnback hook gemini; notify-send done",
            "/usr/bin/turnback hook gemini --out=/tmp/x",
            "/usr/bin/turnback log",
            "$HOME/bin/turnback hook gemini",
            "/usr/bin/notturnback hook gemini",
            "sh -c 'turnback hook gemini'",
        ] {
            assert_eq!(shell(not_ours), None, "{not_ours}");
        }
        let exec = |args: Value| {
            of(
                &json!({"command": "/x/.turnback-wrapped", "args": args}),
                "claude-code",
            )
        };
        assert!(exec(json!(["hook", "claude-code"])).is_some());
        assert_eq!(
            exec(json!(["hook", "claude-code", "--strict"]))
                .unwrap()
                .flags,
            ["--strict"]
        );
        assert_eq!(exec(json!(["hook", "codex"])), None);
        assert_eq!(exec(json!(["hook", "claude-code", "x"])), None);
        assert_eq!(exec(json!(["hook", "claude-code", 1])), None);
    }

    #[test]
    fn flags_put_back_are_found_again() {
        let strict = vec!["--strict".to_owned()];
        for (h, agent) in [
            (
                json!({"command": "/x/turnback", "args": ["hook", "claude-code"]}),
                "claude-code",
            ),
            (json!({"command": "'/a b/turnback' hook codex"}), "codex"),
        ] {
            let with = with_flags(&h, &strict);
            assert_eq!(of(&with, agent).unwrap().flags, strict, "{with}");
            assert_eq!(with_flags(&h, &[]), h);
        }
    }
}
