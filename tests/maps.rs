//! The maps stay true: every top-level module of `src/lib.rs` is named in the map of
//! docs/architecture.md and in the crate's own doc, so a new room cannot land unexplained.

use std::path::Path;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The `pub mod NAME;` lines of `src/lib.rs`.
fn top_level_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .filter_map(|rest| rest.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// The file that holds the map.
const MAP_FILE: &str = "docs/architecture.md";

/// The map file's section from `### The map` to the next heading.
fn map_section(text: &str) -> &str {
    let start = text
        .find("### The map")
        .expect("docs/architecture.md has a `### The map` section");
    let rest = &text[start + 1..];
    let end = rest.find("\n#").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

#[test]
fn every_top_level_module_is_on_the_map() {
    let lib = read("src/lib.rs");
    let modules = top_level_modules(&lib);
    assert!(modules.len() > 20, "lib.rs read wrong: {modules:?}");
    let text = read(MAP_FILE);
    let map = map_section(&text);
    let missing: Vec<&String> = modules
        .iter()
        .filter(|m| !map.contains(&format!("`{m}`")) && !map.contains(&format!("`{m}::")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md's map (### The map) does not name {missing:?}"
    );
}

#[test]
fn every_top_level_module_is_in_the_crate_doc() {
    let lib = read("src/lib.rs");
    let doc: String = lib
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<String> = top_level_modules(&lib)
        .into_iter()
        .filter(|m| !doc.contains(&format!("[`{m}`]")) && !doc.contains(&format!("[`{m}::")))
        .collect();
    assert!(
        missing.is_empty(),
        "src/lib.rs's doc does not name {missing:?}"
    );
}

#[test]
fn the_map_names_the_default_backend() {
    let text = read(MAP_FILE);
    let map = map_section(&text);
    assert!(map.contains("`cuda` (the default"), "{map}");
    let backend = read("src/backend/mod.rs");
    assert!(backend.contains("[`cuda`] (the default"), "backend's doc");
}
