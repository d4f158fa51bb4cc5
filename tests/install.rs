//! `turnback install` / `uninstall` / `doctor`: turnback's hooks merged into
//! each agent's settings file and taken out again, every other setting kept;
//! Codex's trust recorded through the real Codex where it is installed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::hooks::{hook, system_message};
use crate::util::{Env, bin, read_text, run_with_input, skip};

/// `turnback ARGS` in `env`'s workspace with a private HOME (and no agent's
/// variables from the machine).
pub fn tb(env: &Env, home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = env.cmd(None);
    c.args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("COPILOT_HOME")
        .env_remove("FACTORY_HOME_OVERRIDE")
        .env("TURNBACK_CODEX", home.join("no-codex-here"));
    run_with_input(c, b"")
}

pub fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub fn json_of(path: &Path) -> Value {
    serde_json::from_str(&read_text(path)).unwrap()
}

/// The real binary's path, as install writes it.
pub fn exe() -> String {
    std::fs::canonicalize(bin())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn claude_code_install_keeps_every_other_setting_is_idempotent_and_uninstalls_exactly() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".claude/settings.local.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = json!({
        "permissions": {"allow": ["Bash(ls)"]},
        "env": {"FOO": "1"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
        }
    });
    std::fs::write(&file, serde_json::to_string_pretty(&original).unwrap()).unwrap();

    let said = ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert!(
        said.contains("added PreToolUse hook (Write|Edit|MultiEdit|NotebookEdit|Bash)"),
        "{said}"
    );
    let s = json_of(&file);
    assert_eq!(s["permissions"], original["permissions"]);
    assert_eq!(s["env"], original["env"]);
    assert_eq!(
        s["hooks"]["Notification"],
        original["hooks"]["Notification"]
    );
    assert_eq!(
        s["hooks"]["PreToolUse"][0],
        original["hooks"]["PreToolUse"][0]
    );
    // Exec form, the absolute path of the binary that installed it.
    let ours = &s["hooks"]["PreToolUse"][1]["hooks"][0];
    assert_eq!(ours["command"], exe());
    assert_eq!(ours["args"], json!(["hook", "claude-code"]));
    for event in [
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionStart",
        "SessionEnd",
    ] {
        assert!(s["hooks"][event].is_array(), "{event}: {s}");
    }
    for cmd in ["turnback-undo", "turnback-rewind", "turnback-log"] {
        let text = read_text(env.path(&format!(".claude/commands/{cmd}.md")));
        assert!(text.starts_with("---\ndescription: "), "{text}");
        assert!(text.contains(&exe()), "{text}");
    }

    // Again: nothing changes, byte for byte.
    let before = read_text(&file);
    let said = ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(read_text(&file), before);

    // --json says what changed.
    let out = ok(&tb(
        &env,
        home.path(),
        &["uninstall", "claude-code", "--json"],
    ));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["changes"].as_array().unwrap().len(), 7, "{v}");
    assert_eq!(json_of(&file), original);
    assert!(!env.path(".claude/commands").exists());
}

#[test]
fn install_print_writes_nothing_and_scopes_pick_their_files() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let out = ok(&tb(
        &env,
        home.path(),
        &["install", "claude-code", "--print"],
    ));
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert!(printed["hooks"]["PreToolUse"].is_array());
    assert!(!env.path(".claude").exists());

    ok(&tb(
        &env,
        home.path(),
        &["install", "claude-code", "--project"],
    ));
    assert!(env.path(".claude/settings.json").is_file());
    ok(&tb(
        &env,
        home.path(),
        &["install", "claude-code", "--user"],
    ));
    assert!(home.path().join(".claude/settings.json").is_file());
    assert!(
        home.path()
            .join(".claude/commands/turnback-undo.md")
            .is_file()
    );
    ok(&tb(&env, home.path(), &["install", "gemini"]));
    let g = json_of(&home.path().join(".gemini/settings.json"));
    let cmd = g["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(cmd, format!("{} hook gemini", exe()));
    assert_eq!(
        g["hooks"]["BeforeTool"][0]["matcher"],
        "write_file|replace|run_shell_command"
    );
    ok(&tb(&env, home.path(), &["install", "gemini", "--project"]));
    assert!(env.path(".gemini/settings.json").is_file());
    ok(&tb(&env, home.path(), &["uninstall", "gemini"]));
    assert_eq!(
        json_of(&home.path().join(".gemini/settings.json")),
        json!({})
    );
}

