//! Prints the size of faithful input files (random data, the real structure: what `cuzk
//! bench` proves) per sector size: a C1 file bare and in the lotus-bench wrapper, and an
//! update input. `--max-c1-bytes`' default is set well above the largest.
use anyhow::Result;
use cuzk::c1::{SectorIdentity, SectorSizeName};
use rand::SeedableRng;

fn main() -> Result<()> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let id = SectorIdentity {
        miner_id: 1000,
        sector_num: 1,
    };
    println!("| sector size | C1, bare | C1, lotus-bench wrapper | update input |");
    println!("|---|---|---|---|");
    for size in [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30] {
        let c1 = cuzk::shape::synthetic_c1(size, id, &mut rng)?;
        let bare = serde_json::to_vec(&c1)?.len();
        let wrapped = cuzk::shape::wrap_benchmark_c1(&c1, id)?.len();
        let update = cuzk::shape::synthetic_update(size, id, &mut rng)?.len();
        println!(
            "| {} | {bare} | {wrapped} | {update} |",
            SectorSizeName(size)
        );
    }
    Ok(())
}
