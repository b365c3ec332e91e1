//! The real 2KiB PoRep circuit through cuzk's synthesis, checked against storage-proofs.

use std::path::{Path, PathBuf};

use cuzk::c1::{read_c1_file, resolve_identity, C1Form, SectorIdentity, DEFAULT_MAX_C1_BYTES};
use cuzk::porep::{bind, BindSectorError};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/c1")
        .join(name)
}

#[test]
fn both_forms_parse_and_name_their_sector() {
    let wrapper = read_c1_file(&fixture("s-t01000-1.json"), DEFAULT_MAX_C1_BYTES).expect("wrapper");
    assert_eq!(wrapper.form, C1Form::Wrapper);
    assert_eq!(wrapper.wrapper_sector_num, Some(1));
    let bare = read_c1_file(&fixture("s-t01000-2.json"), DEFAULT_MAX_C1_BYTES).expect("bare");
    assert_eq!(bare.form, C1Form::Bare);
    assert_eq!(bare.wrapper_sector_num, None);
    let id = resolve_identity(&fixture("s-t01000-2.json"), &bare, None).expect("identity");
    assert_eq!(
        id,
        SectorIdentity {
            miner_id: 1000,
            sector_num: 2
        }
    );
}

#[test]
fn synthesized_partition_satisfies_every_constraint_and_matches_public_inputs() {
    for name in ["s-t01000-1.json", "s-t01000-2.json"] {
        let path = fixture(name);
        let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
        let identity = resolve_identity(&path, &c1, None).expect("identity");
        let sector = bind(c1, identity).expect("bind");
        assert_eq!(sector.circuits.partition_count(), 1);
        let partition = sector
            .circuits
            .synthesize_partition(0, &Default::default())
            .expect("synthesize");
        // The 2KiB circuit: 2,687,921 constraints, plus one input constraint for each of
        // its 40 inputs (the constant one and 39 public inputs).
        assert_eq!(partition.public_inputs().len(), 39);
        assert_eq!(partition.num_constraints(), 2_687_921 + 40, "{name}");
        assert_eq!(partition.first_unsatisfied(), None, "{name}");
        let expected = sector.circuits.public_inputs(0).expect("public inputs");
        assert_eq!(partition.public_inputs(), &expected[..], "{name}");
    }
}

#[test]
fn wrong_miner_is_caught_before_proving() {
    let path = fixture("s-t01000-1.json");
    let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
    let wrong = SectorIdentity {
        miner_id: 1001,
        sector_num: 1,
    };
    let err = match bind(c1, wrong) {
        Err(err) => err,
        Ok(_) => panic!("a C1 file bound to the wrong miner"),
    };
    assert!(matches!(err, BindSectorError::ReplicaIdMismatch { .. }));
    let text = err.to_string();
    assert!(
        text.contains("s-t01001-1") && text.contains("hint"),
        "{text}"
    );
}
