//! `cuzk bench`: this machine sized and timed on synthetic inputs of a sector size's
//! shape, the report on stdout.

use anyhow::Result;

use super::flags::BenchArgs;
use super::print;
use crate::proof_kind::CircuitId;

/// The top-level entry point for `cuzk bench`.
pub(super) fn run_bench(args: BenchArgs) -> Result<u8> {
    args.tuning.split_cpus()?;
    let is_json = args.json;
    let plan = args.to_plan()?;
    let report = crate::bench::run(&plan)?;
    let circuit = CircuitId {
        kind: plan.kind,
        sector_size: plan.sector_size,
    };
    if is_json {
        let json = crate::bench::to_json(&report, circuit);
        print(&(serde_json::to_string_pretty(&json)? + "\n"))?;
    } else {
        print(&crate::bench::render(&report, circuit))?;
    }
    Ok(0)
}