#[test]
fn a_settings_file_that_is_not_json_is_refused_untouched() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".claude/settings.local.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{ \"hooks\": ").unwrap();
    for args in [
        &["install", "claude-code"][..],
        &["uninstall", "claude-code"][..],
    ] {
        let out = tb(&env, home.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
        assert_eq!(read_text(&file), "{ \"hooks\": ");
    }
    // doctor says the agent ignores it.
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(
        said.contains("PROBLEM") && said.contains("ignores this file"),
        "{said}"
    );
}

#[test]
fn a_slash_command_of_the_users_own_is_not_overwritten() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(env.path(".claude/commands")).unwrap();
    std::fs::write(env.path(".claude/commands/turnback-undo.md"), "my own\n").unwrap();
    let out = tb(&env, home.path(), &["install", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        read_text(env.path(".claude/commands/turnback-undo.md")),
        "my own\n"
    );
    ok(&tb(&env, home.path(), &["uninstall", "claude-code"]));
    assert_eq!(
        read_text(env.path(".claude/commands/turnback-undo.md")),
        "my own\n"
    );
}

#[test]
fn doctor_finds_the_hooks_a_missing_binary_and_the_last_hook_error() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(said.contains("protection: not installed"), "{said}");
    ok(&tb(&env, home.path(), &["install", "claude-code"]));
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(
        said.contains("7 hooks") && said.contains("protection: working"),
        "{said}"
    );
    assert!(
        said.contains("file locks hold") && said.contains("writable"),
        "{said}"
    );

    // A hook that failed is kept for doctor.
    let pre = json!({"session_id": "s", "cwd": "relative", "hook_event_name": "PreToolUse"});
    let out = hook(&env, "claude-code", &pre);
    assert!(system_message(&out).contains("cwd"));
    let out = ok(&tb(&env, home.path(), &["doctor", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["last_hook_error"]["agent"], "claude-code");
    assert!(
        v["last_hook_error"]["message"]
            .as_str()
            .unwrap()
            .contains("cwd")
    );

    // The binary the hooks name is gone.
    let file = env.path(".claude/settings.local.json");
    let text = read_text(&file).replace(&exe(), "/nonexistent/turnback");
    std::fs::write(&file, text).unwrap();
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(
        said.contains("/nonexistent/turnback is not an executable file"),
        "{said}"
    );
    assert!(said.contains("problem(s)"), "{said}");
}

/// The Codex binary `.ci/run` installs (or `TURNBACK_CODEX` names).
pub fn codex_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TURNBACK_CODEX") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    agent_cache()
        .map(|d| d.join("codex-0.171.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"))
        .filter(|p| p.is_file())
}

/// Where `.ci/run` installs the agents: `TURNBACK_AGENTS`, else
/// `~/.cache/turnback-agents`.
pub fn agent_cache() -> Option<PathBuf> {
    std::env::var_os("TURNBACK_AGENTS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/turnback-agents"))
        })
}

#[test]
fn codex_install_records_trust_through_the_real_codex() {
    let Some(codex) = codex_binary() else {
        skip(
            "install::codex_install_records_trust_through_the_real_codex",
            "Codex 0.171.0 is not installed (.ci/run installs it with npm)",
        );
        return;
    };
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut c = env.cmd(None);
        c.args(args)
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path().join(".codex"))
            .env("TURNBACK_CODEX", &codex);
        run_with_input(c, b"")
    };
    // Without Codex: installed, with a warning that trust is not recorded.
    let out = tb(&env, home.path(), &["install", "codex"]);
    assert!(ok(&out).contains("warning: Codex was not found"));
    let said = ok(&run(&["install", "codex"]));
    assert!(
        said.contains("trusted in Codex:") && said.contains("pre_tool_use"),
        "{said}"
    );
    let config = read_text(home.path().join(".codex/config.toml"));
    assert!(config.contains("trusted_hash = \"sha256:"), "{config}");
    let said = ok(&run(&["doctor"]));
    assert!(said.contains("Codex trusts every one of them"), "{said}");
    // A hook changed by hand is no longer trusted, and doctor says so.
    let file = home.path().join(".codex/hooks.json");
    let text = read_text(&file).replace("\"timeout\": 30", "\"timeout\": 31");
    std::fs::write(&file, text).unwrap();
    let said = ok(&run(&["doctor"]));
    assert!(said.contains("Codex does not trust"), "{said}");
    // Install again puts it right.
    let said = ok(&run(&["install", "codex"]));
    assert!(said.contains("updated PreToolUse hook"), "{said}");
    assert!(ok(&run(&["doctor"])).contains("Codex trusts every one of them"));
}

