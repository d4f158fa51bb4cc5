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
const NEW_COMMANDS: &[&str] = &["turns", "show", "status", "blame"];

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
    for flag in NEW_FLAGS {
        assert!(bash.stdout.contains(flag), "bash: {flag}");
        assert!(zsh.stdout.contains(flag), "zsh: {flag}");
        // roff escapes the hyphens.
        assert!(
            man.stdout.contains(&flag.replace('-', "\\-")),
            "man: {flag}"
        );
    }
}

#[test]
fn the_manual_page_names_the_variables_this_issue_reads() {
    let env = Env::new();
    let man = tb(&env, "man").run().expect(0);
    let environment = man.stdout.split(".SH ENVIRONMENT").nth(1).unwrap();
    for v in ["\\fBPAGER\\fR", "\\fBTURNBACK_NOW\\fR"] {
        assert!(environment.contains(v), "{v}: {environment}");
    }
}

/// The flags this issue adds.
const NEW_FLAGS: &[&str] = &[
    "--quiet",
    "--no-pager",
    "--max-count",
    "--since",
    "--until",
    "--entry",
];

// ---------------------------------------------------------------------------
// 2. Naming what to undo: #N, --entry N, prefixes of message ids, --turn -1, undo N

/// agent-1 changes four files, one message each, with long tool-call ids:
/// `toolu_01Aa` (lib.rs), `toolu_01Ab` (util.rs), `toolu_02Ba` (NOTES.md
/// deleted), `toolu_02Bb` (docs/guide.md).
fn long_ids() -> Env {
    let env = workspace();
    let s = "agent-1";
    transcript(vec![
        (
            tb(&env, "write src/lib.rs --message toolu_01Aa")
                .session(s)
                .stdin(LIB_V2.as_bytes()),
            0,
        ),
        (
            tb(&env, "write src/util.rs --message toolu_01Ab")
                .session(s)
                .stdin(UTIL.as_bytes()),
            0,
        ),
        (tb(&env, "rm NOTES.md --message toolu_02Ba").session(s), 0),
        (
            tb(&env, "write docs/guide.md --message toolu_02Bb")
                .session(s)
                .stdin(b"# Guide\n"),
            0,
        ),
    ]);
    env
}

#[test]
fn entries_are_named_as_log_prints_them_and_messages_by_a_prefix() {
    let env = long_ids();
    let text = transcript(vec![
        (tb(&env, "rewind #3 --dry-run"), 0),
        (tb(&env, "rewind 3 --dry-run"), 0),
        (tb(&env, "rewind --entry 4 --dry-run"), 0),
        (tb(&env, "rewind toolu_02B"), 2),
        (tb(&env, "rewind toolu_02Bb"), 0),
        (tb(&env, "rewind toolu_02"), 0),
        (tb(&env, "rewind #9"), 1),
        (tb(&env, "rewind nosuch"), 1),
    ]);
    assert!(!env.path("docs/guide.md").exists());
    assert_eq!(
        std::fs::read_to_string(env.path("NOTES.md")).unwrap(),
        NOTES
    );
    assert!(env.path("src/util.rs").exists(), "toolu_01Ab stays");
    snap(
        &env,
        "habits_naming_entries",
        "`rewind #3`, `rewind 3` and `rewind --entry 4` preview from that entry on; a prefix of two message ids is a usage error naming them; a unique one rewinds its message; an unknown entry or message is an error.",
        &text,
    );
}

#[test]
fn rewind_to_an_entry_reverts_it_and_everything_after() {
    let env = long_ids();
    let v = json(&env, None, &["rewind", "--entry", "2"]);
    let mut entries: Vec<u64> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            f["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_u64().unwrap())
        })
        .collect();
    entries.sort();
    assert_eq!(entries, [2, 3, 4]);
    assert_eq!(
        std::fs::read_to_string(env.path("src/lib.rs")).unwrap(),
        LIB_V2
    );
    assert!(!env.path("src/util.rs").exists());
    // One redo puts the three back.
    json(&env, None, &["redo"]);
    assert!(env.path("src/util.rs").exists());
    assert!(!env.path("NOTES.md").exists());
}

