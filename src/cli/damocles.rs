//! `cuzk damocles-c2`, `cuzk damocles-snap` and the hidden `cuzk processor STAGE`: the
//! process set up as damocles-worker's processor (its placement, the CPU split, stdout kept
//! for the protocol), then [`crate::damocles::serve`] on stdin and stdout.

use anyhow::Result;

use super::flags::{DamoclesC2Args, ProcessorArgs};
use crate::damocles::{self, Stage};

/// The top-level entry point for `cuzk damocles-c2` and `cuzk damocles-snap`.
pub(super) fn serve(stage: Stage, args: DamoclesC2Args) -> Result<u8> {
    // damocles' cpuset and NUMA node first: every thread started later inherits them, and
    // `--prover-cpus` then splits the CPUs damocles gave.
    let placement = damocles::placement::Placement::from_env()?;
    if !placement.is_empty() {
        let applied = placement.apply()?;
        log::info!(
            "damocles-{} processor settings: {applied}",
            match stage {
                Stage::C2 => "c2",
                Stage::SnapProve => "snap",
            }
        );
    }
    // It may restart the process, which must happen before stdout is rearranged.
    args.tuning.split_cpus()?;
    // First, before anything can print: stdout becomes the protocol's alone.
    let output = damocles::protocol_stdout()?;
    let settings = args.to_settings(stage)?;
    let input = Box::new(std::io::BufReader::new(std::io::stdin()));
    damocles::serve(input, Box::new(output), &settings)
}

/// The top-level entry point for `cuzk processor c2|snap_prove`: what damocles-worker runs
/// when its processor has no `args`, the same as the named commands.
pub(super) fn serve_processor(args: ProcessorArgs) -> Result<u8> {
    let stage = args.stage()?;
    serve(stage, args.c2)
}
