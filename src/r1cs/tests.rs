use super::*;
use crate::host_abc::compact::CompactVector;
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

#[test]
fn a_witness_evaluated_on_the_host_for_a_gpu_that_expands_it_stays_compact() {
    use crate::host_abc::LendsAbc;
    let circuit = crate::synth::tests::BitsCircuit {
        value: Some(0x0123_4567_89ab_cdef),
    };
    let whole = synthesize(circuit.clone()).expect("synthesis");
    let r1cs = Arc::new(R1cs::record(circuit.clone()).expect("record"));
    let lender = crate::host_abc::heap::HeapLender {
        most: 1,
        ..Default::default()
    };
    let mut deferred = r1cs
        .synthesize(circuit, &pool(), Capacity::default(), true)
        .expect("deferred");
    assert!(deferred.compact_witness());
    let compact_bytes = deferred.bytes_in_flight();
    let rows = whole.num_constraints();
    deferred.evaluate_deferred_keeping_compact(lender.lend(rows));
    assert!(deferred.deferred.is_none(), "evaluated");
    assert!(deferred.aux_assignment.is_empty(), "not held whole");
    // a, b and c are held compact in the lent set: each chunk's wide values at its start.
    let layouts = deferred
        .compact_abc
        .clone()
        .expect("a, b and c held compact");
    for ((layout, held), values) in layouts.iter().zip(deferred.abc()).zip(whole.abc()) {
        assert_eq!(layout.rows, rows);
        let wide: Vec<Fr> = values
            .iter()
            .copied()
            .filter(crate::compact_witness::is_wide)
            .collect();
        assert!(rows <= layout.chunk_rows, "one chunk");
        assert_eq!(&held[..wide.len()], &wide[..]);
    }
    assert_ne!(deferred.abc(), whole.abc(), "not whole while compact");
    assert_eq!(deferred.first_unsatisfied(), None, "read whole");
    let layout_bytes: u64 = layouts.iter().map(CompactVector::bytes).sum();
    assert_eq!(
        deferred.bytes_in_flight(),
        compact_bytes + 3 * rows as u64 * 32 + layout_bytes,
        "the witness's compact bytes, a, b and c, and their bits"
    );
    deferred.expand_abc();
    assert!(deferred.compact_abc.is_none());
    assert_eq!(deferred.abc(), whole.abc());
    assert_eq!(
        deferred.bytes_in_flight(),
        compact_bytes + 3 * rows as u64 * 32
    );
    assert!(deferred.compact_abc(), "compact again");
    assert!(!deferred.compact_abc(), "once");
    // A prover that takes them by value gets them whole.
    deferred.own_abc();
    assert!(deferred.compact_abc.is_none() && deferred.lent_abc.is_none());
    assert_eq!(
        [&deferred.a, &deferred.b, &deferred.c],
        [&whole.a, &whole.b, &whole.c]
    );
    // Once evaluated there is nothing left to evaluate; a prover on the host expands it.
    deferred.evaluate_deferred_keeping_compact(None);
    assert!(deferred.compact_aux.is_some());
    deferred.expand_witness();
    assert_eq!(deferred.aux_assignment, whole.aux_assignment);
}

/// Many rows (several lane blocks) whose coefficients first appear all over the circuit,
/// inputs among the variables, zero, one and minus one among the coefficients.
struct ScatteredCircuit {
    rows: u64,
}

impl Circuit<Fr> for ScatteredCircuit {
    fn synthesize<CS: bellperson::ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        use bellperson::LinearCombination;
        let input = cs.alloc_input(|| "x", || Ok(Fr::from(3u64)))?;
        let mut vars = vec![cs.alloc(|| "v", || Ok(Fr::from(1u64)))?];
        for row in 0..self.rows {
            let v = cs.alloc(|| "v", || Ok(Fr::from(row)))?;
            // Coefficient values that turn up first in late rows too.
            let coeff = |k: u64| match (row * 7919 + k * 104_729) % 6007 {
                0 => Fr::ZERO,
                1 => Fr::ONE,
                2 => -Fr::ONE,
                n => Fr::from(n + (row / 9000) * 10_000),
            };
            let pick = |k: u64| vars[((row * 31 + k * 17) as usize) % vars.len()];
            let (p0, p1, p2) = (pick(0), pick(1), pick(2));
            cs.enforce(
                || "row",
                |lc: LinearCombination<Fr>| lc + (coeff(0), p0) + (coeff(1), input),
                |lc| lc + (coeff(2), p1),
                |lc| lc + (coeff(3), p2) + (coeff(4), v),
            );
            if row % 5 != 0 {
                vars.push(v);
            }
        }
        Ok(())
    }
}