#[test]
fn doctor_says_when_a_setting_turns_the_hooks_off() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    ok(&tb(&env, home.path(), &["install", "claude-code"]));
    ok(&tb(&env, home.path(), &["install", "gemini"]));
    assert!(ok(&tb(&env, home.path(), &["doctor"])).contains("protection: working"));
    let edit = |file: &Path, key: &str, value: Value| {
        let mut v = json_of(file);
        v[key] = value;
        std::fs::write(file, v.to_string()).unwrap();
    };
    edit(
        &env.path(".claude/settings.local.json"),
        "disableAllHooks",
        json!(true),
    );
    edit(
        &home.path().join(".gemini/settings.json"),
        "hooksConfig",
        json!({"disabled": ["turnback"]}),
    );
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(said.contains("`disableAllHooks` is true here"), "{said}");
    assert!(
        said.contains("`hooksConfig.disabled` names turnback"),
        "{said}"
    );
    assert!(said.contains("protection: 2 problem(s)"), "{said}");
}

#[test]
fn a_settings_file_that_is_a_symlink_is_written_through_and_stays_a_link() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let dotfiles = tempfile::tempdir().unwrap();
    let target = dotfiles.path().join("claude/settings.local.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let original = "{\n  \"env\": {\"FOO\": \"1\"}\n}\n";
    std::fs::write(&target, original).unwrap();
    let link = env.path(".claude/settings.local.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();

    ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert!(
        std::fs::symlink_metadata(&link).unwrap().is_symlink(),
        "install replaced the link with a file"
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), target);
    let s = json_of(&target);
    assert_eq!(s["env"]["FOO"], "1");
    assert!(s["hooks"]["PreToolUse"].is_array(), "{s}");
    // No temporary left beside the link or the target.
    for dir in [link.parent().unwrap(), target.parent().unwrap()] {
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    }

    ok(&tb(&env, home.path(), &["uninstall", "claude-code"]));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(json_of(&target), json!({"env": {"FOO": "1"}}));

    // A link whose target is gone is refused, naming both; nothing is made.
    let gone = dotfiles.path().join("gone.json");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&gone, &link).unwrap();
    let out = tb(&env, home.path(), &["install", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("symbolic link") && said.contains("gone.json"),
        "{said}"
    );
    assert!(!gone.exists());
    assert_eq!(std::fs::read_link(&link).unwrap(), gone);
}

/// A second turnback binary at `path` (a hard link where it can be, the
/// built binary is big), as a Nix wrapper or a versioned copy names it.
fn binary_at(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if std::fs::hard_link(bin(), path).is_err() {
        std::fs::copy(bin(), path).unwrap();
    }
    std::fs::canonicalize(path).unwrap()
}

/// `program ARGS` as `tb` runs turnback.
fn tb_as(env: &Env, home: &Path, program: &Path, args: &[&str]) -> std::process::Output {
    let mut c = env.command(program, None);
    c.args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env("TURNBACK_CODEX", home.join("no-codex-here"));
    run_with_input(c, b"")
}

#[test]
fn hooks_of_a_binary_not_named_turnback_are_recognised_by_their_shape() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let bins = tempfile::tempdir().unwrap();
    let wrapped = binary_at(
        &bins
            .path()
            .join("nix/store/0abc-turnback-0.1.0/bin/.turnback-wrapped"),
    );
    let versioned = binary_at(&bins.path().join("bin/turnback-0.1"));
    let file = env.path(".claude/settings.local.json");
    let gemini = home.path().join(".gemini/settings.json");

    ok(&tb_as(
        &env,
        home.path(),
        &wrapped,
        &["install", "claude-code"],
    ));
    ok(&tb_as(
        &env,
        home.path(),
        &versioned,
        &["install", "gemini"],
    ));
    let claude_once = read_text(&file);
    let gemini_once = read_text(&gemini);
    // Again: recognised, so nothing changes (not a second set of hooks).
    let said = ok(&tb_as(
        &env,
        home.path(),
        &wrapped,
        &["install", "claude-code"],
    ));
    assert!(said.contains("nothing changed"), "{said}");
    let said = ok(&tb_as(
        &env,
        home.path(),
        &versioned,
        &["install", "gemini"],
    ));
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(read_text(&file), claude_once);
    assert_eq!(read_text(&gemini), gemini_once);

    // doctor sees them.
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(
        said.contains("claude-code") && said.contains("7 hooks"),
        "{said}"
    );
    assert!(
        said.contains("gemini") && said.contains("6 hooks"),
        "{said}"
    );
    assert!(said.contains(".turnback-wrapped"), "{said}");

    // Another binary replaces them, one for one.
    let said = ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert!(said.contains("updated PreToolUse hook"), "{said}");
    let s = json_of(&file);
    assert_eq!(s["hooks"]["PreToolUse"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["hooks"]["PreToolUse"][0]["hooks"][0]["command"], exe());

    // uninstall takes them all out, whichever binary wrote them.
    ok(&tb(&env, home.path(), &["uninstall", "claude-code"]));
    ok(&tb(&env, home.path(), &["uninstall", "gemini"]));
    assert_eq!(json_of(&file), json!({}));
    assert_eq!(json_of(&gemini), json!({}));
}

#[test]
fn reinstall_keeps_flags_added_to_turnbacks_line_and_leaves_hand_written_hooks_alone() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".claude/settings.local.json");
    let gemini = home.path().join(".gemini/settings.json");
    ok(&tb(&env, home.path(), &["install", "claude-code"]));
    ok(&tb(&env, home.path(), &["install", "gemini"]));

    // The user asks for --strict on turnback's own lines.
    let text = read_text(&file).replace(
        "\"claude-code\"\n",
        "\"claude-code\",\n          \"--strict\"\n",
    );
    std::fs::write(&file, &text).unwrap();
    assert!(json_of(&file)["hooks"]["PreToolUse"][0]["hooks"][0]["args"][2] == "--strict");
    let gtext = read_text(&gemini).replace(" hook gemini\"", " hook gemini --strict\"");
    std::fs::write(&gemini, &gtext).unwrap();

    let said = ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(read_text(&file), text);
    let said = ok(&tb(&env, home.path(), &["install", "gemini"]));
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(read_text(&gemini), gtext);
    // Changed for another reason (another binary): the flag stays.
    let moved = read_text(&file).replace(&exe(), "/old/place/turnback");
    std::fs::write(&file, moved).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert!(said.contains("updated PreToolUse hook"), "{said}");
    let s = json_of(&file);
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0]["args"],
        json!(["hook", "claude-code", "--strict"]),
        "{s}"
    );
    assert_eq!(s["hooks"]["PreToolUse"][0]["hooks"][0]["command"], exe());

    // Hooks a person wrote that run turnback in a line of their own are
    // theirs: install and uninstall leave them as they are.
    let mine = json!([
        {"type": "command", "command": "turnback hook claude-code 2>>/tmp/turnback.log"},
        {"type": "command", "command": "/usr/bin/turnback", "args": ["hook", "codex"]},
        {"type": "command", "command": "turnback hook claude-code; notify-send saved"}
    ]);
    let mut s = json_of(&file);
    s["hooks"]["Notification"] = json!([{"hooks": mine.clone()}]);
    std::fs::write(&file, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    ok(&tb(&env, home.path(), &["install", "claude-code"]));
    assert_eq!(json_of(&file)["hooks"]["Notification"][0]["hooks"], mine);
    ok(&tb(&env, home.path(), &["uninstall", "claude-code"]));
    assert_eq!(
        json_of(&file),
        json!({"hooks": {"Notification": [{"hooks": mine}]}})
    );
}

