//! The `cuzk.v1.ProvingEngine` handlers. Each answers from the spool ([`super::jobs`]) and
//! asks the run through its [`RunRequests`](crate::pipeline::RunRequests); nothing here
//! proves or keeps a job of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

use super::jobs::{self, Standing};
use super::proto::proving_engine_server::ProvingEngine;
use super::proto::*;
use super::request::{self, Refusal};
use super::state::{Accepted, State};
use crate::circuits;
use crate::proof_kind::{CircuitId, ProofKind as Kind};

/// How long a name nobody knows is looked for before `NOT_FOUND`: a file handed back by a
/// device fault is between directories for a moment.
const UNKNOWN_GRACE: Duration = Duration::from_millis(300);

/// The longest a wait goes without looking at the spool, whatever the events say: another
/// process sharing the spool moves files too.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// The handlers.
pub struct Engine {
    pub(super) state: Arc<State>,
}

/// A job id as a client may send it: a name the server made, never a path.
fn check_job_id(job: &str) -> Result<(), Status> {
    let is_name = !job.is_empty()
        && job.len() <= 200
        && !job.starts_with('.')
        && job
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if is_name {
        Ok(())
    } else {
        Err(Status::invalid_argument(format!(
            "{job:?} is not a job id of this server (ids are the names SubmitProof returns, such as s-t01000-3.porep-1000-3)"
        )))
    }
}

/// `porep-32g`, `snap-2k` and the like (Curio's circuit ids) as a circuit.
pub fn parse_circuit_id(text: &str) -> Result<CircuitId, Status> {
    let (kind, size) = text.split_once('-').ok_or_else(|| {
        Status::invalid_argument(format!(
            "{text:?} is not a circuit id such as porep-32g or snap-32g"
        ))
    })?;
    let sector_size: u64 = match size.to_ascii_lowercase().trim_end_matches("ib") {
        "2k" => 2 << 10,
        "8m" => 8 << 20,
        "512m" => 512 << 20,
        "32g" => 32 << 30,
        "64g" => 64 << 30,
        _ => {
            return Err(Status::invalid_argument(format!(
                "{text:?}: {size:?} is not a sector size (2k, 8m, 512m, 32g or 64g)"
            )))
        }
    };
    match kind {
        "porep" => Ok(CircuitId::seal(sector_size)),
        "snap" => Ok(CircuitId::update(sector_size)),
        "wpost" | "winning" => Err(Status::invalid_argument(format!(
            "{text}: PoSt stays in Curio, so cuzk holds no PoSt parameters"
        ))),
        _ => Err(Status::invalid_argument(format!(
            "{text:?} is not a circuit id such as porep-32g or snap-32g"
        ))),
    }
}

/// The circuit Curio names `text` and its parameter file.
fn circuit_params(text: &str) -> Result<(CircuitId, std::path::PathBuf), Status> {
    let circuit = parse_circuit_id(text)?;
    let (path, _) = circuits::param_paths(circuit)
        .map_err(|err| Status::invalid_argument(format!("{err:#}")))?;
    Ok((circuit, path))
}

/// Curio's name of a circuit.
pub fn circuit_name(circuit: CircuitId) -> String {
    let size = match circuit.sector_size {
        s if s == 2 << 10 => "2k".to_owned(),
        s if s == 8 << 20 => "8m".to_owned(),
        s if s == 512 << 20 => "512m".to_owned(),
        s if s == 32 << 30 => "32g".to_owned(),
        s if s == 64 << 30 => "64g".to_owned(),
        s => format!("{s}b"),
    };
    match circuit.kind {
        Kind::Seal => format!("porep-{size}"),
        Kind::Update => format!("snap-{size}"),
    }
}

/// Every circuit cuzk proves, for telling a parameter file's circuit.
fn known_circuits() -> impl Iterator<Item = CircuitId> {
    [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30]
        .into_iter()
        .flat_map(|size| [CircuitId::seal(size), CircuitId::update(size)])
}

