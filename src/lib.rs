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
//! - [`prove`] turns a synthesized partition into a Groth16 proof (its [`quotient`] and
//!   multiexps) on the [`kernels`] of a CPU or GPU, or [`supraseal`] proves batches of them; [`backend`]
//!   chooses, following the GPU conventions of the other Filecoin provers: [`gpu_env`] (the
//!   environment variables), [`gpu_memory`] (what fits on a GPU) and [`priority_lock`]
//!   (giving way to PoSt); [`gpu_activity`] records how busy the GPUs' kernels kept them;
//! - [`pipeline`] runs those stages concurrently and emits [`event::Event`]s;
//! - [`report`] consumes the events: the [`timeline`] CSV, progress and the summary;
//! - [`waterfall`] draws a timeline.
//!
//! [`damocles`] feeds the same pipeline from damocles-worker's external processor protocol
//! instead of an inbox somebody else fills.
//!
//! [`memory`] is the run's budget of bytes: parameters and partitions reserve before they
//! allocate; [`cpu_split`] can keep SupraSeal's host threads and synthesis on separate CPUs.
//! [`status`] reports what a spool holds, and [`metrics`] says it to Prometheus.
//! [`params`] finds, checks and loads the Groth16 parameters; [`reference`] runs
//! filecoin-proofs' own prover for comparison; [`sealing`] seals random test sectors;
//! [`shape`] makes benchmark inputs of any size; [`commcid`] writes commitments as the CIDs
//! lotus shows; [`atomic_file`] writes every file a reader takes whole or not at all;
//! [`process`] names this process to other runs sharing a directory; [`cli`] is the command
//! line.
#![deny(missing_docs)]

pub mod atomic_file;
pub mod backend;
pub mod bench;
pub mod c1;
pub mod cli;
pub mod commcid;
pub mod cpu_split;
pub mod damocles;
pub mod event;
pub mod gpu_activity;
pub mod gpu_env;
pub mod gpu_memory;
pub mod kernels;
pub mod memory;
pub mod metrics;
pub mod params;
pub mod pipeline;
pub mod porep;
pub mod priority_lock;
pub mod process;
pub mod prove;
pub mod quotient;
pub mod r1cs;
pub mod reference;
pub mod report;
pub mod sealing;
pub mod shape;
pub mod spool;
pub mod status;
pub mod supraseal;
pub mod synth;
pub mod timeline;
pub mod waterfall;