#[test]
fn install_and_uninstall_keep_the_rest_of_the_file_byte_for_byte_and_a_backup() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".claude/settings.local.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // Four-space indents, short objects on one line, a number no f64 holds,
    // keys in no order.
    let original = r#"{
    "zeta": {"a": 1, "b": [1, 2, 3]},
    "big": 12345678901234567890123,
    "precise": 0.10000000000000000000001,
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
        ]
    },
    "alpha": "last"
}
"#;
    std::fs::write(&file, original).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "claude-code"]));
    let installed = read_text(&file);
    assert!(installed.contains("12345678901234567890123"), "{installed}");
    assert!(
        installed.contains("0.10000000000000000000001"),
        "{installed}"
    );
    assert!(
        installed.starts_with("{\n    \"zeta\": {\"a\": 1, \"b\": [1, 2, 3]},\n"),
        "{installed}"
    );
    let keys: Vec<String> = json_of(&file)
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["zeta", "big", "precise", "hooks", "alpha"]);
    // The file as it was is kept beside it, and install says where.
    let backup = env.path(".claude/settings.local.json.turnback-backup");
    assert_eq!(read_text(&backup), original);
    assert!(said.contains(&backup.display().to_string()), "{said}");

    let said = ok(&tb(&env, home.path(), &["uninstall", "claude-code"]));
    assert_eq!(read_text(&file), original);
    assert_eq!(read_text(&backup), installed);
    assert!(said.contains(&backup.display().to_string()), "{said}");
}

