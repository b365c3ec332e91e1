//! Pipeline: runs a spool's jobs through the stages concurrently and emits events.
//!
//! ```text
//! feeder (this thread)   claim -> parse -> bind -> one synthesis task per partition
//!   synthesis pool (N)   synthesize -> bounded channel (depth D)
//!   prover threads (P)   Groth16 per partition, on a GPU or the CPU
//!   finisher thread      collect a job's partitions -> assemble -> verify_seal -> outbox
//! ```
//!
//! This module owns the run: settings, the threads and channels between the stages, signals
//! and the heartbeat; `feeder`, `prover` and `finisher` are the stages. A permit per
//! partition, taken by the feeder and returned only after the synthesized partition has been
//! accepted by the provers' channel, bounds the partitions held in memory to `N + D + P` and
//! keeps the feeder from claiming files it cannot start on soon. Data only moves forward;
//! every stage reports through [`EventSink`].

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use bellperson::groth16::Proof;
use blstrs::Bls12;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use serde::Serialize;

use crate::c1::{self, SectorSizeName};
use crate::event::{EventKind, EventSink};
use crate::kernels::{self, GpuSelection, ProverKernels};
use crate::params::{self, ParamsCache};
use crate::porep::{self, Sector};
use crate::prove;
use crate::report;
use crate::spool::{ClaimedJob, FailureRecord, Spool, SpoolLayout};
use crate::synth::SynthesizedPartition;
use crate::timeline::TimelineWriter;

mod feeder;
mod finisher;
mod prover;

use feeder::{Feeder, Permits};
use finisher::finish_jobs;
use prover::prove_partitions;

/// Arguments of `cuzk prove-dir`.
#[derive(Debug, clap::Args)]
pub struct ProveDirArgs {
    /// The inbox: C1 files (lotus-bench wrapper or bare SealCommitPhase1Output JSON).
    pub inbox: PathBuf,
    /// Where proofs go [default: ../outbox beside the inbox].
    #[arg(long, value_name = "DIR")]
    pub outbox: Option<PathBuf>,
    /// Where unprovable C1 files go, with a reason [default: ../failed].
    #[arg(long, value_name = "DIR")]
    pub failed: Option<PathBuf>,
    /// Where claimed C1 files wait while being proved [default: ../work].
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Where C1 files go once their proof is written [default: ../done].
    #[arg(long, value_name = "DIR")]
    pub done: Option<PathBuf>,
    /// The timeline CSV, appended to [default: ../timeline.csv].
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Exit once the inbox is drained instead of watching it.
    #[arg(long)]
    pub once: bool,
    /// Miner actor id for files whose name is not a lotus sector name s-t0<miner>-<sector>.
    #[arg(long, value_name = "ID")]
    pub miner_id: Option<u64>,
    /// Partitions synthesized at once [default: a quarter of the cores, at least 1].
    #[arg(long, value_name = "N")]
    pub synth_jobs: Option<usize>,
    /// GPUs to prove on: all, none (CPU), or indices like 0,1; one prover thread per GPU.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub gpus: GpuSelection,
    /// Prover threads per GPU; two let one partition's CPU-side work overlap another's
    /// kernels on the same GPU (measured 1.3x on an H200).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub provers_per_gpu: usize,
    /// Synthesized partitions that may wait for the prover.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub queue_depth: usize,
    /// Seconds between inbox rescans (file-system events also wake the scan).
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub poll_secs: f64,
    /// Files modified more recently than this many seconds are left for a later scan.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub settle_secs: f64,
    /// A file whose JSON ends early is waited for this long after its last change, then
    /// failed as truncated.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub incomplete_grace_secs: f64,
    /// Largest C1 file accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = c1::DEFAULT_MAX_C1_BYTES)]
    pub max_c1_bytes: u64,
    /// Seconds without a heartbeat after which another host's claims are taken over (a
    /// dead process on this host is taken over at once).
    #[arg(long, value_name = "SECS", default_value_t = 600.0)]
    pub lease_secs: f64,
    /// When a test-size sector (2KiB, 8MiB, 512MiB) has no parameters, generate INSECURE
    /// random ones instead of stopping (2KiB: about 18 minutes on 2 cores).
    #[arg(long)]
    pub gen_test_params: bool,
}

/// `ProveDirArgs` checked and with defaults filled in.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// The spool's directories.
    pub layout: SpoolLayout,
    /// The timeline file.
    pub timeline: PathBuf,
    /// Exit when the inbox is drained.
    pub once: bool,
    /// Default miner id.
    pub miner_id: Option<u64>,
    /// Synthesis workers.
    pub synth_jobs: usize,
    /// GPUs to prove on.
    pub gpus: GpuSelection,
    /// Prover threads per GPU.
    pub provers_per_gpu: usize,
    /// Channel depth between synthesis and the prover.
    pub queue_depth: usize,
    /// Rescan interval.
    pub poll: Duration,
    /// Minimum age of a file before it is claimed.
    pub settle: Duration,
    /// How long an incomplete file is waited for.
    pub incomplete_grace: Duration,
    /// Largest C1 file accepted.
    pub max_c1_bytes: u64,
    /// How long another host's silent claims are left alone.
    pub lease: Duration,
    /// Generate missing test-size parameters.
    pub gen_test_params: bool,
}

