//! The feeder: finds files in the inbox, claims them, admits them as jobs and starts their
//! partitions on the synthesis pool as room frees up.
//!
//! It never blocks for long: claiming, intake and starting a partition are quick, and
//! everything that takes time (synthesis, generating test parameters, loading parameters)
//! runs elsewhere and wakes it when done. So a stop signal is seen within a fraction of a
//! second even while a ten-partition sector is being fed. Partitions start in job order:
//! a sector already started goes before the next one, which bounds each sector's latency.
//!
//! A solo job (a file in flight with others when a run died, or one whose last try met a
//! device fault: see [`crate::spool::AttemptRecord`]) starts only when no other job is in
//! flight, and no other job starts until it is decided, so that what happens to it is its
//! own doing. A draining run ends only once every job in flight is decided, since a file
//! handed back after a device fault is claimed again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use crossbeam_channel::{Receiver, Sender};

use crate::backend::{ParamsKind, ProverParams};
use crate::c1::SectorSizeName;
use crate::circuits;
use crate::event::{EventKind, EventSink, JobStage};
use crate::footprint::{Evaluation, Footprint};
use crate::memory::{show_bytes, MemoryBudget};
use crate::params::{self, ParamSets};
use crate::proof_kind::{CircuitId, ProofKind};
use crate::spool::{AttemptRecord, ClaimedJob, PreviousEnd, Provenance, Spool};
use crate::synth::{Capacity, ConstraintMatrices};

use super::constraints::{ConstraintSets, Constraints};
use super::evaluation::RefusedOnGpu;
use super::inbox::{FileState, InboxWatch};
use super::intake::{self, Bound, IntakeError, IntakeRules};
use super::job::{quarantine, Job, JobError, Outcome};
use super::requests::RunRequests;
use super::settings::RunSettings;
use super::stop::{is_stopping, Drain, Halt};
use super::synthesis::{PartitionTask, SynthesisPool, SynthesisSlots};

mod asked;
mod claim;

/// How long the feeder sleeps at most while partitions wait for room.
const TICK: Duration = Duration::from_millis(200);

/// A job whose partitions are not all started yet.
struct Admitted {
    job: Arc<Job>,
    /// The next partition to start.
    next_partition: usize,
    /// True once a wait for memory was reported for `next_partition`.
    is_memory_wait_reported: bool,
}

/// A circuit whose parameters plus one partition exceed the whole memory budget: the run
/// cannot prove it at all.
#[derive(Debug, thiserror::Error)]
#[error("{what} needs {} of Groth16 parameters plus {} for each partition in flight, {} in all, but the memory budget is {} (hint: raise --max-memory if the machine has more memory free, or prove {size} sectors on a machine with more memory)", show_bytes(.footprint.params_bytes), show_bytes(.footprint.partition_bytes), show_bytes(.footprint.params_bytes + .footprint.partition_bytes), show_bytes(*.budget), what = match .circuit.kind { ProofKind::Seal => format!("a {} sector", SectorSizeName(.circuit.sector_size)), ProofKind::Update => format!("a {} sector update", SectorSizeName(.circuit.sector_size)) }, size = SectorSizeName(.circuit.sector_size))]
pub struct DoesNotFitError {
    /// The circuit.
    pub circuit: CircuitId,
    /// Its parameters' and partitions' bytes.
    pub footprint: Footprint,
    /// The budget.
    pub budget: u64,
}

