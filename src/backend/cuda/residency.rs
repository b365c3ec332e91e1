//! Which of a parameter set's bases a GPU keeps, and what stays on the host: the cuda
//! backend's plan, kept apart from the device code as plain arithmetic so that it is
//! tested on every build. Also the densities in the form the GPU's filter reads.

use std::sync::{Arc, Weak};

use ec_gpu_gen::multiexp_cpu::DensityTracker;

use crate::params::load::{ParamsLayout, G1_BYTES, G2_BYTES};
use crate::synth::{ConstraintMatrices, SynthesizedPartition};

/// One of a parameter set's five base vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaseSet {
    /// `H_j = tau^j t(tau) / delta`, one per domain point but the last.
    H = 0,
    /// `L_i`, one per aux variable.
    L = 1,
    /// `A_i(tau)`, one per variable used in A.
    A = 2,
    /// `B_i(tau)` in G1, one per variable used in B.
    BG1 = 3,
    /// `B_i(tau)` in G2.
    BG2 = 4,
}

impl BaseSet {
    /// All five, in the parameter file's order.
    pub const ALL: [BaseSet; 5] = [
        BaseSet::H,
        BaseSet::L,
        BaseSet::A,
        BaseSet::BG1,
        BaseSet::BG2,
    ];

    /// Bytes of one point in memory (Montgomery affine, no flag).
    pub fn point_bytes(self) -> usize {
        match self {
            BaseSet::BG2 => 192,
            _ => 96,
        }
    }

    /// Bytes of one point in the parameter file (uncompressed).
    pub fn file_point_bytes(self) -> u64 {
        match self {
            BaseSet::BG2 => G2_BYTES,
            _ => G1_BYTES,
        }
    }

    /// Its name in logs and the timeline.
    pub fn name(self) -> &'static str {
        match self {
            BaseSet::H => "H",
            BaseSet::L => "L",
            BaseSet::A => "A",
            BaseSet::BG1 => "B_G1",
            BaseSet::BG2 => "B_G2",
        }
    }

    /// Its bit in a residency mask.
    pub fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// Device memory a partition needs besides the bases, at domain size `n` with `aux` aux
/// variables: two vectors of `max(n, aux)` scalars, the multiexps' digits and temporaries
/// (about 12 bytes per domain point at most) and a margin for buckets and the context.
pub fn working_bytes(n: u64, aux: u64) -> u64 {
    2 * n.max(aux) * 32 + 12 * n + (3 << 29)
}

/// Device memory a partition needs when the GPU evaluates its pre-compiled constraints
/// (the matrices not counted): three domain-sized vectors (a, b and c, which become the
/// quotient and the queries' scalars), the witness, and the multiexps' temporaries and
/// margin as in [`working_bytes`].
pub fn evaluating_working_bytes(n: u64, aux: u64, inputs: u64) -> u64 {
    (3 * n + aux + inputs) * 32 + 12 * n + (3 << 29)
}

/// Bytes of each of the two buffers a query set streamed beside H is copied through
/// (`chunk_bytes` in beside_h.cuh).
pub const BESIDE_H_CHUNK_BYTES: u64 = 256 << 20;

/// The share of a query's scalars that are neither zero nor one, as planned for: a PoRep
/// partition's are 1-2% (its witness is mostly the bits of SHA-256 gadgets).
const PLANNED_TAIL_SHARE: f64 = 0.02;

/// Device memory the query multiexps' work beside H holds while H's multiexp runs
/// (beside_h.cuh): the two chunk buffers of streamed bases and, per query, a bit per scalar,
/// its tail's scalars and positions, and the tail's bases in each group the query spans
/// (G1, and G2 for B). The GPU checks the room itself and leaves a query that does not fit
/// to the steps after H; this is what the plan keeps free for them.
pub fn beside_h_bytes(layout: &ParamsLayout) -> u64 {
    let query = |count: u64, base_bytes: u64| {
        let tail = (count as f64 * PLANNED_TAIL_SHARE).ceil() as u64;
        count.div_ceil(8) + tail * (32 + 4 + base_bytes)
    };
    2 * BESIDE_H_CHUNK_BYTES + query(layout.l, 96) + query(layout.a, 96) + query(layout.b, 96 + 192)
}