impl RunSettings {
    /// Checks `args` and fills in the defaults.
    pub fn from_args(args: ProveDirArgs) -> Result<RunSettings> {
        let mut layout = SpoolLayout::beside(&args.inbox);
        let parent = args
            .inbox
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."))
            .to_owned();
        layout.outbox = args.outbox.unwrap_or(layout.outbox);
        layout.failed = args.failed.unwrap_or(layout.failed);
        layout.work = args.work.unwrap_or(layout.work);
        layout.done = args.done.unwrap_or(layout.done);
        let seconds = |name: &str, v: f64| -> Result<Duration> {
            Duration::try_from_secs_f64(v)
                .with_context(|| format!("--{name} {v} is not a number of seconds"))
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let synth_jobs = args.synth_jobs.unwrap_or((cores / 4).max(1));
        anyhow::ensure!(synth_jobs >= 1, "--synth-jobs must be at least 1");
        Ok(RunSettings {
            layout,
            timeline: args.timeline.unwrap_or_else(|| parent.join("timeline.csv")),
            once: args.once,
            miner_id: args.miner_id,
            synth_jobs,
            gpus: args.gpus,
            provers_per_gpu: args.provers_per_gpu,
            queue_depth: args.queue_depth,
            poll: seconds("poll-secs", args.poll_secs)?.max(Duration::from_millis(50)),
            settle: seconds("settle-secs", args.settle_secs)?,
            incomplete_grace: seconds("incomplete-grace-secs", args.incomplete_grace_secs)?,
            max_c1_bytes: args.max_c1_bytes,
            lease: seconds("lease-secs", args.lease_secs)?,
            gen_test_params: args.gen_test_params,
        })
    }
}

/// The top-level entry point for `cuzk prove-dir`: 0 when every job was proved, 1 when some
/// failed (they are in `failed/`), an error when the run itself could not go on.
pub fn prove_dir(args: ProveDirArgs) -> Result<u8> {
    let settings = RunSettings::from_args(args)?;
    let summary = run(&settings)?;
    Ok(if summary.failed > 0 { 1 } else { 0 })
}

/// Runs the pipeline over a spool until it is drained (`once`) or forever.
pub fn run(settings: &RunSettings) -> Result<report::RunSummary> {
    install_signal_handlers();
    let spool = Spool::open(settings.layout.clone())?;
    let heartbeat = spawn_heartbeat(spool.clone(), settings.lease);
    let run_id = new_run_id();
    let timeline = TimelineWriter::open(&settings.timeline, &run_id)?;
    let (provers, note) = kernels::provers_for(&settings.gpus, settings.provers_per_gpu);
    if let Some(note) = note {
        eprintln!("cuzk: note: {note}");
    }
    let prover_names: Vec<String> = provers.iter().map(|p| p.name().to_owned()).collect();
    let (event_tx, event_rx) = unbounded();
    let events = EventSink::new(event_tx);
    let reporter = report::spawn(event_rx, timeline);
    events.emit(EventKind::RunStarted {
        settings: format!(
            "cuzk={};provers={};synth_jobs={};queue_depth={};params={}",
            env!("CARGO_PKG_VERSION"),
            prover_names.join(","),
            settings.synth_jobs,
            settings.queue_depth,
            params::params_dir().display()
        ),
    });

    let (synthesized_tx, synthesized_rx) = bounded::<SynthesizedMsg>(settings.queue_depth);
    let (outcome_tx, outcome_rx) = unbounded::<Outcome>();
    let params_cache = Arc::new(Mutex::new(ParamsCache::default()));
    let mut prover_threads = Vec::new();
    for kernels in provers {
        let (rx, events, outcome_tx, params_cache) = (
            synthesized_rx.clone(),
            events.clone(),
            outcome_tx.clone(),
            params_cache.clone(),
        );
        prover_threads.push(
            std::thread::Builder::new()
                .name(kernels.name().to_owned())
                .spawn(move || prove_partitions(kernels, rx, outcome_tx, events, params_cache))
                .context("starting a prover thread")?,
        );
    }
    drop(synthesized_rx);
    let halt = Halt::default();
    let finisher = {
        let (events, spool, run_id, halt) =
            (events.clone(), spool.clone(), run_id.clone(), halt.clone());
        std::thread::Builder::new()
            .name("finisher".into())
            .spawn(move || finish_jobs(outcome_rx, spool, events, run_id, halt))
            .context("starting the finisher thread")?
    };

    let mut feeder = Feeder {
        settings,
        spool: &spool,
        events: events.clone(),
        run_id: &run_id,
        pool: rayon::ThreadPoolBuilder::new()
            .num_threads(settings.synth_jobs)
            .thread_name(|i| format!("synth-{i}"))
            .build()
            .context("starting the synthesis pool")?,
        permits: Permits::new(settings.synth_jobs),
        params_cache: params_cache.clone(),
        preloading: HashSet::new(),
        halt: halt.clone(),
        synthesized_tx,
        outcome_tx,
        deferred: HashMap::new(),
    };
    let fed = feeder.feed();
    feeder.drain();
    drop(feeder);
    let prover_result: Result<Vec<()>, _> = prover_threads.into_iter().map(|t| t.join()).collect();
    let finisher_result = finisher.join();
    events.emit(EventKind::RunFinished {
        proved: finisher_result.as_ref().map_or(0, |c| c.proved),
        failed: finisher_result.as_ref().map_or(0, |c| c.failed),
    });
    drop(events);
    let summary = reporter
        .join()
        .map_err(|_| anyhow::anyhow!("the reporter thread panicked"))?;
    drop(heartbeat);
    spool.release()?;
    if let Some(reason) = halt.reason() {
        anyhow::bail!(reason);
    }
    prover_result.map_err(|_| anyhow::anyhow!("a prover thread panicked"))?;
    finisher_result.map_err(|_| anyhow::anyhow!("the finisher thread panicked"))?;
    fed?;
    Ok(summary)
}

/// A reason to stop the whole run (the outbox cannot be written), shared by the finisher
/// that finds it and the feeder that must stop claiming.
#[derive(Clone, Default)]
struct Halt(Arc<Mutex<Option<String>>>);

impl Halt {
    fn set(&self, reason: String) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(reason);
        }
    }

    fn reason(&self) -> Option<String> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }
}

