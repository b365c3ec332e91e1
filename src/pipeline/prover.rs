//! Prover threads: each owns its kernels (one GPU, or the CPU), takes synthesized partitions
//! from the shared queue and proves them with the run's shared parameters.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::event::{EventKind, EventSink, Stage};
use crate::kernels::ProverKernels;
use crate::params::ParamSets;
use crate::prove;
use crate::spool::Spool;

use super::intake;
use super::job::{panic_message, Job, JobError, Outcome, SynthesizedMsg};

/// Proves partitions from `rx` until the queue is closed and empty.
pub fn prove_partitions(
    mut kernels: ProverKernels,
    spool: Spool,
    rx: Receiver<SynthesizedMsg>,
    outcome_tx: Sender<Outcome>,
    events: EventSink,
    params: Arc<ParamSets>,
) {
    let worker = kernels.name().to_owned();
    for msg in rx {
        // `_memory` is given back at the end of this iteration, when the partition is gone.
        let SynthesizedMsg {
            job,
            partition,
            synthesized,
            synth_ms,
            memory: _memory,
        } = msg;
        // A sibling failed: proving this partition would be for nothing.
        if job.is_cancelled() {
            continue;
        }
        let name = job.name().to_owned();
        events.emit(EventKind::ProverPickedUp {
            job: name.clone(),
            partition,
            worker: worker.clone(),
        });
        let params = intake::params_path(&job.sector)
            .and_then(|path| params.get(&path, &worker, &events).map_err(JobError::from));
        let params = match params {
            Ok(params) => params,
            Err(error) => {
                let _ = outcome_tx.send(Outcome::Failed { job, error });
                continue;
            }
        };
        spool.note_attempt_stage(&job.claimed, Stage::Prove, Some(partition));
        events.emit(EventKind::ProveStarted {
            job: name.clone(),
            partition,
            worker: worker.clone(),
        });
        let started = Instant::now();
        let (r, s) = prove::fresh_randomness();
        let result = catch_unwind(AssertUnwindSafe(|| {
            prove::prove_partition(synthesized, &*params, r, s, &mut kernels)
        }));
        let outcome = match result {
            Ok(Ok((proof, timings))) => {
                events.emit(EventKind::ProveFinished {
                    job: name,
                    partition,
                    worker: worker.clone(),
                    timings: Some(timings),
                });
                Outcome::Proved {
                    job,
                    partition,
                    proof: Box::new(proof),
                    prover: worker.clone(),
                    synth_ms,
                    prove_ms: started.elapsed().as_secs_f64() * 1e3,
                }
            }
            Ok(Err(err)) => Outcome::Failed {
                job: cancelled(job),
                error: JobError::Prove {
                    partition,
                    message: err.to_string(),
                },
            },
            Err(panic) => Outcome::Failed {
                job: cancelled(job),
                error: JobError::Prove {
                    partition,
                    message: panic_message(panic.as_ref()),
                },
            },
        };
        let _ = outcome_tx.send(outcome);
    }
}

/// The job, cancelled: a failed partition dooms its siblings at once.
fn cancelled(job: Arc<Job>) -> Arc<Job> {
    job.cancel();
    job
}