/// Bytes of every base of `layout` on a GPU.
pub fn all_bases_bytes(layout: &ParamsLayout) -> u64 {
    resident_bases_bytes(layout, u32::MAX)
}

/// Bytes on a GPU of the bases of `layout` in `resident` (a mask of [`BaseSet::bit`]s).
pub fn resident_bases_bytes(layout: &ParamsLayout, resident: u32) -> u64 {
    BaseSet::ALL
        .iter()
        .filter(|s| resident & s.bit() != 0)
        .map(|&s| set_extent(layout, s).1 * s.point_bytes() as u64)
        .sum()
}

/// Device memory left for a shape's pre-compiled constraints once every base of `layout`
/// is resident and an evaluating partition's working set is counted; `None` when nothing
/// is. The GPU evaluates the constraints (and the host keeps only witnesses) when they fit
/// in it: on a card too small for that, bases matter more, so the host evaluates.
pub fn room_for_constraints(layout: &ParamsLayout, device_bytes: u64) -> Option<u64> {
    let n = (layout.h + 1).next_power_of_two();
    let needed = all_bases_bytes(layout) + evaluating_working_bytes(n, layout.l, layout.ic);
    device_bytes.checked_sub(needed).filter(|&room| room > 0)
}

/// Bytes a set of `layout` keeps on the host when each GPU has `device_bytes`: the
/// verifying key and the bases that stream.
pub fn host_bytes(layout: &ParamsLayout, device_bytes: u64) -> u64 {
    let resident = plan_residency(layout, device_bytes);
    let streamed: u64 = BaseSet::ALL
        .iter()
        .filter(|s| resident & s.bit() == 0)
        .map(|&s| set_extent(layout, s).1 * s.point_bytes() as u64)
        .sum();
    layout.vk_bytes + streamed
}

/// Where `set`'s points start in the file, and how many there are.
pub fn set_extent(layout: &ParamsLayout, set: BaseSet) -> (u64, u64) {
    let mut offset = layout.vk_bytes + 4;
    let counts = [layout.h, layout.l, layout.a, layout.b, layout.b];
    for (s, count) in BaseSet::ALL.into_iter().zip(counts) {
        if s == set {
            return (offset, count);
        }
        offset += count * s.file_point_bytes() + 4;
    }
    unreachable!("every set is in BaseSet::ALL")
}

/// Bytes per second a streamed base set crosses the bus at (H200, PCIe 5: L's 12.5 GB in
/// 0.26 s per proof when streamed, BENCHMARKS.md of 2026-12-04).
const BUS_BYTES_PER_S: f64 = 47e9;
/// Seconds per base of a resident query set's split multiexp (G1: L's 130M in 0.07 s).
const SPLIT_G1_S_PER_POINT: f64 = 0.6e-9;
/// Seconds per base of the B query's multiexp in G2: split when resident (0.08 s for 33M),
/// plain Pippenger when streamed (0.23 s: the kernels, not the bus, set its pace).
const SPLIT_G2_S_PER_POINT: f64 = 2.4e-9;
const PIPPENGER_G2_S_PER_POINT: f64 = 6.9e-9;

/// Seconds per proof that set `set` of `count` bases saves by staying on the GPU instead of
/// streaming from pinned host memory.
///
/// H's scalars are full width either way: its Pippenger's kernels outlast the copy of its
/// bases, which overlaps them, so streaming H costs nothing measurable (1.15 s against 1.13
/// resident at 32GiB). The query sets (L, A, B) split when resident, their scalars being
/// mostly bits; streamed, a G1 set's multiexp waits on its bases crossing the bus, and B in
/// G2 on its plain Pippenger.
pub fn seconds_saved_resident(set: BaseSet, count: u64) -> f64 {
    let points = count as f64;
    match set {
        BaseSet::H => 0.0,
        BaseSet::L | BaseSet::A | BaseSet::BG1 => {
            points * (set.point_bytes() as f64 / BUS_BYTES_PER_S - SPLIT_G1_S_PER_POINT).max(0.0)
        }
        BaseSet::BG2 => points * (PIPPENGER_G2_S_PER_POINT - SPLIT_G2_S_PER_POINT),
    }
}

