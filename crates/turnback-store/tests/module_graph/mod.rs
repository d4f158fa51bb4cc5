//! The module map of a crate read from its sources, shared by the store's
//! test (`modules.rs`) and the command line's (`tests/src_modules.rs`): every
//! `use crate::`, `use super::` and `crate::`/`super::` path outside a
//! `#[cfg(test)] mod tests`, every `use child::` of a folder module, and the
//! crate root's re-exports followed to the module they come from. A path
//! into another crate (the binary's `turnback::`) is no edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of the crate whose root is `dir/root` (`src/lib.rs`), by
/// path (`""` is the crate root, `"revert::plan"` is `src/revert/plan.rs`),
/// with its source: the root, each module it declares (`mod name;`) and the
/// files of their folders. A `src/` that holds two crates (a library and a
/// binary) is read as two.
pub fn crate_modules(dir: &Path, root: &str) -> BTreeMap<String, String> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut module = prefix.to_vec();
                if name != "mod" {
                    module.push(name);
                }
                out.insert(module.join("::"), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let source = std::fs::read_to_string(dir.join(root)).unwrap();
    let mut out = BTreeMap::new();
    for line in code(&source).lines() {
        let line = line.trim();
        let line = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) else {
            continue;
        };
        let name = name.trim().to_owned();
        let file = dir.join(format!("{name}.rs"));
        if file.is_file() {
            out.insert(name.clone(), std::fs::read_to_string(&file).unwrap());
        }
        let folder = dir.join(&name);
        if folder.is_dir() {
            walk(&folder, &[name], &mut out);
        }
    }
    out.insert(String::new(), source);
    out
}

/// `source` without its unit tests (`#[cfg(test)] mod tests` is last in a
/// file) and without `//` comments.
fn code(source: &str) -> String {
    let mut out = String::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        let next = lines.peek().map(|l| l.trim_start()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]"
            && (next.starts_with("mod tests") || next.starts_with("pub(crate) mod tests"))
        {
            break;
        }
        out.push_str(line.split("//").next().unwrap());
        out.push('\n');
    }
    out
}

/// The paths one `use` tree names (`a::{b, c::{d, e as f}}` is `a::b`,
/// `a::c::d`, `a::c::e`), each as its segments.
pub fn use_paths(tree: &str) -> Vec<Vec<String>> {
    /// How an item of a tree ended.
    enum End {
        Comma,
        Close,
        Eof,
    }
    /// One item (a path, or a path and a group) after `prefix`.
    fn item(s: &[char], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> End {
        let mut path = prefix.to_vec();
        let mut word = String::new();
        let mut grouped = false;
        let end = loop {
            let Some(&c) = s.get(*at) else {
                break End::Eof;
            };
            *at += 1;
            match c {
                '{' => {
                    if !word.is_empty() {
                        path.push(std::mem::take(&mut word));
                    }
                    while let End::Comma = item(s, at, &path, out) {}
                    grouped = true;
                }
                ',' => break End::Comma,
                '}' => break End::Close,
                ':' if !word.is_empty() => path.push(std::mem::take(&mut word)),
                ':' => {}
                c if c.is_whitespace() => {
                    // `e as f` names `e`.
                    if !word.is_empty() {
                        path.push(std::mem::take(&mut word));
                        while s.get(*at).is_some_and(|c| !matches!(c, ',' | '}')) {
                            *at += 1;
                        }
                    }
                }
                c => word.push(c),
            }
        };
        if !grouped {
            if !word.is_empty() {
                path.push(word);
            }
            if path.len() > prefix.len() {
                out.push(path);
            }
        }
        end
    }
    let chars: Vec<char> = tree.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        item(&chars, &mut at, &[], &mut out);
    }
    out
}

/// The module a path written in module `from` reaches: the longest module
/// its segments name, after `crate`, `super` and `self`; a name the crate
/// root re-exports is followed to where it comes from. `None` for a path into
/// another crate.
fn target(
    modules: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, String>,
    from: &str,
    path: &[String],
) -> Option<String> {
    let mut base: Vec<String> = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "super" | "self" => from
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        first => {
            // `use child::...` in a folder module.
            let child = match from {
                "" => first.to_owned(),
                _ => format!("{from}::{first}"),
            };
            return modules.contains_key(&child).then_some(child);
        }
    };
    let mut rest = path;
    while let Some(first) = rest.first() {
        match first.as_str() {
            "crate" => {}
            "self" => {}
            "super" => {
                base.pop();
            }
            _ => break,
        }
        rest = &rest[1..];
    }
    let full: Vec<String> = base.iter().chain(rest).cloned().collect();
    for len in (1..=full.len()).rev() {
        let candidate = full[..len].join("::");
        if modules.contains_key(&candidate) {
            return Some(candidate);
        }
    }
    let first = full.first()?;
    reexports.get(first).cloned()
}

/// The tree of every `use` statement of `code` (at any depth, with any
/// visibility): what follows the word `use`, up to its `;`.
fn use_trees(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + 4..];
        if before.is_none_or(|c| c.is_whitespace() || matches!(c, '{' | ';' | ')')) {
            let end = after.find(';').unwrap_or(after.len());
            out.push(&after[..end]);
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    out
}

/// Which module each name the crate root re-exports comes from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let code = code(lib);
    for tree in use_trees(&code) {
        for path in use_paths(tree) {
            if let Some((name, module)) = path.split_last() {
                out.insert(name.clone(), module.join("::"));
            }
        }
    }
    out
}

/// Every module each module uses, by the rules of the module comment.
pub fn imports(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let reexports = reexports(&modules[""]);
    let mut graph = BTreeMap::new();
    for (module, source) in modules.iter().filter(|(m, _)| !m.is_empty()) {
        let code = code(source);
        let mut paths = Vec::new();
        for tree in use_trees(&code) {
            paths.extend(use_paths(tree));
        }
        // Paths written inline: `crate::marker::exists(..)`.
        let chars: Vec<char> = code.chars().collect();
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let mut at = 0;
        while at < chars.len() {
            let rest: String = chars[at..chars.len().min(at + 7)].iter().collect();
            let starts = rest.starts_with("crate::") || rest.starts_with("super::");
            if starts && (at == 0 || !(word(chars[at - 1]) || chars[at - 1] == ':')) {
                let mut end = at;
                while end < chars.len() && (word(chars[end]) || chars[end] == ':') {
                    end += 1;
                }
                let text: String = chars[at..end].iter().collect();
                paths.push(
                    text.split("::")
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                );
                at = end;
            } else {
                at += 1;
            }
        }
        let used: BTreeSet<String> = paths
            .iter()
            .filter_map(|p| target(modules, &reexports, module, p))
            .filter(|t| t != module && !t.is_empty())
            .collect();
        graph.insert(module.clone(), used);
    }
    graph
}

/// The circles of `graph` (strongly connected parts of more than one module).
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (m, r) in &reaches {
        if !r.contains(*m) || out.iter().any(|c| c.contains(m)) {
            continue;
        }
        let circle: Vec<String> = reaches
            .iter()
            .filter(|(o, ro)| r.contains(**o) && ro.contains(*m))
            .map(|(o, _)| (*o).clone())
            .collect();
        out.push(circle);
    }
    out
}

/// `graph` with each folder counted as one module: the top-level modules and
/// what each uses.
pub fn top_level(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let head = |p: &str| p.split("::").next().unwrap().to_owned();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, used) in graph {
        let entry = top.entry(head(m)).or_default();
        entry.extend(used.iter().map(|u| head(u)).filter(|u| *u != head(m)));
    }
    top
}
