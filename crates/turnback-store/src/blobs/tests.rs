//! The blob store's own tests.

use super::*;

/// Backs up `bytes` from a file in `dir`.
fn store(blobs: &Blobs, dir: &Path, bytes: &[u8]) -> Result<(String, u64)> {
    let path = dir.join(format!("source-{:016x}", random_u64()));
    std::fs::write(&path, bytes).unwrap();
    blobs.store_file(&mut File::open(&path).unwrap(), &path)
}

#[test]
fn stores_once_by_content_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (h1, n1) = store(&blobs, dir.path(), b"same").unwrap();
    let (h2, _) = store(&blobs, dir.path(), b"same").unwrap();
    assert_eq!(h1, h2);
    assert_eq!(n1, 4);
    assert_eq!(std::fs::read(blobs.path(&h1)).unwrap(), b"same");
    assert_eq!(
        std::fs::read_dir(dir.path().join("blobs")).unwrap().count(),
        1
    );
    assert!(blobs.exists(&h1));
}

#[test]
fn a_damaged_blob_of_the_wrong_size_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    let (h, _) = store(&blobs, dir.path(), b"contents").unwrap();
    std::fs::write(blobs.path(&h), b"cont").unwrap();
    store(&blobs, dir.path(), b"contents").unwrap();
    assert_eq!(std::fs::read(blobs.path(&h)).unwrap(), b"contents");
}

#[test]
fn a_source_that_cannot_be_read_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = Blobs::new(dir.path().join("blobs"));
    // A directory opens as a file, cannot be cloned, and fails to read.
    let source = dir.path().join("src/x");
    std::fs::create_dir_all(&source).unwrap();
    let mut f = File::open(&source).unwrap();
    let err = blobs.store_file(&mut f, &source).unwrap_err();
    assert!(err.to_string().contains("src/x"), "{err}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("blobs")).unwrap().count(),
        0
    );
}

/// With `TURNBACK_REFLINK_DIR` naming a directory on a filesystem that
/// clones (`.ci/run` mounts one where it can), the backup is a clone: its
/// blob is right, and changing the source in place afterwards does not
/// change it. Elsewhere the same checks run on the copy.
#[test]
fn a_backup_is_a_clone_where_the_filesystem_can_and_independent_of_its_source() {
    let base = std::env::var_os("TURNBACK_REFLINK_DIR").map(std::path::PathBuf::from);
    let dir = match &base {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let blobs = Blobs::new(dir.path().join("blobs"));
    let source = dir.path().join("big");
    let bytes: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(&source, &bytes).unwrap();
    if base.is_some() {
        let probe = File::create(dir.path().join("probe")).unwrap();
        let cloned = sys::clone_file(&probe, &File::open(&source).unwrap());
        assert!(
            cloned.is_ok(),
            "TURNBACK_REFLINK_DIR cannot clone: {cloned:?}"
        );
    }
    let (h, n) = blobs
        .store_file(&mut File::open(&source).unwrap(), &source)
        .unwrap();
    assert_eq!(n, bytes.len() as u64);
    let mut w = std::fs::OpenOptions::new()
        .write(true)
        .open(&source)
        .unwrap();
    std::io::Write::write_all(&mut w, b"changed in place").unwrap();
    drop(w);
    let blob = std::fs::read(blobs.path(&h)).unwrap();
    assert!(blob == bytes, "the backup changed with its source");
    let (again, _) = hash::hash_reader(&mut &blob[..]).unwrap();
    assert_eq!(again, h);
}

// Backups stored as differences (`delta.rs`, `bases.rs`) and what a
// collection (`gc.rs`) keeps of them.

use crate::packed::Encoding;
use std::collections::HashSet;
use std::time::{Duration, SystemTime};

/// Source-like text of `lines` lines, varied by `seed`.
fn source(lines: usize, seed: u64) -> Vec<u8> {
    let words = [
        "let", "value", "fn", "compute", "self", "Result", "match", "None",
    ];
    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ seed;
    (0..lines)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (words[(x % 8) as usize], words[(x >> 8) as usize % 8]);
            format!("    {a} {b}_{} = {a}({i});\n", x % 1000).into_bytes()
        })
        .collect()
}

