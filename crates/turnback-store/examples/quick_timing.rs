//! A quick timing of `write` + `undo` for a small and a large file, beside a
//! durable atomic write of the same bytes (temporary, fsync, rename, directory
//! fsync) measured in the same run. Not the benchmark suite; a sanity check.
//!
//! `cargo run --release -p turnback-store --example quick_timing [DIR]`
//! (DIR: where the store and workspace go; default: the system temp dir).

use std::io::Write;
use std::time::{Duration, Instant};

use turnback_store::{RevertOptions, Store, Workspace};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn durable_write(dir: &std::path::Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
    std::fs::File::open(dir).unwrap().sync_all().unwrap();
}

fn main() {
    let base = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let root = tempfile::tempdir_in(base).unwrap();
    let home = root.path().join("home");
    let wsdir = root.path().join("ws");
    std::fs::create_dir_all(&wsdir).unwrap();
    let session = Store::new(&home).session("timing").unwrap();
    let ws = Workspace::open(&wsdir).unwrap();

    println!(
        "{:>10} {:>6} {:>14} {:>14} {:>14} {:>8}",
        "size", "runs", "write", "undo", "durable write", "ratio"
    );
    for (size, runs) in [(4 * 1024usize, 50), (100 * 1024 * 1024, 5)] {
        let old: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let new: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
        let name = format!("f{size}");
        std::fs::write(wsdir.join(&name), &old).unwrap();
        let (mut w, mut u, mut d) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            session.write(&ws, &name, &new[..], "m").unwrap();
            w.push(t.elapsed());
            let t = Instant::now();
            session.undo(RevertOptions::default()).unwrap();
            u.push(t.elapsed());
            let t = Instant::now();
            durable_write(&wsdir, &format!("plain{size}"), &new);
            d.push(t.elapsed());
        }
        assert_eq!(std::fs::read(wsdir.join(&name)).unwrap(), old);
        let (w, u, d) = (median(w), median(u), median(d));
        println!(
            "{:>10} {:>6} {:>14?} {:>14?} {:>14?} {:>7.1}x",
            size,
            runs,
            w,
            u,
            d,
            w.as_secs_f64() / d.as_secs_f64()
        );
    }

    // A rewind of 1,000 entries: 100 files of 4 KiB, each written 10 times, one
    // message per write; then a dry run and the rewind of all of them (and the
    // redo that puts them back).
    let rewind_session = Store::new(&home).session("rewind").unwrap();
    for round in 0..10 {
        for f in 0..100 {
            let bytes = vec![b'a' + (round as u8); 4096];
            rewind_session
                .write(
                    &ws,
                    format!("many/f{f:03}.txt"),
                    &bytes[..],
                    &format!("m{round}-{f}"),
                )
                .unwrap();
        }
    }
    let t = Instant::now();
    let preview = rewind_session
        .rewind(
            "m0-0",
            RevertOptions {
                force: false,
                dry_run: true,
            },
        )
        .unwrap();
    let dry = t.elapsed();
    let t = Instant::now();
    let done = rewind_session
        .rewind("m0-0", RevertOptions::default())
        .unwrap();
    let real = t.elapsed();
    let t = Instant::now();
    rewind_session.redo(RevertOptions::default()).unwrap();
    let redo = t.elapsed();
    assert_eq!(preview.files.len(), 100);
    assert_eq!(done.files.iter().map(|f| f.seqs.len()).sum::<usize>(), 1000);
    println!(
        "rewind of 1000 entries over 100 files: dry run {dry:?}, rewind {real:?}, redo {redo:?}"
    );
}
