//! Pre-compiled constraints on real 2KiB partitions: the witness-only pass over the recorded
//! R1CS gives exactly what full synthesis gives (a, b, c, the assignments and the densities),
//! for a sector other than the one the constraints were recorded from, and from the saved file
//! as well as from memory.

mod common;

use std::sync::Arc;
use std::time::Instant;

use cuzk::c1::{read_c1_file, resolve_identity, DEFAULT_MAX_C1_BYTES};
use cuzk::porep::{bind, Sector, SynthesisPlan};
use cuzk::r1cs::R1cs;
use cuzk::synth::SynthesizedPartition;

use common::fixture;

fn sector(name: &str) -> Sector {
    let path = fixture(name);
    let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
    let identity = resolve_identity(&path, &c1, None).expect("identity");
    bind(c1, identity).expect("bind")
}

fn assert_same(ours: &SynthesizedPartition, full: &SynthesizedPartition, what: &str) {
    assert_eq!(ours.num_constraints(), full.num_constraints(), "{what}");
    assert!(ours.a == full.a, "{what}: a differs");
    assert!(ours.b == full.b, "{what}: b differs");
    assert!(ours.c == full.c, "{what}: c differs");
    assert!(
        ours.input_assignment == full.input_assignment,
        "{what}: inputs differ"
    );
    assert!(
        ours.aux_assignment == full.aux_assignment,
        "{what}: aux differ"
    );
    assert_eq!(ours.a_aux_density, full.a_aux_density, "{what}: A density");
    assert_eq!(
        ours.b_input_density, full.b_input_density,
        "{what}: B input density"
    );
    assert_eq!(
        ours.b_aux_density, full.b_aux_density,
        "{what}: B aux density"
    );
}

#[test]
fn the_witness_only_pass_equals_full_synthesis_on_real_partitions() {
    let recorded_from = sector("s-t01000-1.json");
    let started = Instant::now();
    let r1cs = recorded_from.circuits.record_constraints().expect("record");
    let counts = r1cs.counts();
    eprintln!(
        "recorded {counts:?} in {:.2} s, {} bytes",
        started.elapsed().as_secs_f64(),
        r1cs.memory_bytes()
    );
    assert_eq!(counts.constraints, 2_687_921 + 40);

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("2kib.r1cs");
    r1cs.save(&file).expect("save");
    let r1cs = Arc::new(r1cs);
    let mapped = Arc::new(R1cs::load(&file).expect("load"));
    assert_eq!(mapped.counts(), counts);

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    for name in ["s-t01000-2.json", "s-t02000-7.json"] {
        let sector = sector(name);
        let started = Instant::now();
        let full = sector
            .circuits
            .synthesize_partition(0, &SynthesisPlan::default())
            .expect("full synthesis");
        let full_s = started.elapsed().as_secs_f64();
        for (how, r1cs) in [("recorded", &r1cs), ("mapped", &mapped)] {
            let started = Instant::now();
            let plan = SynthesisPlan {
                precompiled: Some((r1cs, &pool)),
                ..Default::default()
            };
            let ours = sector
                .circuits
                .synthesize_partition(0, &plan)
                .expect("witness-only synthesis");
            eprintln!(
                "{name}: full {full_s:.2} s, witness-only over {how} constraints {:.2} s",
                started.elapsed().as_secs_f64()
            );
            assert_same(&ours, &full, &format!("{name} ({how})"));
        }
        // Deferred to the prover: the witness alone, and the same a, b, c once evaluated.
        let plan = SynthesisPlan {
            precompiled: Some((&mapped, &pool)),
            defer_evaluation: true,
            ..Default::default()
        };
        let mut deferred = sector
            .circuits
            .synthesize_partition(0, &plan)
            .expect("deferred synthesis");
        assert!(deferred.a.is_empty(), "{name}: a deferred");
        assert_eq!(deferred.num_constraints(), full.num_constraints());
        deferred.evaluate_deferred();
        assert_same(&deferred, &full, &format!("{name} (deferred)"));
    }
}
