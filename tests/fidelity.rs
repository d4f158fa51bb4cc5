//! What a write and a restore keep of a file besides its bytes, and what the
//! command line makes of what it is given: owners and setuid bits, a missing or
//! cut standard input, hard links, control characters in names, sparse files.

use std::process::{Command, Stdio};

use crate::util::{self, Env};

/// `turnback ARGS` under a pseudo-terminal, as `session`.
fn on_a_terminal(env: &Env, session: &str, args: &str, typed: &str) -> (String, i32) {
    util::on_a_terminal(env, Some(session), args, typed)
}

// ------------------------------------------------ control characters in names

/// A raw control character (C0 but the line ends the output itself makes, DEL,
/// C1) in `s`, if any.
fn raw_control(s: &str) -> Option<char> {
    s.chars()
        .find(|&c| (c < ' ' && c != '\n') || c == '\x7f' || ('\u{80}'..='\u{9f}').contains(&c))
}

#[test]
fn control_characters_in_names_ids_and_prompts_are_escaped_in_text_but_not_in_json() {
    let env = Env::new();
    let s = env.session("agent");
    let ws = env.workspace();
    let name = "a\x1b[2Jb\nc";
    let message = "call\x1b]0;pwned\x07-1\u{9b}";
    s.begin_turn("clear \x1b[2J the screen", None).unwrap();
    s.write(&ws, name, &b"x\n"[..], message).unwrap();

    let log = env
        .cmd(Some("agent"))
        .args(["log", "--color", "never"])
        .output()
        .unwrap();
    assert!(log.status.success());
    let shown = String::from_utf8(log.stdout).unwrap();
    assert_eq!(raw_control(&shown), None, "{shown:?}");
    // A header, the turn's line (with its prompt), the message line and the
    // entry line: the newline in the name makes no line of its own.
    assert_eq!(shown.lines().count(), 4, "{shown:?}");
    assert!(shown.contains(r"clear \e[2J the screen"), "{shown:?}");
    assert!(shown.contains(r"a\e[2Jb\nc"), "{shown:?}");
    assert!(shown.contains(r"call\e]0;pwned\x07-1\u{9b}"), "{shown:?}");

    // JSON escapes by itself: the name comes back exactly.
    let json = env
        .cmd(Some("agent"))
        .args(["log", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["entries"][0]["path"], name);
    assert_eq!(v["entries"][0]["message_id"], message);

    // A preview, a diff and an error line name the file too.
    for args in [
        &["undo", "--dry-run", "--color", "never"][..],
        &["diff", "--color", "never"],
    ] {
        let out = env.cmd(Some("agent")).args(args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(r"a\e[2Jb\nc"), "{args:?}: {text:?}");
        assert_eq!(raw_control(&text), None, "{args:?}: {text:?}");
    }
    let err = env
        .cmd(Some("agent"))
        .args(["rm", "gone\x1b[31m", "--color", "never"])
        .output()
        .unwrap();
    let text = String::from_utf8(err.stderr).unwrap();
    assert!(!err.status.success());
    assert!(text.contains(r"gone\e[31m"), "{text:?}");
    assert_eq!(raw_control(&text), None, "{text:?}");

    // The picker and its preview, on a terminal.
    let (shown, code) = on_a_terminal(&env, "agent", "rewind", "1\nn\n");
    assert_eq!(code, 0, "{shown:?}");
    assert!(shown.contains("nothing done"), "{shown:?}");
    assert!(
        shown.contains(r"a\e[2Jb\nc"),
        "the preview names the file: {shown:?}"
    );
    assert_eq!(raw_control(&shown), None, "{shown:?}");
}

// ------------------------------------------------------------- sparse files

/// Bytes the filesystem allocated to the file at `p`.
fn allocated(p: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().blocks() * 512
}

#[test]
fn a_sparse_file_is_backed_up_and_restored_with_its_holes() {
    use std::os::unix::fs::FileExt;
    const SIZE: u64 = 32 << 20;
    const FAR_BELOW: u64 = 1 << 20;
    let (env, s, ws) = Env::with_session("agent");
    let p = env.path("disk.img");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(SIZE).unwrap();
    f.write_all_at(&[0xab; 4096], 0).unwrap();
    f.write_all_at(&[0xcd; 4096], SIZE - 4096).unwrap();
    drop(f);
    if allocated(&p) >= FAR_BELOW {
        let why = format!("this filesystem does not keep holes in {}", p.display());
        util::skip(util::this_test!(), &why);
        return;
    }
    let original = util::read(&p);

    let e = s.write(&ws, "disk.img", &b"small now"[..], "m1").unwrap();
    let blob = s
        .dir()
        .join("blobs")
        .join(e.before.sha256.as_deref().unwrap());
    // Compressed (its zeros take next to nothing); raw, it would keep the holes.
    let bytes = util::read(&blob);
    assert!(
        bytes == original || bytes.starts_with(b"\x5b\x2a\x4d\x18\x10\0\0\0turnback"),
        "the backup is neither the file's bytes nor compressed"
    );
    assert!(
        allocated(&blob) < FAR_BELOW,
        "the backup of a 32 MiB file with 8 KiB of data takes {} bytes",
        allocated(&blob)
    );
    s.undo(util::plain()).unwrap();
    assert!(util::read(&p) == original, "the restored bytes differ");
    assert!(
        allocated(&p) < FAR_BELOW,
        "the restored file takes {} bytes",
        allocated(&p)
    );

    // New contents that end in zeros: the trailing hole is kept, and the
    // length is right.
    let mut tail_zeros = vec![0u8; 8 << 20];
    tail_zeros[..5].copy_from_slice(b"start");
    s.write(&ws, "tail.img", &tail_zeros[..], "m2").unwrap();
    let t = env.path("tail.img");
    assert!(util::read(&t) == tail_zeros, "the written bytes differ");
    assert!(allocated(&t) < FAR_BELOW, "{} bytes", allocated(&t));
}

// ------------------------------------------------ missing or cut standard input

/// `sh -c SCRIPT` in the workspace, with `$TB` the binary and the session set.
fn sh(env: &Env, script: &str) -> std::process::Output {
    env.command("sh", Some("agent"))
        .arg("-c")
        .arg(script)
        .env("TB", util::bin())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// An env whose session has one entry for `f.txt` (holding "old\n") already,
/// so that the file's lock and the session's files exist: a refused write must
/// then leave the home exactly as it was.
fn one_file_written() -> Env {
    let env = Env::new();
    std::fs::write(env.path("f.txt"), "first\n").unwrap();
    env.session("agent")
        .write(&env.workspace(), "f.txt", &b"old\n"[..], "m0")
        .unwrap();
    env
}

/// The store home's digest but for the per-file locks, whose holder note any
/// writer rewrites (and which are never deleted).
fn store_digest(env: &Env) -> std::collections::BTreeMap<std::path::PathBuf, String> {
    let mut d = util::tree_digest(env.home.path());
    d.retain(|p, _| !p.starts_with("locks"));
    d
}

/// Runs `script`, checks it failed with `code` and touched neither the
/// workspace nor the store; returns its standard error.
fn refused_untouched(env: &Env, script: &str, code: i32) -> String {
    let (ws, home) = (util::tree_digest(env.ws.path()), store_digest(env));
    let out = sh(env, script);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{script}: {stderr}");
    assert_eq!(util::read_text(env.path("f.txt")), "old\n", "{script}");
    assert_eq!(util::tree_digest(env.ws.path()), ws, "{script}: workspace");
    assert_eq!(store_digest(env), home, "{script}: store");
    assert_eq!(env.session("agent").entries().unwrap().len(), 1, "{script}");
    stderr
}

#[test]
fn a_closed_standard_input_is_an_error_that_touches_nothing() {
    let env = one_file_written();
    let stderr = refused_untouched(&env, r#""$TB" write f.txt -m m1 <&-"#, 1);
    assert!(stderr.contains("standard input is closed"), "{stderr}");
    let stderr = refused_untouched(&env, r#""$TB" write f.txt -m m1 --json <&-"#, 1);
    let v: serde_json::Value = serde_json::from_str(&stderr).unwrap();
    assert_eq!(v["error"]["kind"], "no-input", "{stderr}");
    // Open for writing only: nothing can be read from it.
    let stderr = refused_untouched(&env, r#""$TB" write f.txt -m m1 0>/dev/null --json"#, 1);
    let v: serde_json::Value = serde_json::from_str(&stderr).unwrap();
    assert_eq!(v["error"]["kind"], "no-input", "{stderr}");

    // A person's `< /dev/null` is an empty file, as before.
    let out = sh(&env, r#""$TB" write f.txt -m m2 </dev/null"#);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(util::read(env.path("f.txt")), b"");
}

#[test]
fn a_terminal_on_standard_input_is_refused_with_a_hint() {
    let env = one_file_written();
    let home = store_digest(&env);
    let (shown, code) = on_a_terminal(&env, "agent", "write f.txt -m m1", "");
    assert_eq!(code, 2, "{shown}");
    assert!(
        shown.contains("turnback write reads the new contents from standard input: pipe them in"),
        "{shown}"
    );
    assert_eq!(util::read_text(env.path("f.txt")), "old\n");
    assert_eq!(store_digest(&env), home);
}

#[test]
fn a_short_producer_with_an_expected_size_or_hash_writes_nothing() {
    let env = one_file_written();
    let whole = "the whole new contents\n";
    let sha = util::sha256_hex(whole.as_bytes());
    for script in [
        format!(
            r#"printf 'the whole' | "$TB" write f.txt -m m1 --expect-size {}"#,
            whole.len()
        ),
        format!(r#"printf 'the whole' | "$TB" write f.txt -m m1 --expect-sha256 {sha}"#),
        format!(
            r#"printf 'the whole new contents\n!' | "$TB" write f.txt -m m1 --expect-size {} --expect-sha256 {sha}"#,
            whole.len()
        ),
    ] {
        let stderr = refused_untouched(&env, &script, 1);
        assert!(stderr.contains("f.txt"), "{stderr}");
        let json = refused_untouched(&env, &format!("{script} --json"), 1);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let e = &v["error"];
        assert_eq!(e["kind"], "contents-mismatch", "{json}");
        assert!(
            e["actual"]["size"].is_u64() && e["actual"]["sha256"].is_string(),
            "{json}"
        );
        assert!(e["expected"].is_object(), "{json}");
    }
    // A new file in a new directory: nothing is created either.
    let out = sh(
        &env,
        r#"printf 'x' | "$TB" write new/dir/g.txt --expect-size 2"#,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!env.path("new").exists());
    assert_eq!(env.session("agent").entries().unwrap().len(), 1);

    // What was meant arrives: written.
    let out = sh(
        &env,
        &format!(
            r#"printf 'the whole new contents\n' | "$TB" write f.txt -m m1 --expect-size {} --expect-sha256 {}"#,
            whole.len(),
            sha.to_uppercase()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(util::read_text(env.path("f.txt")), whole);
    // A hash that is not one is a usage error.
    let out = sh(
        &env,
        r#"printf 'x' | "$TB" write f.txt --expect-sha256 nothex"#,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(util::read_text(env.path("f.txt")), whole);
}

// ------------------------------------------------------- owners, setuid bits

/// True when the tests run as root; else `test` says it skipped
/// ([`util::skip`]).
fn root_or_skip(test: &str, what: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        util::skip(
            test,
            &format!("{what} needs root (to make files of other users)"),
        );
    }
    root
}

fn owner_of(p: &std::path::Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(p).unwrap();
    (md.uid(), md.gid())
}

/// A file at `p` with `contents`, owned by `owner`, of mode `mode` (set after
/// the chown, which clears setuid and setgid).
fn file_of(p: &std::path::Path, contents: &str, owner: (u32, u32), mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(p, contents).unwrap();
    std::os::unix::fs::chown(p, Some(owner.0), Some(owner.1)).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `turnback ARGS` (`cmd` names the session) with `stdin`; must succeed.
fn tb_ok(mut cmd: Command, args: &[&str], stdin: &[u8]) {
    cmd.args(args);
    util::run_ok(cmd, stdin, &format!("turnback {args:?}"));
}

#[test]
fn as_root_a_write_and_its_undo_keep_another_users_owner_and_setuid_bit() {
    if !root_or_skip(util::this_test!(), "keeping another user's owner") {
        return;
    }
    let env = Env::new();
    let p = env.path("tool");
    let them = (1234, 1234);
    file_of(&p, "#!/bin/sh\necho old\n", them, 0o4755);
    let tb = |args: &[&str], stdin: &[u8]| tb_ok(env.cmd(Some("agent")), args, stdin);

    tb(&["write", "tool", "-m", "m1"], b"#!/bin/sh\necho new\n");
    assert_eq!(util::read_text(&p), "#!/bin/sh\necho new\n");
    assert_eq!(owner_of(&p), them, "the write kept the owner");
    assert_eq!(util::mode_of(&p), 0o4755, "and, with it, the setuid bit");
    let e = &env.session("agent").entries().unwrap()[0];
    assert_eq!((e.before.uid, e.before.gid), (Some(1234), Some(1234)));

    tb(&["undo"], b"");
    assert_eq!(util::read_text(&p), "#!/bin/sh\necho old\n");
    assert_eq!((owner_of(&p), util::mode_of(&p)), (them, 0o4755), "undo");

    // Undo of an rm: the file is made anew, with the owner of its backup.
    tb(&["rm", "tool", "-m", "m2"], b"");
    assert!(!p.exists());
    tb(&["undo"], b"");
    assert_eq!(util::read_text(&p), "#!/bin/sh\necho old\n");
    assert_eq!(
        (owner_of(&p), util::mode_of(&p)),
        (them, 0o4755),
        "undo of rm"
    );
}

#[test]
fn an_unprivileged_writer_never_makes_another_users_setuid_file_its_own() {
    use std::os::unix::process::CommandExt;
    if !root_or_skip(util::this_test!(), "running a writer as another user") {
        return;
    }
    let env = Env::new();
    let writer = (1234, 1234);
    // A workspace the writer may create files in, and a home of its own.
    for dir in [env.ws.path(), env.home.path()] {
        std::os::unix::fs::chown(dir, Some(writer.0), Some(writer.1)).unwrap();
    }
    let setuid = env.path("setuid");
    file_of(&setuid, "theirs\n", (4321, 4321), 0o4755);
    // The writer's group: it may keep it, and the setgid bit with it.
    let setgid = env.path("setgid");
    file_of(&setgid, "theirs\n", (4321, writer.1), 0o2755);
    let (_bin_dir, bin) = util::bin_for_anyone();
    let as_writer = || {
        let mut c = env.command(&bin, Some("agent"));
        c.uid(writer.0).gid(writer.1);
        c
    };

    tb_ok(as_writer(), &["write", "setuid", "-m", "m1"], b"mine\n");
    assert_eq!(util::read_text(&setuid), "mine\n");
    assert_eq!(owner_of(&setuid), writer, "the writer cannot give it away");
    assert_eq!(
        util::mode_of(&setuid),
        0o755,
        "a file whose owner changed keeps no setuid bit"
    );

    tb_ok(as_writer(), &["write", "setgid", "-m", "m2"], b"mine\n");
    assert_eq!(owner_of(&setgid), writer);
    assert_eq!(
        util::mode_of(&setgid),
        0o2755,
        "the group stayed: setgid too"
    );
}

// --------------------------------------------------------------- hard links

fn inode_and_links(p: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(p).unwrap();
    (md.ino(), md.nlink())
}

#[test]
fn a_file_with_two_links_is_written_and_restored_in_place() {
    let env = Env::new();
    let (a, b) = (env.path("a.txt"), env.path("b.txt"));
    std::fs::write(&a, "old\n").unwrap();
    std::fs::hard_link(&a, &b).unwrap();
    let (ino, links) = inode_and_links(&a);
    assert_eq!(links, 2);
    let tb = |args: &[&str], stdin: &[u8]| tb_ok(env.cmd(Some("agent")), args, stdin);

    tb(&["write", "a.txt", "-m", "m1"], b"new contents\n");
    assert_eq!(
        util::read_text(&b),
        "new contents\n",
        "the other name sees it"
    );
    assert_eq!(inode_and_links(&a), (ino, 2), "same inode, both links");
    assert_eq!(
        util::stray_temps(env.ws.path()),
        Vec::<std::path::PathBuf>::new()
    );

    tb(&["undo"], b"");
    assert_eq!(util::read_text(&b), "old\n", "undo reaches the other name");
    assert_eq!(inode_and_links(&a), (ino, 2));

    tb(&["redo"], b"");
    assert_eq!(util::read_text(&b), "new contents\n");
    assert_eq!(inode_and_links(&b), (ino, 2));

    // Contents refused before anything is copied: neither name changes.
    let out = sh(&env, r#"printf 'cut' | "$TB" write a.txt --expect-size 99"#);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(util::read_text(&b), "new contents\n");
    assert_eq!(inode_and_links(&a), (ino, 2));
    assert_eq!(
        util::stray_temps(env.ws.path()),
        Vec::<std::path::PathBuf>::new()
    );
}

/// A file name that holds a newline (or a quote) cannot forge lines of a
/// diff: its `---`/`+++` headers quote it as git does, `"b/x\n+++ b/y"`, in
/// the text and in the JSON's unified diff alike.
#[test]
fn a_crafted_name_never_forges_a_line_of_a_diff() {
    let env = Env::new();
    let s = env.session("agent");
    let ws = env.workspace();
    let name = "x\n+++ b/forged";
    s.write(&ws, name, &b"one\n"[..], "m").unwrap();
    let out = env
        .cmd(Some("agent"))
        .args(["diff", "--color", "never"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let headers: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("--- ") || l.starts_with("+++ "))
        .collect();
    assert_eq!(
        headers,
        ["--- /dev/null", r#"+++ "b/x\n+++ b/forged""#],
        "{text}"
    );
    let json = env
        .cmd(Some("agent"))
        .args(["diff", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let unified = v.to_string();
    assert!(
        unified.contains(r#"+++ \"b/x\\n+++ b/forged\""#),
        "{unified}"
    );
}
