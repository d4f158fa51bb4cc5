//! One request line of `turnback serve`: parsed and checked, then turned into
//! the command line it stands for, so that clap checks its arguments exactly
//! as it checks a command line's (one mapping for every command: a new flag of
//! a command is a new key of its `args`, with nothing to add here).

use std::path::PathBuf;

use base64::Engine;
use serde_json::{Map, Value};

use crate::cli::Cli;
use crate::cli_error::CliError;

/// The commands a request may not name: the servers themselves; `hook`,
/// which speaks an agent's hook protocol on its own standard input; and
/// `run`, whose command would share the server's standard input and output
/// (a client brackets its own command with `checkpoint --scan` and `commit`);
/// and `ui`, a person's full-screen view of a terminal.
const NOT_OVER_SERVE: [&str; 6] = ["serve", "mcp", "help", "hook", "run", "ui"];

/// A request, checked: every field of the right type, no unknown field.
#[derive(Debug)]
pub(crate) struct Request {
    /// The request's `id`, echoed as given (any JSON value; `null` when none).
    pub id: Value,
    /// The operation: `hello`, or a command of the command line.
    pub op: String,
    /// `--session`: the session the request names, if any.
    pub session: Option<String>,
    /// `--workspace`: the workspace the request names, if any.
    pub workspace: Option<PathBuf>,
    /// The command's arguments and flags, by name.
    pub args: Map<String, Value>,
    /// `write`'s new contents (`content`, or `content_base64` decoded).
    pub content: Option<Vec<u8>>,
    /// `hello`'s protocol version, if the client said one.
    pub protocol: Option<u64>,
}

/// What a line that is not a request gets: the usage error, and the id if
/// the line had one.
pub(crate) struct BadRequest {
    pub id: Value,
    pub error: CliError,
}

const HINT: &str = r#"one JSON object per line: {"id": 1, "op": "log", "args": {}} (docs/JSON.md, "serve --stdio")"#;

fn bad(id: &Value, message: String) -> Box<BadRequest> {
    Box::new(BadRequest {
        id: id.clone(),
        error: CliError::usage(message, HINT),
    })
}