fn saved_bytes(r1cs: &R1cs, dir: &Path, name: &str) -> Vec<u8> {
    let path = dir.join(name);
    r1cs.save(&path).expect("save");
    std::fs::read(&path).expect("read")
}

#[test]
fn a_recording_on_several_threads_is_the_same_byte_for_byte() {
    let rows = 9 * recorder::LANE_BLOCK_ROWS + 123;
    let dir = tempfile::tempdir().expect("tempdir");
    let one = R1cs::record(ScatteredCircuit { rows }).expect("record");
    let expected = saved_bytes(&one, dir.path(), "one.r1cs");
    assert!(one.counts().coeffs > 5000, "{:?}", one.counts());
    for threads in [1, 2, 3, 4, 16] {
        let lanes = R1cs::record_on_threads(|| ScatteredCircuit { rows }, threads)
            .unwrap_or_else(|e| panic!("{threads} threads: {e:#}"));
        assert_eq!(lanes.counts(), one.counts(), "{threads} threads");
        let got = saved_bytes(&lanes, dir.path(), &format!("{threads}.r1cs"));
        assert!(got == expected, "{threads} threads: the files differ");
    }
}

#[test]
fn a_circuit_that_synthesizes_differently_on_two_threads_is_refused() {
    let calls = std::sync::atomic::AtomicU64::new(0);
    let err = R1cs::record_on_threads(
        || ScatteredCircuit {
            rows: 3 * recorder::LANE_BLOCK_ROWS + calls.fetch_add(1, Ordering::Relaxed),
        },
        2,
    )
    .err()
    .expect("refused");
    assert!(err.to_string().contains("not deterministic"), "{err}");
}

/// A prelude (two inputs, a few variables and rows) and the units in `units`, each with an
/// input of its own, rows over the prelude's variables and its own, and coefficients some of
/// which first appear in it; `ragged` makes the third unit longer than the others.
#[derive(Clone)]
struct UnitCircuit {
    units: std::ops::Range<u64>,
    ragged: bool,
}

impl Circuit<Fr> for UnitCircuit {
    fn synthesize<CS: bellperson::ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        use bellperson::LinearCombination;
        let x = cs.alloc_input(|| "x", || Ok(Fr::from(3u64)))?;
        let shared: Vec<_> = (0..5)
            .map(|i| cs.alloc(|| "p", || Ok(Fr::from(i))))
            .collect::<Result<_, _>>()?;
        for &p in &shared {
            cs.enforce(
                || "p",
                |lc| lc + p,
                |lc| lc + x,
                |lc| lc + (Fr::from(7u64), p),
            );
        }
        for unit in self.units {
            let challenge = cs.alloc_input(|| "c", || Ok(Fr::from(unit)))?;
            let rows = if self.ragged && unit == 2 { 700 } else { 600 };
            let mut own = vec![cs.alloc(|| "v", || Ok(Fr::ONE))?];
            for row in 0..rows {
                let v = cs.alloc(|| "v", || Ok(Fr::from(row)))?;
                let coeff = Fr::from(2 + (row % 97) + 1000 * (unit % 3) + 10_000 * (row / 300));
                let (p, o) = (
                    shared[(row % 5) as usize],
                    own[(row as usize * 7) % own.len()],
                );
                cs.enforce(
                    || "row",
                    |lc: LinearCombination<Fr>| lc + (coeff, p) + challenge,
                    |lc| lc + o - (Fr::from(unit + 5), x),
                    |lc| lc + v,
                );
                own.push(v);
            }
        }
        Ok(())
    }
}