/// Device memory a multiexp of `count` bases of `point_bytes` takes for them when they stream
/// from the host: sppark copies them in chunks of a stride of points into two buffers, one
/// filling while the other is read. Its Pippenger cuts `count` into 2^(lg(1.5 count) - w - 6)
/// chunks (at least one), w = min(lg(1.5 count) - 8, 18) its window: at 2^27 points, 8
/// chunks of 2^24, 3.2 GB for G1 and 6.4 GB for G2.
pub fn streaming_bytes(count: u64, point_bytes: u64) -> u64 {
    if count == 0 {
        return 0;
    }
    let lg = u64::from((count + count / 2).ilog2());
    let window = lg.saturating_sub(8).clamp(10, 18);
    let chunks = ((1u64 << (lg.max(window) - window)) >> 6).max(1);
    let stride = count.div_ceil(chunks).next_multiple_of(32);
    let buffers = if chunks > 1 { 2 } else { 1 };
    buffers * stride * point_bytes
}

/// Which sets stay on a GPU with `device_bytes` beside one partition's working set and the
/// queries' work beside H ([`beside_h_bytes`]): the ones that save the most time per byte
/// first ([`seconds_saved_resident`]: B in G2, then the G1 query sets), each that still
/// fits; H, which saves nothing, only where room is left. The sets that stream take their
/// chunk buffers ([`streaming_bytes`]) out of the room too.
pub fn plan_residency(layout: &ParamsLayout, device_bytes: u64) -> u32 {
    let n = (layout.h + 1).next_power_of_two();
    let room = device_bytes.saturating_sub(working_bytes(n, layout.l) + beside_h_bytes(layout));
    // A set left to stream needs its buffers, which may leave room for fewer sets: until the
    // reserve covers every streamed set (it only grows, up to the largest set's).
    let mut reserve = 0;
    loop {
        let mask = fill_by_time_saved(layout, room.saturating_sub(reserve));
        let needed = BaseSet::ALL
            .iter()
            .filter(|s| mask & s.bit() == 0)
            .map(|&s| streaming_bytes(set_extent(layout, s).1, s.point_bytes() as u64))
            .max()
            .unwrap_or(0);
        if needed <= reserve {
            return mask;
        }
        reserve = needed;
    }
}

/// The sets that fit in `room`, the most time saved per byte first.
fn fill_by_time_saved(layout: &ParamsLayout, mut room: u64) -> u32 {
    let mut sets: Vec<(BaseSet, u64, f64)> = BaseSet::ALL
        .iter()
        .map(|&s| {
            let count = set_extent(layout, s).1;
            let bytes = count * s.point_bytes() as u64;
            (
                s,
                bytes,
                seconds_saved_resident(s, count) / bytes.max(1) as f64,
            )
        })
        .collect();
    // By time saved per byte; among equals, the larger first.
    sets.sort_by(|x, y| y.2.total_cmp(&x.2).then(y.1.cmp(&x.1)));
    let mut mask = 0;
    for (set, bytes, _) in sets {
        if bytes <= room {
            room -= bytes;
            mask |= set.bit();
        }
    }
    mask
}

/// A parameter set a GPU keeps in one of its slots, as [`slots_to_free`] weighs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptSet {
    /// Its slot on the device.
    pub slot: usize,
    /// Device bytes it holds: its resident bases and, where the GPU evaluates its circuit,
    /// the pre-compiled constraints.
    pub bytes: u64,
    /// When it last served a partition (a counter: larger is later).
    pub last_used: u64,
}

