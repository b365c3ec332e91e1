//! Pre-compiled constraints on real 2KiB partitions: the witness-only pass over the recorded
//! R1CS gives exactly what full synthesis gives (a, b, c, the assignments and the densities),
//! for a sector other than the one the constraints were recorded from, and from the saved file
//! as well as from memory. Also what a GPU keeping A and B only relies on: c = a ∘ b in every
//! row of real PoRep and update partitions, and the bytes it is planned for.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ff::Field;

use cuzk::c1::{read_c1_file, resolve_identity, DEFAULT_MAX_C1_BYTES};
use cuzk::params::check_recorded;
use cuzk::porep::bind;
use cuzk::r1cs::{r1cs_path, R1cs};
use cuzk::sector::{Sector, SynthesisPlan};
use cuzk::synth::{ConstraintMatrices, SynthesizedPartition};

use common::{
    cuzk, fixture, prove_inbox_once, read_update, require_params, update_fixture,
    verifies_for_sector,
};

fn sector(name: &str) -> Sector {
    let path = fixture(name);
    let c1 = read_c1_file(&path, DEFAULT_MAX_C1_BYTES).expect("parse");
    let identity = resolve_identity(&path, &c1, None).expect("identity");
    bind(c1, identity).expect("bind")
}

/// c = a ∘ b in every row, the input constraints' and the padding's included: what lets a
/// GPU keep A and B only and take a ∘ b for C·w (`cuzk::synth::GPU_MATRICES`).
fn assert_c_is_a_times_b(p: &SynthesizedPartition, what: &str) {
    assert_eq!(p.c.len(), p.num_constraints(), "{what}: c evaluated");
    assert_eq!((p.a.len(), p.b.len()), (p.c.len(), p.c.len()), "{what}");
    let rows = p.a.iter().zip(&p.b).zip(&p.c);
    if let Some(row) = rows.clone().position(|((a, b), c)| *a * *b != *c) {
        panic!("{what}: row {row} of {} has c != a b", p.c.len());
    }
    let nonzero = rows.filter(|(_, c)| !bool::from(c.is_zero())).count();
    assert!(
        nonzero > 1000,
        "{what}: only {nonzero} rows of c are not zero"
    );
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
    let r1cs = recorded_from
        .circuits
        .record_constraints(1)
        .expect("record");
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
    // What a GPU keeps is all of it but C (its row offsets and entries).
    let (c_rows, c_entries) = mapped.matrix(2);
    assert_eq!(
        mapped.memory_bytes() - mapped.gpu_bytes(),
        8 * (c_rows.len() + c_entries.len()) as u64
    );
    assert_eq!(c_entries.len() as u64, counts.nnz[2]);

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
        assert_c_is_a_times_b(&full, name);
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

#[test]
fn c_is_a_times_b_on_real_update_partitions() {
    for name in ["s-t01000-11.json", "s-t02000-12.json"] {
        let sector =
            cuzk::update::bind(read_update(&update_fixture(name)), None).expect("bind update");
        let full = sector
            .circuits
            .synthesize_partition(0, &SynthesisPlan::default())
            .expect("full synthesis");
        assert_c_is_a_times_b(&full, name);
    }
}

/// `y = x²`: a circuit that is not the PoRep's, whose constraints must never be taken for it.
struct Square;

impl bellperson::Circuit<blstrs::Scalar> for Square {
    fn synthesize<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(blstrs::Scalar::from(3u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(blstrs::Scalar::from(9u64)))?;
        cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

/// A parameter cache of links to the 2KiB set, so files written beside it stay in the test.
fn linked_cache(dir: &Path) -> (PathBuf, PathBuf) {
    let (params, vk) = cuzk::porep::param_paths(2048).expect("param paths");
    let cache = dir.join("params");
    fs::create_dir(&cache).expect("cache");
    for real in [&params, &vk] {
        let name = real.file_name().expect("file name");
        std::os::unix::fs::symlink(real, cache.join(name)).expect("link");
    }
    let linked = cache.join(params.file_name().expect("file name"));
    (cache, linked)
}

#[test]
fn constraints_of_another_circuit_are_recorded_again_and_never_replaced() {
    require_params();
    let dir = tempfile::tempdir().expect("tempdir");
    let (cache, params) = linked_cache(dir.path());
    let env = [("FIL_PROOFS_PARAMETER_CACHE", cache.as_path())];
    let file = r1cs_path(&params).expect("constraints file name");
    let stem = params.file_stem().expect("stem").to_string_lossy();
    assert!(
        file.file_name().is_some_and(|n| n
            .to_string_lossy()
            .starts_with(&format!("cuzk-r1cs-v1-{stem}-"))),
        "named after the parameters and the circuit: {}",
        file.display()
    );
    // Another circuit's constraints where this circuit's are looked for: under the name an
    // earlier cuzk used (keyed by the parameter file only) and under this one's.
    let wrong = R1cs::record(Square).expect("record");
    let earlier_name = cache.join(format!("cuzk-r1cs-v1-{stem}.r1cs"));
    for planted in [&earlier_name, &file] {
        assert!(wrong.save(planted).expect("plant"));
    }
    let planted_bytes = fs::read(&file).expect("planted");

    let inbox = dir.path().join("inbox");
    fs::create_dir(&inbox).expect("inbox");
    fs::copy(fixture("s-t01000-1.json"), inbox.join("s-t01000-1.json")).expect("copy");
    let out = prove_inbox_once(dir.path(), &[], &env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the sector is proved all the same"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("recorded for another circuit than the parameters"),
        "{stderr}"
    );
    let proof = fs::read(dir.path().join("outbox/s-t01000-1.proof")).expect("proof");
    assert!(verifies_for_sector(
        &dir.path().join("done/s-t01000-1.json"),
        &proof,
        0
    ));
    assert_eq!(
        fs::read(&file).expect("planted file"),
        planted_bytes,
        "a file another run may map is never replaced"
    );

    // `cuzk params constraints` leaves a file that is there alone, and once it is gone
    // records this circuit's under its name, which the next run maps and uses.
    let record = ["params", "constraints", "--sector-size", "2KiB"];
    let out = cuzk(&record, dir.path(), &env);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(fs::read(&file).expect("planted file"), planted_bytes);
    fs::remove_file(&file).expect("remove");
    let out = cuzk(&record, dir.path(), &env);
    assert_eq!(out.status.code(), Some(0));
    let recorded = R1cs::load(&file).expect("recorded file");
    check_recorded(&recorded, &file, &params).expect("this circuit's counts");
    let out = cuzk(&record, dir.path(), &env);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("constraints already recorded"),
        "a whole file of this circuit is not recorded again: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        earlier_name.is_file(),
        "an earlier cuzk's file is left alone"
    );

    fs::copy(fixture("s-t01000-2.json"), inbox.join("s-t01000-2.json")).expect("copy");
    let out = prove_inbox_once(dir.path(), &[], &env);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("another circuit"), "{stderr}");
    let timeline = fs::read_to_string(dir.path().join("timeline.csv")).expect("timeline");
    assert!(
        timeline.contains("CONSTRAINTS_READY,,,,recorded=false;"),
        "the second run maps the recorded file:\n{timeline}"
    );
}

/// Recording on several threads gives the file one thread gives, byte for byte, for the real
/// 2KiB PoRep and update circuits (each thread builds its share of the rows only).
#[test]
fn recording_on_several_threads_saves_the_same_file_as_one_thread() {
    use cuzk::proof_kind::{CircuitId, ProofKind};
    let dir = tempfile::tempdir().expect("tempdir");
    for kind in [ProofKind::Seal, ProofKind::Update] {
        let circuit = CircuitId {
            kind,
            sector_size: 2 << 10,
        };
        let mut files = Vec::new();
        for threads in [1, 3] {
            let started = Instant::now();
            let r1cs = cuzk::circuits::record_constraints(circuit, threads).expect("record");
            eprintln!(
                "{circuit} on {threads} threads: {:?} in {:.2} s",
                r1cs.counts(),
                started.elapsed().as_secs_f64()
            );
            let path = dir.path().join(format!("{kind:?}-{threads}.r1cs"));
            assert!(r1cs.save(&path).expect("save"));
            files.push(fs::read(&path).expect("read"));
        }
        assert!(files[0] == files[1], "{circuit}: the files differ");
        if kind == ProofKind::Seal {
            // A sector's recording splits its partition's challenges between the threads.
            let started = Instant::now();
            let r1cs = sector("s-t01000-1.json")
                .circuits
                .record_constraints(2)
                .expect("record by challenges");
            eprintln!(
                "{circuit} by challenges: {:.2} s",
                started.elapsed().as_secs_f64()
            );
            let path = dir.path().join("by-challenges.r1cs");
            assert!(r1cs.save(&path).expect("save"));
            let by_challenges = fs::read(&path).expect("read");
            assert!(
                by_challenges == files[0],
                "{circuit}: recorded by challenges, the file differs"
            );
        }
    }
}