#[test]
fn undo_n_reverts_the_newest_n_changes_as_one_undo() {
    let env = long_ids();
    let text = transcript(vec![
        (tb(&env, "undo 2 --dry-run"), 0),
        (tb(&env, "undo 2"), 0),
    ]);
    assert!(!env.path("docs/guide.md").exists());
    assert_eq!(
        std::fs::read_to_string(env.path("NOTES.md")).unwrap(),
        NOTES
    );
    assert!(env.path("src/util.rs").exists());
    snap(
        &env,
        "habits_undo_n",
        "`undo 2` takes back the newest two changes.",
        &text,
    );
    // One redo puts both back; `undo 0` is a usage error.
    json(&env, None, &["redo"]);
    assert!(env.path("docs/guide.md").exists() && !env.path("NOTES.md").exists());
    assert_eq!(run(&env, None, &["undo", "0"], None).code(), 2);
    // More than there are: all of them.
    let v = json(&env, None, &["undo", "10"]);
    assert_eq!(v["files"].as_array().unwrap().len(), 4);
    assert_eq!(util_read(&env, "src/lib.rs"), crate::cli::LIB_V1);
}

fn util_read(env: &Env, rel: &str) -> String {
    std::fs::read_to_string(env.path(rel)).unwrap()
}

#[test]
fn a_move_is_one_change_for_undo_n() {
    let env = workspace();
    let s = Some("agent-1");
    run(&env, s, &["write", "a.txt", "-m", "m1"], Some(b"a\n"));
    run(
        &env,
        s,
        &["mv", "NOTES.md", "docs/NOTES.md", "-m", "m2"],
        None,
    );
    let v = json(&env, None, &["undo", "1"]);
    assert_eq!(
        v["files"].as_array().unwrap().len(),
        2,
        "both sides of the move"
    );
    assert!(env.path("a.txt").exists(), "one step only");
    json(&env, None, &["redo"]);
    let v = json(&env, None, &["undo", "2"]);
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    assert!(!env.path("a.txt").exists());
}

#[test]
fn turn_minus_one_is_the_last_turn() {
    let env = two_turns();
    let text = transcript(vec![
        (tb(&env, "rewind --turn -1 --dry-run"), 0),
        (tb(&env, "rewind --turn -3"), 1),
        (tb(&env, "rewind --turn 0"), 2),
        (tb(&env, "rewind --turn -2"), 0),
    ]);
    assert_eq!(util_read(&env, "src/lib.rs"), crate::cli::LIB_V1);
    assert!(!env.path("src/util.rs").exists());
    snap(
        &env,
        "habits_turn_minus_one",
        "`--turn -1` is the last turn, `-2` the one before; past the first, or 0, is refused.",
        &text,
    );
}

#[test]
fn commit_and_rollback_take_an_entry_as_hash_n() {
    let env = workspace();
    let s = Some("agent-1");
    let id = run(&env, s, &["checkpoint", "NOTES.md", "-m", "c1"], None);
    assert_eq!(id.stdout.trim(), "1");
    std::fs::write(env.path("NOTES.md"), "edited\n").unwrap();
    let c = run(&env, s, &["commit", "#1"], None);
    assert_eq!(c.code(), 0, "{}", c.stderr);
    run(&env, s, &["checkpoint", "src/lib.rs", "-m", "c2"], None);
    std::fs::write(env.path("src/lib.rs"), "edited\n").unwrap();
    let r = run(&env, s, &["rollback", "#2"], None);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(util_read(&env, "src/lib.rs"), crate::cli::LIB_V1);
    let bad = run(&env, s, &["commit", "#x"], None);
    assert_eq!(bad.code(), 2, "{}", bad.stderr);
    // --entry N, as rewind and diff take it: the same as #N.
    run(&env, s, &["checkpoint", "NOTES.md", "-m", "c3"], None);
    std::fs::write(env.path("NOTES.md"), "edited again\n").unwrap();
    let r = run(&env, s, &["rollback", "--entry", "3"], None);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(util_read(&env, "NOTES.md"), "edited\n");
    let id = run(&env, s, &["checkpoint", "NOTES.md", "-m", "c4"], None);
    let n = id.stdout.trim().to_owned();
    std::fs::write(env.path("NOTES.md"), "edited, kept\n").unwrap();
    let c = run(&env, s, &["commit", "--entry", &n], None);
    assert_eq!(c.code(), 0, "{}", c.stderr);
    let shown = run(&env, s, &["show", "--entry", &n, "-q"], None);
    assert_eq!(shown.code(), 0, "{}", shown.stderr);
    let hash_n = format!("#{n}");
    assert_eq!(
        shown.stdout,
        run(&env, s, &["show", &hash_n, "-q"], None).stdout
    );
    assert!(shown.stdout.contains("c4"), "{}", shown.stdout);
    let both = run(&env, s, &["commit", &n, "--entry", &n], None);
    assert_eq!(both.code(), 2, "ID and --entry at once: {}", both.stderr);
}

