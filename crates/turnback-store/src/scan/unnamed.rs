//! The files whose path is not UTF-8 (`caf\xe9.txt`): the index keeps paths
//! as text, so no entry can record them yet. A change of one during the
//! bracket (changed, made or deleted) is reported as not backed up, never
//! hidden as "no file changed".

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::report::Unrecorded;
use super::walk::Stat;

/// What became of the files `before` (path bytes in hex, stat at the
/// beginning) with `now` (those the commit's walk found) in the workspace
/// at `root`: one report per file made, changed or gone.
pub(super) fn changed(
    root: &Path,
    before: &BTreeMap<String, Stat>,
    now: &BTreeMap<String, Stat>,
) -> Vec<Unrecorded> {
    let mut out = Vec::new();
    let report = |hex: &str| Unrecorded::NoBackup {
        path: shown(hex),
        reason: "its name is not UTF-8, which turnback cannot record yet".into(),
    };
    for (hex, was) in before {
        // Looked at again by its bytes: the commit's walk may have listed
        // only where something happened.
        let is = bytes_of(hex).and_then(|b| {
            let md = std::fs::symlink_metadata(root.join(std::ffi::OsStr::from_bytes(&b))).ok()?;
            Some(Stat::of(&md))
        });
        if is.as_ref() != Some(was) {
            out.push(report(hex));
        }
    }
    out.extend(
        now.keys()
            .filter(|hex| !before.contains_key(*hex))
            .map(|hex| report(hex)),
    );
    out
}

/// The path in hex as a person reads it: UTF-8 where it is, each other
/// byte as `\xNN`.
fn shown(hex: &str) -> String {
    let Some(bytes) = bytes_of(hex) else {
        return hex.to_owned();
    };
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn bytes_of(hex: &str) -> Option<Vec<u8>> {
    hex.len()
        .is_multiple_of(2)
        .then(|| {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect()
        })
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_reads_as_utf8_with_the_other_bytes_escaped() {
        let hex = crate::hash::to_hex(b"d/caf\xe9.txt");
        assert_eq!(shown(&hex), "d/caf\\xe9.txt");
        assert_eq!(bytes_of(&hex).unwrap(), b"d/caf\xe9.txt");
        assert_eq!(bytes_of("zz"), None);
    }
}