/// `text` with one line changed at `at`.
fn edited(text: &[u8], at: usize) -> Vec<u8> {
    let mut t = text.to_vec();
    t.splice(at..at, format!("    // edit {at}\n").into_bytes());
    t
}

/// Backs up `bytes` as the file at `dir/f.rs` (one file, backed up again
/// and again).
fn back_up(blobs: &Blobs, dir: &Path, bytes: &[u8]) -> String {
    let path = dir.join("f.rs");
    std::fs::write(&path, bytes).unwrap();
    blobs
        .store_file(&mut File::open(&path).unwrap(), &path)
        .unwrap()
        .0
}

fn encoding_of(blobs: &Blobs, h: &str) -> Encoding {
    packed::encoding(&mut File::open(blobs.path(h)).unwrap()).unwrap()
}

/// The backup `h`, read back and verified.
fn read_back(blobs: &Blobs, h: &str) -> Result<Vec<u8>> {
    let mut backup = blobs.open_backup("s", "f.rs", h)?;
    let mut out = Vec::new();
    let read = backup
        .reader()
        .read_to_end(&mut out)
        .map_err(Error::io("read", "-"));
    backup.checked(read)?;
    let (actual, _) = hash::hash_reader(&mut &out[..]).unwrap();
    backup.verify(&actual)?;
    Ok(out)
}

fn names(blobs: &Blobs) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(&blobs.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn age_everything(blobs: &Blobs) {
    let old = SystemTime::now() - Duration::from_secs(7200);
    for e in std::fs::read_dir(&blobs.dir).unwrap() {
        File::open(e.unwrap().path())
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
}

fn packing(dir: &Path) -> Blobs {
    Blobs::new(dir.join("blobs")).compressing(true)
}

#[test]
fn a_file_backed_up_again_is_stored_as_a_difference_from_its_last_whole_backup() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let v1 = source(800, 1);
    let h1 = back_up(&blobs, dir.path(), &v1);
    assert!(matches!(encoding_of(&blobs, &h1), Encoding::Packed(_)));
    let mut text = v1.clone();
    let mut made = vec![(h1.clone(), v1.clone())];
    for at in [100, 9000, 20_000] {
        text = edited(&text, at);
        let h = back_up(&blobs, dir.path(), &text);
        // One level: each is a difference from the first, whole, backup.
        assert_eq!(
            encoding_of(&blobs, &h),
            Encoding::Delta(text.len() as u64, h1.clone())
        );
        let on_disk = std::fs::metadata(blobs.path(&h)).unwrap().len();
        let whole = std::fs::metadata(blobs.path(&h1)).unwrap().len();
        assert!(
            on_disk * 20 < whole,
            "{on_disk} of {whole} bytes for a few lines changed"
        );
        made.push((h, text.clone()));
    }
    for (h, contents) in &made {
        assert!(read_back(&blobs, h).unwrap() == *contents);
    }
    // Without compression, no difference is made.
    let raw = Blobs::new(dir.path().join("raw"));
    let h = back_up(&raw, dir.path(), &v1);
    let h2 = back_up(&raw, dir.path(), &edited(&v1, 100));
    assert_eq!(encoding_of(&raw, &h), Encoding::Raw);
    assert_eq!(encoding_of(&raw, &h2), Encoding::Raw);
}

#[test]
fn a_rewrite_is_stored_whole_and_becomes_the_base_of_the_next_backup() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    back_up(&blobs, dir.path(), &source(800, 1));
    // Nothing in common with the first: hex digits.
    let rewritten: Vec<u8> = (0..2000u64)
        .flat_map(|i| format!("{:016x}\n", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes())
        .collect();
    let h2 = back_up(&blobs, dir.path(), &rewritten);
    assert!(matches!(encoding_of(&blobs, &h2), Encoding::Packed(_)));
    let h3 = back_up(&blobs, dir.path(), &edited(&rewritten, 500));
    assert_eq!(
        encoding_of(&blobs, &h3),
        Encoding::Delta(rewritten.len() as u64 + 16, h2)
    );
}

#[test]
fn a_collection_keeps_the_base_of_a_kept_difference_and_takes_both_once_neither_is_needed() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let v1 = source(800, 1);
    let h1 = back_up(&blobs, dir.path(), &v1);
    let h2 = back_up(&blobs, dir.path(), &edited(&v1, 300));
    let pin = bases::pin_name(&h2, &h1);
    assert!(names(&blobs).contains(&pin));
    age_everything(&blobs);
    let now = SystemTime::now();
    // Only the difference is named: its base stays.
    let (n, _) = blobs.collect_garbage(&HashSet::from([h2.as_str()]), now, false);
    assert_eq!(n, 0);
    assert!(read_back(&blobs, &h2).is_ok());
    // A dry run of the rest says what would go and takes nothing.
    let before = names(&blobs);
    let (n, _) = blobs.collect_garbage(&HashSet::new(), now, true);
    assert_eq!((n, names(&blobs)), (2, before));
    // Nothing named: both go, with the pin and the hint.
    age_everything(&blobs);
    let (n, bytes) = blobs.collect_garbage(&HashSet::new(), now, false);
    assert!(n == 2 && bytes > 0, "{n} {bytes}");
    assert!(names(&blobs).is_empty(), "{:?}", names(&blobs));
    // Only the base named: the difference and its pin go, the base stays.
    let h1 = back_up(&blobs, dir.path(), &v1);
    let h2 = back_up(&blobs, dir.path(), &edited(&v1, 300));
    age_everything(&blobs);
    let (n, _) = blobs.collect_garbage(&HashSet::from([h1.as_str()]), now, false);
    assert_eq!(n, 1);
    let left = names(&blobs);
    assert!(left.contains(&h1) && !left.contains(&h2), "{left:?}");
    assert!(
        !left.iter().any(|n| n.starts_with(bases::PIN_PREFIX)),
        "{left:?}"
    );
}