// ---------------------------------------------------------------------------
// 4. --dry-run as a check: exit 3 when the real command would refuse

#[test]
fn a_dry_run_exits_3_when_the_real_command_would_refuse() {
    let env = workspace();
    let s = Some("agent-1");
    run(
        &env,
        s,
        &["write", "src/lib.rs", "-m", "m1"],
        Some(LIB_V2.as_bytes()),
    );
    let clean = run(&env, None, &["undo", "--dry-run"], None);
    assert_eq!(clean.code(), 0, "nothing in the way: {}", clean.stderr);
    std::fs::write(env.path("src/lib.rs"), "by hand\n").unwrap();
    let before = crate::util::tree_digest(env.ws.path());
    let text = transcript(vec![
        (tb(&env, "undo --dry-run"), 3),
        (tb(&env, "undo --dry-run --force"), 0),
        (tb(&env, "undo"), 3),
    ]);
    assert_eq!(
        crate::util::tree_digest(env.ws.path()),
        before,
        "nothing touched"
    );
    snap(
        &env,
        "habits_dry_run_check",
        "A hand edit since: `undo --dry-run` shows the plan and exits 3 with the refusal the real undo gives; forced, the check passes.",
        &text,
    );
    // With --json: the plan on stdout, the refusal object on stderr, exit 3.
    let j = run(&env, None, &["--json", "undo", "--dry-run"], None);
    assert_eq!(j.code(), 3);
    let plan: Value = serde_json::from_str(j.stdout.trim()).unwrap();
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["files"][0]["status"], "changed-since");
    let err: Value = serde_json::from_str(j.stderr.trim()).unwrap();
    assert_eq!(err["error"]["kind"], "refused");
    assert_eq!(err["error"]["exit_code"], 3);
    assert_eq!(crate::util::tree_digest(env.ws.path()), before);
}

#[test]
fn a_redo_dry_run_exits_3_when_the_real_redo_would_refuse() {
    let env = workspace();
    let s = Some("agent-1");
    run(
        &env,
        s,
        &["write", "src/lib.rs", "-m", "m1"],
        Some(LIB_V2.as_bytes()),
    );
    assert_eq!(run(&env, s, &["undo"], None).code(), 0);
    let clean = run(&env, s, &["redo", "--dry-run"], None);
    assert_eq!(clean.code(), 0, "nothing in the way: {}", clean.stderr);
    // A hand edit after the undo: the redo would overwrite it.
    std::fs::write(env.path("src/lib.rs"), "by hand\n").unwrap();
    let before = crate::util::tree_digest(env.ws.path());
    let check = run(&env, s, &["redo", "--dry-run"], None);
    assert_eq!(check.code(), 3, "{} {}", check.stdout, check.stderr);
    assert_eq!(run(&env, s, &["redo"], None).code(), 3);
    assert_eq!(
        run(&env, s, &["redo", "--dry-run", "--force"], None).code(),
        0
    );
    assert_eq!(
        crate::util::tree_digest(env.ws.path()),
        before,
        "nothing touched"
    );
}

// ---------------------------------------------------------------------------
// 3. Habits: -n, -f, -q, log -n N, log FILE, --since/--until, times, the pager

#[test]
fn short_flags_do_what_the_long_ones_do() {
    let env = workspace();
    let s = Some("agent-1");
    run(
        &env,
        s,
        &["write", "src/lib.rs", "-m", "m1"],
        Some(LIB_V2.as_bytes()),
    );
    std::fs::write(env.path("src/lib.rs"), "by hand\n").unwrap();
    let before = crate::util::tree_digest(env.ws.path());
    // -n is --dry-run (a check: the hand edit would refuse it).
    let dry = run(&env, None, &["undo", "-n"], None);
    assert_eq!(dry.code(), 3, "{}", dry.stderr);
    assert!(
        dry.stdout.contains("dry run, nothing touched"),
        "{}",
        dry.stdout
    );
    assert_eq!(crate::util::tree_digest(env.ws.path()), before);
    // -q drops the "using session" note and nothing else.
    let quiet = run(&env, None, &["undo", "-n", "-f", "-q"], None);
    assert_eq!(quiet.code(), 0, "-f is --force: {}", quiet.stderr);
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, dry.stdout);
    assert!(
        dry.stderr.contains("using session agent-1"),
        "{}",
        dry.stderr
    );
    // -f for real.
    let forced = run(&env, None, &["undo", "-f", "--quiet"], None);
    assert_eq!(forced.code(), 0, "{}", forced.stderr);
    assert_eq!(util_read(&env, "src/lib.rs"), crate::cli::LIB_V1);
    // prune -n is its dry run.
    let prune = run(&env, None, &["prune", "-n"], None);
    assert_eq!(prune.code(), 0, "{}", prune.stderr);
    assert!(prune.stdout.contains("would remove"), "{}", prune.stdout);
}

