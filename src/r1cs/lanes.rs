//! Recording a circuit on several cores, two ways; either gives the same matrices, and the
//! same file, byte for byte as [`R1cs::record`] on one thread.
//!
//! - By rows ([`record_in_lanes`]), for any circuit: every lane runs the whole blank circuit
//!   but builds the linear combinations of its own blocks of rows only. About half of a
//!   recording is the gadgets' work outside the constraints, which every lane repeats, so
//!   this at best halves the time.
//! - By units ([`record_by_units`]), for a circuit made of a prelude and identical units that
//!   use only the prelude's variables and their own (a PoRep partition's challenges): each
//!   lane runs the prelude and its own units only, its counts jumping over the others'. The
//!   units' sizes are counted first, and a circuit whose units are not all alike is recorded
//!   by rows instead.
//!
//! The lanes' rows are then put back in row order and the coefficients renumbered in the order
//! a single recorder meets them. A circuit must synthesize deterministically: the lanes are
//! checked to agree on the numbers of inputs, aux variables and constraints, and their rows to
//! cover every row once.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::ops::Range;

use anyhow::{ensure, Result};
use bellperson::Circuit;
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::PrimeField;
use rayon::prelude::*;

use super::recorder::{Counted, Jump, Recorder, Share};
use super::{special_ids, Matrix, R1cs, R1csCounts, Storage};

/// A circuit made of a prelude and [`Units::units`] units, each using only the prelude's
/// variables and its own, the last unit ending the circuit. The units' constraints are
/// alike wherever they fall: a lane runs its own units right after the prelude, its counts
/// jumping over the others'.
pub trait Units: Sync {
    /// The circuit.
    type Circuit: Circuit<Fr>;

    /// How many units the whole circuit has.
    fn units(&self) -> usize;

    /// The circuit with its prelude and only the units in `units` (its values, if any, are
    /// never read).
    fn with_units(&self, units: Range<usize>) -> Result<Self::Circuit>;
}

/// Records the circuit `make` builds on `lanes` threads, each keeping its own blocks of rows.
pub(super) fn record_in_lanes<C, F>(make: F, lanes: usize) -> Result<R1cs>
where
    C: Circuit<Fr>,
    F: Fn() -> Result<C> + Sync,
{
    let lanes = lanes.max(1) as u64;
    let recorders = run_lanes(
        (0..lanes)
            .map(|lane| (Share::Blocks { lane, lanes }, None))
            .collect(),
        |_| make(),
    )?;
    merge(recorders)
}

/// How a recording was split between threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Split {
    ByUnits,
    ByRows,
}

/// Records `circuit` on up to `threads` threads, each running the prelude and its share of
/// the units; by rows ([`record_in_lanes`]) when there are too few units or they are not
/// alike.
pub(super) fn record_by_units<U: Units>(circuit: &U, threads: usize) -> Result<(R1cs, Split)> {
    let units = circuit.units();
    let lanes = threads.min(units);
    let by_rows = || {
        Ok((
            record_in_lanes(|| circuit.with_units(0..units), threads)?,
            Split::ByRows,
        ))
    };
    if lanes < 2 {
        return by_rows();
    }
    // The prelude and a unit, from the counts of one and of two units (a circuit may not
    // have none), both at once and building nothing.
    let count = |n: usize| -> Result<Counted> {
        Ok(Recorder::run_share(circuit.with_units(0..n)?, true, Share::Nothing, None)?.synthesized)
    };
    let (one, two) = std::thread::scope(|scope| {
        let two = scope.spawn(|| count(2));
        let one = count(1);
        let two = two
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (one, two)
    });
    let (one, two) = (one?, two?);
    let sizes = two
        .since(one)
        .and_then(|unit| Some((one.since(unit)?, unit)));
    let Some((prelude, unit)) = sizes else {
        log::debug!("the circuit's units are not alike: recorded by rows instead");
        return by_rows();
    };
    let first_unit = |k: usize| k * units / lanes;
    let shares = (0..lanes)
        .map(|k| {
            let (from, to) = (first_unit(k), first_unit(k + 1));
            let start = if k == 0 {
                0
            } else {
                prelude.plus(unit, from).rows
            };
            let end = if k + 1 == lanes {
                u64::MAX // the input constraints too
            } else {
                prelude.plus(unit, to).rows
            };
            let jump = Jump {
                after: prelude,
                skip: Counted::default().plus(unit, from),
                tail: Counted::default().plus(unit, units - to),
            };
            (Share::Rows(start..end), Some(jump))
        })
        .collect();
    let recorders = run_lanes(shares, |k| {
        circuit.with_units(first_unit(k)..first_unit(k + 1))
    })?;
    // Each lane's own units must have been as long as the first two said.
    let ragged = recorders
        .iter()
        .enumerate()
        .any(|(k, r)| r.own_end != prelude.plus(unit, first_unit(k + 1)));
    if ragged {
        log::debug!("the circuit's units are not all alike: recorded by rows instead");
        return by_rows();
    }
    Ok((merge(recorders)?, Split::ByUnits))
}

