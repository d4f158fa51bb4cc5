//! The command line's module map (docs/ARCHITECTURE.md) holds as the store's
//! does: no module of `src/` imports another that imports it back, directly
//! or round a circle, file by file and folder by folder. `src/` holds two
//! crates, the library (`lib.rs`: the presentation an agent can share) and
//! the binary (`main.rs`), each read on its own; the binary uses the library
//! only as another crate (`turnback::`). The reading is the store's
//! (`crates/turnback-store/tests/module_graph/`).

#[path = "../crates/turnback-store/tests/module_graph/mod.rs"]
mod module_graph;

use std::collections::BTreeMap;
use std::path::Path;

use module_graph::{circles, crate_modules, imports, top_level};

/// The modules of the crate whose root is `src/ROOT`.
fn modules(root: &str) -> BTreeMap<String, String> {
    crate_modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), root)
}

/// The circles of the crate rooted at `src/ROOT`: module by module, then
/// folder by folder (a folder counted as one module).
fn circles_of(root: &str) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let graph = imports(&modules(root));
    (circles(&graph), circles(&top_level(&graph)))
}

#[test]
fn the_two_crates_of_src_are_read_apart() {
    let lib = modules("lib.rs");
    let bin = modules("main.rs");
    assert!(lib.contains_key("text") && !bin.contains_key("text"));
    assert!(bin.contains_key("commands::log") && !lib.contains_key("commands::log"));
    // The reading works: modules known to use others are seen to.
    let graph = imports(&bin);
    assert!(graph["commands::log"].contains("context"), "{graph:#?}");
    assert!(
        graph["hooks::claude"].contains("hooks::event"),
        "{graph:#?}"
    );
}

#[test]
fn no_module_of_the_library_imports_one_that_imports_it_back() {
    let (by_module, by_folder) = circles_of("lib.rs");
    assert!(
        by_module.is_empty(),
        "modules that import each other: {by_module:?}"
    );
    assert!(
        by_folder.is_empty(),
        "top-level modules that import each other: {by_folder:?}"
    );
}

/// The one circle of the binary still to break (issue 33): the global
/// options and `Command` in `cli.rs`, which the commands, the context and
/// `serve` use back. No other circle may join it, nor it grow.
const LEFT: &[&str] = &["cli", "commands", "context", "serve", "serve::request"];

#[test]
fn no_module_of_the_binary_imports_one_that_imports_it_back_but_the_cli_circle() {
    let (by_module, _) = circles_of("main.rs");
    let left: Vec<String> = LEFT.iter().map(|m| (*m).to_owned()).collect();
    let others: Vec<&Vec<String>> = by_module.iter().filter(|c| **c != left).collect();
    assert!(
        others.is_empty(),
        "modules that import each other: {others:?}"
    );
}