#[test]
fn log_takes_a_count_a_file_and_a_time_range() {
    let env = long_ids();
    let text = transcript(vec![
        (tb(&env, "log -n 2 -q"), 0),
        (tb(&env, "log src/util.rs"), 0),
        (tb(&env, "log --since 2d -q"), 0),
        (tb(&env, "log --until 2000-01-01 -q"), 0),
        (tb(&env, "log --since yesterday-ish"), 2),
    ]);
    snap(
        &env,
        "habits_log_filters",
        "`log -n 2` shows the newest two changes; `log FILE` one file's history; `--since 2d` everything (it was made in this test; now is a day and a half later), `--until 2000-01-01` nothing; a time it cannot read is a usage error. Times are local (TZ=UTC here) with how long ago (TURNBACK_NOW is a day and a half later).",
        &text,
    );
    let v = json(&env, None, &["log", "-n", "1"]);
    assert_eq!(v["entries"].as_array().unwrap().len(), 1);
    assert_eq!(v["entries"][0]["seq"], 4);
    let v = json(&env, None, &["log", "NOTES.md"]);
    let seqs: Vec<&Value> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["seq"])
        .collect();
    assert_eq!(seqs, [3]);
    // The range is half open: --since a change's time takes it, --until leaves it.
    let t = v["entries"][0]["time"].as_str().unwrap().to_owned();
    assert_eq!(
        json(&env, None, &["log", "--since", &t])["entries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        json(&env, None, &["log", "--until", &t])["entries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // JSON keeps UTC RFC 3339 whatever the local zone.
    let mut cmd = env.cmd(None);
    cmd.env("TZ", "Asia/Kolkata").args(["--json", "log"]);
    let out = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["entries"][0]["time"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn text_times_are_local_and_say_how_long_ago() {
    let env = long_ids();
    let entries = env.store().session("agent-1").unwrap().entries().unwrap();
    let t = entries[0].time;
    let now = (t + time::Duration::minutes(3))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut cmd = env.cmd(None);
    cmd.env("TZ", "UTC-1").env("TURNBACK_NOW", &now);
    cmd.args(["log", "--color", "never", "-n", "1"]);
    let out = cmd.output().unwrap();
    let shown = String::from_utf8(out.stdout).unwrap();
    // POSIX TZ "UTC-1" is one hour east of UTC.
    let local = t.to_offset(time::UtcOffset::from_hms(1, 0, 0).unwrap());
    let hm = format!("{:02}:{:02}", local.hour(), local.minute());
    assert!(shown.contains(&format!("{hm}:")), "{shown}");
    assert!(
        shown.contains("+0100 (3 min ago)") || shown.contains("+0100 (2 min ago)"),
        "{shown}"
    );
}

/// `turnback ARGS` on a terminal (util-linux's `script`) with `vars` set:
/// what the terminal showed.
fn on_a_terminal_with(env: &Env, vars: &str, args: &str) -> Option<String> {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::util::skip(
            "habits::the_pager",
            "util-linux's `script` is not installed: no pseudo-terminal",
        );
        return None;
    }
    let line = format!(
        "env {vars} {} {args} --color never",
        crate::util::bin().display()
    );
    let mut script = env.command("script", None);
    script.args(["-qec", &line, "/dev/null"]);
    let out = crate::util::run_with_input(script, b"");
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

#[test]
fn the_pager_takes_log_and_diff_on_a_terminal_only() {
    let env = long_ids();
    let pager = "PAGER='sed s/^/paged:/'";
    let Some(log) = on_a_terminal_with(&env, pager, "log") else {
        return;
    };
    assert!(log.contains("paged:session agent-1"), "{log}");
    let diff = on_a_terminal_with(&env, pager, "diff").unwrap();
    assert!(diff.contains("paged:src/lib.rs"), "{diff}");
    // Not with --no-pager, not for JSON, not for a command that is short.
    let direct = on_a_terminal_with(&env, pager, "log --no-pager").unwrap();
    assert!(
        direct.contains("session agent-1") && !direct.contains("paged:"),
        "{direct}"
    );
    let j = on_a_terminal_with(&env, pager, "log --json").unwrap();
    assert!(!j.contains("paged:"), "{j}");
    let turns = on_a_terminal_with(&env, pager, "sessions").unwrap();
    assert!(!turns.contains("paged:"), "{turns}");
    // Not through a pipe.
    let piped = run(&env, None, &["log"], None);
    assert!(!piped.stdout.contains("paged:"));
    // Without $PAGER: less -FRX, which prints text that fits and quits.
    if std::process::Command::new("less")
        .arg("--version")
        .output()
        .is_ok()
    {
        let less = on_a_terminal_with(&env, "-u PAGER", "log").unwrap();
        assert!(less.contains("session agent-1"), "{less}");
    } else {
        crate::util::skip(
            "habits::the_pager_takes_log_and_diff_on_a_terminal_only",
            "less is not installed: the default pager is untested",
        );
    }
}

// ---------------------------------------------------------------------------
// 7. A file turnback never backed up

#[test]
fn reverting_a_file_no_session_changed_says_so_and_in_git_how_to_restore_it() {
    let env = long_ids();
    let plain = tb(&env, "revert NOTES.txt").run().expect(1);
    assert!(!plain.stderr.contains("git restore"), "{}", plain.block());
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::util::skip(
            "habits::reverting_a_file_no_session_changed_says_so_and_in_git_how_to_restore_it",
            "git is not installed: the git repository case is untested",
        );
        return;
    }
    let git = |args: &[&str]| {
        let out = env.command("git", None).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    std::fs::write(env.path("README.md"), "# readme\n").unwrap();
    git(&["add", "README.md"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "c",
    ]);
    std::fs::write(env.path("README.md"), "# edited by hand\n").unwrap();
    let text = transcript(vec![(tb(&env, "revert README.md"), 1)]);
    snap(
        &env,
        "habits_never_backed_up",
        "`revert` of a file no session changed, in a git repository: it says turnback never backed it up, names the file as typed, and suggests `git restore`.",
        &text,
    );
    let e = run(&env, None, &["--json", "revert", "README.md"], None);
    let v: Value = serde_json::from_str(e.stderr.trim()).unwrap();
    assert_eq!(v["error"]["kind"], "no-change-to-file");
    assert!(
        v["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("git restore README.md")
    );
    // And `git restore` does what the hint says.
    git(&["restore", "README.md"]);
    assert_eq!(util_read(&env, "README.md"), "# readme\n");
}

// ---------------------------------------------------------------------------
// 8. Help for people first

#[test]
fn help_lists_the_commands_for_people_before_the_agent_plumbing() {
    let env = Env::new();
    for flag in ["--help", "-h"] {
        let top = tb(&env, flag).run().expect(0);
        let people = top
            .stdout
            .find("\nCommands:\n")
            .expect("a Commands heading");
        let plumbing = top
            .stdout
            .find("\nAgent plumbing")
            .expect("a plumbing heading");
        assert!(people < plumbing, "{}", top.stdout);
        let (for_people, for_agents) = top.stdout.split_at(plumbing);
        for c in ["undo", "revert", "rewind", "redo", "log", "turns", "diff"] {
            assert!(
                for_people.contains(&format!("\n  {c} ")),
                "{c} for people:\n{}",
                top.stdout
            );
        }
        for c in [
            "write",
            "rm",
            "mv",
            "checkpoint",
            "commit",
            "rollback",
            "turn",
        ] {
            assert!(
                for_agents.contains(&format!("\n  {c} ")),
                "{c} for agents:\n{}",
                top.stdout
            );
            assert!(
                !for_people[people..].contains(&format!("\n  {c} ")),
                "{c} listed twice"
            );
        }
        assert!(top.stdout.contains("Usage: turnback [OPTIONS] <COMMAND>"));
    }
    // Hidden from clap's own list, every command still parses and has help.
    let undo = run(&env, None, &["help", "undo"], None);
    assert!(
        undo.stdout.contains("Usage: turnback undo"),
        "{}",
        undo.stderr
    );
    let typo = tb(&env, "und").run().expect(2);
    assert!(typo.stderr.contains("'undo'"), "{}", typo.block());
    // The manual page follows the same order.
    let man = tb(&env, "man").run().expect(0);
    let at = |c: &str| man.stdout.find(&format!(".SS \"turnback {c}\"")).unwrap();
    assert!(at("undo") < at("write") && at("turns") < at("turn"));
}

// ---------------------------------------------------------------------------
// 11. The example agent parses its arguments

#[test]
fn the_example_agent_has_a_help_and_refuses_unknown_flags() {
    let agent = crate::interactive::example_agent();
    let dir = tempfile::tempdir().unwrap();
    let help = std::process::Command::new(&agent)
        .arg("--help")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Usage: agent [WORKSPACE] [STORE_HOME]"),
        "{text}"
    );
    assert!(text.contains("/undo"), "{text}");
    assert!(
        !dir.path().join("--help").exists(),
        "no directory named --help"
    );
    let bad = std::process::Command::new(&agent)
        .arg("--bogus")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert_eq!(
        crate::util::names_under(dir.path()).len(),
        0,
        "nothing made"
    );
}

// ---------------------------------------------------------------------------
// 10. Installing it as Rust users do: what each crate's package holds
// (`.ci/run` runs `cargo publish --workspace --dry-run`, which builds them)

#[test]
fn each_crate_packages_its_sources_readme_and_licenses_and_not_its_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    for (krate, must) in [
        (
            "turnback",
            &[
                "src/main.rs",
                "src/cli.rs",
                "docs/JSON.md",
                "examples/agent.rs",
            ][..],
        ),
        ("turnback-store", &["src/lib.rs", "src/steps.rs"][..]),
        ("turnback-mcp", &["src/lib.rs", "src/tools.rs"][..]),
    ] {
        let out = std::process::Command::new(&cargo)
            .args([
                "package",
                "--list",
                "--allow-dirty",
                "--offline",
                "-p",
                krate,
            ])
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{krate}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        for f in ["README.md", "LICENSE-MIT", "LICENSE-APACHE", "Cargo.toml"]
            .iter()
            .chain(must)
        {
            assert!(files.iter().any(|x| x == f), "{krate} lacks {f}: {files:?}");
        }
        assert!(
            !files
                .iter()
                .any(|f| f.starts_with("tests/") || f.starts_with("target/")),
            "{krate} ships its tests: {files:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// 6. show #N, diff #N, diff --turn N, --stat with bars

#[test]
fn show_diff_of_an_entry_and_of_a_turn_and_stat_bars() {
    let env = two_turns();
    // A hand edit after the agent: what an entry did is still shown.
    std::fs::write(env.path("src/util.rs"), "by hand\n").unwrap();
    let text = transcript(vec![
        (tb(&env, "show #1 -q"), 0),
        (tb(&env, "show t2-2 -q"), 0),
        (tb(&env, "diff #2 -q"), 0),
        (tb(&env, "diff --turn -1 --stat -q"), 0),
        (tb(&env, "diff --turn 1 -q"), 0),
        (tb(&env, "diff --stat -q"), 0),
        (tb(&env, "show #7 -q"), 1),
        (tb(&env, "diff --turn 5 -q"), 1),
    ]);
    snap(
        &env,
        "habits_show_and_diff",
        "`show #1` (the entry, its turn and prompt, its diff); `show MESSAGE`; `diff #2` (what entry 2 did, though util.rs was edited by hand since); `diff --turn -1 --stat` (git-style bars); `diff --turn 1`; the session's `diff --stat`; an unknown entry and turn.",
        &text,
    );
    let v = json(&env, None, &["show", "#1"]);
    assert_eq!(v["session"], "agent-1");
    let e = &v["entries"][0];
    assert_eq!(e["entry"]["seq"], 1);
    assert_eq!(e["turn"]["number"], 1);
    assert_eq!(e["turn"]["prompt"], "first");
    assert_eq!(e["diff"]["kind"], "text");
    assert_eq!(e["diff"]["insertions"], 3);
    // What #2 left (util.rs as created) was overwritten by hand and no
    // backup holds it: no diff, and said so.
    let v = json(&env, None, &["show", "#2"]);
    assert_eq!(v["entries"][0]["diff"], Value::Null);
    let d = json(&env, None, &["diff", "#2"]);
    assert_eq!(d["files"], serde_json::json!([]));
    assert_eq!(d["not_kept"], serde_json::json!(["src/util.rs"]));
    let d = json(&env, None, &["diff", "--turn", "2"]);
    let paths: Vec<&str> = d["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["NOTES.md"]);
    assert_eq!(d["not_kept"], serde_json::json!(["src/util.rs"]));
    let d = json(&env, None, &["diff", "--entry", "1"]);
    assert_eq!(d["files"][0]["path"], "src/lib.rs");
    assert_eq!(d["files"][0]["new"]["size"], LIB_V2.len());
}

#[test]
fn stat_bars_are_scaled_to_the_largest_file() {
    let env = workspace();
    let big: String = (0..200).map(|i| format!("{i}\n")).collect();
    run(
        &env,
        Some("a"),
        &["write", "big.txt", "-m", "m"],
        Some(big.as_bytes()),
    );
    run(
        &env,
        Some("a"),
        &["write", "src/lib.rs", "-m", "m"],
        Some(LIB_V2.as_bytes()),
    );
    let r = tb(&env, "diff --stat -q").run().expect(0);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], format!(" big.txt    | 200 {}", "+".repeat(40)));
    let lib = lines[1];
    assert!(lib.starts_with(" src/lib.rs |   4 +"), "{lib}");
    assert!(lib.ends_with('-') && lib.len() < lines[0].len(), "{lib}");
    assert_eq!(
        lines[2],
        " 2 files changed, 203 insertions(+), 1 deletion(-)"
    );
}

// ---------------------------------------------------------------------------
// 5. status

#[test]
fn status_says_which_session_why_what_is_open_and_what_changed_since() {
    let (env, _) = crate::cli::two_sessions();
    // agent-1's util.rs edited by hand; agent-1 opens a checkpoint.
    std::fs::write(env.path("src/util.rs"), "by hand\n").unwrap();
    run(
        &env,
        Some("agent-1"),
        &["checkpoint", "README.md", "-m", "cp-1"],
        None,
    );
    let empty = Env::new();
    // The agents' user settings are looked for under HOME: a scratch one, so
    // that the machine's own do not show.
    let home = tempfile::tempdir().unwrap();
    let home = home.path().to_str().unwrap();
    let text = transcript(vec![
        (tb(&env, "status").var("HOME", home), 0),
        (tb(&env, "status --session agent-1").var("HOME", home), 0),
        (tb(&empty, "status").var("HOME", home), 0),
    ]);
    let text = text
        .replace(&empty.ws.path().display().to_string(), "[EMPTY WS]")
        .replace(&empty.home.path().display().to_string(), "[EMPTY HOME]")
        .replace(home, "[SCRATCH HOME]");
    snap(
        &env,
        "habits_status",
        "`status`: the session used here and why; with --session agent-1: its open checkpoint, and the files changed since it wrote them (lib.rs by agent-2, util.rs by hand); where no session has changes.",
        &text,
    );
    let v = json(&env, Some("agent-1"), &["status"]);
    let s = &v["session"];
    assert_eq!(s["id"], "agent-1");
    assert_eq!(s["reason"], "named");
    assert_eq!(s["entries"], 6);
    assert_eq!(s["open_checkpoints"][0]["path"], "README.md");
    assert_eq!(s["open_checkpoints"][0]["seq"], 6);
    let changed = s["changed_since"].as_array().unwrap();
    let paths: Vec<&str> = changed
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/lib.rs", "src/util.rs"]);
    assert_eq!(changed[0]["changed_by"]["session"], "agent-2");
    assert_eq!(changed[0]["changed_by"]["message_id"], "fix-1");
    assert_eq!(changed[1]["changed_by"], Value::Null);
    assert_eq!(v["hooks"], serde_json::json!([]), "no agent's hooks here");
    // With Claude Code's hooks installed in the workspace and a scan open,
    // status says so.
    let ok = |args: &[&str]| {
        let mut c = env.cmd(Some("agent-1"));
        c.args(args).env("HOME", home);
        crate::util::run_ok(c, b"", "status")
    };
    ok(&["install", "claude-code"]);
    let scan = String::from_utf8(ok(&["checkpoint", "--scan", "-m", "sh-1"]).stdout).unwrap();
    let mut c = env.cmd(Some("agent-1"));
    c.args(["--json", "status"]).env("HOME", home);
    let w: Value = serde_json::from_slice(&crate::util::run_ok(c, b"", "status").stdout).unwrap();
    assert_eq!(w["hooks"][0]["agent"], "claude-code", "{w}");
    assert!(
        w["hooks"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.local.json"),
        "{w}"
    );
    assert!(w["hooks"][0]["hooks"].as_u64().unwrap() > 0, "{w}");
    let scans = w["session"]["open_scans"].as_array().unwrap();
    assert_eq!(scans.len(), 1, "{w}");
    assert_eq!(scans[0]["scan"], scan.trim());
    assert_eq!(scans[0]["message_id"], "sh-1");
    ok(&["rollback", scan.trim()]);
    assert_eq!(v["store"]["sessions"], 2);
    assert!(v["store"]["bytes"].as_u64().unwrap() > 0);
    let here = json(&env, None, &["status"]);
    assert_eq!(
        here["session"]["id"], "agent-1",
        "its checkpoint is the newest change"
    );
    assert_eq!(here["session"]["reason"], "changed-under");
    assert_eq!(json(&empty, None, &["status"])["session"], Value::Null);
}

// ---------------------------------------------------------------------------
// 9. blame

#[test]
fn blame_names_the_change_that_wrote_each_line_across_sessions_and_hand_edits() {
    let env = Env::new();
    std::fs::write(env.path("f.txt"), "one\ntwo\nthree\n").unwrap();
    let put = |session: &str, msg: &str, text: &str| {
        let r = run(
            &env,
            Some(session),
            &["write", "f.txt", "-m", msg],
            Some(text.as_bytes()),
        );
        assert_eq!(r.code(), 0, "{}", r.stderr);
    };
    run(
        &env,
        Some("agent-1"),
        &["turn", "--prompt", "make two loud"],
        None,
    );
    put("agent-1", "m1", "one\nTWO\nthree\n");
    // agent-1 checkpoints the file before a tool of its own runs, which
    // changes nothing: what m1 left is backed up (the store keeps what a
    // change found, not what it left; a later backup of the same contents
    // is what lets blame tell a person's lines from the agent's).
    run(
        &env,
        Some("agent-1"),
        &["checkpoint", "f.txt", "-m", "cp"],
        None,
    );
    run(&env, Some("agent-1"), &["commit", "#2"], None);
    // A person adds a line between the two agents' changes.
    std::fs::write(env.path("f.txt"), "one\nTWO\nthree\nby hand\n").unwrap();
    run(
        &env,
        Some("agent-2"),
        &["turn", "--prompt", "add four"],
        None,
    );
    put("agent-2", "m2", "one\nTWO\nthree\nby hand\nfour\n");
    put("agent-2", "m3", "zero\none\nTWO\nthree\nby hand\nfour\n");
    let text = transcript(vec![
        (tb(&env, "blame f.txt"), 0),
        (tb(&env, "blame nosuch.txt"), 1),
    ]);
    snap(
        &env,
        "habits_blame",
        "`blame`: lines from before any session, agent-1's turn 1, a line added by hand after agent-1's checkpoint, agent-2's two changes; each change with its turn's prompt in the legend. A file no session changed is an error.",
        &text,
    );
    let v = json(&env, None, &["blame", "f.txt"]);
    let lines = v["lines"].as_array().unwrap();
    let origin = |n: usize| &v["origins"][lines[n]["origin"].as_u64().unwrap() as usize];
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0]["text"], "zero");
    assert_eq!(origin(0)["kind"], "entry");
    assert_eq!(origin(0)["entry"]["message_id"], "m3");
    assert_eq!(origin(0)["session"], "agent-2");
    assert_eq!(origin(1)["kind"], "before");
    assert_eq!(origin(2)["entry"]["message_id"], "m1");
    assert_eq!(origin(2)["turn"]["prompt"], "make two loud");
    assert_eq!(origin(4)["kind"], "by-hand");
    let after = origin(4)["after"].as_u64().unwrap() as usize;
    assert_eq!(v["origins"][after]["entry"]["message_id"], "cp");
    assert_eq!(origin(5)["entry"]["message_id"], "m2");
    assert_eq!(origin(5)["turn"]["prompt"], "add four");
    assert_eq!(v["gaps"], false);

    // The last change overwritten by hand: what it left is kept by no
    // backup, so its lines and the hand edit cannot be told apart, and say so.
    std::fs::write(
        env.path("f.txt"),
        "zero\none\nTWO\nthree\nby hand\nfour\nfive\n",
    )
    .unwrap();
    let v = json(&env, None, &["blame", "f.txt"]);
    assert_eq!(v["gaps"], true);
    let last = &v["lines"][6];
    let o = &v["origins"][last["origin"].as_u64().unwrap() as usize];
    assert_eq!(o["kind"], "entry-or-by-hand");
    // Lines the earlier versions explain keep their origins.
    let first = &v["origins"][v["lines"][2]["origin"].as_u64().unwrap() as usize];
    assert_eq!(first["entry"]["message_id"], "m1");
}

#[test]
fn blame_of_a_binary_file_is_an_error() {
    let env = Env::new();
    run(
        &env,
        Some("a"),
        &["write", "b.bin", "-m", "m"],
        Some(b"\x00\x01\x02"),
    );
    let r = run(&env, None, &["blame", "b.bin"], None);
    assert_eq!(r.code(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("binary"), "{}", r.stderr);
}
