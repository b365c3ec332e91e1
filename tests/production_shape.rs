//! The production shapes cuzk benchmarks with: 32GiB and 64GiB partition circuits counted on
//! the blank circuit (as the parameter generator sees them), and shape C1 files of their real
//! structure that bind like real ones.

use std::path::Path;

use cuzk::c1::{parse_c1, SectorIdentity};
use cuzk::porep::bind;
use rand::SeedableRng;

#[test]
fn the_32gib_partition_circuit_has_the_real_constraint_count() {
    let counts = cuzk::shape::count(cuzk::proof_kind::CircuitId::seal(32 << 30)).expect("count");
    // 130,278,541 constraints and 328 inputs per partition (rust-fil-proofs' circuitinfo),
    // plus the prover's one constraint per input.
    assert_eq!(counts.constraints, 130_278_541 + 328);
    assert_eq!(counts.inputs, 328);
    assert_eq!(counts.domain(), 1 << 27);
    eprintln!("32GiB partition: {counts:?}");
}

#[test]
fn a_32gib_shape_file_has_the_real_structure_and_binds() {
    let identity = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(32);
    let output = cuzk::shape::synthetic_c1(32 << 30, identity, &mut rng).expect("shape C1");
    let json = serde_json::to_value(&output).expect("JSON");
    let partitions = json["vanilla_proofs"]["StackedDrg32GiBV1"]
        .as_array()
        .expect("32GiB vanilla proofs");
    assert_eq!(partitions.len(), 10);
    for partition in partitions {
        assert_eq!(partition.as_array().map(Vec::len), Some(18), "challenges");
    }
    let proof = &partitions[0][0];
    let path_len = |p: &serde_json::Value| p["path"].as_array().map(Vec::len);
    // comm_d: a binary tree over 2^30 nodes.
    assert_eq!(
        path_len(&proof["comm_d_proofs"]["data"]["Single"]["path"]),
        Some(30)
    );
    // Trees R and C: 8-ary base trees of 2^27 leaves under an 8-ary sub tree.
    let sub = &proof["comm_r_last_proof"]["data"]["Sub"];
    assert_eq!(path_len(&sub["base_proof"]), Some(9));
    assert_eq!(path_len(&sub["sub_proof"]), Some(1));
    assert_eq!(
        sub["base_proof"]["path"][0]["hashes"]
            .as_array()
            .map(Vec::len),
        Some(7)
    );
    let columns = &proof["replica_column_proofs"];
    assert_eq!(columns["drg_parents"].as_array().map(Vec::len), Some(6));
    assert_eq!(columns["exp_parents"].as_array().map(Vec::len), Some(8));
    assert_eq!(
        columns["c_x"]["column"]["rows"].as_array().map(Vec::len),
        Some(11)
    );
    assert_eq!(proof["labeling_proofs"].as_array().map(Vec::len), Some(11));

    let bytes = cuzk::shape::wrap_benchmark_c1(&output, identity).expect("wrap");
    let c1 = parse_c1(Path::new("s-t01000-1.json"), &bytes).expect("parses");
    assert!(c1.is_benchmark, "marked as benchmark input");
    let sector = bind(c1, identity).expect("binds");
    assert_eq!(sector.circuits.partition_count(), 10);
    assert!(sector.is_benchmark);
}

#[test]
fn the_32gib_update_circuit_has_the_real_constraint_count_and_its_shape_binds() {
    use cuzk::proof_kind::CircuitId;
    let counts = cuzk::shape::count(CircuitId::update(32 << 30)).expect("count");
    // 81,049,499 constraints per partition (storage-proofs-update's own constraint test) and
    // four public inputs besides the constant one, plus the prover's one constraint per input.
    assert_eq!(counts.inputs, 5);
    assert_eq!(counts.constraints, 81_049_499 + 5);
    assert_eq!(counts.domain(), 1 << 27);

    let identity = SectorIdentity {
        miner_id: 1000,
        sector_num: 3,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(33);
    let bytes = cuzk::shape::synthetic_update(32 << 30, identity, &mut rng).expect("shape");
    let path = Path::new("s-t01000-3.json");
    let cuzk::input::JobInput::Update(update) =
        cuzk::input::parse_job_input(path, &bytes).expect("parses")
    else {
        panic!("a shape update input reads as an update");
    };
    assert!(update.is_benchmark, "marked as benchmark input");
    assert_eq!(update.vanilla_proofs.len(), 16);
    let sector = cuzk::update::bind(update, Some(identity)).expect("binds");
    assert_eq!(sector.circuits.partition_count(), 16);
    assert!(sector.is_benchmark);
    assert_eq!(sector.circuit, CircuitId::update(32 << 30));
}
