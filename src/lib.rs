//! cuzk proves Filecoin PoRep commit phase 2 in bulk: C1 files in, verified Groth16 proofs
//! out, with a timeline of where every second went.
//!
//! # Brief overview
//! The data flows one way through one module per stage:
//!
//! - [`spool`] claims C1 files from the inbox and moves results to the outbox or `failed/`;
//! - [`c1`] parses a C1 file and resolves its miner and sector;
//! - [`porep`] binds it to the PoRep circuit of its sector size;
//! - [`synth`] synthesizes one partition into a [`synth::SynthesizedPartition`];
//! - [`backend`] turns synthesized partitions into Groth16 proofs: cuzk's own Groth16 on the
//!   CPU or on a GPU's ec-gpu kernels, or SupraSeal on every GPU; it chooses one for the run
//!   and holds what GPU backends share (device discovery and conventions, free memory, kernel
//!   activity, the PoSt priority lock, the CPU split) in [`backend::gpu`];
//! - [`pipeline`] runs those stages concurrently and emits [`event::Event`]s;
//! - [`report`] consumes the events: the [`timeline`] CSV, progress and the summary;
//! - [`waterfall`] draws a timeline.
//!
//! [`damocles`] feeds the same pipeline from damocles-worker's external processor protocol
//! instead of an inbox somebody else fills.
//!
//! [`memory`] is the run's budget of bytes: parameters and partitions reserve before they
//! allocate. [`status`] reports what a spool holds, and [`prometheus`] says it to Prometheus.
//! [`params`] finds, checks and loads the Groth16 parameters; [`reference`] runs
//! filecoin-proofs' own prover for comparison; [`sealing`] seals random test sectors;
//! [`shape`] makes benchmark inputs of any size; [`commcid`] writes commitments as the CIDs
//! lotus shows; [`atomic_file`] writes every file a reader takes whole or not at all;
//! [`process`] names this process to other runs sharing a directory; [`cpus`] reads and sets
//! the CPUs it runs on; [`util`] holds small
//! helpers every room may use; [`cli`] is the command line, and [`build_info`] what
//! `cuzk --version` says the binary was built from.
#![deny(missing_docs)]

pub mod atomic_file;
pub mod backend;
pub mod bench;
pub mod build_info;
pub mod c1;
pub mod cli;
pub mod commcid;
pub mod compact_witness;
pub mod cpus;
pub mod damocles;
pub mod event;
pub mod input;
pub mod memory;
pub mod params;
pub mod pipeline;
pub mod porep;
pub mod process;
pub mod prometheus;
pub mod proof_kind;
pub mod r1cs;
pub mod reference;
pub mod report;
pub mod sealing;
pub mod sector;
pub mod shape;
pub mod spool;
pub mod status;
pub mod synth;
pub mod test_sizes;
pub mod timeline;
pub mod update;
pub mod util;
pub mod waterfall;
pub mod witness;
