//! `cuzk reference`: C1 files proved one at a time by filecoin-proofs itself, each line
//! printed as it is known.

use anyhow::Result;

use super::flags::ReferenceArgs;
use super::print;

/// The top-level entry point for `cuzk reference`.
pub(super) fn run_reference(args: ReferenceArgs) -> Result<u8> {
    crate::reference::run(&args.files, args.miner_id(), &mut |line| print(line))
}