/// Runs one recorder per share, each on a thread of its own, over the circuit `make(lane)`.
fn run_lanes<C, F>(shares: Vec<(Share, Option<Jump>)>, make: F) -> Result<Vec<Recorder>>
where
    C: Circuit<Fr>,
    F: Fn(usize) -> Result<C> + Sync,
{
    std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .enumerate()
            .map(|(lane, (share, jump))| {
                let make = &make;
                std::thread::Builder::new()
                    .name(format!("cuzk-record-{lane}"))
                    .spawn_scoped(scope, move || -> Result<Recorder> {
                        Ok(Recorder::run_share(make(lane)?, true, share, jump)?)
                    })
            })
            .collect::<std::io::Result<_>>()?;
        handles
            .into_iter()
            .map(|handle| match handle.join() {
                Ok(recorded) => recorded,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect::<Result<Vec<_>>>()
    })
}

/// A run of rows one lane kept: where they go, and where they are in its matrices.
struct Segment {
    rows: Range<u64>,
    lane: usize,
    local_start: usize,
}

/// The lanes' rows put back in row order, with one coefficient numbering.
fn merge(mut recorders: Vec<Recorder>) -> Result<R1cs> {
    let first = &recorders[0];
    let (inputs, aux, rows) = (first.inputs, first.aux, first.constraints);
    for r in &recorders {
        ensure!(
            (r.inputs, r.aux, r.constraints) == (inputs, aux, rows),
            "the circuit synthesized differently on two recording threads ({} and {} constraints): it is not deterministic",
            rows,
            r.constraints
        );
    }
    let segments = segments(&recorders, rows)?;
    let (coeffs, renumber) = merge_coefficients(&recorders);
    let matrices = [0, 1, 2].map(|which| {
        let merged = concatenate(&recorders, which, &segments, &renumber);
        // Each lane's share is dropped once merged: the peak holds one matrix twice, not three.
        for r in &mut recorders {
            r.matrices[which] = Matrix::default();
        }
        merged
    });
    let densities = [0, 1, 2].map(|which| {
        let each: Vec<&DensityTracker> = recorders
            .iter()
            .map(|r| [&r.a_aux, &r.b_input, &r.b_aux][which])
            .collect();
        union(&each)
    });
    let nnz = matrices.each_ref().map(|m| m.entries.len() as u64);
    let (one, minus_one) = special_ids(&coeffs);
    Ok(R1cs {
        counts: R1csCounts {
            inputs: inputs as u64,
            aux: aux as u64,
            constraints: rows,
            coeffs: coeffs.len() as u64,
            nnz,
        },
        coeffs,
        one,
        minus_one,
        storage: Storage::Owned(matrices),
        densities,
    })
}

/// Every lane's runs of rows in row order, checked to cover rows `0..rows` once.
fn segments(recorders: &[Recorder], rows: u64) -> Result<Vec<Segment>> {
    let mut all = Vec::new();
    for (lane, r) in recorders.iter().enumerate() {
        let mut local_start = 0;
        for &(first, len) in &r.segments {
            all.push(Segment {
                rows: first..first + len,
                lane,
                local_start,
            });
            local_start += len as usize;
        }
    }
    all.sort_unstable_by_key(|s| s.rows.start);
    let mut next = 0;
    for s in &all {
        ensure!(
            s.rows.start == next,
            "the recording threads left rows {next}.. unrecorded or recorded twice"
        );
        next = s.rows.end;
    }
    ensure!(
        next == rows,
        "the recording threads recorded {next} of {rows} rows"
    );
    Ok(all)
}

