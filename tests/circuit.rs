//! The real 2KiB PoRep circuit through cuzk's synthesis, checked against storage-proofs.

use std::path::{Path, PathBuf};

use cuzk::c1::{read_c1_file, resolve_identity, C1Form, SectorIdentity, DEFAULT_MAX_C1_BYTES};
use cuzk::porep::bind;
use cuzk::sector::BindSectorError;

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

/// A real 512MiB sector (made by examples/make_c1.rs; scripts/gpu-round.sh's PROVE step proves
/// it on a GPU): it parses, binds to its replica id and not under another sector number, and
/// is one partition of the 512MiB circuit.
#[test]
fn a_real_512mib_sector_binds_to_its_replica_id() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/c1-512mib/s-t01000-300.json");
    let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
    assert_eq!(c1.wrapper_sector_num, Some(300));
    let identity = resolve_identity(&path, &c1, None).expect("identity");
    let sector = bind(c1, identity).expect("bind");
    assert_eq!(sector.sector_size(), 512 << 20);
    assert_eq!(sector.circuits.partition_count(), 1);
    assert!(!sector
        .circuits
        .public_inputs(0)
        .expect("public inputs")
        .is_empty());

    let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
    let wrong = SectorIdentity {
        miner_id: 1000,
        sector_num: 301,
    };
    assert!(matches!(
        bind(c1, wrong),
        Err(BindSectorError::ReplicaIdMismatch { .. })
    ));
}

/// The memory budget charges SupraSeal's own buffers for a share of each point set
/// (`supraseal::host_buffers::ESTIMATED_TAIL_SHARE`): the points whose scalar is neither 0 nor 1. The
/// real circuit's witness must not need more, alone or two partitions to a call.
#[test]
fn supraseals_tail_on_real_sectors_is_within_what_the_budget_charges() {
    use cuzk::backend::supraseal::host_buffers::{TailCounts, ESTIMATED_TAIL_SHARE};
    let partitions: Vec<_> = ["s-t01000-1.json", "s-t01000-2.json"]
        .iter()
        .map(|name| {
            let path = fixture(name);
            let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
            let identity = resolve_identity(&path, &c1, None).expect("identity");
            let sector = bind(c1, identity).expect("bind");
            sector
                .circuits
                .synthesize_partition(0, &Default::default())
                .expect("synthesize")
        })
        .collect();
    let (one, both) = (
        TailCounts::of(&[&partitions[0]]),
        TailCounts::of(&[&partitions[0], &partitions[1]]),
    );
    // The 2KiB parameter file's counts, as SupraSeal sees them.
    let p = &partitions[0];
    let layout = cuzk::params::load::ParamsLayout {
        vk_bytes: 0,
        ic: p.input_assignment.len() as u64,
        h: (p.a.len() as u64).next_power_of_two() - 1,
        l: p.aux_assignment.len() as u64,
        a: p.input_assignment.len() as u64 + p.a_aux_density.get_total_density() as u64,
        b: (p.b_input_density.get_total_density() + p.b_aux_density.get_total_density()) as u64,
    };
    eprintln!(
        "SupraSeal's tail at 2KiB: one partition {one:?} ({:.1}% of the points at most), two {both:?} ({:.1}%)",
        100.0 * one.share_of(&layout),
        100.0 * both.share_of(&layout)
    );
    assert!(one.l > 0 && both.l >= one.l, "{one:?} {both:?}");
    assert!(
        both.share_of(&layout) <= ESTIMATED_TAIL_SHARE,
        "the budget charges {ESTIMATED_TAIL_SHARE} of the points, the witness needs {}",
        both.share_of(&layout)
    );
}
