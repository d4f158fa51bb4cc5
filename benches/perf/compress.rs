//! Section 11 (issue 16): compact blobs. A replay of real source history (this
//! repository's own: every version of its text files of 2-64 KiB, commit by
//! commit, with a few binaries among them) through `Session::write`, once
//! with backups compressed and once without, interleaved in the same run: the
//! bytes the backups take on disk against the bytes backed up, and the write
//! time against the uncompressed path. Then the codecs themselves on the same
//! backups: zstd at levels 1, 3 and 9 and lz4 (`lz4_flex`), for ratio and speed.

use std::io::{BufRead, BufReader, Read};

use turnback_store::{SettingSource, Settings};

use super::*;

/// One version of a file, as a commit left it.
struct Version {
    path: String,
    bytes: Vec<u8>,
}

pub(crate) fn compact_blobs(b: &mut Bench) {
    let dir = b.section_dir(11);
    let commits = if b.quick { 40 } else { 400 };
    let Some(history) = history(commits) else {
        b.note("not a git checkout (or no git): section 11 skipped".into());
        return;
    };
    let mut steps = history;
    // A few binaries: incompressible, 64-320 KiB, rewritten now and then.
    let n = steps.len();
    for k in 0..(n / 60).max(2) {
        let mut bytes = vec![0u8; 64 * KIB + (k * 37 * KIB) % (256 * KIB)];
        fill(&mut bytes, 11_000 + k as u64);
        steps.insert(
            (k * 60 + 30).min(steps.len()),
            Version {
                path: format!("assets/blob{}.bin", k % 3),
                bytes,
            },
        );
    }
    let per_session = 150;
    let mut homes = Vec::new();
    for (name, compress) in [("on", true), ("off", false)] {
        let home = dir.join(format!("home-{name}"));
        let wsdir = dir.join(format!("ws-{name}"));
        fs::create_dir_all(&wsdir).unwrap();
        let mut settings = Settings::default();
        settings
            .compress_backups
            .set(compress, SettingSource::Flag("the bench"));
        let store = Store::new(&home).with_settings(settings);
        homes.push((home, wsdir, store));
    }
    let workspaces: Vec<Workspace> = homes
        .iter()
        .map(|(_, w, _)| Workspace::open(w).unwrap())
        .collect();
    let mut current: std::collections::HashMap<&str, usize> = Default::default();
    let (mut raw, mut times) = (0u64, [Duration::ZERO; 2]);
    // Each backup, and whether it is of a binary.
    let mut backups: Vec<(&[u8], bool)> = Vec::new();
    let mut sessions: Vec<Session> = Vec::new();
    for (i, v) in steps.iter().enumerate() {
        if i % per_session == 0 {
            sessions = homes
                .iter()
                .map(|(_, _, s)| {
                    s.session(&format!("replay-{:03}", i / per_session))
                        .unwrap()
                })
                .collect();
        }
        if let Some(&prev) = current.get(v.path.as_str()) {
            raw += steps[prev].bytes.len() as u64;
            backups.push((&steps[prev].bytes, v.path.ends_with(".bin")));
        }
        current.insert(&v.path, i);
        // Alternate which store goes first, so that neither always pays for
        // the other's writeback.
        for k in [i % 2, 1 - i % 2] {
            let t = Instant::now();
            sessions[k]
                .write(&workspaces[k], v.path.as_str(), &v.bytes[..], "m")
                .unwrap();
            times[k] += t.elapsed();
        }
    }
    drop(sessions);
    let on_disk: Vec<u64> = homes.iter().map(|(h, _, _)| blob_bytes(h)).collect();
    b.note(format!(
        "section 11 replayed {} writes ({} versions of this repository's text files \
         over its last {commits} commits, and {} of binaries): {:.1} MB backed up, \
         {:.1} MB of it binaries (incompressible noise)",
        thousands(steps.len()),
        thousands(n),
        thousands(steps.len() - n),
        raw as f64 / 1e6,
        backups
            .iter()
            .filter(|x| x.1)
            .map(|x| x.0.len())
            .sum::<usize>() as f64
            / 1e6
    ));
    let ratio = on_disk[0] as f64 / raw as f64;
    b.row(Row {
        what: "backups on disk, compressed (zstd 3, differences)".into(),
        param: format!("{} writes of real history", thousands(steps.len())),
        tb: format!("{:.1} MB on disk", on_disk[0] as f64 / 1e6),
        reference: format!("backed up: {:.1} MB", raw as f64 / 1e6),
        ratio: format!("{ratio:.3}x"),
        goal: "≤ 0.35x".into(),
        verdict: Verdict::of(ratio <= 0.35),
    });
    b.row(Row {
        what: "backups on disk, uncompressed".into(),
        param: format!("{} writes of real history", thousands(steps.len())),
        tb: format!("{:.1} MB on disk", on_disk[1] as f64 / 1e6),
        reference: format!("backed up: {:.1} MB", raw as f64 / 1e6),
        ratio: format!("{:.3}x", on_disk[1] as f64 / raw as f64),
        goal: "—".into(),
        verdict: Verdict::Info,
    });
    let count = steps.len() as u32;
    b.row(time_row(
        "write-through, backups compressed (mean)",
        &format!("{} writes of real history", thousands(steps.len())),
        times[0] / count,
        ("uncompressed", times[1] / count),
        Some(1.2),
    ));
    codecs(b, &backups);
}