/// The coefficients numbered by where they first appear across all lanes (as one recorder
/// numbers them), and for each lane its own numbers' new ones.
fn merge_coefficients(recorders: &[Recorder]) -> (Vec<Fr>, Vec<Vec<u32>>) {
    let mut firsts: Vec<((u64, u8, u32), usize, u32)> = recorders
        .iter()
        .enumerate()
        .flat_map(|(lane, r)| {
            r.coeff_firsts
                .iter()
                .enumerate()
                .map(move |(id, &at)| (at, lane, id as u32))
        })
        .collect();
    firsts.sort_unstable();
    let mut coeffs = Vec::new();
    let mut ids: HashMap<[u8; 32], u32> = HashMap::new();
    let mut renumber: Vec<Vec<u32>> = recorders.iter().map(|r| vec![0; r.coeffs.len()]).collect();
    for (_, lane, id) in firsts {
        let coeff = recorders[lane].coeffs[id as usize];
        let global = *ids.entry(coeff.to_repr()).or_insert_with(|| {
            coeffs.push(coeff);
            coeffs.len() as u32 - 1
        });
        renumber[lane][id as usize] = global;
    }
    (coeffs, renumber)
}

/// Matrix `which` in row order: each segment's rows from its lane's matrix, coefficients
/// renumbered.
fn concatenate(
    recorders: &[Recorder],
    which: usize,
    segments: &[Segment],
    renumber: &[Vec<u32>],
) -> Matrix {
    // Each segment's rows in its lane's matrix.
    let local = |s: &Segment| {
        let len = (s.rows.end - s.rows.start) as usize;
        (
            &recorders[s.lane].matrices[which],
            s.local_start,
            s.local_start + len,
        )
    };
    let rows = segments.last().map_or(0, |s| s.rows.end) as usize;
    let mut row_ptr = Vec::with_capacity(rows + 1);
    row_ptr.push(0u64);
    for s in segments {
        let (m, start, end) = local(s);
        let (base, local_base) = (*row_ptr.last().unwrap_or(&0), m.row_ptr[start]);
        row_ptr.extend(
            m.row_ptr[start + 1..=end]
                .iter()
                .map(|p| base + p - local_base),
        );
    }
    let nnz = *row_ptr.last().unwrap_or(&0) as usize;
    let mut entries: Vec<u64> = Vec::with_capacity(nnz);
    let mut rest: &mut [MaybeUninit<u64>] = &mut entries.spare_capacity_mut()[..nnz];
    let mut work = Vec::with_capacity(segments.len());
    for s in segments {
        let (m, start, end) = local(s);
        let span = m.row_ptr[start] as usize..m.row_ptr[end] as usize;
        let (out, tail) = std::mem::take(&mut rest).split_at_mut(span.len());
        rest = tail;
        work.push((out, &m.entries[span], &renumber[s.lane]));
    }
    work.into_par_iter().for_each(|(out, from, renumber)| {
        for (slot, &e) in out.iter_mut().zip(from) {
            let id = renumber[(e >> 32) as usize];
            slot.write((e & 0xffff_ffff) | (u64::from(id) << 32));
        }
    });
    // SAFETY: the segments' spans tile 0..nnz (each one's length is its rows' entries, and
    // row_ptr was summed from the same spans), and every slot of each was written above.
    unsafe { entries.set_len(nnz) };
    Matrix { row_ptr, entries }
}

/// The variables some lane marked.
fn union(each: &[&DensityTracker]) -> DensityTracker {
    let mut bv = each[0].bv.clone();
    for other in &each[1..] {
        for (word, &o) in bv
            .as_raw_mut_slice()
            .iter_mut()
            .zip(other.bv.as_raw_slice())
        {
            *word |= o;
        }
    }
    let total_density = bv.count_ones();
    DensityTracker { bv, total_density }
}
