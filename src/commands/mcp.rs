//! `turnback mcp`: a Model Context Protocol server on standard input and
//! output (the `turnback-mcp` crate), whose tools run as requests of the
//! `turnback serve` server in this process; or, with `--print-install`, the
//! command that installs it into an agent.

use std::sync::Arc;

use serde_json::Value;

use crate::cli::Cli;
use crate::cli_error::CliError;
use crate::render::Text;
use crate::serve::Server;

/// Serve the Model Context Protocol on standard input and output (tools for agents)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The tools: log, turns, diff, undo, revert_file, rewind, redo (each restoring\none with dry_run and force). Refusals come back as tool errors that say which\nfiles changed and how to go on.\n\nExample:\n  turnback mcp --print-install claude-code   # then run the line it prints"
)]
pub(crate) struct McpArgs {
    /// Print the command that installs this server into AGENT, and exit
    #[arg(long, value_name = "AGENT", value_parser = clap::builder::PossibleValuesParser::new(turnback_mcp::AGENTS))]
    print_install: Option<String>,
}

/// The tools' way to the server: a tool call is one request.
struct Backend(Server);

impl turnback_mcp::Backend for Backend {
    fn call(&self, request: Value) -> Value {
        self.0.respond_value(&request)
    }
}

/// Serves MCP until the client closes standard input, or prints the install line.
pub(crate) fn run(cli: &Cli, args: &McpArgs) -> Result<Text, CliError> {
    if let Some(agent) = &args.print_install {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::new(format!("cannot find the turnback binary: {e}"), None))?;
        let exe = exe.to_string_lossy();
        let line = turnback_mcp::install_line(agent, &exe).expect("clap checked the agent");
        return Ok(Text(format!("{line}\n")));
    }
    let backend = Arc::new(Backend(crate::commands::serve::server(cli)?));
    let server = turnback_mcp::Server::new(backend.clone(), env!("CARGO_PKG_VERSION"));
    let done = turnback_mcp::serve_stdio(server);
    backend.0.finish();
    done.map_err(|e| CliError::new(format!("the MCP server stopped: {e}"), None))?;
    Ok(Text(String::new()))
}