#[test]
fn gemini_settings_with_comments_keep_them_through_install_and_uninstall() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = "// My Gemini settings\n{\n  /* the theme */\n  \"theme\": \"GitHub\", // dark at night\n  \"hooks\": {\n    // run before every tool\n    \"BeforeTool\": [\n      {\"matcher\": \"read_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]} // mine\n    ]\n  }\n}\n";
    std::fs::write(&file, original).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "gemini"]));
    assert!(said.contains("added BeforeTool hook"), "{said}");
    let installed = read_text(&file);
    for comment in [
        "// My Gemini settings",
        "/* the theme */",
        "// dark at night",
        "// run before every tool",
        "// mine",
    ] {
        assert!(installed.contains(comment), "{comment}: {installed}");
    }
    assert!(installed.contains(" hook gemini"), "{installed}");
    let said = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(said.contains("6 hooks"), "{said}");
    ok(&tb(&env, home.path(), &["uninstall", "gemini"]));
    assert_eq!(read_text(&file), original);

    // Claude Code reads no comments: there they are refused, untouched.
    let claude = env.path(".claude/settings.local.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    std::fs::write(&claude, "{ // mine\n}\n").unwrap();
    let out = tb(&env, home.path(), &["install", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
    assert_eq!(read_text(&claude), "{ // mine\n}\n");
}

#[test]
fn cursor_install_keeps_the_users_hooks_and_bytes_is_idempotent_and_uninstalls_exactly() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".cursor/hooks.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // The user's own hooks (one on turnback's event), four-space indents, a
    // number no f64 holds, a key after `hooks`.
    let original = r#"{
    "version": 1,
    "hooks": {
        "preToolUse": [
            {"command": "./audit.sh", "matcher": "Shell", "timeout": 5}
        ],
        "afterFileEdit": [{"command": "npx prettier --write"}]
    },
    "big": 12345678901234567890123
}
"#;
    std::fs::write(&file, original).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "cursor"]));
    assert!(
        said.contains(
            "added preToolUse hook (Write|StrReplace|Delete|ApplyPatch|EditNotebook|Shell)"
        ),
        "{said}"
    );
    let installed = read_text(&file);
    assert!(installed.contains("12345678901234567890123"), "{installed}");
    assert!(
        installed.starts_with("{\n    \"version\": 1,\n    \"hooks\": {\n        \"preToolUse\": [\n            {\"command\": \"./audit.sh\", \"matcher\": \"Shell\", \"timeout\": 5},\n"),
        "{installed}"
    );
    let s = json_of(&file);
    // Handlers sit in the event's list, the matcher in them; the user's
    // first, turnback's after.
    let ours = &s["hooks"]["preToolUse"][1];
    assert_eq!(ours["command"], format!("{} hook cursor", exe()));
    assert_eq!(
        ours["matcher"],
        "Write|StrReplace|Delete|ApplyPatch|EditNotebook|Shell"
    );
    assert_eq!(
        s["hooks"]["afterFileEdit"],
        json!([{"command": "npx prettier --write"}])
    );
    for event in [
        "beforeSubmitPrompt",
        "postToolUse",
        "postToolUseFailure",
        "stop",
        "sessionEnd",
    ] {
        let list = s["hooks"][event]
            .as_array()
            .unwrap_or_else(|| panic!("{event}: {s}"));
        assert_eq!(list.len(), 1, "{event}");
        assert!(
            list[0]["command"]
                .as_str()
                .unwrap()
                .ends_with(" hook cursor")
        );
    }
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["version", "hooks", "big"]);
    let backup = env.path(".cursor/hooks.json.turnback-backup");
    assert_eq!(read_text(&backup), original);
    assert!(said.contains(&backup.display().to_string()), "{said}");

    // Again: nothing changes, byte for byte.
    let said = ok(&tb(&env, home.path(), &["install", "cursor"]));
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(read_text(&file), installed);

    // A flag the user adds to turnback's line stays, even when install
    // rewrites the line for a moved binary.
    let strict = installed.replace(" hook cursor\"", " hook cursor --strict\"");
    let moved = strict.replace(&exe(), "/old/place/turnback");
    std::fs::write(&file, &moved).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "cursor"]));
    assert!(said.contains("updated preToolUse hook"), "{said}");
    assert_eq!(read_text(&file), strict);

    // Uninstall takes out exactly turnback's: the file as it was.
    let out = ok(&tb(&env, home.path(), &["uninstall", "cursor", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["changes"].as_array().unwrap().len(), 6, "{v}");
    assert_eq!(read_text(&file), original);
}

#[test]
fn cursor_install_makes_a_new_file_prints_without_writing_and_the_user_scope() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".cursor/hooks.json");
    let out = ok(&tb(&env, home.path(), &["install", "cursor", "--print"]));
    assert!(!file.exists(), "--print wrote {}", file.display());
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(printed["version"], 1, "{printed}");

    ok(&tb(&env, home.path(), &["install", "cursor"]));
    let s = json_of(&file);
    assert_eq!(s, printed);
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["version", "hooks"]);
    assert!(!env.path(".cursor/hooks.json.turnback-backup").exists());
    // --project is the same file.
    let said = ok(&tb(&env, home.path(), &["install", "cursor", "--project"]));
    assert!(said.contains("nothing changed"), "{said}");

    let user = home.path().join(".cursor/hooks.json");
    ok(&tb(&env, home.path(), &["install", "cursor", "--user"]));
    assert_eq!(json_of(&user), printed);
    ok(&tb(&env, home.path(), &["uninstall", "cursor", "--user"]));
    assert_eq!(json_of(&user), json!({"version": 1}));

    // doctor finds the workspace's.
    let out = ok(&tb(&env, home.path(), &["doctor", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    let agents: Vec<&str> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["cursor"], "{v}");
}

#[test]
fn cursor_hooks_file_that_is_a_symlink_is_written_through() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let dotfiles = tempfile::tempdir().unwrap();
    let target = dotfiles.path().join("cursor-hooks.json");
    let original = "{\"version\": 1, \"hooks\": {\"stop\": [{\"command\": \"say done\"}]}}\n";
    std::fs::write(&target, original).unwrap();
    let link = env.path(".cursor/hooks.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(&tb(&env, home.path(), &["install", "cursor"]));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let s = json_of(&target);
    assert_eq!(s["hooks"]["stop"][0]["command"], "say done");
    assert_eq!(s["hooks"]["stop"].as_array().unwrap().len(), 2, "{s}");
    ok(&tb(&env, home.path(), &["uninstall", "cursor"]));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(read_text(&target), original);
}

#[test]
fn cursor_hook_lines_install_wrote_back_up_an_edit_that_undoes() {
    // The command lines install wrote, run as Cursor runs them (a shell,
    // the event on stdin), with Cursor's recorded payloads.
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    ok(&tb(&env, home.path(), &["install", "cursor"]));
    let s = json_of(&env.path(".cursor/hooks.json"));
    let run = |event: &str, fixture: &str| {
        let line = s["hooks"][event][0]["command"].as_str().unwrap().to_owned();
        let payload = crate::hooks::fixture(&env, &format!("cursor/{fixture}.json"));
        let mut c = env.command("sh", None);
        c.args(["-c", &line])
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CLAUDE_PID");
        let out = run_with_input(c, payload.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0), "{fixture}");
        assert!(
            out.stdout.is_empty(),
            "{fixture}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    run("beforeSubmitPrompt", "beforeSubmitPrompt");
    run("preToolUse", "preToolUse-Write");
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    run("postToolUse", "postToolUse-Write");
    run("stop", "stop");
    let session = "3f9d1c2e-7a4b-4e8f-b0c1-d2e3f4a5b6c7";
    let entries = env
        .store()
        .open_session(session)
        .unwrap()
        .entries()
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].is_committed());
    let mut c = env.cmd(Some(session));
    c.arg("undo");
    crate::util::run_ok(c, b"", "undo");
    assert!(!env.path("hello.txt").exists());
}