/// The slots to free, least recently used first, so that `needed` more bytes (a set's
/// bases or constraints, plus the largest working set a partition of any kept set needs)
/// fit within `device_bytes` beside the sets left, of which at most `max_kept` may stay.
/// A GPU that holds a PoRep circuit's set and an update circuit's set together proves a
/// mixed workload with each uploaded once; one that cannot frees the older.
pub fn slots_to_free(
    kept: &[KeptSet],
    needed: u64,
    device_bytes: u64,
    max_kept: usize,
) -> Vec<usize> {
    let mut by_age: Vec<KeptSet> = kept.to_vec();
    by_age.sort_by_key(|set| set.last_used);
    let mut held: u64 = by_age.iter().map(|set| set.bytes).sum();
    let mut left = by_age.len();
    let mut freed = Vec::new();
    for set in by_age {
        if left <= max_kept && held.saturating_add(needed) <= device_bytes {
            break;
        }
        freed.push(set.slot);
        held -= set.bytes;
        left -= 1;
    }
    freed
}

/// A density that does not fit the variables it is said to cover.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DensityMismatch(pub String);

/// A density as the GPU reads it: the bit vector's words and the set bits before each.
pub struct Density {
    /// The vector's words, bits past its end cleared.
    pub words: Vec<u64>,
    /// Set bits before each word.
    pub prefix: Vec<u32>,
    /// Set bits in all.
    pub total: usize,
}

impl Density {
    /// The density of `len` variables that `tracker` records.
    pub fn of(tracker: &DensityTracker, len: usize) -> Result<Density, DensityMismatch> {
        if tracker.bv.len() != len {
            return Err(DensityMismatch(format!(
                "a density of {} bits for {len} variables",
                tracker.bv.len()
            )));
        }
        let nwords = len.div_ceil(64);
        let raw = tracker.bv.as_raw_slice();
        let mut words = Vec::with_capacity(nwords);
        for i in 0..nwords {
            let word = raw.get(i).copied().unwrap_or(0) as u64;
            // Bits past the end are not part of the vector.
            let keep = len - i * 64;
            words.push(if keep >= 64 {
                word
            } else {
                word & ((1u64 << keep) - 1)
            });
        }
        let mut prefix = Vec::with_capacity(nwords);
        let mut total = 0u64;
        for word in &words {
            prefix
                .push(u32::try_from(total).map_err(|_| {
                    DensityMismatch("more than 2^32 variables in one query".into())
                })?);
            total += u64::from(word.count_ones());
        }
        if total as usize != tracker.get_total_density() {
            return Err(DensityMismatch(format!(
                "a density counts {} variables but has {total} bits set",
                tracker.get_total_density()
            )));
        }
        Ok(Density {
            words,
            prefix,
            total: total as usize,
        })
    }
}

/// A partition's query densities as the GPU reads them: the aux variables used in A, the
/// inputs used in B, the aux variables used in B.
pub fn query_densities(partition: &SynthesizedPartition) -> Result<[Density; 3], DensityMismatch> {
    let (aux, inputs) = (partition.aux_len(), partition.input_assignment.len());
    Ok([
        Density::of(&partition.a_aux_density, aux)?,
        Density::of(&partition.b_input_density, inputs)?,
        Density::of(&partition.b_aux_density, aux)?,
    ])
}

/// The query densities of the circuit whose partitions the GPU evaluated last. A partition
/// left to the GPU's evaluation carries its circuit's, those of the recorded constraints,
/// the same for every partition of it: they are made once a circuit, not for each partition
/// while the GPU waits (20 ms for a 32GiB partition's two aux densities on one core).
#[derive(Default)]
pub struct CircuitDensities {
    last: Option<(Weak<dyn ConstraintMatrices>, QueryDensities)>,
}

/// A partition's three query densities ([`query_densities`]), shared.
pub type QueryDensities = Arc<[Density; 3]>;