/// Bytes of the blobs of every session under `home`.
fn blob_bytes(home: &Path) -> u64 {
    let mut total = 0;
    for s in fs::read_dir(home.join("sessions")).unwrap().flatten() {
        for e in fs::read_dir(s.path().join("blobs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            total += e.metadata().map_or(0, |m| m.len());
        }
    }
    total
}

/// zstd at three levels and lz4 over the replay's backups, one at a time as
/// the store compresses them: ratio, and time against zstd level 3's.
fn codecs(b: &mut Bench, backups: &[(&[u8], bool)]) {
    let raw: usize = backups.iter().map(|x| x.0.len()).sum();
    let text: usize = backups.iter().filter(|x| !x.1).map(|x| x.0.len()).sum();
    type Codec = (
        &'static str,
        Box<dyn Fn(&[u8]) -> Vec<u8>>,
        Box<dyn Fn(&[u8]) -> Vec<u8>>,
    );
    let codecs: Vec<Codec> = vec![
        (
            "zstd 3",
            Box::new(|x| zstd::bulk::compress(x, 3).unwrap()),
            Box::new(|c| zstd::stream::decode_all(c).unwrap()),
        ),
        (
            "zstd 1",
            Box::new(|x| zstd::bulk::compress(x, 1).unwrap()),
            Box::new(|c| zstd::stream::decode_all(c).unwrap()),
        ),
        (
            "zstd 9",
            Box::new(|x| zstd::bulk::compress(x, 9).unwrap()),
            Box::new(|c| zstd::stream::decode_all(c).unwrap()),
        ),
        (
            "lz4 (lz4_flex)",
            Box::new(lz4_flex::compress_prepend_size),
            Box::new(|c| lz4_flex::decompress_size_prepended(c).unwrap()),
        ),
    ];
    let runs = if b.quick { 1 } else { 5 };
    let mut reference = None;
    for (name, compress, decompress) in &codecs {
        let (mut tc, mut td, mut size, mut text_size) = (Vec::new(), Vec::new(), 0, 0);
        for _ in 0..runs {
            let t = Instant::now();
            let packed: Vec<Vec<u8>> = backups.iter().map(|x| compress(x.0)).collect();
            tc.push(t.elapsed());
            size = packed.iter().map(|p| p.len()).sum::<usize>();
            text_size = packed
                .iter()
                .zip(backups)
                .filter(|(_, x)| !x.1)
                .map(|(p, _)| p.len())
                .sum::<usize>();
            let t = Instant::now();
            for p in &packed {
                std::hint::black_box(decompress(p));
            }
            td.push(t.elapsed());
        }
        let (tc, td) = (median(tc), median(td));
        let mbs = |d: Duration| raw as f64 / 1e6 / secs(d);
        let reference = *reference.get_or_insert(tc);
        b.row(Row {
            what: format!("codec {name}: compress the backups"),
            param: format!(
                "{} backups, {:.1} MB; ratio {:.3} (the text alone {:.3}); decode {:.0} MB/s",
                thousands(backups.len()),
                raw as f64 / 1e6,
                size as f64 / raw as f64,
                text_size as f64 / text as f64,
                mbs(td)
            ),
            tb: format!("{} ({:.0} MB/s)", fmt_d(tc), mbs(tc)),
            reference: format!("zstd 3: {}", fmt_d(reference)),
            ratio: format!("{:.2}x", secs(tc) / secs(reference)),
            goal: "—".into(),
            verdict: Verdict::Info,
        });
    }
}

/// Every version of this repository's text files of 2 to 64 KiB that its
/// last `commits` commits (oldest first, merges left out) wrote, in order;
/// `None` outside a git checkout.
fn history(commits: usize) -> Option<Vec<Version>> {
    let repo = env!("CARGO_MANIFEST_DIR");
    let log = git_out(
        repo,
        &[
            "log",
            "--no-merges",
            "--reverse",
            "--format=%H",
            &format!("-{commits}"),
        ],
    )?;
    let mut wanted = Vec::new();
    for c in log.lines() {
        let changed = git_out(
            repo,
            &[
                "diff-tree",
                "--root",
                "--no-commit-id",
                "-r",
                "--name-only",
                "--diff-filter=AM",
                c,
            ],
        )?;
        for p in changed.lines() {
            let text = [
                ".rs", ".md", ".toml", ".json", ".jsonl", ".snap", ".sh", ".txt",
            ];
            if text.iter().any(|e| p.ends_with(e)) {
                wanted.push(format!("{c}:{p}"));
            }
        }
    }
    let mut child = Command::new("git")
        .args(["-C", repo, "cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input: String = wanted.iter().map(|w| format!("{w}\n")).collect();
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut out = BufReader::new(child.stdout.take()?);
    let mut versions = Vec::new();
    for w in &wanted {
        let mut header = String::new();
        out.read_line(&mut header).ok()?;
        let size: usize = match header.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "blob", size] => size.parse().ok()?,
            _ => continue,
        };
        let mut bytes = vec![0u8; size + 1];
        out.read_exact(&mut bytes).ok()?;
        bytes.pop();
        if (2 * KIB..=64 * KIB).contains(&size) {
            let path = w.split_once(':').expect("commit:path").1.to_owned();
            versions.push(Version { path, bytes });
        }
    }
    feeder.join().ok()?.ok()?;
    child.wait().ok()?;
    (!versions.is_empty()).then_some(versions)
}

/// What `git -C repo args` prints, if it succeeds.
fn git_out(repo: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
