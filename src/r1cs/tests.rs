use super::*;
use crate::synth::synthesize;
use crate::synth::tests::CubeCircuit;

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool")
}

fn assert_same(ours: &SynthesizedPartition, full: &SynthesizedPartition) {
    assert_eq!(ours.a, full.a);
    assert_eq!(ours.b, full.b);
    assert_eq!(ours.c, full.c);
    assert_eq!(ours.input_assignment, full.input_assignment);
    assert_eq!(ours.aux_assignment, full.aux_assignment);
    assert_eq!(ours.a_aux_density.bv, full.a_aux_density.bv);
    assert_eq!(ours.b_input_density.bv, full.b_input_density.bv);
    assert_eq!(ours.b_aux_density.bv, full.b_aux_density.bv);
    assert_eq!(
        ours.b_aux_density.get_total_density(),
        full.b_aux_density.get_total_density()
    );
}

#[test]
fn shape_counts_agree_with_a_synthesis() {
    let counts = count_shape(CubeCircuit { x: None }).expect("count");
    let p = synthesize(CubeCircuit {
        x: Some(Fr::from(3u64)),
    })
    .expect("synthesis");
    assert_eq!(counts.constraints, p.num_constraints() as u64);
    assert_eq!(counts.inputs, p.input_assignment.len() as u64);
    assert_eq!(counts.aux, p.aux_assignment.len() as u64);
    assert_eq!(
        counts.a_aux_density,
        p.a_aux_density.get_total_density() as u64
    );
    assert_eq!(
        counts.b_input_density,
        p.b_input_density.get_total_density() as u64
    );
    assert_eq!(
        counts.b_aux_density,
        p.b_aux_density.get_total_density() as u64
    );
    assert_eq!(counts.domain(), 8);
}

#[test]
fn witness_only_synthesis_matches_the_full_one_and_survives_a_round_trip() {
    let r1cs = Arc::new(R1cs::record(CubeCircuit { x: None }).expect("record"));
    assert_eq!(r1cs.counts().constraints, 5);
    let circuit = CubeCircuit {
        x: Some(Fr::from(5u64)),
    };
    let full = synthesize(circuit.clone()).expect("full");
    let ours = r1cs
        .synthesize(circuit.clone(), &pool(), Capacity::default(), false)
        .expect("witness only");
    assert_same(&ours, &full);
    assert!(ours.profile.bytes > 0 && ours.deferred.is_none());

    // Deferred: the witness only, and the matrices that make a, b and c from it.
    let mut deferred = r1cs
        .synthesize(circuit.clone(), &pool(), Capacity::default(), true)
        .expect("deferred");
    assert!(deferred.a.is_empty() && deferred.b.is_empty() && deferred.c.is_empty());
    assert_eq!(deferred.num_constraints(), full.num_constraints());
    assert!(deferred.profile.bytes < ours.profile.bytes);
    deferred.evaluate_deferred();
    assert!(deferred.deferred.is_none());
    assert_same(&deferred, &full);

    // Into a lent set: the same a, b and c, read where they were written; moved out for a
    // prover that takes them by value; a set of another size goes back unused.
    use crate::host_abc::LendsAbc;
    let lender = crate::host_abc::heap::HeapLender {
        most: 2,
        ..Default::default()
    };
    let rows = full.num_constraints();
    let mut lent = r1cs
        .synthesize(circuit.clone(), &pool(), Capacity::default(), true)
        .expect("deferred");
    let deferred_bytes = lent.profile.bytes;
    lent.evaluate_deferred_into(lender.lend(rows));
    assert!(lent.a.is_empty() && lent.lent_abc.is_some());
    assert_eq!(lent.abc(), full.abc());
    assert_eq!(lent.num_constraints(), rows);
    assert_eq!(lent.profile.bytes, deferred_bytes + 3 * rows as u64 * 32);
    assert_eq!(lent.first_unsatisfied(), None);
    lent.own_abc();
    assert!(lent.lent_abc.is_none());
    assert_same(&lent, &full);
    assert_eq!(lender.idle.lock().unwrap().len(), 1, "the set went back");
    let mut wrong = r1cs
        .synthesize(circuit.clone(), &pool(), Capacity::default(), true)
        .expect("deferred");
    wrong.evaluate_deferred_into(lender.lend(rows + 1));
    assert!(wrong.lent_abc.is_none());
    assert_same(&wrong, &full);
    assert_eq!(lender.idle.lock().unwrap().len(), 2);

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cube.r1cs");
    r1cs.save(&path).expect("save");
    let loaded = Arc::new(R1cs::load(&path).expect("load"));
    assert_eq!(loaded.counts(), r1cs.counts());
    let again = loaded
        .synthesize(circuit, &pool(), Capacity::default(), false)
        .expect("mapped");
    assert_same(&again, &full);

    // One flipped byte anywhere is caught by the digest.
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[100] ^= 1;
    std::fs::write(&path, bytes).expect("write");
    let err = R1cs::load(&path).err().expect("damage is caught");
    assert!(err.to_string().contains("digest"), "{err}");
}

#[test]
fn a_witness_of_bits_is_held_compact_only_with_its_evaluation_deferred() {
    let circuit = crate::synth::tests::BitsCircuit {
        value: Some(0xdead_beef_0123_4567),
    };
    let mut whole = synthesize(circuit.clone()).expect("synthesis");
    assert_eq!(whole.first_unsatisfied(), None);
    assert!(
        !whole.compact_witness(),
        "a, b and c on the host: left whole"
    );
    let r1cs = Arc::new(R1cs::record(circuit.clone()).expect("record"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut deferred = r1cs
        .synthesize(circuit, &pool, Capacity::default(), true)
        .expect("deferred");
    let before = deferred.bytes_in_flight();
    assert!(deferred.compact_witness());
    assert!(!deferred.compact_witness(), "once");
    assert!(deferred.aux_assignment.is_empty());
    assert_eq!(deferred.aux_len(), whole.aux_assignment.len());
    assert!(
        deferred.bytes_in_flight() < before / 4,
        "{before} bytes before"
    );
    deferred.evaluate_deferred();
    assert_eq!(deferred.aux_assignment, whole.aux_assignment);
    assert_eq!(
        (deferred.a, deferred.b, deferred.c),
        (whole.a, whole.b, whole.c)
    );
}
