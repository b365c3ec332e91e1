//! Pipeline: runs a spool's jobs through the stages concurrently and emits events.
//!
//! ```text
//! feeder (this thread)     claim -> parse -> bind -> one task per partition
//!   synthesis pool (N)     synthesize -> bounded channel (depth D)
//!   prover threads (1/GPU) load params once -> Groth16 per partition
//!   finisher thread        collect a job's partitions -> assemble -> verify_seal -> outbox
//! ```
//!
//! A permit per partition, taken by the feeder and returned only after the synthesized
//! partition has been accepted by the prover's channel, bounds the partitions held in memory
//! to `N + D + 1` and keeps the feeder from claiming files it cannot start on soon. Data only
//! moves forward; every stage reports through [`EventSink`].

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

/// A counting semaphore on a bounded channel: `acquire` blocks while all are out.
#[derive(Clone)]
struct Permits {
    out: Sender<()>,
    back: Receiver<()>,
    size: usize,
}

/// One partition's claim on memory; returned when dropped.
struct Permit(Receiver<()>);

impl Drop for Permit {
    fn drop(&mut self) {
        let _ = self.0.try_recv();
    }
}

impl Permits {
    fn new(size: usize) -> Permits {
        let (out, back) = bounded(size);
        Permits { out, back, size }
    }

    fn acquire(&self) -> Permit {
        // The receiver lives in self, so the channel never disconnects.
        let _ = self.out.send(());
        Permit(self.back.clone())
    }

    /// Waits until every permit is back, i.e. every synthesis task has ended.
    fn wait_all(&self) {
        for _ in 0..self.size {
            let _ = self.out.send(());
        }
    }
}

static NEXT_JOB_ID: AtomicU64 = AtomicU64::new(0);

/// The feeder: finds files, claims them and starts their partitions.
struct Feeder<'a> {
    settings: &'a RunSettings,
    spool: &'a Spool,
    events: EventSink,
    run_id: &'a str,
    pool: rayon::ThreadPool,
    permits: Permits,
    synthesized_tx: Sender<SynthesizedMsg>,
    outcome_tx: Sender<Outcome>,
    /// Files that looked unfinished, with the (size, mtime) they had then.
    deferred: HashMap<PathBuf, (u64, SystemTime)>,
    /// Parameters shared with the provers.
    params_cache: Arc<Mutex<ParamsCache>>,
    /// Parameter files already being loaded ahead of the provers.
    preloading: HashSet<PathBuf>,
    /// Set when the run must stop.
    halt: Halt,
}

/// Why a job could not be started.
enum StartError {
    /// The job failed: quarantine it and go on.
    Job {
        stage: &'static str,
        message: String,
    },
    /// The file is not complete yet: hand it back and look again later.
    NotReady(String),
    /// The run cannot go on (missing parameters): hand the file back and stop.
    Fatal(anyhow::Error),
}

