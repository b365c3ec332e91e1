//! The event table: every event's variant, fields, timeline name and row layout, once.
//!
//! [`event_table!`] hands the table to a macro that builds something from it: `define_events`
//! (in `kinds.rs`) makes [`super::EventKind`], [`super::EventName`] and their accessors, and
//! `timeline`'s `define_codec` makes the row encoder and decoder. A new event is one entry
//! here (and an example in `examples.rs`, which the tests ask for).
//!
//! An entry reads `Variant as Name = "TIMELINE_NAME" { fields }`; each field names the column
//! it goes to in a timeline row:
//!
//! | layout | column | read back |
//! |---|---|---|
//! | `[job]`, `[partition]` | its own | required |
//! | `[worker]` | `worker` | required; `[worker or empty]` takes an empty column too |
//! | `[text]` | `detail`, the whole of it | the field's own text |
//! | `[text via codec]` | `detail`, written and read by `codec` (in `timeline`) | `codec`'s |
//! | `[key "k"]` | `detail`'s `k=value` pair, pairs joined by `;` | required |
//! | `[key "k" or default]` | the same | the default when missing or malformed |
//! | `[key "k" or omit]` | the same, left out when the value is the default | the default |
//! | `[key "k" via codec]` | the same, the value written and read by `codec` | as above |
//! | `[rest "k"]` | `k=` and the rest of `detail`: last, since it may hold any character | required |
//! | `[head]`, `[tail]` | `detail` as `head: tail` | required |
//!
//! The layouts are what timelines have always held, so rows of older versions still read.

