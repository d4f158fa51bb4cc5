//! turnback's Model Context Protocol server, on the official Rust SDK
//! ([`rmcp`]), over standard input and output: the tools an agent calls to
//! see its own work (`log`, `turns`, `diff`) and take it back (`undo`,
//! `revert_file`, `rewind`, `redo`, each with a `dry_run`).
//!
//! This crate knows no turnback internals: a tool call becomes one request
//! of `turnback serve`'s protocol (docs/JSON.md), which the [`Backend`] (the
//! `turnback` binary) runs through the same handlers as the command line, so
//! a tool's result is the JSON `--json` prints. tokio runs here only, on one
//! thread; a call runs on tokio's blocking pool.

pub mod tools;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

/// Runs turnback requests: the JSON request objects of `turnback serve`.
pub trait Backend: Send + Sync + 'static {
    /// Runs one request and returns its response, `{"id", "result"}` or
    /// `{"id", "error"}`. It may block (it changes files).
    fn call(&self, request: Value) -> Value;
}

/// The MCP server: the tools, and the backend that runs them.
#[derive(Clone)]
pub struct Server {
    backend: Arc<dyn Backend>,
    version: String,
}

impl Server {
    /// A server whose tools run on `backend`; `version` is turnback's, as
    /// the server tells the client.
    pub fn new(backend: Arc<dyn Backend>, version: impl Into<String>) -> Server {
        Server {
            backend,
            version: version.into(),
        }
    }

    /// The tool definitions, as `tools/list` sends them.
    pub fn tools() -> Vec<Tool> {
        tools::all()
            .into_iter()
            .map(|t| {
                let schema = match t.schema {
                    Value::Object(m) => m,
                    _ => unreachable!("a tool's schema is an object"),
                };
                let annotations = ToolAnnotations::new()
                    .read_only(t.read_only)
                    .destructive(!t.read_only)
                    .open_world(false);
                Tool::new(t.name, t.description, Arc::new(schema)).with_annotations(annotations)
            })
            .collect()
    }

    /// Runs a tool call: the result the model reads, an error result for a
    /// refusal or an error (`isError`), with the response as structured
    /// content.
    fn run(&self, name: &str, arguments: &serde_json::Map<String, Value>) -> CallToolResult {
        let request = match tools::request(name, arguments) {
            Ok(r) => r,
            Err(text) => return CallToolResult::error(vec![ContentBlock::text(text)]),
        };
        let response = self.backend.call(request);
        let (mut done, body) = match response.get("error") {
            Some(error) => (
                CallToolResult::error(vec![ContentBlock::text(tools::error_text(name, error))]),
                serde_json::json!({ "error": error }),
            ),
            None => {
                let result = response.get("result").cloned().unwrap_or(Value::Null);
                let text = serde_json::to_string_pretty(&result).unwrap_or_default();
                (
                    CallToolResult::success(vec![ContentBlock::text(text)]),
                    result,
                )
            }
        };
        done.structured_content = Some(body);
        done
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("turnback", self.version.clone()))
            .with_instructions(
                "turnback backed up every file the coding agent changed, before each change. \
                 Use log, turns and diff to see what changed; undo, revert_file, rewind and redo \
                 to take changes back (dry_run: true previews). A refusal means a file changed \
                 since (maybe by the user): nothing was touched; ask before forcing.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Server::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let this = self.clone();
        let arguments = request.arguments.unwrap_or_default();
        let name = request.name.to_string();
        let done = tokio::task::spawn_blocking(move || this.run(&name, &arguments))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the tool call failed: {e}"), None))?;
        Ok(done.into())
    }
}

/// Serves MCP on standard input and output until the client closes it.
pub fn serve_stdio(server: Server) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| std::io::Error::other(format!("MCP initialization: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| std::io::Error::other(format!("MCP server: {e}")))?;
        Ok(())
    })
}

/// The agents whose own command installs an MCP server, and that command
/// for a `turnback` at `exe`.
pub fn install_line(agent: &str, exe: &str) -> Option<String> {
    let quoted = shell_quote(exe);
    match agent {
        "claude-code" => Some(format!("claude mcp add turnback -- {quoted} mcp")),
        _ => None,
    }
}

/// The agents [`install_line`] knows.
pub const AGENTS: [&str; 1] = ["claude-code"];

/// `s` as one word of a POSIX shell: as it is when it is plain, else in
/// single quotes.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let tools = Server::tools();
        assert_eq!(tools.len(), 7);
        for t in &tools {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert!(
                t.description.as_ref().is_some_and(|d| d.len() > 80),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn a_call_is_one_request_and_unknown_arguments_are_refused() {
        let args = serde_json::json!({"file": "a.txt", "dry_run": true, "session": "s"});
        let req = tools::request("revert_file", args.as_object().unwrap()).unwrap();
        assert_eq!(
            req,
            serde_json::json!({"id": 1, "op": "revert", "session": "s",
                "args": {"file": "a.txt", "dry_run": true}})
        );
        let bad = serde_json::json!({"fil": "a.txt"});
        let e = tools::request("revert_file", bad.as_object().unwrap()).unwrap_err();
        assert!(e.contains("fil"), "{e}");
        assert!(tools::request("rewind", &Default::default()).is_err());
        assert!(tools::request("format_disk", &Default::default()).is_err());
    }

    #[test]
    fn install_lines_quote_the_path() {
        assert_eq!(
            install_line("claude-code", "/usr/bin/turnback").unwrap(),
            "claude mcp add turnback -- /usr/bin/turnback mcp"
        );
        assert_eq!(
            install_line("claude-code", "/opt/my tools/turnback").unwrap(),
            "claude mcp add turnback -- '/opt/my tools/turnback' mcp"
        );
        assert!(install_line("vim", "/x").is_none());
    }
}
