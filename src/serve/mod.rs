//! `turnback serve --stdio`: one long-lived turnback for agents that cannot
//! link the library. One JSON request per line on standard input, one JSON
//! response per line on standard output, nothing else there
//! (`docs/JSON.md`, "serve --stdio", is the protocol).
//!
//! Worker threads take turns reading the lines (`workers.rs`): one
//! session's requests run in the order they came, different sessions' at
//! the same time. A request runs as the command line it stands for
//! (`request.rs`), through the same handlers and reports as `--json`
//! ([`Answer`], given by `commands/serve.rs`). At end of input the workers
//! finish what they read, held checkpoints are dropped (`held.rs`), and the
//! server exits 0.

mod held;
mod request;
mod sessions;
mod workers;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use turnback_store::Store;

use crate::cli_error::CliError;
use crate::render::Report;

pub(crate) use held::Held;
pub(crate) use request::{Defaults, Request};
pub(crate) use sessions::OpenSessions;

/// The version of the protocol; a client that says another in `hello` is
/// refused. It changes only when an old client could misread a response.
pub(crate) const PROTOCOL: u64 = 1;

/// Runs one request (a command line, parsed) in the server: its report.
pub(crate) type Answer = fn(&Server, &Request) -> Result<Box<dyn Report>, CliError>;

/// What every request of one server shares.
pub(crate) struct Server {
    /// The store, opened once.
    pub store: Store,
    /// The directory FILE arguments are relative to: the server's own.
    pub cwd: PathBuf,
    /// The session and workspace of a request that names none.
    pub defaults: Defaults,
    /// The agent sessions opened so far.
    pub open: Arc<OpenSessions>,
    /// The checkpoints taken through the server and not yet ended.
    pub held: Held,
    answer: Answer,
}

impl Server {
    /// A server on `store`, running requests with `answer`.
    pub(crate) fn new(store: Store, cwd: PathBuf, defaults: Defaults, answer: Answer) -> Server {
        Server {
            store,
            cwd,
            defaults,
            open: Arc::new(OpenSessions::default()),
            held: Held::default(),
            answer,
        }
    }

    /// The response to one request, as the JSON object of its line.
    pub(crate) fn respond(&self, req: &Request) -> Value {
        if req.op == "hello" {
            return match req.protocol {
                Some(p) if p != PROTOCOL => error_response(
                    &req.id,
                    &CliError::usage(
                        format!("this server speaks protocol {PROTOCOL}, not {p}"),
                        "use a client for protocol 1, or the turnback that speaks yours",
                    ),
                ),
                _ => json!({ "id": req.id, "result": hello() }),
            };
        }
        match (self.answer)(self, req) {
            Ok(report) => {
                let result = report.json().unwrap_or_else(
                    || json!({ "text": report.text(&turnback::output::Out { color: false }) }),
                );
                json!({ "id": req.id, "result": result })
            }
            Err(e) => error_response(&req.id, &e),
        }
    }

    /// The response to a request given as a JSON value (the MCP server's
    /// way in); a value that is not a request gets its error response.
    pub(crate) fn respond_value(&self, request: &Value) -> Value {
        match Request::parse(request.to_string().as_bytes(), 1) {
            Ok(req) => self.respond(&req),
            Err(bad) => error_response(&bad.id, &bad.error),
        }
    }

    /// Ends what the server holds: its held checkpoints are dropped.
    pub(crate) fn finish(&self) {
        self.held.release_all();
    }
}

/// The answer to `hello`: the protocol, turnback's version and the ops.
fn hello() -> Value {
    json!({
        "protocol": PROTOCOL,
        "turnback": env!("CARGO_PKG_VERSION"),
        "ops": request::ops(),
    })
}

/// `{"id", "error"}`: the error object of `--json` with the request's id.
fn error_response(id: &Value, e: &CliError) -> Value {
    let error = e.json().get("error").cloned().unwrap_or(Value::Null);
    json!({ "id": id, "error": error })
}

/// Standard output, shared by the workers: one response, one line, one write.
struct Output {
    out: Mutex<std::io::Stdout>,
    /// Set when a write failed (the client closed its end): stop reading.
    closed: AtomicBool,
}

impl Output {
    fn send(&self, response: &Value) {
        let line = format!("{response}\n");
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            self.closed.store(true, Ordering::Relaxed);
        }
    }
}

/// Serves standard input until it ends (or standard output is closed).
pub(crate) fn run_stdio(server: Server) -> Result<(), CliError> {
    let server = Arc::new(server);
    let out = Arc::new(Output {
        out: Mutex::new(std::io::stdout()),
        closed: AtomicBool::new(false),
    });
    workers::serve(server.clone(), out);
    server.finish();
    Ok(())
}
