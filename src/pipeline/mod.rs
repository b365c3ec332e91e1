//! Pipeline: runs a spool's jobs through the stages concurrently and emits events.
//!
//! ```text
//! feeder (this thread)   claim -> parse -> bind -> one synthesis task per partition
//!   synthesis pool (N)   synthesize -> bounded channel (depth D)
//!   prover threads (P)   [a, b, c on the host, the next beside] Groth16 per partition,
//!                        on a GPU or the CPU, each call on a thread of its own watched
//!                        against its deadline
//!   finisher thread      collect a job's partitions -> assemble -> verify_seal -> outbox
//!   gpu-activity thread  each GPU's kernel-busy share, every second (GPU runs only)
//!   reporter thread      every event: timeline, progress; then the run's metrics
//!                        (`--metrics-textfile`) and a feeding program's observer
//! ```
//!
//! This module only wires the run: it starts the threads and the channels between the
//! stages, runs the feeder on the calling thread and collects the result. The stages are
//! rooms of their own: [`feeder`] (claim, in [`claim_order`], and start), [`intake`] (a
//! claimed file becomes a sector), [`synthesis`] (the pool), [`prover`] with [`evaluation`]
//! (a partition that waited as its witness evaluated right before its proof) and
//! [`deadline`] (a call that never answers stops its prover, not the run), [`finisher`]
//! (assemble, verify, write);
//! [`job`] holds what they hand each other and the typed reasons a job fails, [`stop`] the
//! stop signals and halts, [`settings`] the checked configuration. A synthesis slot per
//! partition, returned only after the synthesized partition has been accepted by the
//! provers' channel, bounds the partitions held in memory to `N + D + P`. Data only moves
//! forward; every stage reports through [`EventSink`].
//!
//! A person runs the pipeline with [`run`]; a program that feeds the inbox itself (the
//! damocles processor) uses [`run_with`] and a [`RunControl`]: it sees every event as the
//! timeline records it, and asks the run to [`Drain`] and end when its input ends.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{Context, Result};
use crossbeam_channel::{bounded, unbounded};

use crate::backend;
use crate::backend::gpu::activity::GpuActivity;
use crate::backend::gpu::env::GpuEnv;
use crate::event::{Event, EventKind, EventSink, RunStartSettings, WorkerName};
use crate::memory::{self, MemoryBudget};
use crate::params::{self, ParamSets};
use crate::prometheus::run::MetricsWriter;
use crate::report;
use crate::spool::Spool;
use crate::timeline::TimelineWriter;

mod claim_order;
mod constraints;
mod deadline;
mod device_faults;
mod evaluation;
mod fault_injection;
mod feeder;
mod finisher;
mod inbox;
mod intake;
mod job;
mod prover;
mod requests;
mod settings;
mod stop;
mod synthesis;

pub use deadline::has_lost_calls;
pub use device_faults::{ProversStoppedError, DEFAULT_MAX_DEVICE_FAULTS};
pub use fault_injection::VARIABLE as FAULT_INJECTION_VARIABLE;
pub use fault_injection::WRONG_WITNESS_VARIABLE;
pub use intake::{bind_input, IntakeRules};
pub use job::JobError;
pub use requests::RunRequests;
pub use settings::{
    RunSettings, Synthesis, DEFAULT_SYNTHESIS_THREADS_RULE, DEFAULT_SYNTH_JOBS_RULE,
};
pub use stop::{is_stopping, Drain};

use constraints::ConstraintSets;
use feeder::{Feeder, FeederLinks};
use finisher::finish_jobs;
use job::{Outcome, SynthesizedMsg};
use prover::{prove_partitions, ProverLinks};
use stop::Halt;
use synthesis::{SynthesisPool, SynthesisSlots};

/// How a program steers a run it feeds: see [`run_with`].
#[derive(Clone, Debug, Default)]
pub struct RunControl {
    /// Gets every event of the run, after the timeline has recorded it.
    pub observer: Option<crossbeam_channel::Sender<Event>>,
    /// Ends the run once the inbox is drained, as `--once` does.
    pub drain: Drain,
    /// What the feeding program asks of the run while it runs, and what the run tells it.
    pub requests: RunRequests,
}

