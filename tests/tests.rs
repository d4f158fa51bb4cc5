//! Integration tests: the store through its public API and the `turnback` binary
//! as real processes. Each module is one concern.

// Shared helpers: temporary homes and workspaces, the built binary, tree digests,
// SHA-256 in hex, revert options and file reads.
mod util;
// Real processes: concurrent appends, a revert from another process, racing writers, SIGKILL mid-write.
mod processes;
// Hostile paths: symlink swaps, a replaced root, paths outside, non-regular files.
mod hostile;
// Damaged store: corrupt or newer index, missing or corrupted backups.
mod corrupt;
// Byte-exact round trips of write, remove, undo, revert and rewind.
mod roundtrip;
// The safety check, the checkpoint bracket, dry runs and listings.
mod behaviour;
// The command line as a person sees it: human output of each command, as snapshots.
mod cli;
// The command line as an agent in another language sees it: --json, field by field.
mod cli_json;
// Every refusal and error of the command-line contract: exit code, message, nothing changed.
mod cli_errors;
// Turns, redo, renames and the read guard.
mod turns;
// What needs a terminal: the rewind picker under a pseudo-terminal, and the example agent.
mod interactive;
// `turnback ui`, the full-screen timeline, driven in a real pseudo-terminal.
mod ui;
// Crash injection: the binary aborted after every durable step, then recovery checked.
mod failpoints;
// One test per bad input docs/RELIABILITY.md lists (section 6): its documented error, nothing lost.
mod catalogue;
// A model of the store, checked against the real one under random operation sequences.
mod model;
// Symlink races and many processes at once.
mod races;
// Defects found by trying to break the store: each test failed before its fix.
mod defects;
// What a write and a restore keep besides bytes (owner, links, holes), stdin, escaped names.
mod fidelity;
// The store's trust boundary: prune against live writers, a store others can write, private backups, scope.
mod store_trust;
// Backups by clone on a filesystem that makes them (TURNBACK_REFLINK_DIR), told from copies.
mod clones;
// The syncs the binary asks the kernel for, counted with strace.
mod syncs;
// A git repository as the workspace: what turnback writes under .git, and what it leaves.
mod git;
// The examples of README.md and docs/JSON.md, run for real and compared with what the docs show.
mod docs;
// The command line's git and jj habits: turns, naming entries, times, the pager, show, status, blame.
mod habits;
// Agents' hooks: recorded payloads of Claude Code, Codex and Gemini CLI through `turnback hook`.
mod hooks;
// The other agents that run Claude Code's hooks (VS Code, Copilot CLI, Cursor): their own payloads protected.
mod hook_hosts;
// `turnback install`, `uninstall` and `doctor` on each agent's settings file.
mod install;
// `turnback install copilot|qwen|droid` and `turnback install` with no agent named.
mod install_hosts;
// A whole Claude Code session played through the hooks install wrote, then rewound from another process.
mod claude_session;
// A scripted model on 127.0.0.1 that the real agents talk to offline.
mod model_server;
// The real Claude Code, Codex and Gemini CLI through their hooks, then a rewind from another process.
mod real_agents;
// `turnback serve --stdio` over pipes: requests, errors, held checkpoints, the docs' client.
mod serve;
// `turnback mcp`: a real MCP handshake and tool calls over a pipe, and the install line.
mod mcp;
// Settings (config file, environment, flags), retention, per-session caps and garbage collection.
mod retention;
// What a shell command changes, undone: the scan bracket and `turnback run`.
mod scan;
// Shell calls through the agents' hooks: the scan bracket around a real shell edit, then an undo.
mod hook_shell;
// Lookups across sessions through the store's summary, with real processes.
mod lookups;
// Shell brackets that once lost or hid work: many files, links, ignored files, odd names.
mod shell_losses;
// Hook lines that must never block their agent by accident: empty variables, unreadable lines.
mod hook_lines;
// Power loss: the store and the workspace on a FUSE filesystem that forgets what was never synced.
mod powerloss;