/// The feeder and what it owns.
pub struct Feeder<'a> {
    settings: &'a RunSettings,
    spool: &'a Spool,
    events: EventSink,
    run_id: &'a str,
    synthesis: SynthesisPool,
    slots: SynthesisSlots,
    params: Arc<ParamSets<ProverParams>>,
    /// What of a parameter set the host keeps, for the budget.
    params_kind: ParamsKind,
    /// Partitions the provers hold at once (a batch and the next, each): the room the
    /// budget keeps for those evaluated at their provers.
    partitions_at_provers: u64,
    constraints: Arc<ConstraintSets>,
    refused_on_gpu: RefusedOnGpu,
    memory: MemoryBudget,
    outcome_tx: Sender<Outcome>,
    halt: Halt,
    /// Woken by the inbox watcher, returned slots and memory, finished parameter generation.
    wake: (Sender<()>, Receiver<()>),
    /// Circuits already checked against the budget.
    fits: HashMap<CircuitId, Footprint>,
    /// Inbox files waited on between scans: settling, unfinished, not claimable.
    inbox: InboxWatch,
    /// Jobs in order, with partitions still to start.
    admitted: VecDeque<Admitted>,
    /// Every job admitted, while any stage still holds it: the parameter sets of these are
    /// never evicted.
    in_flight: Vec<Weak<Job>>,
    /// Test parameters being generated, by parameter file.
    generating: HashMap<PathBuf, JoinHandle<Result<()>>>,
    /// Asked by the program feeding the inbox: end once it is drained.
    drain: Drain,
    /// Asked by the program feeding the inbox while the run runs.
    requests: RunRequests,
    /// The circuit of the last job admitted, whose files go first ([`claim_order`]).
    last_circuit: Option<CircuitId>,
}

/// Where the feeder sends its work, and what it shares with the other stages.
pub struct FeederLinks {
    /// The synthesis pool partitions start on.
    pub synthesis: SynthesisPool,
    /// Room in the pool.
    pub slots: SynthesisSlots,
    /// The run's parameter sets, preloaded as jobs are admitted.
    pub params: Arc<ParamSets<ProverParams>>,
    /// The form the provers take parameters in: what of them the host keeps.
    pub params_kind: ParamsKind,
    /// Partitions the provers hold at once: a batch and the next, each.
    pub partitions_at_provers: u64,
    /// The run's pre-compiled constraints.
    pub constraints: Arc<ConstraintSets>,
    /// The sets whose constraints a GPU refused: planned for the host.
    pub refused_on_gpu: RefusedOnGpu,
    /// The run's memory budget.
    pub memory: MemoryBudget,
    /// To the finisher, for jobs abandoned at a halt.
    pub outcome_tx: Sender<Outcome>,
    /// Set when the run must stop.
    pub halt: Halt,
    /// Wakes the feeder; the slots hold the sending side too.
    pub wake: (Sender<()>, Receiver<()>),
    /// Preloads, evictions and withdrawals asked by the program feeding the inbox.
    pub requests: RunRequests,
}

impl<'a> Feeder<'a> {
    /// A feeder for `spool` under `settings`.
    pub fn new(
        settings: &'a RunSettings,
        spool: &'a Spool,
        events: EventSink,
        run_id: &'a str,
        links: FeederLinks,
        drain: Drain,
    ) -> Feeder<'a> {
        Feeder {
            settings,
            spool,
            events,
            run_id,
            synthesis: links.synthesis,
            slots: links.slots,
            params: links.params,
            params_kind: links.params_kind,
            partitions_at_provers: links.partitions_at_provers,
            constraints: links.constraints,
            refused_on_gpu: links.refused_on_gpu,
            memory: links.memory,
            outcome_tx: links.outcome_tx,
            halt: links.halt,
            wake: links.wake,
            fits: HashMap::new(),
            inbox: InboxWatch::new(settings.settle, settings.incomplete_grace),
            admitted: VecDeque::new(),
            in_flight: Vec::new(),
            generating: HashMap::new(),
            drain,
            requests: links.requests,
            last_circuit: None,
        }
    }
}

