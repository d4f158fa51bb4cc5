//! The store's module map (docs/ARCHITECTURE.md) holds: no module imports
//! another that imports it back, directly or round a circle, and no module is
//! over 600 lines. Read from the sources themselves (`module_graph/`, which
//! `tests/src_modules.rs` runs on the command line's sources too).

mod module_graph;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use module_graph::{circles, crate_modules, imports, top_level, use_paths};

/// The longest a module may be (issue 12): past this, it holds more than one
/// job.
const MAX_LINES: usize = 600;

/// Every module of the crate, by path (`""` is the crate root, `"revert::plan"`
/// is `src/revert/plan.rs`), with its source.
fn modules() -> BTreeMap<String, String> {
    crate_modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "lib.rs")
}

#[test]
fn use_trees_are_read_whole() {
    let paths: Vec<String> = use_paths("crate::a::{b, c::{d, e as f}, g}")
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "crate::a::g"
        ]
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let modules = modules();
    let graph = imports(&modules);
    // The reading works: modules known to use others are seen to.
    assert!(graph["session::handle"].contains("journal"), "{graph:#?}");
    assert!(graph["revert::run"].contains("revert::apply"), "{graph:#?}");
    assert!(graph["diff"].contains("revert"), "{graph:#?}");
    let by_module: Vec<Vec<String>> = circles(&graph);
    assert!(
        by_module.is_empty(),
        "modules that import each other: {by_module:?}"
    );
    // Nor round a circle of top-level modules (a folder counted as one).
    let by_folder = circles(&top_level(&graph));
    assert!(
        by_folder.is_empty(),
        "top-level modules that import each other: {by_folder:?}"
    );
}

#[test]
fn the_reading_finds_a_circle_where_there_is_one() {
    let mut modules = BTreeMap::new();
    modules.insert(String::new(), "pub use a::A;\nmod a;\nmod b;\n".to_owned());
    modules.insert("a".to_owned(), "use crate::b::{self, B};\n".to_owned());
    modules.insert(
        "b".to_owned(),
        "fn f() { crate::A::new(); }\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n".to_owned(),
    );
    modules.insert("c".to_owned(), "use super::b as other;\n".to_owned());
    let graph = imports(&modules);
    assert_eq!(circles(&graph), vec![vec!["a".to_owned(), "b".to_owned()]]);
    assert!(
        graph["b"].iter().all(|m| m != "c"),
        "a unit test's import counted"
    );
    assert_eq!(graph["c"], BTreeSet::from(["b".to_owned()]));
}

#[test]
fn no_module_is_over_600_lines() {
    let long: Vec<(String, usize)> = modules()
        .into_iter()
        .map(|(m, s)| (m, s.lines().count()))
        .filter(|(_, n)| *n > MAX_LINES)
        .collect();
    assert!(long.is_empty(), "modules over {MAX_LINES} lines: {long:?}");
}