impl Request {
    /// Parses line `n` (1-based) of the input.
    pub(crate) fn parse(line: &[u8], n: usize) -> Result<Request, Box<BadRequest>> {
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| bad(&Value::Null, format!("line {n} is not JSON: {e}")))?;
        let Value::Object(mut obj) = value else {
            return Err(bad(&Value::Null, format!("line {n} is not a JSON object")));
        };
        let id = obj.remove("id").unwrap_or(Value::Null);
        let string = |obj: &mut Map<String, Value>, key: &str| match obj.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(bad(&id, format!("line {n}: \"{key}\" is not a string"))),
        };
        let op =
            string(&mut obj, "op")?.ok_or_else(|| bad(&id, format!("line {n} has no \"op\"")))?;
        let session = string(&mut obj, "session")?;
        let workspace = string(&mut obj, "workspace")?.map(PathBuf::from);
        let text = string(&mut obj, "content")?;
        let base64 = string(&mut obj, "content_base64")?;
        let content = match (text, base64) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    &id,
                    format!("line {n} has both \"content\" and \"content_base64\""),
                ));
            }
            (Some(t), None) => Some(t.into_bytes()),
            (None, Some(b)) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| bad(&id, format!("line {n}: \"content_base64\": {e}")))?,
            ),
            (None, None) => None,
        };
        let args = match obj.remove("args") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a,
            Some(_) => return Err(bad(&id, format!("line {n}: \"args\" is not an object"))),
        };
        let protocol = match obj.remove("protocol") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                bad(&id, format!("line {n}: \"protocol\" is not a whole number"))
            })?),
        };
        if let Some(key) = obj.keys().next() {
            return Err(bad(&id, format!("line {n}: unknown field \"{key}\"")));
        }
        Ok(Request {
            id,
            op,
            session,
            workspace,
            args,
            content,
            protocol,
        })
    }

    /// The command line this request stands for, parsed by clap: the
    /// command and its arguments, with the server's store home and JSON
    /// output and the request's session and workspace (else the server's).
    pub(crate) fn to_cli(&self, defaults: &Defaults) -> Result<Cli, CliError> {
        let op = self.op.as_str();
        PARSERS.with_borrow_mut(|parsers| {
            let parser = match parsers.get_mut(op) {
                Some(parser) => parser,
                None => {
                    let parser = parser_of(op).ok_or_else(|| {
                        CliError::usage(
                            format!("unknown op {:?}", self.op),
                            "`hello` answers the ops this server knows",
                        )
                    })?;
                    parsers.entry(op.to_owned()).or_insert(parser)
                }
            };
            let argv = self.argv(parser)?;
            let usage = |e: clap::Error| crate::commands::clap_usage(&e);
            let matches = parser.try_get_matches_from_mut(argv).map_err(usage)?;
            let command =
                <crate::commands::Command as clap::FromArgMatches>::from_arg_matches(&matches)
                    .map_err(usage)?;
            // The global flags a request has no field for keep their
            // defaults, as on a command line that does not give them.
            Ok(Cli {
                home: Some(defaults.home.clone()),
                session: self.session.clone().or_else(|| defaults.session.clone()),
                workspace: self
                    .workspace
                    .clone()
                    .or_else(|| defaults.workspace.clone()),
                json: true,
                color: crate::cli::ColorWhen::Auto,
                quiet: false,
                no_pager: false,
                command,
            })
        })
    }

    /// The arguments of `parser`'s one command, from the request's `args`:
    /// flags, then the positionals after `--` (so that a value that starts
    /// with `-` is a value), in the order the command declares them.
    fn argv(&self, parser: &clap::Command) -> Result<Vec<String>, CliError> {
        let op = self.op.as_str();
        let sub = parser
            .find_subcommand(op)
            .expect("a parser holds its op's command");
        let mut argv: Vec<String> = vec!["turnback".into(), op.to_owned()];
        let mut positionals = Vec::new();
        for (key, value) in &self.args {
            let name = key.replace('-', "_");
            let arg = sub
                .get_arguments()
                .find(|a| a.get_id() == name.as_str() && own(a))
                .ok_or_else(|| {
                    let known: Vec<String> = sub
                        .get_arguments()
                        .filter(|a| own(a))
                        .map(|a| a.get_id().to_string())
                        .collect();
                    CliError::usage(
                        format!("{op} has no argument {key:?}"),
                        &format!("its arguments: {}", known.join(", ")),
                    )
                })?;
            let flag = matches!(arg.get_action(), clap::ArgAction::SetTrue);
            let text = match value {
                Value::Null => continue,
                Value::Bool(b) if flag => {
                    if *b {
                        argv.push(format!("--{}", arg.get_long().unwrap_or(&name)));
                    }
                    continue;
                }
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => {
                    let expected = if flag {
                        "true or false"
                    } else {
                        "a string or a number"
                    };
                    return Err(CliError::usage(
                        format!("{op}: argument {key:?} must be {expected}"),
                        HINT,
                    ));
                }
            };
            if flag {
                return Err(CliError::usage(
                    format!("{op}: argument {key:?} must be true or false"),
                    HINT,
                ));
            }
            if arg.is_positional() {
                positionals.push((arg.get_id().to_string(), text));
            } else {
                let long = arg.get_long().unwrap_or(&name);
                argv.push(format!("--{long}={text}"));
            }
        }
        let order: Vec<String> = sub
            .get_arguments()
            .filter(|a| a.is_positional())
            .map(|a| a.get_id().to_string())
            .collect();
        positionals.sort_by_key(|(id, _)| order.iter().position(|o| o == id));
        if !positionals.is_empty() {
            argv.push("--".into());
            argv.extend(positionals.into_iter().map(|(_, v)| v));
        }
        Ok(argv)
    }
}

thread_local! {
    /// Each lane's parsers, one per op, made on first use and parsed in
    /// place. Each is a root holding only its op's command and none of the
    /// global flags (the request's fields are those): parsing against the
    /// whole command line, which fills every global flag into the command
    /// and reads their environment variables, cost about 0.1 ms a request,
    /// a fifth of what serving a write adds to the library call.
    static PARSERS: std::cell::RefCell<std::collections::HashMap<String, clap::Command>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// A root command holding only `op`'s command, built; `None` when `op` is
/// no command a request may name.
fn parser_of(op: &str) -> Option<clap::Command> {
    if NOT_OVER_SERVE.contains(&op) {
        return None;
    }
    let sub = crate::cli::command().find_subcommand(op)?.clone();
    let mut root = clap::Command::new("turnback")
        .subcommand_required(true)
        .subcommand(sub);
    root.build();
    Some(root)
}

/// The command line's clap command, built once: the ops `hello` lists.
fn root() -> &'static clap::Command {
    static ROOT: std::sync::OnceLock<clap::Command> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let mut root = crate::cli::command();
        root.build();
        root
    })
}

/// True for an argument a request may name: the command's own, not a
/// global flag (the request's fields are those) nor `--help`.
fn own(a: &clap::Arg) -> bool {
    !a.is_global_set() && a.get_id() != "help"
}

/// What a request that names no session or workspace gets: the server's own
/// (`turnback serve --session ID --workspace DIR`, or their variables).
#[derive(Debug, Clone)]
pub(crate) struct Defaults {
    pub home: PathBuf,
    pub session: Option<String>,
    pub workspace: Option<PathBuf>,
}

/// The ops a request may name: `hello` and the commands of the command line.
pub(crate) fn ops() -> Vec<String> {
    std::iter::once("hello".to_owned())
        .chain(
            root()
                .get_subcommands()
                .map(|c| c.get_name().to_owned())
                .filter(|c| !NOT_OVER_SERVE.contains(&c.as_str())),
        )
        .collect()
}