impl Feeder<'_> {
    /// Feeds the pipeline until the inbox is drained (`--once`), a stop signal, or a halt.
    /// Returns an error when the run cannot go on (missing parameters, an unreadable spool).
    pub fn feed(&mut self) -> Result<()> {
        let _watcher = self.watch_inbox();
        let mut announced_stop = false;
        loop {
            if self.halt.is_set() {
                self.abandon_all();
                return Ok(());
            }
            self.carry_out_requests()?;
            if is_stopping() && !announced_stop {
                self.events.emit(EventKind::StopRequested);
                announced_stop = true;
            }
            // Read before the scan: a file put in the inbox before a drain was asked for is
            // then seen by this scan or, if the drain came during it, by the next one.
            let is_draining = self.is_draining();
            let mut is_inbox_waiting = false;
            let mut is_scanned = false;
            if !is_stopping() && self.admitted.is_empty() {
                // Work of runs that died, here or on another host sharing the spool.
                for (claimed, previous) in self.spool.take_over_orphans(self.settings.lease)? {
                    self.admit(claimed, Some(previous))?;
                }
                is_inbox_waiting = self.claim_from_inbox()?;
                is_scanned = true;
            }
            self.start_partitions();
            if self.admitted.is_empty() && self.generating.is_empty() {
                if is_stopping() {
                    return Ok(());
                }
                if !is_scanned {
                    // The last job just started; whether the inbox is drained is only known
                    // from a scan made now, not from the one before that job was claimed.
                    continue;
                }
                // A job in flight may still come back to the inbox (a device fault).
                if is_draining
                    && !is_inbox_waiting
                    && !self.inbox.has_deferred()
                    && !self.has_jobs_in_flight()
                {
                    return Ok(());
                }
            }
            self.wait();
        }
    }

    /// True when the run ends once the inbox is drained: `--once`, or a drain was asked for.
    fn is_draining(&self) -> bool {
        self.settings.once || self.drain.is_requested()
    }

    /// Sleeps until woken (a file arrived, a slot came back, parameters were made), the
    /// next rescan or settling file is due, or a stop signal arrives.
    fn wait(&self) {
        let is_idle = self.admitted.is_empty()
            && self.generating.is_empty()
            && !(self.is_draining() && self.has_jobs_in_flight());
        let mut period = if is_idle { self.settings.poll } else { TICK };
        // Only when the next loop scans the inbox (and so resets it): a due time in the
        // past would otherwise make this a busy loop while a job waits for memory.
        if let Some(due) = self
            .inbox
            .next_settled()
            .filter(|_| self.admitted.is_empty())
        {
            period = period.min(due.saturating_duration_since(Instant::now()));
        }
        let deadline = Instant::now() + period;
        let was_draining = self.is_draining();
        while !is_stopping() && self.is_draining() == was_draining {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            if self.wake.1.recv_timeout(left.min(TICK)).is_ok() {
                // Let a writer finish its burst of events before rescanning.
                while self.wake.1.try_recv().is_ok() {}
                return;
            }
        }
    }

    /// A watcher that wakes the feeder when the inbox changes; `None` if the platform has
    /// none (polling still works; watchers also miss events on network file systems).
    fn watch_inbox(&self) -> Option<notify::RecommendedWatcher> {
        use notify::Watcher;
        let wake = self.wake.0.clone();
        let mut watcher = notify::recommended_watcher(move |_| {
            let _ = wake.try_send(());
        })
        .ok()?;
        watcher
            .watch(
                &self.settings.layout.inbox,
                notify::RecursiveMode::NonRecursive,
            )
            .ok()?;
        Some(watcher)
    }

    /// Takes a claimed file in: the job joins the queue, fails, or goes back to the inbox.
    /// `previous` says how the run that held it before ended, for a file taken over.
    fn admit(&mut self, claimed: ClaimedJob, previous: Option<PreviousEnd>) -> Result<()> {
        let is_resumed = previous.is_some();
        self.events.emit(EventKind::JobClaimed {
            job: claimed.name.clone(),
            is_resumed,
        });
        // A result of this name is judged by the digest it records, for a new inbox file as
        // for a resumed claim: the same bytes were proved already, other bytes are the
        // sector's C1 made again.
        if self.spool.has_result(&claimed.name) {
            match self.spool.provenance(&claimed)? {
                Provenance::ThisFile => {
                    // Proved already (before a crash, or dropped into the inbox again): only
                    // the move to done/ was missing.
                    self.spool.retire_finished(&claimed)?;
                    let (proof, _) = self.spool.outbox_paths(&claimed.name);
                    self.events.emit(EventKind::ProofWritten {
                        job: claimed.name.clone(),
                        path: proof.display().to_string(),
                    });
                    return Ok(());
                }
                // Lotus ran C1 again for the sector meanwhile: the result is the earlier
                // C1's. It is kept aside and this file is proved as any other.
                Provenance::Other { recorded } => {
                    let kept = self
                        .spool
                        .supersede_result(&claimed.name, recorded.as_deref())?;
                    self.events.emit(EventKind::ResultSuperseded {
                        job: claimed.name.clone(),
                        kept_as: kept.display().to_string(),
                    });
                }
            }
        }
        let attempt = self.spool.start_attempt(&claimed, previous)?;
        if attempt.crashes >= self.settings.max_attempts {
            let message = format!(
                "took the prover down {} times while it was the only file in flight: last seen at {} in run {}; it is not tried again (hint: look for the out-of-memory killer or GPU driver errors in the system log at {}, then move the file back to the inbox to retry)",
                attempt.crashes,
                attempt.last_seen(),
                attempt.owner,
                attempt.updated_at
            );
            return self.fail(&claimed, &JobError::Crash(message));
        }
        // Reading and binding a file is in flight too: a run killed there (a huge file, a
        // panic in a parser) blames the file as any other stage would.
        self.spool
            .note_attempt_stage(&claimed, JobStage::Parse, None);
        let started = Instant::now();
        let rules = IntakeRules::of(self.settings);
        let deferral = self
            .inbox
            .take_deferral(&self.spool.layout().inbox.join(&claimed.file_name));
        let waited = deferral.map_or(Duration::ZERO, |seen| seen.since.elapsed());
        let intake = intake::bind_claimed(&claimed, &rules, waited);
        if matches!(intake, Ok(_) | Err(IntakeError::MissingParams(..))) {
            self.spool.note_attempt_waiting(&claimed);
        }
        match intake {
            Ok(bound) => self.enqueue(claimed, bound, started, attempt),
            Err(IntakeError::Job(err)) => self.fail(&claimed, &err),
            Err(IntakeError::NotReady(reason)) => {
                let back = self.spool.hand_back(&claimed)?;
                if let Some(state) = FileState::of(&back) {
                    self.inbox.defer(back, state, deferral, Instant::now());
                }
                self.events.emit(EventKind::FileDeferred {
                    job: claimed.name.clone(),
                    reason,
                });
                Ok(())
            }
            Err(IntakeError::SyntheticParams(err)) => {
                self.spool.hand_back(&claimed)?;
                Err(err.into())
            }
            Err(IntakeError::MissingParams(bound, missing)) => {
                let circuit = bound.sector.circuit;
                if !(self.settings.gen_test_params && params::is_test_size(circuit.sector_size)) {
                    self.spool.hand_back(&claimed)?;
                    return Err(missing.into());
                }
                self.generate_params(&missing.path, circuit);
                self.enqueue(claimed, *bound, started, attempt)
            }
        }
    }

    /// Queues a bound job and, if the budget has room, starts loading its parameters.
    fn enqueue(
        &mut self,
        claimed: ClaimedJob,
        bound: Bound,
        started: Instant,
        attempt: AttemptRecord,
    ) -> Result<()> {
        let Bound {
            sector,
            params_path,
            c1_digest,
        } = bound;
        self.last_circuit = Some(sector.circuit);
        let footprint = if self.generating.contains_key(&params_path) {
            None
        } else {
            match self.footprint(sector.circuit, &params_path) {
                Ok(footprint) => Some(footprint),
                Err(err) => {
                    self.spool.hand_back(&claimed)?;
                    return Err(err);
                }
            }
        };
        let job = Arc::new(Job::new(
            claimed,
            sector,
            params_path,
            c1_digest,
            started,
            attempt,
        ));
        self.in_flight.retain(|job| job.strong_count() > 0);
        self.in_flight.push(Arc::downgrade(&job));
        if let Some(footprint) = footprint {
            job.set_footprint(footprint);
        }
        self.events.emit(EventKind::JobParsed {
            job: job.name().to_owned(),
            sector: job.sector.label(),
            sector_size: job.sector.sector_size(),
            kind: job.sector.kind(),
            partitions: job.partition_count(),
            is_benchmark: job.sector.is_benchmark,
        });
        if let Some(footprint) = job.footprint() {
            if self
                .params
                .reserve_memory(&job.params_path, &self.memory, footprint.params_bytes)
            {
                self.params.preload(&job.params_path, &self.events);
            }
        }
        self.admitted.push_back(Admitted {
            job,
            next_partition: 0,
            is_memory_wait_reported: false,
        });
        Ok(())
    }

    /// The footprint of `circuit`'s jobs with parameters at `params_path`, checked once: the
    /// files must be whole (see [`params::check_usable`]), and parameters plus one partition
    /// must fit the budget, or nothing can be proved.
    fn footprint(&mut self, circuit: CircuitId, params_path: &Path) -> Result<Footprint> {
        let size = circuit.sector_size;
        if let Some(footprint) = self.fits.get(&circuit) {
            return Ok(*footprint);
        }
        // The first use of the file: a download cut short stops the run here, named, before
        // any work depends on it.
        let layout = params::check_usable(params_path, size)?;
        // The budget counts what the host keeps: all of the set, or for a backend that keeps
        // its bases on the GPU only what stays behind.
        let footprint = Footprint {
            params_bytes: self.params_kind.host_bytes(&layout),
            gpu_room_for_constraints: self.params_kind.gpu_room_for_constraints(&layout),
            ..Footprint::of(&layout)
        };
        // Partitions evaluated at their provers need room there for every partition a
        // prover holds at once; where the budget cannot keep it, synthesis evaluates them.
        let room = footprint.partition_bytes * self.partitions_at_provers;
        let footprint = Footprint {
            room_at_provers: (self.params_kind.evaluates_at_prover()
                && footprint.params_bytes + room + footprint.witness_bytes <= self.memory.total())
            .then_some(room),
            ..footprint
        };
        if footprint.params_bytes + footprint.partition_bytes > self.memory.total() {
            return Err(DoesNotFitError {
                circuit,
                footprint,
                budget: self.memory.total(),
            }
            .into());
        }
        self.fits.insert(circuit, footprint);
        Ok(footprint)
    }

    /// Stops the run if `circuit`'s jobs cannot fit the budget (when their parameters are
    /// here to say how big they are).
    fn check_fits(&mut self, circuit: CircuitId) -> Result<()> {
        let Ok((params_path, _)) = circuits::param_paths(circuit) else {
            return Ok(());
        };
        if !params_path.is_file() {
            return Ok(());
        }
        self.footprint(circuit, &params_path).map(|_| ())
    }

    /// Generates missing test parameters on a thread of their own (minutes), once per file.
    fn generate_params(&mut self, path: &Path, circuit: CircuitId) {
        if self.generating.contains_key(path) {
            return;
        }
        self.events.emit(EventKind::ParamsGenerating {
            path: path.display().to_string(),
        });
        let wake = self.wake.0.clone();
        let handle = std::thread::spawn(move || {
            let made = circuits::generate_params(circuit).map(|_| ());
            let _ = wake.try_send(());
            made
        });
        self.generating.insert(path.to_owned(), handle);
    }

    /// False while the parameters at `path` are still being generated; once they are made,
    /// their load starts. A failed generation halts the run.
    fn has_params(&mut self, path: &Path) -> bool {
        let Some(handle) = self.generating.get(path) else {
            return true;
        };
        if !handle.is_finished() {
            return false;
        }
        let result = self
            .generating
            .remove(path)
            .map(|handle| handle.join())
            .unwrap_or(Ok(Ok(())));
        match result {
            Ok(Ok(())) => {
                self.params.preload(path, &self.events);
                true
            }
            Ok(Err(err)) => {
                self.halt
                    .set(err.context(format!("generating test parameters {}", path.display())));
                false
            }
            Err(_) => {
                self.halt.set(anyhow::anyhow!(
                    "generating test parameters {} panicked",
                    path.display()
                ));
                false
            }
        }
    }

    /// Starts as many partitions as the pool and the memory budget have room for, oldest
    /// job first.
    fn start_partitions(&mut self) {
        while let Some(front) = self.admitted.front() {
            if front.job.is_cancelled() {
                self.admitted.pop_front();
                continue;
            }
            if front.next_partition == 0 {
                let job = front.job.clone();
                if !self.may_start(&job) {
                    return;
                }
            }
            let Some(front) = self.admitted.front() else {
                return;
            };
            let path = front.job.params_path.clone();
            if !self.has_params(&path) {
                return;
            }
            let Some(mut footprint) = self.front_footprint() else {
                return;
            };
            // A GPU refused this set's constraints: the host evaluates its partitions.
            if self.refused_on_gpu.contains(&path) {
                footprint.gpu_room_for_constraints = None;
            }
            let reserve = |feeder: &Self| {
                feeder
                    .params
                    .reserve_memory(&path, &feeder.memory, footprint.params_bytes)
            };
            if !(reserve(self) || (self.evict_unused(&path) && reserve(self))) {
                self.report_memory_wait(footprint.params_bytes);
                return;
            }
            self.params.preload(&path, &self.events);
            if !self.slots.has_room() {
                return;
            }
            let job = match self.admitted.front() {
                Some(front) => front.job.clone(),
                None => return,
            };
            // A job whose last proof was rejected goes through the gadgets in full.
            let r1cs = if job.proves_in_full() {
                None
            } else {
                match self.constraints.get(&path, &job, footprint.domain) {
                    Constraints::Ready(r1cs) => Some(r1cs),
                    // Its partitions wait: through the gadgets, one costs about what the
                    // whole recording does, and holds a, b and c meanwhile.
                    Constraints::Recording => return,
                    Constraints::Full => None,
                }
            };
            // The GPU evaluates the constraints where they fit beside every base, else the
            // prover's thread does right before the proof where the budget keeps room for
            // that: the partition in flight is then its witness alone.
            let (evaluation, bytes) =
                footprint.partition_in_flight(r1cs.as_ref().map(|r1cs| r1cs.gpu_bytes()));
            if let (Evaluation::AtProver, Some(room)) = (evaluation, footprint.room_at_provers) {
                self.memory.keep_for_provers(room);
            }
            let memory = self.memory.try_reserve(bytes).or_else(|| {
                self.evict_unused(&path)
                    .then(|| self.memory.try_reserve(bytes))
                    .flatten()
            });
            let Some(memory) = memory else {
                self.report_memory_wait(bytes);
                return;
            };
            let Some(slot) = self.slots.try_take() else {
                return;
            };
            let Some(front) = self.admitted.front_mut() else {
                return;
            };
            let task = PartitionTask {
                r1cs,
                evaluation,
                evaluated_bytes: footprint.partition_bytes,
                job: front.job.clone(),
                partition: front.next_partition,
                memory,
                capacity: Capacity {
                    abc: footprint.domain as usize,
                    aux: footprint.aux as usize,
                    inputs: footprint.inputs as usize,
                },
            };
            self.synthesis.start(task, slot);
            front.next_partition += 1;
            front.is_memory_wait_reported = false;
            if front.next_partition == front.job.partition_count() {
                self.admitted.pop_front();
            }
        }
    }

    /// True when `job` may start now: a solo job only with no other job in flight, any job
    /// only while no solo job is.
    fn may_start(&mut self, job: &Arc<Job>) -> bool {
        let started = self.started_jobs();
        let mut others = started.iter().filter(|other| other.id != job.id);
        if job.is_solo() {
            others.next().is_none()
        } else {
            !others.any(|other| other.is_solo())
        }
    }

    /// Jobs that have started (a partition synthesized or beyond) and are not yet decided.
    fn started_jobs(&mut self) -> Vec<Arc<Job>> {
        self.in_flight.retain(|job| job.strong_count() > 0);
        let waiting: HashSet<u64> = self
            .admitted
            .iter()
            .filter(|a| a.next_partition == 0)
            .map(|a| a.job.id)
            .collect();
        self.in_flight
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|job| !waiting.contains(&job.id))
            .collect()
    }

    /// True while any admitted job is not decided yet.
    fn has_jobs_in_flight(&self) -> bool {
        self.in_flight.iter().any(|job| job.strong_count() > 0)
    }

    /// Gives back the room of parameter sets (and their constraints) that no job in flight
    /// uses, for the set at `wanted`: sets stay for the run otherwise, and a budget that holds
    /// one set would leave the jobs of another size waiting for ever. True when any was.
    fn evict_unused(&mut self, wanted: &Path) -> bool {
        self.in_flight.retain(|job| job.strong_count() > 0);
        let used: HashSet<PathBuf> = self
            .in_flight
            .iter()
            .filter_map(Weak::upgrade)
            .map(|job| job.params_path.clone())
            .collect();
        let mut is_evicted = false;
        for path in self.params.resident() {
            if path == wanted || used.contains(&path) || !self.params.evict(&path) {
                continue;
            }
            self.constraints.evict(&path);
            log::info!(
                "unloaded parameters {} for {}, which need the room",
                path.display(),
                wanted.display()
            );
            is_evicted = true;
        }
        is_evicted
    }

    /// The front job's footprint, read once its parameters exist; a file whose counts
    /// cannot be read, or that cannot fit, halts the run.
    fn front_footprint(&mut self) -> Option<Footprint> {
        let job = self.admitted.front()?.job.clone();
        if let Some(footprint) = job.footprint() {
            return Some(footprint);
        }
        match self.footprint(job.sector.circuit, &job.params_path) {
            Ok(footprint) => {
                job.set_footprint(footprint);
                Some(footprint)
            }
            Err(err) => {
                self.halt.set(err);
                None
            }
        }
    }

    /// Says once per partition that it waits for memory, with the numbers.
    fn report_memory_wait(&mut self, needed_bytes: u64) {
        let (in_use_bytes, budget_bytes) = (self.memory.in_use(), self.memory.total());
        let Some(front) = self.admitted.front_mut() else {
            return;
        };
        if front.is_memory_wait_reported {
            return;
        }
        front.is_memory_wait_reported = true;
        self.events.emit(EventKind::MemoryWait {
            job: front.job.name().to_owned(),
            partition: front.next_partition,
            needed_bytes,
            in_use_bytes,
            budget_bytes,
        });
    }

    /// The run halts: jobs not fully started go back to the inbox (through the finisher,
    /// which owns every job once it is admitted).
    fn abandon_all(&mut self) {
        for admitted in self.admitted.drain(..) {
            admitted.job.cancel();
            let _ = self
                .outcome_tx
                .send(Outcome::Abandoned { job: admitted.job });
        }
    }

    fn fail(&self, claimed: &ClaimedJob, error: &JobError) -> Result<()> {
        quarantine(self.spool, &self.events, self.run_id, claimed, error)
    }
}
