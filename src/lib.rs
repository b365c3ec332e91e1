//! cuzk proves Filecoin PoRep commit phase 2 and SnapDeals updates in bulk: C1 files (or
//! update inputs) in, verified Groth16 proofs out, with a timeline of where every second
//! went.
//!
//! # Brief overview
//! The data flows one way through one module per stage:
//!
//! - [`spool`] claims input files from the inbox and moves results to the outbox or `failed/`;
//! - [`input`] tells a C1 file ([`c1`], which also resolves its miner and sector) from an
//!   update input ([`update`]) by content;
//! - [`porep`] and [`update`] bind an input to its circuit as a [`sector::Sector`];
//!   [`proof_kind`] names the circuit, and [`circuits`] is the one route from it to its
//!   parameter files, counts and recorded constraints;
//! - [`witness`] computes native witnesses, [`compact_witness`] keeps one small while it
//!   waits for the GPU;
//! - [`synth`] synthesizes one partition into a [`synth::SynthesizedPartition`], through the
//!   gadgets or over constraints [`r1cs`] recorded; [`constraint_system`] is what their
//!   constraint systems share; [`host_abc`] is the memory a prover lends for a partition's
//!   a, b and c;
//! - [`backend`] turns synthesized partitions into Groth16 proofs: cuzk's own CUDA Groth16
//!   (`cuda`, the default where built), cuzk's Groth16 on the CPU or on ec-gpu's kernels, or
//!   SupraSeal; it chooses one for the run and holds what GPU backends share (device
//!   discovery and conventions, free memory, kernel activity, the PoSt priority lock, the
//!   CPU split) in [`backend::gpu`];
//! - [`pipeline`] runs those stages concurrently and emits [`event::Event`]s;
//! - [`report`] consumes the events: the [`timeline`] CSV, progress and the summary;
//! - [`waterfall`] draws a timeline.
//!
//! [`damocles`] feeds the same pipeline from damocles-worker's external processor protocol
//! instead of an inbox somebody else fills; [`serve`] feeds it from gRPC clients (Curio's
//! `cuzk.v1.ProvingEngine` API), through the spool's own inbox.
//!
//! [`memory`] is the run's budget of bytes: parameters and partitions reserve before they
//! allocate what [`footprint`] says they take. [`status`] reports what a spool holds, and
//! [`prometheus`] says it to Prometheus. [`fft`] (NTTs and their domain) and [`msm`] (the
//! CPU multiexp) are the arithmetic both the CPU prover and the parameter files use.
//! [`params`] finds, checks, loads and generates Groth16 parameter files, knowing files,
//! not circuits; [`reference`] runs filecoin-proofs' own provers for comparison;
//! [`sealing`] seals random test sectors with the partition counts of [`test_sizes`];
//! [`shape`] makes benchmark inputs of any size and [`bench`] runs `cuzk bench` on them;
//! [`commcid`] writes commitments as the CIDs lotus shows; [`atomic_file`] writes every
//! file a reader takes whole or not at all; [`process`] names this process to other runs
//! sharing a directory; [`cpus`] reads and sets the CPUs it runs on; [`util`] holds small
//! helpers every room may use; [`logging`] writes every message for people, as text or
//! JSON; [`cli`] is the command line, and [`build_info`] what `cuzk --version` says the
//! binary was built from.
#![deny(missing_docs)]

pub mod atomic_file;
pub mod backend;
pub mod bench;
pub mod build_info;
pub mod c1;
pub mod circuits;
pub mod cli;
pub mod commcid;
pub mod compact_witness;
pub mod constraint_system;
pub mod cpus;
pub mod damocles;
pub mod event;
pub mod fft;
pub mod footprint;
pub mod host_abc;
pub mod input;
pub mod logging;
pub mod memory;
pub mod msm;
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
pub mod serve;
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