/// Calls `$callback! { ... }` with every event, in pipeline order.
macro_rules! event_table {
    ($callback:ident) => {
        $callback! {
            /// The run began.
            RunStarted as RunStart = "RUN_START" {
                /// How the run was configured.
                settings: RunStartSettings [text],
            },
            /// A C1 file was claimed from the inbox (or resumed from the work directory).
            JobClaimed as Claim = "CLAIM" {
                /// The job (the C1 file's name without `.json`).
                job: String [job],
                /// True when the claim was left over from an earlier run.
                is_resumed: bool [text via resumed],
            },
            /// The input file parsed and bound to its circuits.
            JobParsed as Parsed = "PARSED" {
                /// The job.
                job: String [job],
                /// `s-t0<miner>-<sector>` (`unnamed sector` for an update input that does not say).
                sector: String [key "sector" or default],
                /// Sector size in bytes.
                sector_size: u64 [key "size" via size_name or default],
                /// Partitions to prove.
                partitions: usize [key "partitions"],
                /// A C2 or an update; a C2 says nothing of its kind, as timelines always had it.
                kind: ProofKind [key "kind" or omit],
                /// A benchmark shape file: timed like a real one, never written as a proof.
                is_benchmark: bool [key "benchmark" or omit],
            },
            /// A partition's synthesis began.
            SynthStarted as SynthStart = "SYNTH_START" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The synthesis worker.
                worker: WorkerName [worker or empty],
            },
            /// A partition's synthesis ended.
            SynthFinished as SynthEnd = "SYNTH_END" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The synthesis worker.
                worker: WorkerName [worker or empty],
                /// Constraints in the partition.
                constraints: usize [key "constraints" or default],
                /// True when it took the witness-only pass over pre-compiled constraints.
                is_precompiled: bool [key "precompiled" or default],
                /// True when a, b and c were left to the prover's GPU: the partition is its witness.
                is_deferred: bool [key "deferred" or default],
                /// Where the synthesis spent its time.
                profile: SynthesisProfile [text via synthesis_profile],
            },
            /// The synthesized partition entered the prover's queue (the send returned).
            PartitionQueued as ChanSend = "CHAN_SEND" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The synthesis worker that sent it.
                worker: WorkerName [worker or empty],
            },
            /// A partition waits to start: its bytes would exceed the memory budget now.
            MemoryWait as MemoryWait = "MEMORY_WAIT" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// Bytes the partition needs.
                needed_bytes: u64 [key "needed"],
                /// Bytes reserved by parameters and other partitions.
                in_use_bytes: u64 [key "in_use"],
                /// The budget (`--max-memory`).
                budget_bytes: u64 [key "budget"],
            },
            /// A prover took the partition off the queue.
            ProverPickedUp as GpuPickup = "GPU_PICKUP" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker or empty],
            },
            /// The prover's thread began evaluating a partition's a, b and c on the host,
            /// right before its proof (its budget grown first).
            HostEvaluationStarted as EvalStart = "EVAL_START" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker or empty],
            },
            /// The partition's a, b and c are on the host, ready for its proof.
            HostEvaluationFinished as EvalEnd = "EVAL_END" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker or empty],
                /// Milliseconds it waited for the memory budget before evaluating.
                memory_wait_ms: f64 [key "memory_wait_ms"],
                /// Milliseconds the evaluation took (the witness expanded first).
                ms: f64 [key "ms"],
                /// Bytes the partition holds now.
                bytes: u64 [key "bytes"],
            },
            /// Insecure test parameters are being generated because `--gen-test-params` was given.
            ParamsGenerating as ParamsGen = "PARAMS_GEN" {
                /// The parameter file being made.
                path: String [text],
            },
            /// A prover (or [`WorkerName::ParamsLoader`]) began loading a parameter file.
            ParamsLoadStarted as ParamsStart = "PARAMS_START" {
                /// The prover, or [`WorkerName::ParamsLoader`].
                worker: WorkerName [worker],
                /// The parameter file.
                path: String [text],
            },
            /// The parameter file is loaded.
            ParamsLoadFinished as ParamsEnd = "PARAMS_END" {
                /// The prover, or [`WorkerName::ParamsLoader`].
                worker: WorkerName [worker],
                /// The parameter file.
                path: String [text],
            },
            /// A circuit shape's pre-compiled constraints are ready for the partitions after.
            ConstraintsReady as ConstraintsReady = "CONSTRAINTS_READY" {
                /// True when recorded in this run (and saved), false when loaded.
                is_recorded: bool [key "recorded" or default],
                /// Bytes of the matrices.
                bytes: u64 [key "bytes"],
                /// Milliseconds it took.
                ms: f64 [key "ms"],
                /// The R1CS file.
                path: String [rest "path"],
            },
            /// Pre-compiled constraints for a circuit shape cannot be had in this run (they
            /// failed to load or record, or do not fit the memory budget): its partitions are
            /// synthesized in full, the slower way.
            FullSynthesis as FullSynth = "FULL_SYNTH" {
                /// The R1CS file that was wanted: a file name in the cache, so the first `: `
                /// ends it.
                path: String [head],
                /// Why it cannot be used.
                reason: String [tail],
            },
            /// A GPU prover found bellperson's priority lock taken (a WindowPoSt or WinningPoSt
            /// is on the GPU) and waits, starting no GPU work, until it is free.
            PriorityWaitStarted as PriorityWaitStart = "PRIORITY_WAIT_START" {
                /// The prover.
                worker: WorkerName [worker],
                /// The lock file.
                path: String [text],
            },
            /// The priority lock is free again; the prover goes on.
            PriorityWaitFinished as PriorityWaitEnd = "PRIORITY_WAIT_END" {
                /// The prover.
                worker: WorkerName [worker],
                /// Milliseconds it waited.
                waited_ms: f64 [key "waited_ms"],
            },
            /// Groth16 proving of a partition began.
            ProveStarted as GpuStart = "GPU_START" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker or empty],
            },
            /// Groth16 proving of a partition ended.
            ProveFinished as GpuEnd = "GPU_END" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker or empty],
                /// Time per prover step; `None` only when read from a timeline that lacks them.
                timings: Option<ProveTimings> [text via timings],
            },
            /// A step of a partition's proof failed on the prover's GPU and was done again on
            /// the CPU.
            CpuFallback as CpuFallback = "CPU_FALLBACK" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker],
                /// Which step failed, and why.
                reason: String [text],
            },
            /// A partition failed on its prover in a way the device, not the file, may be to
            /// blame for (a CUDA error, a batch that failed as a unit): its file goes back to
            /// the inbox, to be proved alone, and the fault is counted apart from crashes.
            DeviceFault as DeviceFault = "DEVICE_FAULT" {
                /// The job.
                job: String [job],
                /// The partition.
                partition: usize [partition],
                /// The prover.
                worker: WorkerName [worker],
                /// What the prover said.
                message: String [text],
            },
            /// A prover stopped after `--max-device-faults` faulty calls in a row: its device
            /// is taken to be broken. The run goes on with the others, or stops if it was the
            /// last.
            ProverStopped as ProverStopped = "PROVER_STOPPED" {
                /// The prover.
                worker: WorkerName [worker],
                /// Faulty calls in a row.
                faults: u32 [key "faults"],
                /// What the last one said.
                message: String [rest "last"],
            },
            /// How much of the last period a GPU ran kernels, as its driver counts it (NVML's
            /// GPU utilization, what `nvidia-smi` shows); see [`crate::backend::gpu::activity`].
            GpuBusy as GpuBusy = "GPU_BUSY" {
                /// The GPU's index among those this process sees (`gpu-N`'s N).
                gpu: usize [key "gpu"],
                /// Percentage of the period during which one or more kernels was executing.
                busy_pct: f64 [key "busy_pct"],
                /// The period's length in milliseconds; it ended when the event was stamped
                /// (an idle stretch is sent after it ends, stamped with its end).
                period_ms: f64 [key "period_ms"],
            },
            /// The assembled proof is being checked with `verify_seal`.
            VerifyStarted as VerifyStart = "VERIFY_START" {
                /// The job.
                job: String [job],
            },
            /// The check finished.
            VerifyFinished as VerifyEnd = "VERIFY_END" {
                /// The job.
                job: String [job],
                /// Whether the proof verified.
                is_valid: bool [key "valid" or default],
            },
            /// The proof is durably in the outbox.
            ProofWritten as Done = "DONE" {
                /// The job.
                job: String [job],
                /// The proof file.
                path: String [text],
            },
            /// A resumed claim's name had a result in the outbox proved from other C1 bytes
            /// (lotus ran C1 again for the sector): the result was kept aside and the file is
            /// proved again.
            ResultSuperseded as Superseded = "SUPERSEDED" {
                /// The job.
                job: String [job],
                /// Where the earlier proof is kept (`outbox/superseded/...`).
                kept_as: String [text],
            },
            /// The job failed and its C1 file went to `failed/`.
            JobFailed as Failed = "FAILED" {
                /// The job.
                job: String [job],
                /// The stage that failed.
                stage: JobStage [head],
                /// What went wrong.
                message: String [tail],
            },
            /// A file looked unfinished and was left in the inbox for a later scan.
            FileDeferred as Deferred = "DEFERRED" {
                /// The file's name.
                job: String [job],
                /// Why.
                reason: String [text],
            },
            /// A C1 file kept failing alone on a prover not known to work (see
            /// `pipeline::device_faults`) and went to `set-aside/`, neither proved nor failed.
            FileSetAside as SetAside = "SET_ASIDE" {
                /// The job.
                job: String [job],
                /// Why, where it is, and how to try it again.
                reason: String [text],
            },
            /// Another run took a claimed file over while this one stood still (its heartbeat
            /// went unseen past its lease: a suspended VM, an overloaded host): that run
            /// proves it, and this run's proof of it was not written.
            ClaimTaken as ClaimTaken = "CLAIM_TAKEN" {
                /// The job.
                job: String [job],
                /// What happened, where the file was, and how to avoid it.
                reason: String [text],
            },
            /// An inbox file could not be claimed (its name is not UTF-8, the rename was
            /// refused); it stays in the inbox and is tried again at the next scan.
            FileSkipped as Skipped = "SKIPPED" {
                /// The job the file would have been.
                job: String [job],
                /// Why it could not be claimed.
                reason: String [text],
            },
            /// SIGINT or SIGTERM: no new files are claimed; work in flight finishes.
            StopRequested as Stop = "STOP",
            /// The run ended.
            RunFinished as RunEnd = "RUN_END" {
                /// Proofs written.
                proved: usize [key "proved" or default],
                /// Jobs failed.
                failed: usize [key "failed" or default],
            },
        }
    };
}

pub(crate) use event_table;
