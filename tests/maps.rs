//! The maps stay true: every top-level module of `src/lib.rs` is named in README's map and
//! in the crate's own doc, so a new room cannot land unexplained.

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

/// README's section from `### The map` to the next heading.
fn readme_map(readme: &str) -> &str {
    let start = readme
        .find("### The map")
        .expect("README has a `### The map` section");
    let rest = &readme[start + 1..];
    let end = rest.find("\n#").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

#[test]
fn every_top_level_module_is_on_readmes_map() {
    let lib = read("src/lib.rs");
    let modules = top_level_modules(&lib);
    assert!(modules.len() > 20, "lib.rs read wrong: {modules:?}");
    let readme = read("README.md");
    let map = readme_map(&readme);
    let missing: Vec<&String> = modules
        .iter()
        .filter(|m| !map.contains(&format!("`{m}`")) && !map.contains(&format!("`{m}::")))
        .collect();
    assert!(
        missing.is_empty(),
        "README's map (### The map) does not name {missing:?}"
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
    let readme = read("README.md");
    let map = readme_map(&readme);
    assert!(map.contains("`cuda` (the default"), "{map}");
    let backend = read("src/backend/mod.rs");
    assert!(backend.contains("[`cuda`] (the default"), "backend's doc");
}
