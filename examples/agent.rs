//! A small line-oriented coding agent with turnback wired in: how an agent author
//! protects every tool call and offers `/undo`, `/redo`, `/rewind [N]`, `/diff`
//! and `/log` to the person at the keyboard.
//!
//! The "model" is scripted: each prompt you type starts a turn, and the agent
//! carries out the next step of its script (writes, edits, a move, a delete)
//! through turnback. Rewinding to a turn also cuts the conversation back to where
//! that turn began, using the conversation index stored with the turn.
//!
//! ```text
//! cargo run --example agent -- [WORKSPACE [STORE_HOME]]
//! cargo run --example agent -- --help
//! ```
//! Without arguments it works in a scratch directory.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use turnback::output::{ColorChoice, Out};
use turnback::{picker, text};
use turnback_store::{Error, RevertOptions, RevertReport, Session, Store, Workspace};

/// One tool call of the scripted model.
enum Tool {
    Write(&'static str, &'static str),
    Append(&'static str, &'static str),
    Move(&'static str, &'static str),
    Delete(&'static str),
}

/// What the model does at each turn, in order (then it starts over).
const SCRIPT: &[&[Tool]] = &[
    &[
        Tool::Write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        Tool::Write("NOTES.md", "# Notes\n"),
    ],
    &[
        Tool::Append("src/main.rs", "// greets the user\n"),
        Tool::Write(
            "src/greet.rs",
            "pub fn greet() -> &'static str {\n    \"hello\"\n}\n",
        ),
    ],
    &[Tool::Move("NOTES.md", "docs/NOTES.md")],
    &[
        Tool::Delete("src/greet.rs"),
        Tool::Append("docs/NOTES.md", "- removed greet.rs\n"),
    ],
];

struct Agent {
    session: Session,
    workspace: Workspace,
    out: Out,
    /// The conversation so far: prompts and the agent's replies.
    conversation: Vec<String>,
    calls: usize,
}

/// A small scripted coding agent with turnback wired in: type a request and it
/// edits files through turnback; /undo, /redo, /rewind [N], /diff, /log, /quit.
#[derive(clap::Parser)]
#[command(name = "agent", version)]
struct Args {
    /// The directory it works in [default: a scratch directory]
    workspace: Option<PathBuf>,
    /// The turnback store home [default: a scratch directory]
    store_home: Option<PathBuf>,
}

fn main() -> io::Result<()> {
    // A real parser: `--help` is help, not a workspace named `--help`, and an
    // unknown flag is an error (a directory whose name starts with `-` comes
    // after `--`).
    let args = <Args as clap::Parser>::parse();
    let scratch = std::env::temp_dir().join(format!("turnback-agent-{}", std::process::id()));
    let ws_dir = args.workspace.unwrap_or_else(|| scratch.join("workspace"));
    let home = args.store_home.unwrap_or_else(|| scratch.join("store"));
    std::fs::create_dir_all(&ws_dir)?;
    let fail = |e: Error| io::Error::other(e.to_string());
    let store = Store::new(&home);
    let mut agent = Agent {
        session: store.new_session().map_err(fail)?,
        workspace: Workspace::open(&ws_dir).map_err(fail)?,
        out: Out::new(ColorChoice::Never),
        conversation: Vec::new(),
        calls: 0,
    };
    println!(
        "agent: working in {} (session {})",
        ws_dir.display(),
        agent.session.id()
    );
    println!("Type a request, or /undo, /redo, /rewind [N], /diff, /log, /quit.");
    let stdin = io::stdin();
    let mut input = stdin.lock();
    loop {
        print!("> ");
        io::stdout().flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim();
        let result = match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [] => Ok(()),
            ["/quit"] => break,
            ["/undo"] => agent.show("undo", agent.session.undo(RevertOptions::default())),
            ["/redo"] => agent.show("redo", agent.session.redo(RevertOptions::default())),
            ["/diff"] => agent.diff(),
            ["/log"] => agent.log(),
            ["/rewind"] => agent.rewind(None, &mut input),
            ["/rewind", n] => match n.parse() {
                Ok(n) => agent.rewind(Some(n), &mut input),
                Err(_) => {
                    println!("usage: /rewind [TURN]");
                    Ok(())
                }
            },
            [cmd, ..] if cmd.starts_with('/') => {
                println!("unknown command {cmd}");
                Ok(())
            }
            _ => agent.turn(line),
        };
        if let Err(e) = result {
            println!("error: {e}");
        }
    }
    if agent.calls > 0 {
        println!("agent: {} tool calls this session", agent.calls);
    }
    Ok(())
}

