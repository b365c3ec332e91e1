//! Recording a circuit on several cores: every lane runs the whole (blank) circuit, but
//! builds the linear combinations of its own blocks of rows only ([`Lane`]), which is most of
//! a recording's time. The lanes' matrices are then interleaved back into row order and their
//! coefficients renumbered in the order a single recorder meets them, so the result, and the
//! file saved from it, is the same byte for byte as [`R1cs::record`]'s.
//!
//! A circuit's synthesis must be deterministic for this: the lanes are checked to agree on
//! the numbers of inputs, aux variables and constraints.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use anyhow::{ensure, Result};
use bellperson::Circuit;
use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::PrimeField;
use rayon::prelude::*;

use super::recorder::{Lane, Recorder, LANE_BLOCK_ROWS};
use super::{special_ids, Matrix, R1cs, R1csCounts, Storage};

/// Records the circuit `make` builds on `lanes` threads (one lane records alone).
pub(super) fn record_in_lanes<C, F>(make: F, lanes: usize) -> Result<R1cs>
where
    C: Circuit<Fr>,
    F: Fn() -> C + Sync,
{
    let lanes = lanes.max(1) as u64;
    let recorders: Vec<Recorder> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..lanes)
            .map(|lane| {
                let make = &make;
                std::thread::Builder::new()
                    .name(format!("cuzk-record-{lane}"))
                    .spawn_scoped(scope, move || {
                        Recorder::run_lane(make(), true, Lane { lane, lanes })
                    })
            })
            .collect::<std::io::Result<_>>()?;
        handles
            .into_iter()
            .map(|handle| match handle.join() {
                Ok(recorded) => Ok(recorded?),
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect::<Result<Vec<_>>>()
    })?;
    merge(recorders)
}

/// One recorder's rows, interleaved back into row order, with one coefficient numbering.
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
    let (coeffs, renumber) = merge_coefficients(&recorders);
    let matrices = [0, 1, 2].map(|which| {
        let merged = interleave(&recorders, which, rows, &renumber);
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

/// Matrix `which` in row order: block `b` of [`LANE_BLOCK_ROWS`] rows is lane `b % lanes`'s
/// block `b / lanes`, its coefficients renumbered.
fn interleave(recorders: &[Recorder], which: usize, rows: u64, renumber: &[Vec<u32>]) -> Matrix {
    let lanes = recorders.len() as u64;
    let blocks = rows.div_ceil(LANE_BLOCK_ROWS);
    // Each block's rows in its lane's matrix.
    let local = |b: u64| {
        let start = (b / lanes) * LANE_BLOCK_ROWS;
        let end = start + LANE_BLOCK_ROWS.min(rows - b * LANE_BLOCK_ROWS);
        (
            &recorders[(b % lanes) as usize].matrices[which],
            start as usize,
            end as usize,
        )
    };
    let mut row_ptr = Vec::with_capacity(rows as usize + 1);
    row_ptr.push(0u64);
    for b in 0..blocks {
        let (m, start, end) = local(b);
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
    let mut work = Vec::with_capacity(blocks as usize);
    for b in 0..blocks {
        let (m, start, end) = local(b);
        let span = m.row_ptr[start] as usize..m.row_ptr[end] as usize;
        let (out, tail) = std::mem::take(&mut rest).split_at_mut(span.len());
        rest = tail;
        work.push((out, &m.entries[span], &renumber[(b % lanes) as usize]));
    }
    work.into_par_iter().for_each(|(out, from, renumber)| {
        for (slot, &e) in out.iter_mut().zip(from) {
            let id = renumber[(e >> 32) as usize];
            slot.write((e & 0xffff_ffff) | (u64::from(id) << 32));
        }
    });
    // SAFETY: the blocks' spans tile 0..nnz (each block's length is its rows' entries, and
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
