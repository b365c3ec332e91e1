//! Native witnesses are the gadgets' witnesses, element for element: on real 2KiB sectors of
//! two miners (every challenge), on a 512MiB shape partition and on a sample of challenges of
//! 32GiB shape partitions (the real circuit over random data; partitions of those sizes cannot be sealed
//! here). Two-partition sectors are checked in multi_partition.rs, and every proof the
//! default (native) synthesis makes is checked by `verify_seal` throughout the suite.
//! Update partitions likewise, whole: the real 2KiB updates of two miners, and shape
//! partitions of 8MiB, 512MiB, 32GiB and 64GiB (sub- and top-tree levels in TreeR); every
//! update proof the suite makes is checked by `verify_empty_sector_update_proof`.

mod common;

use std::ops::Range;

use cuzk::c1::{parse_c1, read_c1_file, resolve_identity, SectorIdentity, DEFAULT_MAX_C1_BYTES};
use cuzk::porep::bind;
use cuzk::sector::Sector;
use rand::SeedableRng;

use common::{fixture, read_update, update_fixture};

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool")
}

fn real(name: &str) -> Sector {
    let path = fixture(name);
    let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
    let identity = resolve_identity(&path, &c1, None).expect("identity");
    bind(c1, identity).expect("bind")
}

fn shape(sector_size: u64, seed: u64) -> Sector {
    let identity = SectorIdentity {
        miner_id: 1000 + seed,
        sector_num: seed,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let output = cuzk::shape::synthetic_c1(sector_size, identity, &mut rng).expect("shape C1");
    let bytes = cuzk::shape::wrap_benchmark_c1(&output, identity).expect("wrap");
    let name = format!("{identity}.json");
    let c1 = parse_c1(std::path::Path::new(&name), &bytes).expect("parse shape");
    bind(c1, identity).expect("bind shape")
}

/// Checks partition `k` (or a sample of its challenges); returns the variable counts.
fn assert_identical(
    sector: &Sector,
    k: usize,
    challenges: Option<Range<usize>>,
    what: &str,
) -> (usize, usize) {
    let check = sector
        .circuits
        .check_native_witness(k, challenges.clone(), &pool())
        .unwrap_or_else(|e| panic!("{what}: {e:#}"));
    eprintln!(
        "{what} partition {k} challenges {challenges:?}: {} inputs, {} aux; gadgets {:.0} ms, native {:.0} ms",
        check.inputs, check.aux, check.gadget_ms, check.native_ms
    );
    if let Some(mismatch) = check.mismatch {
        panic!("{what} partition {k}: {mismatch}");
    }
    assert!(check.aux > 1000, "{what}: a real circuit was compared");
    (check.inputs, check.aux)
}

/// Checks partition 0 whole, and that it has the recorded circuit's counts.
fn assert_whole_and_recorded(sector: &Sector, what: &str, recorded: &cuzk::r1cs::R1csCounts) {
    let (inputs, aux) = assert_identical(sector, 0, None, what);
    assert_eq!(
        (inputs as u64, aux as u64),
        (recorded.inputs, recorded.aux),
        "{what}: the whole partition has the recorded circuit's counts"
    );
}

#[test]
fn real_2kib_sectors_of_two_miners_have_identical_witnesses_with_the_recorded_counts() {
    let recorded = real("s-t01000-1.json")
        .circuits
        .record_constraints(cuzk::r1cs::R1cs::recording_threads())
        .expect("record")
        .counts();
    for name in ["s-t01000-1.json", "s-t01000-2.json", "s-t02000-7.json"] {
        assert_whole_and_recorded(&real(name), name, &recorded);
    }
}

#[test]
fn a_512mib_shape_partition_has_identical_witnesses() {
    // One partition of two challenges: all of it.
    let sector = shape(512 << 20, 5);
    assert_identical(&sector, 0, None, "512MiB shape");
}

#[test]
fn a_32gib_shape_partition_has_identical_witnesses_on_a_sample_of_challenges() {
    let sector = shape(32 << 30, 32);
    assert_identical(&sector, 3, Some(7..8), "32GiB shape");
    assert_identical(&sector, 9, Some(17..18), "32GiB shape");
}

fn real_update(name: &str) -> Sector {
    // The sector's identity names it only; the proof does not depend on it.
    cuzk::update::bind(read_update(&update_fixture(name)), None).expect("bind update")
}

fn update_shape(sector_size: u64, seed: u64) -> Sector {
    let identity = SectorIdentity {
        miner_id: 1000 + seed,
        sector_num: seed,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let bytes = cuzk::shape::synthetic_update(sector_size, identity, &mut rng).expect("shape");
    let name = format!("{identity}.json");
    let cuzk::input::JobInput::Update(update) =
        cuzk::input::parse_job_input(std::path::Path::new(&name), &bytes).expect("parse shape")
    else {
        panic!("a shape update reads as an update");
    };
    cuzk::update::bind(update, Some(identity)).expect("bind shape update")
}

#[test]
fn real_2kib_updates_of_two_miners_have_identical_witnesses_with_the_recorded_counts() {
    let recorded = cuzk::update::record_constraints(2048, 1)
        .expect("record")
        .counts();
    for name in ["s-t01000-11.json", "s-t02000-12.json"] {
        assert_whole_and_recorded(&real_update(name), name, &recorded);
    }
}

#[test]
fn update_shape_partitions_have_identical_witnesses() {
    // 8MiB: 4 partitions (the last one's bits), 512MiB: 16, each with its apex tree of 128.
    assert_identical(&update_shape(8 << 20, 8), 3, None, "8MiB update shape");
    assert_identical(&update_shape(512 << 20, 9), 5, None, "512MiB update shape");
}

#[test]
fn production_update_shape_partitions_have_identical_witnesses() {
    // TreeR with a sub-tree level (32GiB) and a top-tree level too (64GiB); 86 challenges,
    // about 20 CPU seconds each through the gadgets.
    assert_identical(&update_shape(32 << 30, 10), 11, None, "32GiB update shape");
    assert_identical(&update_shape(64 << 30, 11), 15, None, "64GiB update shape");
}

#[test]
fn an_update_partition_is_never_compared_by_a_sample_of_challenges() {
    let sector = update_shape(2048, 12);
    let err = sector
        .circuits
        .check_native_witness(0, Some(0..1), &pool())
        .expect_err("an update's challenges are fixed by its circuit");
    assert!(format!("{err:#}").contains("whole"), "{err:#}");
}
