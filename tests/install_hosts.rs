//! `turnback install` for the agents that take Claude-shaped hooks in files
//! of their own: GitHub Copilot CLI (a hooks file of turnback's own), with
//! Qwen Code and Factory Droid (Claude-shaped settings), with
//! the rules every installer keeps: the user's hooks untouched, `--print`
//! writes nothing, idempotent, a backup kept, uninstall exact.

use serde_json::{Value, json};

use crate::install::{exe, json_of, ok, tb};
use crate::util::{Env, read_text, run_with_input};

#[test]
fn copilot_install_writes_its_own_file_is_idempotent_and_uninstall_removes_it() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".copilot/hooks/turnback.json");
    let out = ok(&tb(&env, home.path(), &["install", "copilot", "--print"]));
    assert!(!file.exists(), "--print wrote {}", file.display());
    let printed: Value = serde_json::from_str(&out).unwrap();

    let said = ok(&tb(&env, home.path(), &["install", "copilot"]));
    assert!(said.contains(&file.display().to_string()), "{said}");
    let s = json_of(&file);
    assert_eq!(s, printed);
    assert_eq!(s["version"], 1, "{s}");
    // PascalCase events: Copilot CLI sends them the Claude-shaped payload.
    let events: Vec<&String> = s["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ]
    );
    assert_eq!(
        s["hooks"]["PreToolUse"],
        json!([{"type": "command", "bash": format!("{} hook copilot", exe()), "timeoutSec": 30}])
    );
    let installed = read_text(&file);
    let said = ok(&tb(&env, home.path(), &["install", "copilot"]));
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(read_text(&file), installed);

    // A flag the user adds stays through a re-install for a moved binary.
    let strict = installed.replace(" hook copilot\"", " hook copilot --strict\"");
    std::fs::write(&file, strict.replace(&exe(), "/old/turnback")).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "copilot"]));
    assert!(said.contains("updated PreToolUse hook"), "{said}");
    assert_eq!(read_text(&file), strict);

    // doctor finds it.
    let out = ok(&tb(&env, home.path(), &["doctor", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["agents"][0]["agent"], "copilot", "{v}");

    // Uninstall: the file was turnback's alone, so it goes; its text is kept.
    ok(&tb(&env, home.path(), &["uninstall", "copilot"]));
    assert!(!file.exists());
    let backup = home
        .path()
        .join(".copilot/hooks/turnback.json.turnback-backup");
    assert_eq!(read_text(&backup), strict);
    let said = ok(&tb(&env, home.path(), &["uninstall", "copilot"]));
    assert!(said.contains("nothing changed"), "{said}");

    // --project: the repository's .github/hooks/, COPILOT_HOME untouched.
    ok(&tb(&env, home.path(), &["install", "copilot", "--project"]));
    assert_eq!(json_of(&env.path(".github/hooks/turnback.json")), printed);
    assert!(!file.exists());
}

#[test]
fn a_copilot_hooks_file_of_that_name_that_is_not_turnbacks_is_refused_untouched() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".github/hooks/turnback.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mine = "{\"version\": 1, \"hooks\": {\"preToolUse\": [{\"type\": \"command\", \"bash\": \"./audit.sh\"}]}}\n";
    std::fs::write(&file, mine).unwrap();
    for args in [
        &["install", "copilot", "--project"][..],
        &["uninstall", "copilot", "--project"][..],
    ] {
        let out = tb(&env, home.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not turnback's"), "{err}");
        assert_eq!(read_text(&file), mine);
        assert!(
            !env.path(".github/hooks/turnback.json.turnback-backup")
                .exists()
        );
    }
}

#[test]
fn copilot_hooks_file_that_is_a_symlink_is_written_through() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let dotfiles = tempfile::tempdir().unwrap();
    let target = dotfiles.path().join("copilot-turnback.json");
    std::fs::write(&target, "{\"version\": 1}\n").unwrap();
    let link = home.path().join(".copilot/hooks/turnback.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(&tb(&env, home.path(), &["install", "copilot"]));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(
        json_of(&target)["hooks"]["Stop"].as_array().unwrap().len(),
        1
    );
    // Uninstall leaves the link and the file it leads to, emptied.
    ok(&tb(&env, home.path(), &["uninstall", "copilot"]));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(json_of(&target), json!({"version": 1}));
}

#[test]
fn copilot_hook_lines_install_wrote_back_up_an_edit_that_undoes() {
    // The command lines install wrote, run as Copilot CLI runs them (bash,
    // the event on stdin), with its recorded Claude-shaped payloads.
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    ok(&tb(&env, home.path(), &["install", "copilot", "--project"]));
    let s = json_of(&env.path(".github/hooks/turnback.json"));
    let run = |event: &str, fixture: &str| {
        let line = s["hooks"][event][0]["bash"].as_str().unwrap().to_owned();
        let payload = crate::hooks::fixture(&env, &format!("copilot-cli/{fixture}.json"));
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
    run("SessionStart", "SessionStart");
    run("UserPromptSubmit", "UserPromptSubmit");
    run("PreToolUse", "PreToolUse-view");
    run("PostToolUse", "PostToolUse-view");
    run("PreToolUse", "PreToolUse-create");
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    run("PostToolUse", "PostToolUse-create");
    run("Stop", "Stop");
    let session = "0b7e2c4d-9f1a-4a3e-8c6b-5d4e3f2a1b0c";
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

/// Runs turnback's command line for `event` in `settings` (Claude
/// Code's grouped shape) as the agent does, with the recorded payload
/// `agent/fixture.json`; the hook says nothing and exits 0.
fn run_line(env: &Env, settings: &Value, event: &str, fixture: &str) {
    let line = settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["hooks"][0]["command"].as_str())
        .find(|c| c.contains(" hook "))
        .unwrap_or_else(|| panic!("no {event} hook of turnback's: {settings}"))
        .to_owned();
    let payload = crate::hooks::fixture(env, &format!("{fixture}.json"));
    let mut c = env.command("sh", None);
    c.args(["-c", &line])
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CLAUDE_PID");
    let out = run_with_input(c, payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{fixture}");
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{fixture}: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Undoes the newest change of `session`.
fn undo(env: &Env, session: &str) {
    let mut c = env.cmd(Some(session));
    c.arg("undo");
    crate::util::run_ok(c, b"", "undo");
}

#[test]
fn qwen_install_keeps_the_users_hooks_and_its_lines_protect_edits_and_shell() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = env.path(".qwen/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = "{\n  // mine\n  \"hooks\": {\"PreToolUse\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"./audit.sh\"}]}]},\n  \"model\": {\"name\": \"qwen3-coder\"}\n}\n";
    std::fs::write(&file, original).unwrap();
    let out = ok(&tb(&env, home.path(), &["install", "qwen", "--print"]));
    assert!(out.contains("./audit.sh"), "{out}");
    assert_eq!(read_text(&file), original, "--print wrote");
    let said = ok(&tb(&env, home.path(), &["install", "qwen"]));
    assert!(
        said.contains("added PreToolUse hook (write_file|edit|replace|run_shell_command)"),
        "{said}"
    );
    let installed = read_text(&file);
    assert!(installed.contains("// mine"), "{installed}");
    let s: Value = serde_json::from_str(&installed.replace("  // mine\n", "")).unwrap();
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./audit.sh"
    );
    let ours = &s["hooks"]["PreToolUse"][1]["hooks"][0];
    assert_eq!(ours["command"], format!("{} hook qwen", exe()));
    assert_eq!(ours["timeout"], 30_000);
    assert_eq!(
        read_text(env.path(".qwen/settings.json.turnback-backup")),
        original
    );
    let said = ok(&tb(&env, home.path(), &["install", "qwen"]));
    assert!(said.contains("nothing changed"), "{said}");

    let session = "7c1e4a2b-3d5f-4e6a-9b8c-0d1e2f3a4b5c";
    run_line(&env, &s, "SessionStart", "qwen/SessionStart");
    run_line(&env, &s, "UserPromptSubmit", "qwen/UserPromptSubmit");
    run_line(&env, &s, "PreToolUse", "qwen/PreToolUse-write_file");
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    run_line(&env, &s, "PostToolUse", "qwen/PostToolUse-write_file");
    run_line(&env, &s, "PreToolUse", "qwen/PreToolUse-edit");
    std::fs::write(env.path("hello.txt"), "hello\nthere\n").unwrap();
    run_line(&env, &s, "PostToolUse", "qwen/PostToolUse-edit");
    run_line(&env, &s, "PreToolUse", "qwen/PreToolUse-run_shell_command");
    std::fs::remove_file(env.path("hello.txt")).unwrap();
    run_line(
        &env,
        &s,
        "PostToolUse",
        "qwen/PostToolUse-run_shell_command",
    );
    run_line(&env, &s, "Stop", "qwen/Stop");
    undo(&env, session);
    assert_eq!(read_text(env.path("hello.txt")), "hello\nthere\n");
    undo(&env, session);
    assert_eq!(read_text(env.path("hello.txt")), "hello\nworld\n");
    undo(&env, session);
    assert!(!env.path("hello.txt").exists());

    // Uninstall: the file as it was, comment and all.
    ok(&tb(&env, home.path(), &["uninstall", "qwen"]));
    assert_eq!(read_text(&file), original);
    // --user: ~/.qwen/settings.json.
    ok(&tb(&env, home.path(), &["install", "qwen", "--user"]));
    let user = json_of(&home.path().join(".qwen/settings.json"));
    assert_eq!(
        user["hooks"]["Stop"][0]["hooks"][0]["command"],
        format!("{} hook qwen", exe())
    );
}

#[test]
fn droid_install_writes_settings_its_lines_protect_create_edit_patch_and_execute() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".factory/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = "{\"model\": \"claude-sonnet\", \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]}}\n";
    std::fs::write(&file, original).unwrap();
    let said = ok(&tb(&env, home.path(), &["install", "droid"]));
    assert!(
        said.contains("added PreToolUse hook (Create|Edit|MultiEdit|ApplyPatch|Execute)"),
        "{said}"
    );
    let s = json_of(&file);
    assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        format!("{} hook droid", exe())
    );
    let said = ok(&tb(&env, home.path(), &["install", "droid"]));
    assert!(said.contains("nothing changed"), "{said}");
    let out = ok(&tb(&env, home.path(), &["doctor", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["agents"][0]["agent"], "droid", "{v}");

    let session = "5e2f8a1c-6b3d-4c7e-8f9a-1b2c3d4e5f60";
    run_line(&env, &s, "UserPromptSubmit", "droid/UserPromptSubmit");
    run_line(&env, &s, "PreToolUse", "droid/PreToolUse-Create");
    std::fs::write(env.path("hello.txt"), "hello\nworld\n").unwrap();
    run_line(&env, &s, "PostToolUse", "droid/PostToolUse-Create");
    run_line(&env, &s, "PreToolUse", "droid/PreToolUse-Edit");
    std::fs::write(env.path("hello.txt"), "hello\nthere\n").unwrap();
    run_line(&env, &s, "PostToolUse", "droid/PostToolUse-Edit");
    run_line(&env, &s, "PreToolUse", "droid/PreToolUse-ApplyPatch");
    std::fs::write(env.path("hello.txt"), "hello\nagain\n").unwrap();
    run_line(&env, &s, "PostToolUse", "droid/PostToolUse-ApplyPatch");
    run_line(&env, &s, "PreToolUse", "droid/PreToolUse-Execute");
    std::fs::remove_file(env.path("hello.txt")).unwrap();
    run_line(&env, &s, "PostToolUse", "droid/PostToolUse-Execute");
    run_line(&env, &s, "Stop", "droid/Stop");
    for want in ["hello\nagain\n", "hello\nthere\n", "hello\nworld\n"] {
        undo(&env, session);
        assert_eq!(read_text(env.path("hello.txt")), want);
    }
    undo(&env, session);
    assert!(!env.path("hello.txt").exists());

    ok(&tb(&env, home.path(), &["uninstall", "droid"]));
    assert_eq!(
        json_of(&file),
        serde_json::from_str::<Value>(original).unwrap()
    );
}

#[test]
fn droid_with_a_hooks_json_is_refused_and_no_hooks_json_is_made() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".factory");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = "{\"model\": \"x\"}\n";
    let hooks = "{\"PreToolUse\": []}\n";
    std::fs::write(dir.join("settings.json"), settings).unwrap();
    std::fs::write(dir.join("hooks.json"), hooks).unwrap();
    let out = tb(&env, home.path(), &["install", "droid"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hooks.json"));
    assert_eq!(read_text(dir.join("settings.json")), settings);
    assert_eq!(read_text(dir.join("hooks.json")), hooks);
    // Without one, install never makes it.
    std::fs::remove_file(dir.join("hooks.json")).unwrap();
    ok(&tb(&env, home.path(), &["install", "droid"]));
    assert!(!dir.join("hooks.json").exists());
}

#[test]
fn install_with_no_agent_protects_each_agent_found_and_doctor_lists_every_host() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    // Gemini CLI and Qwen Code by their directories, Droid by its program.
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
    let bin = tempfile::tempdir().unwrap();
    let droid = bin.path().join("droid");
    std::fs::write(&droid, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&droid, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |args: &[&str]| {
        let mut c = env.cmd(None);
        c.args(args)
            .env("HOME", home.path())
            .env("PATH", bin.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("COPILOT_HOME")
            .env_remove("FACTORY_HOME_OVERRIDE")
            .env("TURNBACK_CODEX", home.path().join("no-codex-here"));
        ok(&run_with_input(c, b""))
    };
    let said = run(&["install"]);
    let gemini = home.path().join(".gemini/settings.json");
    let qwen = env.path(".qwen/settings.json");
    let factory = home.path().join(".factory/settings.json");
    for line in [
        "claude-code: not found".to_owned(),
        "codex: not found".to_owned(),
        format!("gemini: protected ({})", gemini.display()),
        "cursor: not found".to_owned(),
        "copilot: not found".to_owned(),
        format!("qwen: protected ({})", qwen.display()),
        format!("droid: protected ({})", factory.display()),
        "opencode: not found".to_owned(),
    ] {
        assert!(said.lines().any(|l| l == line), "{line}:\n{said}");
    }
    assert!(!env.path(".claude").exists() && !home.path().join(".cursor").exists());
    // Again: each already protected, nothing written.
    let before = read_text(&gemini);
    let said = run(&["install"]);
    assert!(
        said.contains(&format!("gemini: already protected ({})", gemini.display())),
        "{said}"
    );
    assert_eq!(read_text(&gemini), before);
    // One refused does not stop the others.
    std::fs::write(home.path().join(".factory/hooks.json"), "{}\n").unwrap();
    let out = run(&["install", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let status = |name: &str| {
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == name)
            .map(|a| a["status"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(status("droid"), "refused", "{v}");
    assert_eq!(status("qwen"), "already protected", "{v}");
    assert_eq!(status("cursor"), "not found", "{v}");

    // doctor lists every host, protected or not.
    let said = run(&["doctor"]);
    for host in [
        "claude-code",
        "codex",
        "cursor",
        "copilot",
        "opencode",
        "vscode (Copilot agent)",
    ] {
        assert!(
            said.contains(&format!("  {host}: not protected")),
            "{host}:\n{said}"
        );
    }
    assert!(
        said.contains(&format!("  gemini: protected ({})", gemini.display())),
        "{said}"
    );
    let v: Value = serde_json::from_str(&run(&["doctor", "--json"])).unwrap();
    assert_eq!(v["hosts"].as_array().unwrap().len(), 9, "{v}");
    // --print needs an agent.
    let mut c = env.cmd(None);
    c.args(["install", "--print"]).env("HOME", home.path());
    assert_eq!(run_with_input(c, b"").status.code(), Some(2));
}

#[test]
fn opencode_install_writes_its_plugin_keeps_a_flag_refuses_a_foreign_file_and_uninstalls_it() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    // The commands run with `XDG_CONFIG_HOME` set: opencode's directory is there.
    let file = env.config_home().join("opencode/plugins/turnback.ts");
    let printed = ok(&tb(&env, home.path(), &["install", "opencode", "--print"]));
    assert!(!file.exists(), "--print wrote {}", file.display());
    let said = ok(&tb(&env, home.path(), &["install", "opencode"]));
    assert!(said.contains(&file.display().to_string()), "{said}");
    let text = read_text(&file);
    assert_eq!(text, printed);
    // It imports nothing, and runs turnback's hook line.
    assert!(!text.contains("import "), "{text}");
    let line = format!(
        "const TURNBACK_COMMAND = [\"{}\",\"hook\",\"opencode\"];",
        exe()
    );
    assert!(text.contains(&line), "{text}");
    for hook in [
        "\"tool.execute.before\"",
        "\"tool.execute.after\"",
        "\"chat.message\"",
        "session.idle",
    ] {
        assert!(text.contains(hook), "{hook}");
    }
    let said = ok(&tb(&env, home.path(), &["install", "opencode"]));
    assert!(said.contains("nothing changed"), "{said}");

    // A flag the user added survives a reinstall.
    let strict = text.replace("\"opencode\"];", "\"opencode\",\"--strict\"];");
    std::fs::write(&file, &strict).unwrap();
    ok(&tb(&env, home.path(), &["install", "opencode"]));
    assert_eq!(read_text(&file), strict);
    let doctor = ok(&tb(&env, home.path(), &["doctor"]));
    assert!(doctor.contains("opencode: protected"), "{doctor}");

    // --project: the workspace's .opencode/plugins/.
    ok(&tb(
        &env,
        home.path(),
        &["install", "opencode", "--project"],
    ));
    assert!(env.path(".opencode/plugins/turnback.ts").exists());

    // Uninstall deletes turnback's file alone.
    std::fs::write(
        file.with_file_name("mine.ts"),
        "export const Mine = async () => ({})\n",
    )
    .unwrap();
    let said = ok(&tb(&env, home.path(), &["uninstall", "opencode"]));
    assert!(said.contains("removed"), "{said}");
    assert!(!file.exists());
    assert!(file.with_file_name("mine.ts").exists());

    // A file of that name that is not turnback's is refused, untouched.
    let mine = "export const Mine = async () => ({})\n";
    std::fs::write(&file, mine).unwrap();
    for args in [&["install", "opencode"][..], &["uninstall", "opencode"][..]] {
        let out = tb(&env, home.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("not turnback's"));
        assert_eq!(read_text(&file), mine);
    }
}

/// The plugin install wrote, run by node (when it is on PATH) through a
/// harness that calls its hooks as opencode would: each call recorded under
/// its own id, and a throw in `tool.execute.before` only when the command
/// exits 2.
#[test]
fn opencode_plugin_run_by_node_records_each_call_and_throws_only_on_exit_2() {
    let has_node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_node {
        eprintln!("node is not on PATH: the plugin is not run");
        return;
    }
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    ok(&tb(&env, home.path(), &["install", "opencode"]));
    let text = read_text(env.config_home().join("opencode/plugins/turnback.ts"));
    let dir = tempfile::tempdir().unwrap();
    let harness = crate::hooks::fixtures().join("opencode/harness.mjs");
    let run = |plugin: &str, mode: &str| {
        let file = dir.path().join(format!("{mode}.mjs"));
        std::fs::write(&file, plugin).unwrap();
        let mut c = env.command("node", None);
        c.arg(&harness).arg(&file).arg(env.ws.path()).arg(mode);
        ok(&run_with_input(c, b""))
    };
    assert_eq!(run(&text, "calls").trim(), "done");
    let s = env.store().open_session("ses_stub1").unwrap();
    let got: Vec<(String, String, bool)> = s
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| (e.message_id.clone(), e.path.clone(), e.is_committed()))
        .collect();
    let want = [("c1", "x.txt", true), ("c2", "y.txt", true)];
    let want: Vec<(String, String, bool)> = want
        .iter()
        .map(|(m, p, c)| ((*m).to_owned(), (*p).to_owned(), *c))
        .collect();
    assert_eq!(got, want);
    let line = text
        .lines()
        .find(|l| l.starts_with("const TURNBACK_COMMAND"))
        .unwrap();
    for (code, want) in [
        ("2", "thrown: no"),
        ("1", "not thrown"),
        ("0", "not thrown"),
    ] {
        let cmd = format!("const TURNBACK_COMMAND = [\"sh\",\"-c\",\"echo no >&2; exit {code}\"];");
        let said = run(&text.replace(line, &cmd), "block");
        assert_eq!(said.trim(), want, "exit {code}");
    }
}
