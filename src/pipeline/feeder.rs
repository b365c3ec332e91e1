//! The feeder: finds files in the inbox, claims them, binds them to their sectors and
//! starts one synthesis task per partition, holding a permit until the partition is queued.

use super::*;

/// A counting semaphore on a bounded channel: `acquire` blocks while all are out.
#[derive(Clone)]
pub(super) struct Permits {
    out: Sender<()>,
    back: Receiver<()>,
    size: usize,
}

/// One partition's claim on memory; returned when dropped.
pub(super) struct Permit(Receiver<()>);

impl Drop for Permit {
    fn drop(&mut self) {
        let _ = self.0.try_recv();
    }
}

impl Permits {
    pub(super) fn new(size: usize) -> Permits {
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
pub(super) struct Feeder<'a> {
    pub(super) settings: &'a RunSettings,
    pub(super) spool: &'a Spool,
    pub(super) events: EventSink,
    pub(super) run_id: &'a str,
    pub(super) pool: rayon::ThreadPool,
    pub(super) permits: Permits,
    pub(super) synthesized_tx: Sender<SynthesizedMsg>,
    pub(super) outcome_tx: Sender<Outcome>,
    /// Files that looked unfinished, with the (size, mtime) they had then.
    pub(super) deferred: HashMap<PathBuf, (u64, SystemTime)>,
    /// Parameters shared with the provers.
    pub(super) params_cache: Arc<Mutex<ParamsCache>>,
    /// Parameter files already being loaded ahead of the provers.
    pub(super) preloading: HashSet<PathBuf>,
    /// Set when the run must stop.
    pub(super) halt: Halt,
}

/// Why a job could not be started.
pub(super) enum StartError {
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
    pub(super) fn feed(&mut self) -> Result<()> {
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
    pub(super) fn drain(&self) {
        self.permits.wait_all();
    }
}

/// Why the claimed entry at `path` is not a C1 file at all, if it is not: links are never
/// followed (they could point anywhere), and directories, FIFOs and devices are never opened.
pub(super) fn not_a_c1_file(path: &Path) -> Option<String> {
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
