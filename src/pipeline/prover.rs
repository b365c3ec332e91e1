//! Prover threads: each owns its kernels (one GPU, or the CPU), takes synthesized partitions
//! from the shared queue and proves them.

use super::*;

/// A prover thread: owns its kernels (one GPU, or the CPU) and proves partitions from the
/// shared queue; parameters are loaded once per run and shared by all provers.
pub(super) fn prove_partitions(
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
