//! The production shapes cuzk benchmarks with: 32GiB and 64GiB partition circuits counted on
//! the blank circuit (as the parameter generator sees them), and shape C1 files of their real
//! structure that bind like real ones.

use std::path::Path;

use cuzk::c1::{parse_c1, SectorIdentity};
use cuzk::porep::bind;
use rand::SeedableRng;

#[test]
fn the_32gib_partition_circuit_has_the_real_constraint_count() {
    let counts =
        cuzk::circuits::count_shape(cuzk::proof_kind::CircuitId::seal(32 << 30)).expect("count");
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
    let counts = cuzk::circuits::count_shape(CircuitId::update(32 << 30)).expect("count");
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
    // What the circuit asserts before it allocates anything: the challenges of partition k
    // lie in k's subtree of TreeD, so their paths share its top 4 levels and their indices
    // end in k's bits.
    for (k, bytes) in update.vanilla_proofs.iter().enumerate() {
        use storage_proofs_core::merkle::MerkleProofTrait;
        let proof: storage_proofs_update::PartitionProof<filecoin_proofs::SectorShape32GiB> =
            bincode::deserialize(bytes).expect("a partition proof");
        let paths: Vec<_> = proof
            .challenge_proofs
            .iter()
            .map(|challenge| challenge.proof_d_new.path())
            .collect();
        assert_eq!(paths[0].len(), 30, "TreeD's height at 32GiB");
        for path in &paths {
            assert_eq!(path[26..], paths[0][26..], "partition {k}'s path");
            let top: usize = (26..30).map(|level| path[level].1 << (level - 26)).sum();
            assert_eq!(top, k, "a challenge of partition {k} outside its subtree");
        }
        // And each new replica label is the old one plus the new data times rho, at the
        // challenges the circuit derives from comm_r_new (it asserts that too).
        use blstrs::Scalar as Fr;
        let nodes = 1 << 30;
        let phi = storage_proofs_update::phi(
            &filecoin_proofs::DefaultPieceDomain::from(fr(&update.comm_d_new)),
            &filecoin_proofs::DefaultTreeDomain::from(fr(&update.comm_r_old)),
        );
        let shift = 30 - storage_proofs_update::constants::h_default(nodes);
        let challenges =
            storage_proofs_update::Challenges::new(nodes, fr(&update.comm_r_new).into(), k);
        for (c, challenge) in challenges.zip(&proof.challenge_proofs) {
            let old: Fr = challenge.proof_r_old.leaf().into();
            let data: Fr = challenge.proof_d_new.leaf().into();
            let new: Fr = challenge.proof_r_new.leaf().into();
            assert_eq!(
                new,
                old + data * storage_proofs_update::rho(&phi, c >> shift)
            );
        }
    }
    let sector = cuzk::update::bind(update, Some(identity)).expect("binds");
    assert_eq!(sector.circuits.partition_count(), 16);
    assert!(sector.is_benchmark);
    assert_eq!(sector.circuit, CircuitId::update(32 << 30));
}

/// A commitment's 32 bytes as the field element they encode.
fn fr(bytes: &[u8; 32]) -> blstrs::Scalar {
    use ff::PrimeField;
    Option::from(blstrs::Scalar::from_repr(*bytes)).expect("a field element")
}
