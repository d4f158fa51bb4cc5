//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use turnback_store::{RevertOptions, Session, Store, Workspace};

// Shared with the model test and the operations fuzz target (which include
// the file themselves).
#[path = "model/support.rs"]
pub mod support;
pub use support::{names_under, sha256_hex, stray_temps};

/// The built `turnback` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_turnback"))
}

/// A copy of the built binary that any user can run, in a directory of its
/// own that lives as long as the guard: the binary cargo built may be where
/// another user cannot reach it (a clone under /root, mode 0700), and a
/// spawn as that user would fail with EACCES.
pub fn bin_for_anyone() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("turnback-bin")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let bin_copy = dir.path().join("turnback");
    std::fs::copy(bin(), &bin_copy).unwrap();
    for p in [dir.path(), &bin_copy] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (dir, bin_copy)
}

/// Revert options: neither forced nor a dry run.
pub fn plain() -> RevertOptions {
    RevertOptions::default()
}

/// Revert options: forced, for real.
pub fn forced() -> RevertOptions {
    RevertOptions {
        force: true,
        dry_run: false,
    }
}

/// Revert options: a dry run, not forced.
pub fn dry() -> RevertOptions {
    RevertOptions {
        force: false,
        dry_run: true,
    }
}

/// The bytes of a file, which must be readable.
pub fn read(p: impl AsRef<Path>) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// The text of a file, which must be readable UTF-8.
pub fn read_text(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// The permission bits of a file (following links).
pub fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A temporary store home and a temporary workspace.
pub struct Env {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        Env {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    /// A new `Env` with session `id` in its store and its workspace opened.
    pub fn with_session(id: &str) -> (Env, Session, Workspace) {
        let env = Env::new();
        let s = env.session(id);
        let ws = env.workspace();
        (env, s, ws)
    }

    pub fn store(&self) -> Store {
        Store::new(self.home.path())
    }

    pub fn session(&self, id: &str) -> Session {
        self.store().session(id).unwrap()
    }

    pub fn workspace(&self) -> Workspace {
        Workspace::open(self.ws.path()).unwrap()
    }

    /// The absolute path of `rel` in the workspace.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }

    /// The `XDG_CONFIG_HOME` of the commands this runs (nothing there
    /// unless a test writes `config_file`).
    pub fn config_home(&self) -> PathBuf {
        self.home.path().join("xdg-config")
    }

    /// The config file the commands this runs read.
    pub fn config_file(&self) -> PathBuf {
        self.config_home().join("turnback/config.toml")
    }

    /// `turnback` run in the workspace with this home and (when given) session.
    pub fn cmd(&self, session: Option<&str>) -> Command {
        self.command(bin(), session)
    }

    /// `program` run in the workspace with this home and (when given) session.
    pub fn command(&self, program: impl AsRef<OsStr>, session: Option<&str>) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.ws.path())
            .env("TURNBACK_HOME", self.home.path())
            // The settings are the defaults unless a test writes a config
            // file (`config_file`): never the config of the user running them.
            .env("XDG_CONFIG_HOME", self.config_home())
            // Times print in the local zone: the same one wherever the
            // tests run (a picker's lines end in "UTC").
            .env("TZ", "UTC")
            .env_remove("TURNBACK_KEEP_SESSIONS")
            .env_remove("TURNBACK_KEEP_DAYS")
            .env_remove("TURNBACK_MAX_ENTRIES")
            .env_remove("TURNBACK_MAX_BYTES")
            .env_remove("TURNBACK_SESSION")
            .env_remove("TURNBACK_WORKSPACE");
        if let Some(s) = session {
            c.env("TURNBACK_SESSION", s);
        }
        c
    }
}

/// Runs `cmd` to its end with `stdin` as its standard input, both outputs
/// captured. A command that exits before it reads its input has closed the
/// pipe: that is not an error here.
pub fn run_with_input(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the command");
    let mut input = child.stdin.take().unwrap();
    match input.write_all(stdin) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    drop(input);
    child.wait_with_output().expect("wait for the command")
}