impl Agent {
    /// A user prompt: begin a turn (recording where it starts in the
    /// conversation), then run the model's next step through turnback.
    fn turn(&mut self, prompt: &str) -> Result<(), Error> {
        let n = self
            .session
            .begin_turn(prompt, Some(self.conversation.len() as u64))?;
        self.conversation.push(format!("user: {prompt}"));
        let step = &SCRIPT[(n as usize - 1) % SCRIPT.len()];
        for (i, tool) in step.iter().enumerate() {
            let message = format!("turn{n}-call{}", i + 1);
            self.call(tool, &message)?;
            self.calls += 1;
        }
        self.conversation.push(format!(
            "agent: done with turn {n} ({} tool calls)",
            step.len()
        ));
        println!(
            "[turn {n}] done; the conversation has {} messages",
            self.conversation.len()
        );
        Ok(())
    }

    fn call(&self, tool: &Tool, message: &str) -> Result<(), Error> {
        let (s, ws) = (&self.session, &self.workspace);
        match tool {
            Tool::Write(path, contents) => {
                // The read guard: overwrite only what this session has seen.
                if let Err(e @ (Error::NotRead { .. } | Error::ChangedSinceRead { .. })) =
                    s.check_write(ws, path)
                {
                    println!("  (guard: {e}; reading it first)");
                    s.note_read(ws, path)?;
                }
                s.write(ws, path, contents.as_bytes(), message)?;
                println!("  write {path}");
            }
            Tool::Append(path, more) => {
                s.note_read(ws, path)?;
                let mut contents = std::fs::read(ws.root().join(path)).unwrap_or_default();
                contents.extend_from_slice(more.as_bytes());
                s.check_write(ws, path)?;
                s.write(ws, path, &contents[..], message)?;
                println!("  edit {path}");
            }
            Tool::Move(from, to) => {
                s.rename(ws, from, to, message)?;
                println!("  move {from} -> {to}");
            }
            Tool::Delete(path) => {
                s.remove(ws, path, message)?;
                println!("  delete {path}");
            }
        }
        Ok(())
    }

    fn show(&self, what: &str, result: Result<RevertReport, Error>) -> Result<(), Error> {
        print!("{}", text::revert(&self.out, what, &result?, &[]));
        Ok(())
    }

    fn diff(&self) -> Result<(), Error> {
        print!(
            "{}",
            text::diff(&self.out, &self.session.diff(None)?, false)
        );
        Ok(())
    }

    fn log(&self) -> Result<(), Error> {
        print!(
            "{}",
            text::log(&self.out, self.session.id(), &self.session.entries()?)
        );
        Ok(())
    }

    /// `/rewind [N]`: without N, the picker; then the preview and a confirmation;
    /// then files and conversation go back to where turn N began.
    fn rewind(&mut self, turn: Option<u32>, input: &mut dyn BufRead) -> Result<(), Error> {
        let turns = self.session.turns()?;
        let picked = match turn {
            Some(n) => Some(n),
            None => picker::pick_turn(
                self.session.id(),
                &turns,
                input,
                &mut io::stdout(),
                &self.out,
            )
            .map_err(|e| Error::Io {
                op: "read",
                path: "standard input".into(),
                source: e,
            })?,
        };
        let Some(n) = picked else {
            println!("nothing done");
            return Ok(());
        };
        let Some(bound) = self
            .session
            .turn_bounds()?
            .into_iter()
            .find(|t| t.number == n)
        else {
            return Err(Error::TurnNotFound {
                session: self.session.id().to_owned(),
                turn: n,
            });
        };
        let dry = RevertOptions {
            force: false,
            dry_run: true,
        };
        let preview = self.session.rewind_to_turn(n, dry)?;
        print!(
            "{}",
            text::revert(&self.out, &format!("rewind to turn {n}"), &preview, &[])
        );
        let question = format!(
            "Restore {} files and the conversation to the start of turn {n}?",
            preview.files.len()
        );
        let yes = picker::confirm(&question, input, &mut io::stdout()).unwrap_or(false);
        if !yes {
            println!("nothing done");
            return Ok(());
        }
        let done = self.session.rewind_to_turn(n, RevertOptions::default())?;
        print!(
            "{}",
            text::revert(&self.out, &format!("rewind to turn {n}"), &done, &[])
        );
        let keep = bound.conversation_index.unwrap_or(0) as usize;
        self.conversation.truncate(keep);
        println!(
            "conversation rewound to {} messages",
            self.conversation.len()
        );
        Ok(())
    }
}