impl CircuitDensities {
    /// `partition`'s densities: its circuit's as made before, where it has them.
    pub fn of(
        &mut self,
        partition: &SynthesizedPartition,
    ) -> Result<QueryDensities, DensityMismatch> {
        let Some(matrices) = &partition.deferred else {
            return Ok(Arc::new(query_densities(partition)?));
        };
        let circuit = Arc::downgrade(matrices);
        if let Some((of, densities)) = &self.last {
            // The counts as well: a partition whose trackers were changed is not its
            // circuit's.
            let trackers = [
                &partition.a_aux_density,
                &partition.b_input_density,
                &partition.b_aux_density,
            ];
            let same = densities.iter().zip(trackers).all(|(density, tracker)| {
                density.total == tracker.get_total_density()
                    && density.words.len() == tracker.bv.len().div_ceil(64)
            });
            if of.ptr_eq(&circuit) && same {
                return Ok(densities.clone());
            }
        }
        let densities = Arc::new(query_densities(partition)?);
        self.last = Some((circuit, densities.clone()));
        Ok(densities)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::r1cs::R1cs;
    use crate::synth::{tests::CubeCircuit, Capacity};
    use blstrs::Scalar as Fr;
    use ff::Field;

    #[test]
    fn a_circuits_densities_are_made_once_for_its_partitions() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let recorded = || Arc::new(R1cs::record(CubeCircuit { x: None }).expect("record"));
        let partition = |r1cs: &Arc<R1cs>, x: u64, defer: bool| {
            let circuit = CubeCircuit {
                x: Some(Fr::from(x)),
            };
            r1cs.synthesize(circuit, &pool, Capacity::default(), defer)
                .expect("synthesize")
        };
        let r1cs = recorded();
        let mut densities = CircuitDensities::default();
        let first = densities.of(&partition(&r1cs, 3, true)).expect("densities");
        let second_partition = partition(&r1cs, 5, true);
        let second = densities.of(&second_partition).expect("densities");
        assert!(Arc::ptr_eq(&first, &second), "made once for the circuit");
        let own = query_densities(&second_partition).expect("densities");
        for (kept, own) in second.iter().zip(&own) {
            assert_eq!(
                (&kept.words, &kept.prefix, kept.total),
                (&own.words, &own.prefix, own.total)
            );
        }
        // A partition whose trackers changed is not its circuit's.
        let mut changed = partition(&r1cs, 7, true);
        let at = changed.a_aux_density.bv.len();
        changed.a_aux_density.add_element();
        changed.a_aux_density.inc(at);
        changed.b_aux_density.add_element();
        changed.aux_assignment.push(Fr::ONE);
        let made = densities.of(&changed).expect("densities");
        assert_eq!(made[0].total, second[0].total + 1);
        // Another recording of the circuit is another circuit to the GPU: made anew.
        let other = densities
            .of(&partition(&recorded(), 5, true))
            .expect("densities");
        assert!(!Arc::ptr_eq(&second, &other));
        // One the host evaluated carries no circuit: its own, each time.
        let host = partition(&r1cs, 5, false);
        let (once, again) = (densities.of(&host), densities.of(&host));
        assert!(!Arc::ptr_eq(
            &once.expect("densities"),
            &again.expect("densities")
        ));
    }

    #[test]
    fn density_prefixes_count_the_bits_before_each_word() {
        let mut tracker = DensityTracker::new();
        for i in 0..130 {
            tracker.add_element();
            if i % 3 == 0 || i == 129 {
                tracker.inc(i);
            }
        }
        let density = Density::of(&tracker, 130).expect("density");
        assert_eq!(density.words.len(), 3);
        assert_eq!(density.total, tracker.get_total_density());
        assert_eq!(density.prefix[0], 0);
        assert_eq!(density.prefix[1], density.words[0].count_ones());
        assert_eq!(
            density.prefix[2],
            density.words[0].count_ones() + density.words[1].count_ones()
        );
        assert!(
            Density::of(&tracker, 131).is_err(),
            "a length mismatch is refused"
        );
    }

