//! Prints the sizing table in README: for each PoRep sector size, the memory one partition
//! holds while in flight and the memory its parameter set holds, from the partition circuit's
//! counts (the blank circuit, counted the way the parameter generator sees it).
//!
//! ```text
//! cargo run --release --example sizing          # about two minutes: 32GiB and 64GiB count for a minute each
//! ```

use anyhow::Result;
use cuzk::backend::cuda::residency;
use cuzk::c1::SectorSizeName;
use cuzk::footprint::Footprint;
use cuzk::memory::show_bytes;
use cuzk::params::load::ParamsLayout;

fn main() -> Result<()> {
    println!("| sector size | partitions | constraints per partition | per partition in flight | parameter set | parameters + one partition | cuda backend: per partition in flight | cuda backend: GPU memory beside the constraints |");
    println!("|---|---|---|---|---|---|---|---|");
    for size in [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30] {
        let counts = cuzk::circuits::count_shape(cuzk::proof_kind::CircuitId::seal(size))?;
        let partitions = cuzk::porep::registered_proof_for(size)?.partitions();
        let layout = ParamsLayout {
            vk_bytes: 868 + 96 * counts.inputs,
            ic: counts.inputs,
            h: counts.domain() - 1,
            l: counts.aux,
            a: counts.inputs + counts.a_aux_density,
            b: counts.b_input_density + counts.b_aux_density,
        };
        let f = Footprint::of(&layout);
        // The cuda backend with the constraints on the GPU: the host holds witnesses; the GPU
        // every base and one evaluating partition's working set.
        let gpu = residency::all_bases_bytes(&layout)
            + residency::evaluating_working_bytes(f.domain, f.aux, f.inputs);
        println!(
            "| {} | {partitions} | {} | {} | {} | {} | {} | {} |",
            SectorSizeName(size),
            counts.constraints,
            show_bytes(f.partition_bytes),
            show_bytes(f.params_bytes),
            show_bytes(f.params_bytes + f.partition_bytes),
            show_bytes(f.witness_bytes),
            show_bytes(gpu),
        );
    }
    Ok(())
}