impl Units for UnitCircuit {
    type Circuit = UnitCircuit;

    fn units(&self) -> usize {
        self.units.end as usize
    }

    fn with_units(&self, units: std::ops::Range<usize>) -> anyhow::Result<UnitCircuit> {
        Ok(UnitCircuit {
            units: units.start as u64..units.end as u64,
            ..self.clone()
        })
    }
}

#[test]
fn a_recording_split_by_units_is_the_same_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    for ragged in [false, true] {
        let circuit = UnitCircuit {
            units: 0..7,
            ragged,
        };
        let one = R1cs::record(circuit.clone()).expect("record");
        let expected = saved_bytes(&one, dir.path(), "one.r1cs");
        for threads in [2, 3, 7, 16] {
            let (split, how) = lanes::record_by_units(&circuit, threads)
                .unwrap_or_else(|e| panic!("{threads} threads: {e:#}"));
            // Units of different lengths are found out, and recorded by rows instead.
            let expected_how = if ragged {
                lanes::Split::ByRows
            } else {
                lanes::Split::ByUnits
            };
            assert_eq!(how, expected_how, "ragged {ragged}, {threads} threads");
            let got = saved_bytes(&split, dir.path(), &format!("{threads}.r1cs"));
            assert!(
                got == expected,
                "ragged {ragged}, {threads} threads: the files differ"
            );
        }
    }
}

#[test]
fn a_witness_copy_is_the_witness_alone_and_only_when_compact() {
    let circuit = crate::synth::tests::BitsCircuit {
        value: Some(0x00ff_00ff_00ff_00ff),
    };
    let r1cs = Arc::new(R1cs::record(circuit.clone()).expect("record"));
    let mut partition = r1cs
        .synthesize(circuit, &pool(), Capacity::default(), true)
        .expect("deferred");
    assert!(
        partition.witness_copy().is_none(),
        "a whole witness is not copied"
    );
    assert!(partition.compact_witness(), "a witness of bits");
    let copy = partition
        .witness_copy()
        .expect("a compact witness is copied");
    assert_eq!(copy.witness_id, partition.witness_id);
    assert_eq!(copy.input_assignment, partition.input_assignment);
    assert_eq!(copy.compact_aux, partition.compact_aux);
    assert_eq!(copy.aux_len(), partition.aux_len());
    assert_eq!(copy.a_aux_density, partition.a_aux_density);
    assert_eq!(copy.b_input_density, partition.b_input_density);
    assert_eq!(copy.b_aux_density, partition.b_aux_density);
    assert!(
        copy.deferred.is_none()
            && copy.abc().iter().all(|v| v.is_empty())
            && copy.compact_abc.is_none()
            && copy.lent_abc.is_none(),
        "no a, b and c, and nothing left to evaluate"
    );
    // The partition's own evaluation afterwards leaves its witness as the copy has it.
    partition.evaluate_deferred_keeping_compact(None);
    assert_eq!(copy.compact_aux, partition.compact_aux);
    assert_eq!(partition.first_unsatisfied(), None);
}

/// Rows over a witness that is mostly bits, as a PoRep witness is: bits packed with powers
/// of two, one and minus one, a wide variable every few rows, an input, and rows whose value
/// is zero, one or neither. (Evaluation asks nothing of satisfaction.)
#[derive(Clone)]
struct MostlyBitsCircuit {
    rows: u64,
}