    /// The 32GiB set: H 2^27 - 1, L and A about 130M, B about 33M.
    pub(crate) fn layout_32gib() -> ParamsLayout {
        ParamsLayout {
            vk_bytes: 4000,
            ic: 329,
            h: (1 << 27) - 1,
            l: 130_170_000,
            a: 129_750_000,
            b: 33_100_000,
        }
    }

    #[test]
    fn residency_keeps_what_saves_the_most_time_per_byte() {
        let layout = layout_32gib();
        let mask = |sets: &[BaseSet]| sets.iter().map(|s| s.bit()).sum::<u32>();
        use BaseSet::*;
        assert_eq!(
            plan_residency(&layout, 140 << 30),
            mask(&BaseSet::ALL),
            "an H200 keeps everything"
        );
        // The cards measured: H, which streams for free, goes first; B in G2 stays first.
        // The streamed sets' chunk buffers and the queries' work beside H come out of the
        // room: at 32 GiB L streams beside H, at 24 GiB B in G1 too, at 16 GiB everything.
        assert_eq!(plan_residency(&layout, 48 << 30), mask(&[L, A, BG1, BG2]));
        assert_eq!(plan_residency(&layout, 32 << 30), mask(&[BG1, BG2]));
        assert_eq!(plan_residency(&layout, 24 << 30), mask(&[BG2]));
        assert_eq!(plan_residency(&layout, 16 << 30), 0);
        // Whatever the card, the resident sets, a partition's working set and the largest
        // streamed set's buffers fit in it.
        let n = 1 << 27;
        for gib in 12u64..=140 {
            let device = gib << 30;
            let resident = plan_residency(&layout, device);
            let streaming = BaseSet::ALL
                .iter()
                .filter(|s| resident & s.bit() == 0)
                .map(|&s| streaming_bytes(set_extent(&layout, s).1, s.point_bytes() as u64))
                .max()
                .unwrap_or(0);
            let planned = resident_bases_bytes(&layout, resident)
                + working_bytes(n, layout.l)
                + beside_h_bytes(&layout)
                + streaming;
            assert!(
                planned <= device || resident == 0,
                "{gib} GiB: {planned} bytes planned"
            );
        }
        assert_eq!(
            plan_residency(&layout, 8 << 30),
            0,
            "below the working set nothing fits"
        );
        let saved = |set| {
            let count = set_extent(&layout, set).1;
            seconds_saved_resident(set, count)
        };
        // The per-proof times measured at 32GiB (streamed against resident): L 0.26 / 0.07,
        // B in G2 0.23 / 0.08, H 1.15 / 1.13.
        assert!((0.15..0.25).contains(&saved(L)), "{}", saved(L));
        assert!((0.1..0.2).contains(&saved(BG2)), "{}", saved(BG2));
        assert_eq!(saved(H), 0.0);
    }

    #[test]
    fn the_work_beside_h_is_planned_for_a_porep_tail() {
        let layout = layout_32gib();
        let bytes = beside_h_bytes(&layout);
        // Two 256 MiB chunks; L and A 2.6M tail scalars each with a G1 base, B 0.66M with
        // a G1 and a G2 base: about 1.5 GB at 32GiB.
        assert!((1_400_000_000..1_600_000_000).contains(&bytes), "{bytes}");
        let empty = ParamsLayout {
            l: 0,
            a: 0,
            b: 0,
            ..layout
        };
        assert_eq!(beside_h_bytes(&empty), 2 * BESIDE_H_CHUNK_BYTES);
    }