impl Feeder<'_> {
    fn feed(&mut self) -> Result<()> {
        for job in self.spool.own_claims()? {
            self.start(job, true)?;
        }
        let wake = self.watch_inbox();
        loop {
            if self.halt.reason().is_some() {
                return Ok(());
            }
            if is_stopping() {
                self.events.emit(EventKind::StopRequested);
                return Ok(());
            }
            let mut started = 0;
            // Work of runs that died, here or on another host sharing the spool.
            for job in self.spool.take_over_orphans(self.settings.lease)? {
                self.start(job, true)?;
                started += 1;
            }
            for path in self.spool.scan_inbox()? {
                if is_stopping() || self.halt.reason().is_some() {
                    break;
                }
                if !self.is_ready(&path) {
                    continue;
                }
                let claimed = match self.spool.claim(&path) {
                    Ok(Some(claimed)) => claimed,
                    Ok(None) => continue,
                    Err(err) => {
                        log::warn!("{err:#}");
                        continue;
                    }
                };
                self.start(claimed, false)?;
                started += 1;
            }
            if self.settings.once && started == 0 && self.deferred.is_empty() {
                return Ok(());
            }
            self.wait_for_inbox(wake.as_ref().map(|(_, rx)| rx));
        }
    }

    /// Waits for a file-system event, the next rescan or a stop signal, whichever is first.
    fn wait_for_inbox(&self, wake: Option<&Receiver<()>>) {
        let deadline = Instant::now() + self.settings.poll;
        let slice = Duration::from_millis(200);
        while !is_stopping() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let woke = match wake {
                Some(rx) => rx.recv_timeout(left.min(slice)).is_ok(),
                None => {
                    std::thread::sleep(left.min(slice));
                    false
                }
            };
            if woke {
                // Let the writer finish its burst of events before rescanning.
                if let Some(rx) = wake {
                    while rx.try_recv().is_ok() {}
                }
                return;
            }
        }
    }

    /// A watcher that signals when the inbox changes; `None` if the platform has none
    /// (polling still works; watchers also miss events on network file systems).
    fn watch_inbox(&self) -> Option<(notify::RecommendedWatcher, Receiver<()>)> {
        use notify::Watcher;
        let (tx, rx) = unbounded();
        let mut watcher = notify::recommended_watcher(move |_| {
            let _ = tx.send(());
        })
        .ok()?;
        watcher
            .watch(
                &self.settings.layout.inbox,
                notify::RecursiveMode::NonRecursive,
            )
            .ok()?;
        Some((watcher, rx))
    }

    /// False for files changed too recently, or deferred and unchanged since.
    fn is_ready(&mut self, path: &Path) -> bool {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return false;
        };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let age = modified.elapsed().unwrap_or_default();
        if age < self.settings.settle {
            return false;
        }
        match self.deferred.get(path) {
            Some(&seen)
                if seen == (meta.len(), modified) && age < self.settings.incomplete_grace =>
            {
                false
            }
            _ => {
                self.deferred.remove(path);
                true
            }
        }
    }

    fn start(&mut self, claimed: ClaimedJob, is_resumed: bool) -> Result<()> {
        self.events.emit(EventKind::JobClaimed {
            job: claimed.name.clone(),
            is_resumed,
        });
        if self.spool.has_result(&claimed.name) {
            if is_resumed {
                // Proved before a crash; only the move to done/ was missing.
                self.spool.retire_finished(&claimed)?;
                let (proof, _) = self.spool.outbox_paths(&claimed.name);
                self.events.emit(EventKind::ProofWritten {
                    job: claimed.name.clone(),
                    path: proof.display().to_string(),
                });
                return Ok(());
            }
            let message = format!(
                "a proof named {} is already in {} (hint: a C1 file of the same name was proved before; remove or rename one of them)",
                claimed.name,
                self.spool.layout().outbox.display()
            );
            return self.fail(&claimed, "spool", message);
        }
        if let Some(reason) = not_a_c1_file(&claimed.path) {
            return self.fail(&claimed, "spool", reason);
        }
        let started = Instant::now();
        match self.bind(&claimed) {
            Ok(sector) => {
                self.events.emit(EventKind::JobParsed {
                    job: claimed.name.clone(),
                    sector: sector.identity.to_string(),
                    sector_size: sector.sector_size,
                    partitions: sector.circuits.partition_count(),
                });
                self.preload_params(&sector);
                let job = Arc::new(Job {
                    id: NEXT_JOB_ID.fetch_add(1, Ordering::Relaxed),
                    claimed,
                    sector,
                    claimed_at: started,
                    parse_ms: started.elapsed().as_secs_f64() * 1e3,
                });
                for partition in 0..job.sector.circuits.partition_count() {
                    self.spawn_synthesis(job.clone(), partition);
                }
                Ok(())
            }
            Err(StartError::Job { stage, message }) => self.fail(&claimed, stage, message),
            Err(StartError::NotReady(reason)) => {
                self.spool.hand_back(&claimed)?;
                let back = self.spool.layout().inbox.join(&claimed.file_name);
                if let Ok(meta) = std::fs::metadata(&back) {
                    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    self.deferred.insert(back, (meta.len(), modified));
                }
                self.events.emit(EventKind::FileDeferred {
                    job: claimed.name.clone(),
                    reason,
                });
                Ok(())
            }
            Err(StartError::Fatal(err)) => {
                self.spool.hand_back(&claimed)?;
                Err(err)
            }
        }
    }

    /// Parse, identify and bind the claimed file, and check its parameters exist.
    fn bind(&self, claimed: &ClaimedJob) -> Result<Sector, StartError> {
        let job_err = |stage, err: &dyn std::fmt::Display| StartError::Job {
            stage,
            message: err.to_string(),
        };
        let c1 = match c1::read_c1_file(&claimed.path, self.settings.max_c1_bytes) {
            Ok(c1) => c1,
            Err(err) if err.is_incomplete() => {
                let age = std::fs::metadata(&claimed.path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .unwrap_or_default();
                if age < self.settings.incomplete_grace {
                    return Err(StartError::NotReady(err.to_string()));
                }
                return Err(job_err("parse", &err));
            }
            Err(err) => return Err(job_err("parse", &err)),
        };
        let name_path = Path::new(&claimed.file_name);
        let identity = c1::resolve_identity(name_path, &c1, self.settings.miner_id)
            .map_err(|e| job_err("identity", &e))?;
        let bound = catch_unwind(AssertUnwindSafe(|| {
            porep::bind(c1, identity).map_err(anyhow::Error::from)
        }));
        let sector = flatten_panic(bound).map_err(|e| job_err("bind", &e))?;
        let params_path = sector
            .circuits
            .params_path()
            .map_err(|e| job_err("bind", &format!("{e:#}")))?;
        if let Err(missing) = params::require(&params_path, sector.sector_size) {
            if !(self.settings.gen_test_params && params::is_test_size(sector.sector_size)) {
                return Err(StartError::Fatal(missing.into()));
            }
            self.events.emit(EventKind::ParamsGenerating {
                path: params_path.display().to_string(),
            });
            params::generate(sector.sector_size).map_err(StartError::Fatal)?;
        }
        Ok(sector)
    }

    /// Starts loading a sector's parameters while its first partitions are synthesized, so
    /// the provers do not wait for both one after the other.
    fn preload_params(&mut self, sector: &Sector) {
        let Ok(path) = sector.circuits.params_path() else {
            return;
        };
        if !self.preloading.insert(path.clone()) {
            return;
        }
        let (cache, events, size) = (
            self.params_cache.clone(),
            self.events.clone(),
            sector.sector_size,
        );
        std::thread::spawn(move || {
            let Ok(mut cache) = cache.lock() else { return };
            if cache.is_loaded(&path) {
                return;
            }
            let shown = path.display().to_string();
            events.emit(EventKind::ParamsLoadStarted {
                worker: "params".into(),
                path: shown.clone(),
            });
            // A failure is reported by the prover that needs them, with its job.
            let _ = cache.get(&path, size);
            events.emit(EventKind::ParamsLoadFinished {
                worker: "params".into(),
                path: shown,
            });
        });
    }

    fn spawn_synthesis(&self, job: Arc<Job>, partition: usize) {
        let permit = self.permits.acquire();
        let (events, synthesized_tx, outcome_tx) = (
            self.events.clone(),
            self.synthesized_tx.clone(),
            self.outcome_tx.clone(),
        );
        self.pool.spawn(move || {
            let worker = format!("synth-{}", rayon::current_thread_index().unwrap_or(0));
            let started = Instant::now();
            events.emit(EventKind::SynthStarted {
                job: job.claimed.name.clone(),
                partition,
                worker: worker.clone(),
            });
            let result = catch_unwind(AssertUnwindSafe(|| {
                job.sector.circuits.synthesize_partition(partition)
            }));
            let synthesized = match flatten_panic(result) {
                Ok(synthesized) => synthesized,
                Err(message) => {
                    let _ = outcome_tx.send(Outcome::Failed {
                        job,
                        stage: "synthesis",
                        message,
                    });
                    return;
                }
            };
            events.emit(EventKind::SynthFinished {
                job: job.claimed.name.clone(),
                partition,
                worker: worker.clone(),
                constraints: synthesized.num_constraints(),
            });
            let msg = SynthesizedMsg {
                job: job.clone(),
                partition,
                synthesized,
                synth_ms: started.elapsed().as_secs_f64() * 1e3,
            };
            if synthesized_tx.send(msg).is_err() {
                let _ = outcome_tx.send(Outcome::Failed {
                    job,
                    stage: "synthesis",
                    message: "the prover stopped before taking this partition".into(),
                });
                return;
            }
            events.emit(EventKind::PartitionQueued {
                job: job.claimed.name.clone(),
                partition,
                worker,
            });
            // Only now may another partition be synthesized in this one's memory.
            drop(permit);
        });
    }

    fn fail(&self, claimed: &ClaimedJob, stage: &'static str, message: String) -> Result<()> {
        fail_job(
            self.spool,
            &self.events,
            self.run_id,
            claimed,
            stage,
            &message,
        )
    }

    /// Waits for every synthesis task to finish and closes the feeder's ends of the channels.
    fn drain(&self) {
        self.permits.wait_all();
    }
}