impl Circuit<Fr> for MostlyBitsCircuit {
    fn synthesize<CS: bellperson::ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        use bellperson::LinearCombination;
        let input = cs.alloc_input(|| "x", || Ok(Fr::from(5u64)))?;
        let (mut bits, mut wide) = (Vec::new(), Vec::new());
        for row in 0..self.rows {
            let bit = (row * 7919 + row / 7) % 3 == 0;
            bits.push(cs.alloc(|| "bit", || Ok(Fr::from(u64::from(bit))))?);
            if row % 13 == 0 {
                wide.push(cs.alloc(|| "wide", || Ok(-Fr::from(row + 2)))?);
            }
            let bit_at = |k: u64| bits[((row * 31 + k * 17) as usize) % bits.len()];
            let (b0, b1, b2) = (bit_at(0), bit_at(1), bit_at(2));
            let w = wide[(row as usize * 5) % wide.len()];
            let power = Fr::from(1u64 << (row % 40));
            let (a, b, c): (
                LinearCombination<Fr>,
                LinearCombination<Fr>,
                LinearCombination<Fr>,
            ) = match row % 6 {
                // One bit alone: zero or one.
                0 => (
                    LinearCombination::zero() + b0,
                    LinearCombination::zero() + (power, b1) + (-Fr::ONE, b2),
                    LinearCombination::zero() + w,
                ),
                // Bits packed with powers of two, and an input.
                1 => (
                    LinearCombination::zero() + (power, b0) + (power.double(), b1) + b2,
                    LinearCombination::zero() + input + (-Fr::ONE, w),
                    LinearCombination::zero() + (Fr::from(3u64), w) + b0,
                ),
                // Minus one times a bit, and a wide variable with a coefficient.
                2 => (
                    LinearCombination::zero() + (-Fr::ONE, b1),
                    LinearCombination::zero() + (Fr::from(row + 9), w) + (power, b0),
                    LinearCombination::zero() + (Fr::from(7u64), input),
                ),
                // Empty: zero.
                3 => (
                    LinearCombination::zero(),
                    LinearCombination::zero() + b2,
                    LinearCombination::zero() + CS::one(),
                ),
                _ => (
                    LinearCombination::zero() + b0 + b1 + (-Fr::ONE, b1),
                    LinearCombination::zero() + w + (Fr::ONE, b2),
                    LinearCombination::zero() + (power, w) + (-Fr::ONE, w),
                ),
            };
            cs.enforce(|| "row", |_| a, |_| b, |_| c);
        }
        Ok(())
    }
}

#[test]
fn a_b_and_c_evaluated_compact_from_a_compact_witness_are_the_plain_ones_made_compact() {
    use crate::compact_witness::CompactWitness;
    let circuit = MostlyBitsCircuit { rows: 3000 };
    let r1cs = Arc::new(R1cs::record(circuit.clone()).expect("record"));
    let partition = r1cs
        .synthesize(circuit, &pool(), Capacity::default(), true)
        .expect("deferred");
    let (inputs, aux) = (&partition.input_assignment, &partition.aux_assignment);
    let compact = CompactWitness::of(aux).expect("a witness of bits");
    assert!(!compact.wide_values.is_empty());
    let witness = compact.lookup();
    let rows = r1cs.counts().constraints as usize;
    for which in 0..3 {
        let whole = r1cs.evaluate_timed(which, inputs, aux, rows, &AtomicU64::new(0));
        let kinds = [Fr::ZERO, Fr::ONE].map(|v| whole.iter().filter(|&&x| x == v).count());
        assert!(
            kinds[0] > 0 && kinds[1] > 0 && kinds[0] + kinds[1] < rows,
            "matrix {which}: zeros, ones and wide values ({kinds:?} of {rows})"
        );
        for chunk_rows in [64, 640, CHUNK_ROWS] {
            let mut made = whole.clone();
            let expected = CompactVector::with_chunks(&mut made, chunk_rows);
            let mut out = vec![MaybeUninit::<Fr>::uninit(); rows];
            let got = pool().install(|| {
                r1cs.evaluate_compact_rows(which, inputs, &witness, &mut out, chunk_rows)
            });
            assert_eq!(got, expected, "matrix {which}, chunks of {chunk_rows}");
            // Each chunk's wide values, and nothing else is read.
            let mut held = vec![Fr::from(99u64); rows];
            for (c, &wide) in got.chunk_wide.iter().enumerate() {
                for k in c * chunk_rows..c * chunk_rows + wide as usize {
                    // SAFETY: the first `wide` slots of each chunk are written.
                    held[k] = unsafe { out[k].assume_init() };
                    assert_eq!(held[k], made[k], "matrix {which}, slot {k}");
                }
            }
            got.expand(&mut held);
            assert!(held == whole, "matrix {which}: expanded, the plain values");
        }
    }
}