    #[test]
    fn streamed_bases_take_two_chunk_buffers() {
        // sppark at 2^27 points: window 18, 8 chunks of 2^24.
        assert_eq!(streaming_bytes(1 << 27, 96), 2 * (1 << 24) * 96);
        assert_eq!(streaming_bytes(130_170_000, 96), 2 * 16_271_264 * 96);
        // B's 33.1M: window 17, 4 chunks.
        assert_eq!(streaming_bytes(33_100_000, 192), 2 * 8_275_008 * 192);
        // 2^20: window 12, 4 chunks; 2^16 and under go in one chunk, one buffer.
        assert_eq!(streaming_bytes(1 << 20, 96), 2 * (1 << 18) * 96);
        assert_eq!(streaming_bytes(1 << 16, 96), (1 << 16) * 96);
        assert_eq!(streaming_bytes(0, 96), 0);
    }

    #[test]
    fn constraints_go_to_the_gpu_only_beside_every_base() {
        let layout = layout_32gib();
        // The 32GiB shape's bases are 47.4 GB; its constraints about 8.9 GB.
        let bases = all_bases_bytes(&layout);
        assert!((47_000_000_000..48_000_000_000).contains(&bases), "{bases}");
        let room = room_for_constraints(&layout, 140 << 30).expect("an H200 has room");
        assert!(room > 9_000_000_000, "an H200 keeps the matrices: {room}");
        let eighty = room_for_constraints(&layout, 80_000_000_000).unwrap_or(0);
        assert!(eighty > 0, "an 80 GB card has some room too");
        assert_eq!(
            room_for_constraints(&layout, 24 << 30),
            None,
            "a 24 GiB card keeps bases, not constraints"
        );
        assert!(
            evaluating_working_bytes(1 << 27, layout.l, layout.ic)
                > working_bytes(1 << 27, layout.l),
            "evaluating on the GPU needs a third vector and the witness"
        );
    }

    #[test]
    fn a_gpu_keeps_two_sets_where_both_fit_and_frees_the_oldest_where_not() {
        let layout = layout_32gib();
        let n = 1u64 << 27;
        let working = evaluating_working_bytes(n, layout.l, layout.ic);
        let constraints = 8_900_000_000;
        let set = |slot, last_used| KeptSet {
            slot,
            bytes: all_bases_bytes(&layout) + constraints,
            last_used,
        };
        let wanted = all_bases_bytes(&layout) + constraints + working;
        // An H200 (140 GiB) holds two 32GiB-sized sets with their constraints.
        assert!(slots_to_free(&[set(0, 1)], wanted, 140 << 30, 3).is_empty());
        // An 80 GB card holds one: the set kept goes.
        assert_eq!(
            slots_to_free(&[set(2, 1)], wanted, 80_000_000_000, 3),
            vec![2]
        );
        // Least recently used first, only as many as needed.
        let small = |slot, last_used| KeptSet {
            slot,
            bytes: 10 << 30,
            last_used,
        };
        let kept = [small(0, 5), small(1, 3), small(2, 9)];
        assert_eq!(slots_to_free(&kept, 20 << 30, 45 << 30, 3), vec![1]);
        assert_eq!(slots_to_free(&kept, 30 << 30, 45 << 30, 3), vec![1, 0]);
        // No free slot: the oldest goes even where memory would hold it.
        assert_eq!(slots_to_free(&kept, 1 << 30, 1 << 40, 2), vec![1]);
        // Nothing kept: nothing to free, even when the newcomer alone is too large (its
        // upload then says so).
        assert!(slots_to_free(&[], 1 << 40, 1 << 30, 3).is_empty());
    }

    #[test]
    fn set_extents_follow_the_file() {
        let layout = ParamsLayout {
            vk_bytes: 100,
            ic: 2,
            h: 3,
            l: 4,
            a: 5,
            b: 6,
        };
        assert_eq!(set_extent(&layout, BaseSet::H), (104, 3));
        assert_eq!(set_extent(&layout, BaseSet::L), (104 + 3 * 96 + 4, 4));
        let b_g2 = set_extent(&layout, BaseSet::BG2);
        assert_eq!(b_g2.1, 6);
        assert_eq!(b_g2.0 + 6 * 192, layout.file_bytes());
    }
}