/// Signals received: the first SIGINT/SIGTERM stops claiming and lets work in flight finish;
/// the second exits at once (claimed files stay in `work/` and are resumed on restart).
static STOP_SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_stop_signal(_: libc::c_int) {
    if STOP_SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

fn install_signal_handlers() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic and calls _exit.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// True once a stop was asked for.
pub fn is_stopping() -> bool {
    STOP_SIGNALS.load(Ordering::SeqCst) > 0
}

/// Keeps this run's owner record fresh until the returned sender is dropped, so other runs
/// sharing the spool do not take over its claims.
fn spawn_heartbeat(spool: Spool, lease: Duration) -> Sender<()> {
    let (stop, stopped) = bounded::<()>(0);
    let every = (lease / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    std::thread::spawn(move || {
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
            if let Err(err) = spool.heartbeat() {
                log::warn!("heartbeat: {err:#}");
            }
        }
    });
    stop
}

/// `20261130T051500Z-<pid>`: sortable and unique per process.
fn new_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    format!("{}-{}", now.replace(['-', ':'], ""), std::process::id())
}

/// A job in flight: a claimed C1 file bound to its sector.
struct Job {
    /// Distinguishes jobs even if a file name comes back later in the run.
    id: u64,
    claimed: ClaimedJob,
    sector: Sector,
    claimed_at: Instant,
    parse_ms: f64,
}

/// A synthesized partition on its way to the prover.
struct SynthesizedMsg {
    job: Arc<Job>,
    partition: usize,
    synthesized: SynthesizedPartition,
    synth_ms: f64,
}

/// What happened to a partition, for the finisher.
enum Outcome {
    Proved {
        job: Arc<Job>,
        partition: usize,
        proof: Box<Proof<Bls12>>,
        prover: String,
        synth_ms: f64,
        prove_ms: f64,
    },
    Failed {
        job: Arc<Job>,
        stage: &'static str,
        message: String,
    },
}

/// Moves a failed job to `failed/` and reports it. If even that fails, the C1 file stays in
/// `work/` for the next run: nothing is lost.
fn fail_job(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    claimed: &ClaimedJob,
    stage: &'static str,
    message: &str,
) -> Result<()> {
    let record = FailureRecord {
        job: &claimed.name,
        c1_file: &claimed.file_name,
        stage,
        message,
        run_id,
        failed_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
    };
    let moved = spool.quarantine(claimed, &record);
    events.emit(EventKind::JobFailed {
        job: claimed.name.clone(),
        stage: stage.into(),
        message: message.into(),
    });
    moved.map(|_| ()).with_context(|| {
        format!(
            "{}: could not move the failed job to {}; it stays in {}",
            claimed.name,
            spool.layout().failed.display(),
            spool.layout().work.display()
        )
    })
}

fn flatten_panic<T>(result: std::thread::Result<Result<T>>) -> Result<T, String> {
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(format!("{err:#}")),
        Err(panic) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        )),
    }
}
