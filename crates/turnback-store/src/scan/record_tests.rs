//! A scan's record read back: the formats of earlier builds, and a record
//! damaged or written by someone else.

use super::tests::{bed, kinds};
use crate::{RevertOptions, ScanChangeKind};

/// A record a format 2 build wrote (each file a JSON line) is read by this
/// build, which writes a binary body (format 3): a bracket open across an
/// upgrade still commits.
#[test]
fn a_scan_record_of_format_2_with_files_still_commits() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("a"), "a\n").unwrap();
    std::fs::write(d.join("b"), "b\n").unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    let record = super::record::load(s.session_dir(), &id, true)
        .unwrap()
        .unwrap();
    assert_eq!(record.files.len(), 2);
    let path = s.session_dir().scan_paths(&id).0;
    let mut header = serde_json::to_value(&record.header).unwrap();
    header["format"] = 2.into();
    let mut text = format!("{header}\n");
    for f in &record.files {
        text.push_str(&serde_json::to_string(f).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    std::fs::write(d.join("a"), "changed\n").unwrap();
    let r = s.commit_scan(&id).unwrap();
    assert_eq!(kinds(&r), [("a".into(), ScanChangeKind::Modified)]);
    s.undo(RevertOptions::default()).unwrap();
    assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a\n");
}

/// A record whose body is damaged (cut short, a hostile object name) is
/// refused with an error that says so, and nothing is touched: the bracket
/// stays open, the workspace as the command left it.
#[test]
fn a_damaged_scan_record_is_refused_and_nothing_is_touched() {
    let (_home, dir, s, ws) = bed();
    let d = dir.path();
    std::fs::write(d.join("a"), "a\n").unwrap();
    let id = s.begin_scan(&ws, "m", None).unwrap();
    std::fs::write(d.join("a"), "changed\n").unwrap();
    let path = s.session_dir().scan_paths(&id).0;
    let whole = std::fs::read(&path).unwrap();
    let hostile = {
        let oid = whole
            .windows(40)
            .position(|w| w.iter().all(u8::is_ascii_hexdigit));
        let mut b = whole.clone();
        // Outside git the source is the baseline's SHA-256: not hex now.
        let at = oid.expect("a blob name in the body");
        b[at] = b'/';
        b
    };
    for bad in [whole[..whole.len() - 3].to_vec(), hostile] {
        std::fs::write(&path, &bad).unwrap();
        for end in [crate::Session::commit_scan, crate::Session::rollback_scan] {
            match end(&s, &id) {
                Err(crate::Error::ScanFailed { reason, .. }) => {
                    assert!(reason.contains("damaged scan record"), "{reason}")
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "changed\n");
            assert_eq!(s.open_scans().unwrap().len(), 1, "still open");
        }
    }
    assert!(s.entries().unwrap().is_empty());
}