impl Engine {
    /// Accepts `submit`: judged as the run will judge it, then written into the inbox.
    async fn accept(&self, submit: SubmitProofRequest) -> Result<Accepted, Refusal> {
        let state = &self.state;
        let file = request::input_file(&submit, state.rules.max_c1_bytes)?;
        if !state.is_held(&file) {
            let _permit = state
                .checks
                .acquire()
                .await
                .map_err(|_| Refusal("cuzk is stopping".into()))?;
            let checked = {
                let state = state.clone();
                tokio::task::spawn_blocking(move || {
                    let circuit =
                        request::check(&submit, &file, &state.rules, state.may_generate_params);
                    (file, circuit)
                })
            };
            let (file_back, circuit) = checked
                .await
                .map_err(|err| Refusal(format!("checking the request: {err}")))?;
            circuit?;
            let _writing = state.writing.lock().await;
            let written = {
                let state = state.clone();
                tokio::task::spawn_blocking(move || {
                    state.write_input(&file_back).map(|_| file_back)
                })
            };
            let file_back = written
                .await
                .map_err(|err| Refusal(format!("writing the request: {err}")))??;
            return Ok(Accepted {
                queue_position: jobs::queue_position(&state.layout, &file_back.job),
                job: file_back.job,
            });
        }
        Ok(Accepted {
            queue_position: jobs::queue_position(&state.layout, &file.job),
            job: file.job,
        })
    }

    /// Waits for `job` to end, at most `timeout` (`None`: until it ends).
    async fn wait(
        &self,
        job: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitProofResponse, Status> {
        let state = &self.state;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut changes = state.subscribe();
        let mut unknown_since: Option<Instant> = None;
        loop {
            changes.borrow_and_update();
            let standing = jobs::standing(&state.layout, job);
            if let Some(answer) = state.answer(job, &standing) {
                return Ok(answer);
            }
            if standing == Standing::Unknown {
                let since = *unknown_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= UNKNOWN_GRACE {
                    return Err(Status::not_found(format!(
                        "no job {job} in the spool {} (hint: the id SubmitProof returned; a job whose files were removed by hand is gone)",
                        state.layout.inbox.parent().unwrap_or(&state.layout.inbox).display()
                    )));
                }
            } else {
                unknown_since = None;
            }
            if state.is_closed() {
                return Err(Status::unavailable(format!(
                    "cuzk serve is stopping; {job} stays in the spool and is proved after the restart (call AwaitProof again)"
                )));
            }
            let mut wait = if unknown_since.is_some() {
                Duration::from_millis(50)
            } else {
                LOOK_AGAIN
            };
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(State::timeout_answer(job));
                }
                wait = wait.min(left);
            }
            let _ = tokio::time::timeout(wait, changes.changed()).await;
        }
    }
}