/// [`run_with_input`] of a command that must exit 0; the panic names `what`
/// and shows its standard error.
pub fn run_ok(cmd: Command, stdin: &[u8], what: &str) -> Output {
    let out = run_with_input(cmd, stdin);
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `turnback ARGS` (with `--color never`) in `env`'s workspace, as
/// `session` when given, under a pseudo-terminal (util-linux's `script`), so
/// that it may ask; types `typed`. Returns what the terminal showed (without
/// carriage returns) and the exit code.
pub fn on_a_terminal(env: &Env, session: Option<&str>, args: &str, typed: &str) -> (String, i32) {
    let line = format!("{} {args} --color never", bin().display());
    let mut script = env.command("script", session);
    script.args(["-qec", &line, "/dev/null"]);
    let out = run_with_input(script, typed.as_bytes());
    (
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        out.status.code().unwrap_or(-1),
    )
}

/// What a tree holds: every path under `root` (not following links) with its kind
/// and contents (files), target (links) or nothing (directories). Comparing two
/// digests shows whether anything was written, created or deleted.
pub fn tree_digest(root: &Path) -> BTreeMap<PathBuf, String> {
    names_under(root)
        .into_iter()
        .map(|rel| {
            let kind = describe(&root.join(&rel));
            (rel, kind)
        })
        .collect()
}

fn describe(p: &Path) -> String {
    let md = std::fs::symlink_metadata(p).unwrap();
    if md.is_symlink() {
        format!("link {}", std::fs::read_link(p).unwrap().display())
    } else if md.is_dir() {
        "dir".into()
    } else {
        let bytes = std::fs::read(p).unwrap_or_default();
        format!(
            "file {:o} {:?}",
            md.permissions().mode() & 0o7777,
            String::from_utf8_lossy(&bytes)
        )
    }
}

/// A small deterministic pseudo-random sequence (xorshift64*), no crates.
pub struct Rng(u64);

impl Rng {
    /// A sequence from `seed` (any value; it is mixed first).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform-ish in `0..=max`.
    pub fn up_to(&mut self, max: u64) -> u64 {
        self.next() % (max + 1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The name of the test function this is used in, as `module::function`
/// (what `cargo test` prints, without the binary's own `tests::`).
macro_rules! this_test {
    () => {{
        fn here() {}
        let name = std::any::type_name_of_val(&here);
        let name = name.strip_suffix("::here").unwrap_or(name);
        name.strip_prefix("tests::").unwrap_or(name)
    }};
}
pub(crate) use this_test;

/// Says that `test` (see [`this_test`]) did not run, or ran only in part,
/// and why, where a person sees it: on stderr (which the harness shows with
/// `--nocapture` or when a test fails) and as a line appended to the skip log
/// ([`skip_log`]), which `.ci/run` prints as a summary at its end. A skip that
/// cannot be written down fails the test: a silent skip is what this is for.
pub fn skip(test: &str, why: &str) {
    eprintln!("skipped: {test}: {why}");
    let path = skip_log();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    // One `write` of one short line with O_APPEND: lines of tests running at
    // the same time do not mix.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{test}: {why}\n").as_bytes()))
        .unwrap_or_else(|e| panic!("the skip log {}: {e}", path.display()));
}

/// Where [`skip`] writes: `$TURNBACK_SKIP_LOG`, else `skipped-tests.txt` in
/// cargo's temporary directory for tests (`target/tmp`).
pub fn skip_log() -> PathBuf {
    std::env::var_os("TURNBACK_SKIP_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt"))
}

/// The directory on a filesystem that clones files (XFS, btrfs) named by
/// `TURNBACK_REFLINK_DIR` (`.ci/run` mounts one where it can; the bench reads
/// the same variable), if set.
pub fn reflink_dir() -> Option<PathBuf> {
    std::env::var_os("TURNBACK_REFLINK_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
