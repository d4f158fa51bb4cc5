//! The command line a daily user expects (issue 17): turns and their prompts
//! in `turns` and `log`, entries named as `#N` or by a prefix of their
//! message, `--dry-run` as a check, git's short flags, times, the pager,
//! `show`, `status` and `blame`. What a person reads is a snapshot (the
//! helpers of `tests/cli.rs`); what a program reads is checked field by
//! field.

use serde_json::Value;

use crate::cli::{LIB_V2, NOTES, UTIL, agent_session, snap, tb, transcript, workspace};
use crate::cli_json::run;
use crate::util::Env;

/// `turnback --json ARGS` in `env`, which must succeed: its stdout parsed.
fn json(env: &Env, session: Option<&str>, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let r = run(env, session, &all, None);
    assert_eq!(r.code(), 0, "turnback {}: {}", all.join(" "), r.stderr);
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// A workspace where agent-1 worked in two turns: turn 1 ("first") changed
/// `src/lib.rs` (t1-1), turn 2 ("add a helper") created `src/util.rs` and
/// deleted `NOTES.md` (t2-1, t2-2).
fn two_turns() -> Env {
    let env = workspace();
    let s = "agent-1";
    transcript(vec![
        (
            tb(&env, "turn --prompt first --conversation-index 0").session(s),
            0,
        ),
        (
            tb(&env, "write src/lib.rs --message t1-1")
                .session(s)
                .stdin(LIB_V2.as_bytes()),
            0,
        ),
        (
            tb(&env, "turn --prompt add_a_helper --conversation-index 2").session(s),
            0,
        ),
        (
            tb(&env, "write src/util.rs --message t2-1")
                .session(s)
                .stdin(UTIL.as_bytes()),
            0,
        ),
        (tb(&env, "rm NOTES.md --message t2-2").session(s), 0),
    ]);
    env
}

// ---------------------------------------------------------------------------
// 1. Turns, in `turns` and in `log`

#[test]
fn turns_and_log_show_turns_with_their_prompts() {
    let env = two_turns();
    let text = transcript(vec![(tb(&env, "turns"), 0), (tb(&env, "log"), 0)]);
    snap(
        &env,
        "habits_turns_and_log",
        "Two turns: `turns` lists them newest first with their files; `log` shows each turn's boundary and prompt before its messages.",
        &text,
    );
}

#[test]
fn turns_and_log_json_carry_the_turns() {
    let env = two_turns();
    let t = json(&env, None, &["turns"]);
    assert_eq!(t["session"], "agent-1");
    let turns = t["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["number"], 2, "newest first");
    assert_eq!(turns[0]["prompt"], "add_a_helper");
    assert_eq!(turns[0]["files"], 2);
    assert_eq!(turns[0]["entries"], 2);
    assert_eq!(turns[0]["conversation_index"], 2);
    assert_eq!(turns[1]["number"], 1);
    assert_eq!(turns[1]["files"], 1);
    assert!(turns[1]["time"].as_str().unwrap().ends_with('Z'));

    let log = json(&env, None, &["log"]);
    let turns = log["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["number"], 1, "oldest first, as the entries");
    assert_eq!(turns[0]["prompt"], "first");
    assert_eq!(turns[0]["entries"], serde_json::json!([1]));
    assert_eq!(turns[1]["entries"], serde_json::json!([2, 3]));
    let all = json(&env, None, &["log", "--all"]);
    assert_eq!(all["sessions"][0]["turns"], log["turns"]);
}

#[test]
fn a_session_without_turns_logs_as_before_and_has_no_turns() {
    let (env, _) = agent_session();
    let log = tb(&env, "log").run().expect(0);
    assert!(!log.stdout.contains("turn"), "{}", log.block());
    assert_eq!(json(&env, None, &["log"])["turns"], serde_json::json!([]));
    let turns = tb(&env, "turns").run().expect(0);
    assert!(turns.stdout.contains("no turns"), "{}", turns.block());
    let _ = NOTES;
}

/// The commands this issue adds, in the completions and the manual page
/// (both generated from the clap definition).
const NEW_COMMANDS: &[&str] = &["turns"];

#[test]
fn completions_and_man_name_the_new_commands() {
    let env = Env::new();
    let bash = tb(&env, "completions bash").run().expect(0);
    let zsh = tb(&env, "completions zsh").run().expect(0);
    let man = tb(&env, "man").run().expect(0);
    for c in NEW_COMMANDS {
        assert!(
            bash.stdout.contains(&format!("turnback__subcmd__{c}\"")),
            "bash: {c}"
        );
        assert!(zsh.stdout.contains(&format!("'{c}:")), "zsh: {c}");
        assert!(
            man.stdout.contains(&format!(".SS \"turnback {c}\"")),
            "man: {c}"
        );
    }
}