#[tonic::async_trait]
impl ProvingEngine for Engine {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let accepted = self
            .accept(request.into_inner())
            .await
            .map_err(|refusal| Status::invalid_argument(format!("cuzk: {refusal}")))?;
        Ok(Response::new(SubmitProofResponse {
            job_id: accepted.job,
            queue_position: accepted.queue_position,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let request = request.into_inner();
        check_job_id(&request.job_id)?;
        let timeout = (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms));
        let answer = self.wait(&request.job_id, timeout).await?;
        Ok(Response::new(answer))
    }

    async fn prove(
        &self,
        request: Request<ProveRequest>,
    ) -> Result<Response<ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest without its submit"))?;
        let request_id = submit.request_id.clone();
        let result = match self.accept(submit).await {
            Ok(accepted) => self.wait(&accepted.job, None).await?,
            Err(refusal) => State::refused_answer(&request_id, &refusal),
        };
        Ok(Response::new(ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let job = request.into_inner().job_id;
        check_job_id(&job)?;
        let was_running = match jobs::standing(&self.state.layout, &job) {
            Standing::Queued => false,
            Standing::InFlight => true,
            Standing::Unknown => {
                return Err(Status::not_found(format!("no job {job} in the spool")))
            }
            ended => {
                return Err(Status::failed_precondition(format!(
                    "{job} has ended already ({ended:?}); nothing to cancel"
                )))
            }
        };
        self.state
            .requests
            .withdraw(&job, "withdrawn by CancelProof".into());
        Ok(Response::new(CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        let state = &self.state;
        let counts = jobs::queue_counts(&state.layout);
        let queues = counts
            .by_kind
            .iter()
            .map(|(kind, pending, in_progress)| QueueStatus {
                proof_kind: match kind {
                    Kind::Seal => ProofKind::PorepSealCommit.as_str_name().to_owned(),
                    Kind::Update => ProofKind::SnapDealsUpdate.as_str_name().to_owned(),
                },
                pending: *pending,
                in_progress: *in_progress,
            })
            .collect();
        let gpus = state
            .requests
            .gpus()
            .unwrap_or_default()
            .into_iter()
            .map(|gpu| GpuStatus {
                ordinal: gpu.index as u32,
                name: gpu.name,
                vram_total_bytes: gpu.total_bytes,
                vram_free_bytes: gpu.free_bytes.unwrap_or(0),
                current_job_id: String::new(),
                current_proof_kind: String::new(),
            })
            .collect();
        let loaded = state.loaded_params();
        let loaded_srs = state
            .requests
            .resident()
            .into_iter()
            .filter_map(|path| {
                let circuit = known_circuits()
                    .find(|c| circuits::param_paths(*c).is_ok_and(|(p, _)| p == path))?;
                Some(SrsStatus {
                    circuit_id: circuit_name(circuit),
                    tier: if loaded.contains_key(&path) {
                        srs_status::Tier::Hot
                    } else {
                        srs_status::Tier::Warm
                    } as i32,
                    size_bytes: std::fs::metadata(&path).map_or(0, |m| m.len()),
                    ref_count: 0,
                })
            })
            .collect();
        let (completed, failed) = state.totals();
        Ok(Response::new(GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: completed,
            total_proofs_failed: failed,
            uptime_seconds: state.started.elapsed().as_secs(),
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
        }))
    }

    async fn get_metrics(
        &self,
        _request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        let text = match &self.state.metrics {
            Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
            None => String::new(),
        };
        Ok(Response::new(GetMetricsResponse {
            prometheus_text: text,
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let (circuit, path) = circuit_params(&request.into_inner().circuit_id)?;
        if !path.is_file() {
            return Err(Status::failed_precondition(format!(
                "{} is not there (hint: curio fetch-params, or lotus fetch-params)",
                path.display()
            )));
        }
        let state = &self.state;
        if state.loaded_params().contains_key(&path) && state.requests.resident().contains(&path) {
            return Ok(Response::new(PreloadSrsResponse {
                already_loaded: true,
                load_time_ms: 0,
            }));
        }
        state.forget_params(&path);
        state.requests.preload(circuit);
        let asked = Instant::now();
        let mut changes = state.subscribe();
        loop {
            changes.borrow_and_update();
            if let Some(ms) = state.loaded_params().get(&path) {
                return Ok(Response::new(PreloadSrsResponse {
                    already_loaded: false,
                    load_time_ms: *ms as u64,
                }));
            }
            // The run takes the note within a moment; a set it did not take is not loading.
            if asked.elapsed() > Duration::from_secs(3)
                && !state.requests.resident().contains(&path)
            {
                return Err(Status::resource_exhausted(format!(
                    "{} was not loaded: the run's memory budget has no room for it now (its first job loads it; the server's log says more)",
                    path.display()
                )));
            }
            if state.is_closed() {
                return Err(Status::unavailable("cuzk serve is stopping"));
            }
            let _ = tokio::time::timeout(LOOK_AGAIN, changes.changed()).await;
        }
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let (circuit, path) = circuit_params(&request.into_inner().circuit_id)?;
        let (answer, answered) = crossbeam_channel::bounded(1);
        self.state.requests.evict(circuit, answer);
        let was_loaded = tokio::task::spawn_blocking(move || {
            answered
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or(false)
        })
        .await
        .unwrap_or(false);
        if was_loaded {
            self.state.forget_params(&path);
        }
        Ok(Response::new(EvictSrsResponse {
            was_loaded,
            freed_bytes: if was_loaded {
                std::fs::metadata(&path).map_or(0, |m| m.len())
            } else {
                0
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_ids_read_and_write_as_curio_names_them() {
        for circuit in known_circuits() {
            assert_eq!(parse_circuit_id(&circuit_name(circuit)).unwrap(), circuit);
        }
        assert_eq!(
            parse_circuit_id("porep-32g").unwrap(),
            CircuitId::seal(32 << 30)
        );
        assert_eq!(
            parse_circuit_id("snap-2KiB").unwrap(),
            CircuitId::update(2048)
        );
        assert!(parse_circuit_id("wpost-32g")
            .unwrap_err()
            .message()
            .contains("PoSt"));
        assert!(parse_circuit_id("porep-3g").is_err());
        assert!(parse_circuit_id("porep").is_err());
    }

    #[test]
    fn job_ids_are_names_never_paths() {
        assert!(check_job_id("s-t01000-3.porep-1000-3").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "x y"] {
            assert!(check_job_id(bad).is_err(), "{bad:?}");
        }
    }
}
