//! Property tests of the C1 parser: no input, random or a mutated real file, makes parsing,
//! identity resolution or binding panic; each either works or returns an error.

mod common;

use std::path::Path;

use common::fixture;
use cuzk::c1::{parse_c1, resolve_identity};
use proptest::prelude::*;

fn real_files() -> Vec<Vec<u8>> {
    ["s-t01000-1.json", "s-t01000-2.json"]
        .iter()
        .map(|name| std::fs::read(fixture(name)).expect("fixture"))
        .collect()
}

/// Parses, resolves and binds, as the pipeline does; returns whether it got to a sector.
fn check(name: &str, bytes: &[u8]) -> bool {
    let path = Path::new(name);
    let Ok(c1) = parse_c1(path, bytes) else {
        return false;
    };
    let Ok(identity) = resolve_identity(path, &c1, Some(1000)) else {
        return false;
    };
    cuzk::porep::bind(c1, identity).is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        check("s-t01000-1.json", &bytes);
    }

    #[test]
    fn random_json_never_panics(text in r#"\{("[a-zA-Z_]{1,12}":(null|[0-9]{1,5}|"[a-zA-Z0-9+/=]{0,40}"|\[[0-9,]{0,20}\]),?){0,6}\}"#) {
        check("s-t01000-1.json", text.as_bytes());
    }

    #[test]
    fn mutated_real_files_never_panic(
        which in 0usize..2,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = real_files().swap_remove(which);
        for (at, byte, kind) in edits {
            let i = at.index(bytes.len());
            match kind {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => { bytes.remove(i); }
            }
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        let name = if which == 0 { "s-t01000-1.json" } else { "s-t01000-2.json" };
        check(name, &bytes);
    }
}

#[test]
fn the_unmutated_files_bind() {
    let files = real_files();
    assert!(check("s-t01000-1.json", &files[0]));
    assert!(check("s-t01000-2.json", &files[1]));
}