/// Why the claimed entry at `path` is not a C1 file at all, if it is not: links are never
/// followed (they could point anywhere), and directories, FIFOs and devices are never opened.
fn not_a_c1_file(path: &Path) -> Option<String> {
    let kind = std::fs::symlink_metadata(path).ok()?.file_type();
    let name = path.file_name()?.to_string_lossy().into_owned();
    if kind.is_symlink() {
        Some(format!("{name} is a symbolic link; cuzk never follows links out of the spool (hint: copy the C1 file into the inbox instead)"))
    } else if kind.is_dir() {
        Some(format!(
            "{name} is a directory, not a C1 file (hint: put the C1 files themselves in the inbox)"
        ))
    } else if !kind.is_file() {
        Some(format!("{name} is not a regular file (a FIFO, socket or device); cuzk only reads regular files"))
    } else {
        None
    }
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

/// A prover thread: owns its kernels (one GPU, or the CPU) and proves partitions from the
/// shared queue; parameters are loaded once per run and shared by all provers.
fn prove_partitions(
    mut kernels: ProverKernels,
    rx: Receiver<SynthesizedMsg>,
    outcome_tx: Sender<Outcome>,
    events: EventSink,
    params_cache: Arc<Mutex<ParamsCache>>,
) {
    let worker = kernels.name().to_owned();
    for msg in rx {
        let job = msg.job;
        let name = job.claimed.name.clone();
        events.emit(EventKind::ProverPickedUp {
            job: name.clone(),
            partition: msg.partition,
            worker: worker.clone(),
        });
        let params = job.sector.circuits.params_path().and_then(|path| {
            let mut cache = params_cache
                .lock()
                .map_err(|_| anyhow::anyhow!("another prover panicked while loading parameters"))?;
            if cache.is_loaded(&path) {
                return cache.get(&path, job.sector.sector_size);
            }
            let shown = path.display().to_string();
            events.emit(EventKind::ParamsLoadStarted {
                worker: worker.clone(),
                path: shown.clone(),
            });
            let loaded = cache.get(&path, job.sector.sector_size);
            events.emit(EventKind::ParamsLoadFinished {
                worker: worker.clone(),
                path: shown,
            });
            loaded
        });
        let params = match params {
            Ok(params) => params,
            Err(err) => {
                let _ = outcome_tx.send(Outcome::Failed {
                    job,
                    stage: "params",
                    message: format!("{err:#}"),
                });
                continue;
            }
        };
        events.emit(EventKind::ProveStarted {
            job: name.clone(),
            partition: msg.partition,
            worker: worker.clone(),
        });
        let started = Instant::now();
        let (r, s) = prove::fresh_randomness();
        let result = catch_unwind(AssertUnwindSafe(|| {
            prove::prove_partition(msg.synthesized, &*params, r, s, &mut kernels)
                .map_err(anyhow::Error::from)
        }));
        let outcome = match flatten_panic(result) {
            Ok((proof, timings)) => {
                events.emit(EventKind::ProveFinished {
                    job: name,
                    partition: msg.partition,
                    worker: worker.clone(),
                    timings,
                });
                Outcome::Proved {
                    job,
                    partition: msg.partition,
                    proof: Box::new(proof),
                    prover: worker.clone(),
                    synth_ms: msg.synth_ms,
                    prove_ms: started.elapsed().as_secs_f64() * 1e3,
                }
            }
            Err(message) => Outcome::Failed {
                job,
                stage: "prove",
                message,
            },
        };
        let _ = outcome_tx.send(outcome);
    }
}

/// Counts kept by the finisher.
#[derive(Debug, Default)]
struct FinishCounts {
    proved: usize,
    failed: usize,
}

/// A job whose partitions are still arriving.
struct PendingJob {
    proofs: Vec<Option<Proof<Bls12>>>,
    provers: Vec<String>,
    synth_ms: f64,
    prove_ms: f64,
}

/// The finisher thread: assembles, verifies and writes each job once all its partitions
/// are proved; quarantines a job on its first failure and ignores the rest of it.
fn finish_jobs(
    rx: Receiver<Outcome>,
    spool: Spool,
    events: EventSink,
    run_id: String,
    halt: Halt,
) -> FinishCounts {
    let mut pending: HashMap<u64, PendingJob> = HashMap::new();
    let mut failed: HashSet<u64> = HashSet::new();
    let mut counts = FinishCounts::default();
    for outcome in rx {
        let (job, result) = match outcome {
            Outcome::Failed {
                job,
                stage,
                message,
            } => (job, Err((stage, message))),
            Outcome::Proved {
                job,
                partition,
                proof,
                prover,
                synth_ms,
                prove_ms,
            } => {
                if failed.contains(&job.id) {
                    continue;
                }
                let entry = pending.entry(job.id).or_insert_with(|| PendingJob {
                    proofs: vec![None; job.sector.circuits.partition_count()],
                    provers: Vec::new(),
                    synth_ms: 0.0,
                    prove_ms: 0.0,
                });
                entry.proofs[partition] = Some(*proof);
                if !entry.provers.contains(&prover) {
                    entry.provers.push(prover);
                }
                entry.synth_ms += synth_ms;
                entry.prove_ms += prove_ms;
                if entry.proofs.iter().any(Option::is_none) {
                    continue;
                }
                let done = pending.remove(&job.id).expect("entry was just updated");
                let result = write_proof(&spool, &events, &run_id, &job, done);
                (job, result)
            }
        };
        match result {
            Ok(()) => counts.proved += 1,
            Err(("write", message)) => {
                // The outbox cannot take results (disk full, read-only, gone): the C1 file is
                // not at fault. Hand it back and stop the run rather than fail every job.
                failed.insert(job.id);
                let kept = match spool.hand_back(&job.claimed) {
                    Ok(()) => "handed back to the inbox".to_owned(),
                    Err(err) => format!("left in {} ({err:#})", job.claimed.path.display()),
                };
                events.emit(EventKind::FileDeferred {
                    job: job.claimed.name.clone(),
                    reason: format!("proof not written, C1 file {kept}: {message}"),
                });
                halt.set(format!(
                    "cannot write results: {message} (hint: free space or fix permissions on {}, then run again; unproved C1 files are kept)",
                    spool.layout().outbox.display()
                ));
            }
            Err((stage, message)) => {
                if !failed.insert(job.id) {
                    continue;
                }
                pending.remove(&job.id);
                counts.failed += 1;
                if let Err(err) = fail_job(&spool, &events, &run_id, &job.claimed, stage, &message)
                {
                    log::error!("{err:#}");
                }
            }
        }
    }
    counts
}

/// What `outbox/<job>.json` says about a proof.
#[derive(Serialize)]
struct ProofRecord<'a> {
    job: &'a str,
    c1_file: &'a str,
    miner_id: u64,
    sector_num: u64,
    sector_size: u64,
    sector_size_name: String,
    registered_proof: String,
    partitions: usize,
    proof_len: usize,
    proof_base64: String,
    verified_with: &'static str,
    provers: Vec<String>,
    run_id: &'a str,
    finished_at: String,
    timings_ms: JobTimings,
}