/// A whole backup of a source file, then one of it edited (a difference):
/// the first's name, the second's contents and name.
fn base_and_difference(blobs: &Blobs, dir: &Path) -> (String, Vec<u8>, String) {
    let v1 = source(800, 1);
    let h1 = back_up(blobs, dir, &v1);
    let v2 = edited(&v1, 300);
    let h2 = back_up(blobs, dir, &v2);
    assert!(matches!(encoding_of(blobs, &h2), Encoding::Delta(..)));
    (h1, v2, h2)
}

/// Blob `h` damaged behind the store's back: same length, other bytes.
fn damage(blobs: &Blobs, h: &str) {
    let mut bytes = std::fs::read(blobs.path(h)).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(blobs.path(h), &bytes).unwrap();
}

#[test]
fn a_difference_whose_base_is_damaged_or_gone_is_corrupt_and_the_next_backup_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let (h1, v2, h2) = base_and_difference(&blobs, dir.path());
    // The base damaged (same length, other bytes): the difference does not
    // decode, is moved aside (kept), and is named corrupt.
    damage(&blobs, &h1);
    match read_back(&blobs, &h2) {
        Err(Error::BlobCorrupt {
            actual, moved_to, ..
        }) => {
            assert_eq!(actual, UNDECODABLE);
            assert!(moved_to.is_some_and(|p| p.exists()));
        }
        other => panic!("{other:?}"),
    }
    assert!(!blobs.exists(&h2));
    // Backed up again, the same bytes are not made a difference from the
    // damaged base: written whole, they read back.
    let again = back_up(&blobs, dir.path(), &v2);
    assert_eq!(again, h2);
    assert!(matches!(encoding_of(&blobs, &h2), Encoding::Packed(_)));
    assert!(read_back(&blobs, &h2).unwrap() == v2);
    // A base that is gone: the same.
    let h3 = back_up(&blobs, dir.path(), &edited(&v2, 40));
    assert!(matches!(encoding_of(&blobs, &h3), Encoding::Delta(_, ref b) if *b == h2));
    std::fs::remove_file(blobs.path(&h2)).unwrap();
    assert!(matches!(
        read_back(&blobs, &h3),
        Err(Error::BlobCorrupt { .. })
    ));
}