/// Runs the pipeline over a spool until it is drained (`once`) or stopped, and says what it
/// achieved. An error means the run itself could not go on.
pub fn run(settings: &RunSettings) -> Result<report::RunSummary> {
    run_with(settings, &RunControl::default())
}

/// [`run`], steered by `control`: its observer sees each event as it is recorded (a proof
/// written, a job failed), and its drain ends a watching run once the inbox is empty.
pub fn run_with(settings: &RunSettings, control: &RunControl) -> Result<report::RunSummary> {
    stop::install_signal_handlers();
    // The provers first: `--require-gpu` stops a run without a GPU before the spool is
    // touched or anything claimed.
    let plan = backend::provers_within(
        settings.backend,
        &settings.gpus,
        settings.provers_per_gpu,
        settings.gpu_memory,
        &GpuEnv::from_env(),
    )?
    .require_gpu(settings.require_gpu)?;
    for note in &plan.notes {
        log::info!("{note}");
    }
    if let Some(note) = plan.unused_cpu_split_note(settings.prover_cpus) {
        log::info!("{note}");
    }
    // The driver's count of kernel time, beside the provers' wall time in the timeline;
    // without NVML the run goes on unwatched.
    let gpu_activity = match plan.gpus.as_slice() {
        [] => None,
        gpus => GpuActivity::open(gpus)
            .inspect_err(|note| log::info!("{note}"))
            .ok(),
    };
    let provers = plan.provers;
    let run_id = new_run_id();
    let wake = bounded(1);
    control.requests.attach(plan.gpus.clone(), wake.0.clone());
    let memory = MemoryBudget::new(budget_bytes(settings), Some(wake.0.clone()));
    // Before the spool is touched: a metrics file that cannot be written stops the run here.
    let mut observers: Vec<_> = control.observer.iter().cloned().collect();
    let metrics = match &settings.metrics {
        None => None,
        Some(target) => {
            let (tx, rx) = unbounded();
            observers.push(tx);
            Some(MetricsWriter::start(target, &run_id, memory.clone(), rx)?)
        }
    };
    let spool = Spool::open(settings.layout.clone())?;
    stop::set_abort_marker(&spool.abort_marker());
    let heartbeat = spool.keep_alive(settings.lease);
    let timeline = TimelineWriter::open(&settings.timeline, &run_id)?;
    let prover_names: Vec<WorkerName> = provers
        .iter()
        .map(|p| WorkerName::parse(p.name()))
        .collect();
    let (event_tx, event_rx) = unbounded();
    let events = EventSink::new(event_tx);
    let reporter = report::spawn(event_rx, timeline, observers);
    let kind = backend::params_kind_of(&provers);
    let synth_jobs = settings.synth_jobs_for(kind);
    // Partitions evaluated at a prover: a batch, and the next one evaluated beside it; a
    // prover that batches only what is already queued (cuda) proves those alone.
    let partitions_at_provers = provers
        .iter()
        .map(|p| {
            if p.waits_for_batch() {
                p.batch_size() as u64 + 1
            } else {
                2
            }
        })
        .sum();
    // A prover that takes only the partitions already waiting as its batch (the cuda
    // backend's, which sums a batch's ones together) finds a whole batch queued.
    let queue_depth = provers
        .iter()
        .filter(|p| !p.waits_for_batch())
        .map(|p| p.batch_size().saturating_sub(1))
        .fold(settings.queue_depth, usize::max);
    events.emit(EventKind::RunStarted {
        settings: RunStartSettings {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            provers: prover_names,
            synth_jobs,
            synthesis_threads: settings.synthesis_threads,
            prover_cpus: settings.prover_cpus,
            queue_depth,
            max_memory_bytes: memory.total(),
            is_benchmark: settings.benchmark,
            params_dir: params::params_dir().display().to_string(),
        },
    });
    let gpu_sampler = gpu_activity.map(|activity| activity.start(events.clone()));

    let (synthesized_tx, synthesized_rx) = bounded::<SynthesizedMsg>(queue_depth);
    let (outcome_tx, outcome_rx) = unbounded::<Outcome>();
    let param_sets = ParamSets::new(move |path: &std::path::Path| kind.load(path));
    let halt = Halt::default();
    let live_provers = Arc::new(AtomicUsize::new(provers.len()));
    let refused_on_gpu = evaluation::RefusedOnGpu::default();
    let mut prover_threads = Vec::new();
    for prover in provers {
        let links = ProverLinks {
            spool: spool.clone(),
            rx: synthesized_rx.clone(),
            outcome_tx: outcome_tx.clone(),
            events: events.clone(),
            params: param_sets.clone(),
            max_device_faults: settings.max_device_faults,
            live_provers: live_provers.clone(),
            halt: halt.clone(),
            refused_on_gpu: refused_on_gpu.clone(),
            call_deadline: settings.call_deadline,
        };
        prover_threads.push(
            std::thread::Builder::new()
                .name(prover.name().to_owned())
                .spawn(move || prove_partitions(prover, links))
                .context("starting a prover thread")?,
        );
    }
    drop(synthesized_rx);
    let finisher = {
        let (events, spool, run_id, halt, wake) = (
            events.clone(),
            spool.clone(),
            run_id.clone(),
            halt.clone(),
            wake.0.clone(),
        );
        std::thread::Builder::new()
            .name("finisher".into())
            .spawn(move || finish_jobs(outcome_rx, spool, events, run_id, halt, wake))
            .context("starting the finisher thread")?
    };

    let slots = SynthesisSlots::new(synth_jobs, wake.0.clone());
    let constraints = ConstraintSets::new(
        settings.synthesis_threads,
        memory.clone(),
        events.clone(),
        settings.is_precompiled,
        settings.is_native_witness,
    )?;
    let links = FeederLinks {
        synthesis: SynthesisPool::new(
            synth_jobs,
            constraints.clone(),
            spool.clone(),
            events.clone(),
            synthesized_tx,
            outcome_tx.clone(),
        )?,
        slots: slots.clone(),
        params: param_sets,
        params_kind: kind,
        partitions_at_provers,
        constraints,
        refused_on_gpu,
        memory,
        outcome_tx,
        halt: halt.clone(),
        wake,
        requests: control.requests.clone(),
    };
    let mut feeder = Feeder::new(
        settings,
        &spool,
        events.clone(),
        &run_id,
        links,
        control.drain.clone(),
    );
    let fed = feeder.feed();
    // Every started partition finishes synthesis and is queued (or fails) before the
    // channels close behind it.
    slots.wait_all_back();
    drop(feeder);
    let prover_result: Result<Vec<()>, _> = prover_threads.into_iter().map(|t| t.join()).collect();
    let finisher_result = finisher.join();
    // Its last period ends here, before RUN_END.
    if let Some(sampler) = gpu_sampler {
        sampler.stop();
    }
    events.emit(EventKind::RunFinished {
        proved: finisher_result.as_ref().map_or(0, |c| c.proved),
        failed: finisher_result.as_ref().map_or(0, |c| c.failed),
    });
    drop(events);
    let summary = reporter
        .join()
        .map_err(|_| anyhow::anyhow!("the reporter thread panicked"))?;
    // The reporter's senders are gone with it: the metrics' last write is the run's end.
    if let Some(metrics) = metrics {
        metrics.finish();
    }
    control.requests.detach();
    drop(heartbeat);
    spool.release()?;
    if let Some(error) = halt.take() {
        return Err(error);
    }
    prover_result.map_err(|_| anyhow::anyhow!("a prover thread panicked"))?;
    finisher_result.map_err(|_| anyhow::anyhow!("the finisher thread panicked"))?;
    fed?;
    Ok(summary)
}

/// The run's memory budget: `--max-memory`, else what is available now minus a margin.
pub fn budget_bytes(settings: &RunSettings) -> u64 {
    settings
        .max_memory
        .unwrap_or_else(|| match memory::available_bytes() {
            Some(available) => available.saturating_sub(memory::default_margin(available)),
            None => u64::MAX,
        })
}

/// `20261130T051500Z-<pid>`: sortable and unique per process.
fn new_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    format!("{}-{}", now.replace(['-', ':'], ""), std::process::id())
}