/// Per-stage milliseconds of one job.
#[derive(Serialize)]
struct JobTimings {
    parse: f64,
    synthesis: f64,
    prove: f64,
    verify: f64,
    total: f64,
}

/// Assembles the partition proofs in order, checks them with `verify_seal` and writes them.
fn write_proof(
    spool: &Spool,
    events: &EventSink,
    run_id: &str,
    job: &Job,
    done: PendingJob,
) -> Result<(), (&'static str, String)> {
    let name = job.claimed.name.clone();
    let mut bytes = Vec::with_capacity(192 * done.proofs.len());
    for proof in done.proofs.iter().flatten() {
        proof
            .write(&mut bytes)
            .map_err(|e| ("prove", format!("encoding the proof: {e}")))?;
    }
    events.emit(EventKind::VerifyStarted { job: name.clone() });
    let started = Instant::now();
    let verified = job.sector.verify_seal(&bytes);
    let verify_ms = started.elapsed().as_secs_f64() * 1e3;
    events.emit(EventKind::VerifyFinished {
        job: name.clone(),
        is_valid: matches!(verified, Ok(true)),
    });
    match verified {
        Ok(true) => {}
        Ok(false) => {
            return Err((
                "verify",
                format!(
                    "the proof for {} did not pass verify_seal; it was not written (hint: check that the parameters in {} belong to the verifying key beside them, then move the C1 file back to the inbox)",
                    job.sector.identity,
                    params::params_dir().display()
                ),
            ))
        }
        Err(err) => return Err(("verify", format!("{err:#}"))),
    }
    use base64::Engine;
    let record = ProofRecord {
        job: &name,
        c1_file: &job.claimed.file_name,
        miner_id: job.sector.identity.miner_id,
        sector_num: job.sector.identity.sector_num,
        sector_size: job.sector.sector_size,
        sector_size_name: SectorSizeName(job.sector.sector_size).to_string(),
        registered_proof: format!("{:?}", job.sector.registered_proof),
        partitions: done.proofs.len(),
        proof_len: bytes.len(),
        proof_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
        verified_with: "filecoin-proofs verify_seal",
        provers: done.provers.clone(),
        run_id,
        finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        timings_ms: JobTimings {
            parse: job.parse_ms,
            synthesis: done.synth_ms,
            prove: done.prove_ms,
            verify: verify_ms,
            total: job.claimed_at.elapsed().as_secs_f64() * 1e3,
        },
    };
    let path = spool
        .finish(&job.claimed, &bytes, &record)
        .map_err(|e| ("write", format!("{e:#}")))?;
    events.emit(EventKind::ProofWritten {
        job: name,
        path: path.display().to_string(),
    });
    Ok(())
}