#[test]
fn a_blob_a_killed_collection_left_aside_goes_back_if_needed_and_is_deleted_if_not() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let v1 = source(800, 1);
    let h1 = back_up(&blobs, dir.path(), &v1);
    let h2 = back_up(&blobs, dir.path(), &edited(&v1, 300));
    let other = back_up(&blobs, &dir.path().join("blobs"), b"another file's backup");
    for h in [&h1, &other] {
        let aside = blobs.dir.join(format!(".gc-{h}-0badc0de"));
        std::fs::rename(blobs.path(h), aside).unwrap();
    }
    age_everything(&blobs);
    // h1 is needed as h2's base; `other` by nothing.
    blobs.collect_garbage(&HashSet::from([h2.as_str()]), SystemTime::now(), false);
    let left = names(&blobs);
    assert!(left.contains(&h1) && !left.contains(&other), "{left:?}");
    assert!(!left.iter().any(|n| n.starts_with(".gc-")), "{left:?}");
    assert!(read_back(&blobs, &h2).is_ok());
}

#[test]
fn a_blob_made_fresh_after_a_collection_listed_it_is_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let h = back_up(&blobs, dir.path(), &source(100, 1));
    let grace = SystemTime::now() - Duration::from_secs(3600);
    // Listed old, made fresh (as a writer choosing it as a base does) before
    // the collection looked again: it stays, under its name.
    assert!(!blobs.delete_blob(&h, grace));
    assert!(blobs.exists(&h));
    age_everything(&blobs);
    assert!(blobs.delete_blob(&h, grace));
    assert!(!blobs.exists(&h));
    assert_eq!(names(&blobs).len(), 1, "only the hint: {:?}", names(&blobs));
}

#[test]
fn a_backup_of_the_same_bytes_does_not_lean_on_a_difference_whose_base_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let (h1, v2, h2) = base_and_difference(&blobs, dir.path());
    // The base damaged behind the store's back; then the same bytes as the
    // difference's are backed up again (of another file: no hint to follow).
    damage(&blobs, &h1);
    let other = dir.path().join("other.rs");
    std::fs::write(&other, &v2).unwrap();
    let (again, _) = blobs
        .store_file(&mut File::open(&other).unwrap(), &other)
        .unwrap();
    assert_eq!(again, h2);
    assert!(matches!(encoding_of(&blobs, &h2), Encoding::Packed(_)));
    assert!(read_back(&blobs, &h2).unwrap() == v2);
}

#[test]
fn a_difference_from_a_difference_is_corrupt_however_well_its_frame_decodes() {
    // One level only (a store written by someone else may chain them): a
    // well-made frame against a base that is itself a difference does not
    // read, and is moved aside like any blob that does not decode.
    let dir = tempfile::tempdir().unwrap();
    let blobs = packing(dir.path());
    let (_, v2, h2) = base_and_difference(&blobs, dir.path());
    let v3 = edited(&v2, 100);
    let frame = crate::delta::encode(&v3, &v2, packed::LEVEL).unwrap();
    let mut chained = crate::delta::header(v3.len() as u64, &h2).unwrap().to_vec();
    chained.extend_from_slice(&frame);
    let (h3, _) = hash::hash_reader(&mut &v3[..]).unwrap();
    std::fs::write(blobs.path(&h3), &chained).unwrap();
    match read_back(&blobs, &h3) {
        Err(Error::BlobCorrupt { actual, .. }) => assert_eq!(actual, UNDECODABLE),
        other => panic!("{other:?}"),
    }
    // The same frame against the whole blob it was made from would read.
    assert!(crate::delta::decode(&frame, &v2, v3.len() as u64).unwrap() == v3);
}
