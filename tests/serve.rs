//! `cuzk serve` through the real binary, with a gRPC client built from the same
//! `proto/cuzk/v1/proving.proto` Curio's client is: real 2KiB C1 outputs and a real update
//! input proved and checked with filecoin-proofs, bad requests answered FAILED with the spool
//! left clean, withdrawals (claimed and queued), idempotent resubmission, status while work
//! is queued, priority order, Curio's `--config` invocation, a kill -9 with three
//! requests accepted that a restart (on the same unix socket) proves, a finished request
//! answered from the outbox after a restart, files dropped into the inbox proved beside the
//! requests, and parameter sets preloaded and evicted as GetStatus lists them.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    fixture, names, read_update, require_params, require_update_params, update_fixture,
    verifies_for_sector, verifies_update,
};
use cuzk::event::EventName;
use cuzk::serve::proto::await_proof_response::Status as AwaitStatus;
use cuzk::serve::proto::proving_engine_client::ProvingEngineClient;
use cuzk::serve::proto::*;
use tonic::transport::{Channel, Endpoint};

/// A running `cuzk serve` with its stderr in a file, shown when a test fails.
struct Server {
    child: Child,
    log: PathBuf,
}

impl Server {
    fn start(spool: &Path, listen: &str, envs: &[(&str, &str)]) -> Server {
        Server::start_with(spool, listen, envs, &[])
    }

    fn start_with(spool: &Path, listen: &str, envs: &[(&str, &str)], flags: &[&str]) -> Server {
        let log = spool.with_extension(format!("serve-{}.log", std::process::id()));
        // A restart appends to the same log: only what this server writes counts.
        let logged_before = fs::metadata(&log).map_or(0, |m| m.len() as usize);
        let stderr = fs::File::options()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args([
                "serve",
                "--listen",
                listen,
                "--settle-secs",
                "0",
                "--poll-secs",
                "0.2",
            ])
            .args(flags)
            .arg(spool)
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("starting cuzk serve");
        let mut server = Server { child, log };
        server.wait_until_serving(logged_before);
        server
    }

    /// Returns once this server says it serves (its spool made, its address bound), so that
    /// a client never reaches another test's server that happens to hold the same port.
    fn wait_until_serving(&mut self, logged_before: usize) {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let log = self.log();
            if log
                .get(logged_before..)
                .unwrap_or("")
                .contains("serving cuzk.v1.ProvingEngine on")
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("cuzk serve exited ({status}) before serving:\n{log}");
            }
            assert!(Instant::now() < deadline, "cuzk serve never served:\n{log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then its exit code.
    fn stop(mut self) -> Option<i32> {
        // SAFETY: kill with a pid of our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("cuzk serve did not stop after SIGTERM:\n{}", self.log());
    }

    fn kill_9(mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- cuzk serve's stderr ---\n{}", self.log());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free TCP port on loopback, for the server to bind.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A client of the server at `listen`, once it answers.
async fn connect(listen: &str) -> ProvingEngineClient<Channel> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let channel = match listen.strip_prefix("unix://") {
            Some(path) => {
                let path = PathBuf::from(path);
                Endpoint::from_static("http://cuzk.invalid")
                    .connect_with_connector(tower::service_fn(move |_| {
                        let path = path.clone();
                        async move {
                            let stream = tokio::net::UnixStream::connect(path).await?;
                            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                        }
                    }))
                    .await
            }
            None => {
                Endpoint::from_shared(format!("http://{listen}"))
                    .expect("endpoint")
                    .connect()
                    .await
            }
        };
        match channel {
            Ok(channel) => return ProvingEngineClient::new(channel),
            Err(err) if Instant::now() < deadline => {
                let _ = err;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => panic!("cuzk serve at {listen} never answered: {err}"),
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

/// A PoRep request for the C1 fixture `name`, as Curio's `PoRepSnark` sends it.
fn porep_request(name: &str, request_id: &str) -> SubmitProofRequest {
    let id = cuzk::c1::identity_from_file_name(Path::new(name)).expect("a lotus sector name");
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        // StackedDrg2KiBV1_1, as the fixtures were sealed.
        registered_proof: 5,
        priority: Priority::Normal as i32,
        vanilla_proof: fs::read(fixture(name)).expect("fixture"),
        sector_number: id.sector_num,
        miner_id: id.miner_id,
        ..SubmitProofRequest::default()
    }
}

/// The update request for the update fixture `name`, commitments as raw bytes.
fn update_request(name: &str, request_id: &str) -> SubmitProofRequest {
    let update = read_update(&update_fixture(name));
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: 0,
        vanilla_proofs: update.vanilla_proofs.clone(),
        comm_r_old: update.comm_r_old.to_vec(),
        comm_r_new: update.comm_r_new.to_vec(),
        comm_d_new: update.comm_d_new.to_vec(),
        miner_id: 1000,
        sector_number: 11,
        ..SubmitProofRequest::default()
    }
}

async fn prove(
    client: &mut ProvingEngineClient<Channel>,
    submit: SubmitProofRequest,
) -> AwaitProofResponse {
    client
        .prove(ProveRequest {
            submit: Some(submit),
        })
        .await
        .expect("Prove answers")
        .into_inner()
        .result
        .expect("a result")
}

async fn await_job(
    client: &mut ProvingEngineClient<Channel>,
    job: &str,
    timeout_ms: u64,
) -> AwaitProofResponse {
    client
        .await_proof(AwaitProofRequest {
            job_id: job.into(),
            timeout_ms,
        })
        .await
        .expect("AwaitProof answers")
        .into_inner()
}

fn status_of(answer: &AwaitProofResponse) -> AwaitStatus {
    AwaitStatus::try_from(answer.status).expect("a known status")
}

/// The input files anywhere in the spool but the outbox: inbox, work/ and its owners.
fn live_inputs(spool: &Path) -> Vec<String> {
    common::c1_locations(spool)
        .into_iter()
        .filter(|(_, place)| place == "inbox" || place == "work")
        .map(|(name, place)| format!("{place}/{name}"))
        .collect()
}

#[test]
fn curio_requests_are_proved_verified_and_bad_ones_answered_with_their_reason() {
    require_params();
    require_update_params();
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let listen = format!("127.0.0.1:{}", free_port());
    // Each prover's first call waits 15 s, so the requests after the first are seen queued
    // and claimed, not proved, however slow a loaded machine is.
    let server = Server::start(
        &spool,
        &listen,
        &[("CUZK_TEST_DEVICE_FAULTS", "stall=1:15")],
    );
    let rt = runtime();
    rt.block_on(async {
        let mut client = connect(&listen).await;
        let first = {
            let mut client = client.clone();
            tokio::spawn(async move {
                prove(
                    &mut client,
                    porep_request("s-t01000-1.json", "porep-1000-1"),
                )
                .await
            })
        };
        let job1 = "s-t01000-1.porep-1000-1";
        // Accepted means written: wait for it to be in the spool.
        let deadline = Instant::now() + Duration::from_secs(60);
        while live_inputs(&spool).is_empty() {
            assert!(
                Instant::now() < deadline,
                "the first request never reached the spool"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let second = client
            .submit_proof(porep_request("s-t01000-2.json", "porep-1000-2"))
            .await
            .expect("SubmitProof accepts")
            .into_inner();
        assert_eq!(second.job_id, "s-t01000-2.porep-1000-2");

        // Both are in the spool and neither is proved: GetStatus counts them.
        let status = client
            .get_status(GetStatusRequest {})
            .await
            .expect("GetStatus")
            .into_inner();
        let porep = status
            .queues
            .iter()
            .find(|q| q.proof_kind == "POREP_SEAL_COMMIT")
            .expect("a PoRep queue");
        assert_eq!(porep.pending + porep.in_progress, 2, "{status:?}");
        // Curio sums every queue against MaxPending.
        let total: u32 = status
            .queues
            .iter()
            .map(|q| q.pending + q.in_progress)
            .sum();
        assert_eq!(total, 2);

        // A wait that runs out says so, and the job goes on.
        let waited = await_job(&mut client, job1, 200).await;
        assert_eq!(status_of(&waited), AwaitStatus::Timeout);

        // The second is withdrawn once claimed (the provers' first calls are held): it stops
        // before its proof.
        // Claimed once the first's partition has started, which on a loaded machine may take
        // a while (its parameters load first); the held calls keep both from being proved.
        let claimed = format!("work/{}.json", second.job_id);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !live_inputs(&spool).contains(&claimed) {
            assert!(
                Instant::now() < deadline,
                "the second request was never claimed: {:?}",
                live_inputs(&spool)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let cancelled = client
            .cancel_proof(CancelProofRequest {
                job_id: second.job_id.clone(),
            })
            .await
            .expect("CancelProof")
            .into_inner();
        assert!(cancelled.was_running, "it was claimed");
        let answer = await_job(&mut client, &second.job_id, 0).await;
        assert_eq!(status_of(&answer), AwaitStatus::Cancelled, "{answer:?}");
        assert!(answer.proof.is_empty());

        // Bad requests are answered at once, with what is wrong, and written nowhere.
        let mut garbage = porep_request("s-t01000-1.json", "porep-garbage");
        garbage.vanilla_proof = b"{\"not\": \"a C1 output\"".to_vec();
        let mut wrong_proof = porep_request("s-t01000-1.json", "porep-wrong-proof");
        wrong_proof.registered_proof = 8;
        let mut post = porep_request("s-t01000-1.json", "wdpost-1000-0");
        post.proof_kind = ProofKind::WindowPostPartition as i32;
        let mut other_sector = porep_request("s-t01000-1.json", "porep-1000-9");
        other_sector.sector_number = 9;
        let mut other_miner = porep_request("s-t01000-1.json", "porep-2000-1");
        other_miner.miner_id = 2000;
        let mut other_update = update_request("s-t01000-11.json", "snap-other");
        other_update.comm_r_new = read_update(&update_fixture("s-t02000-12.json"))
            .comm_r_new
            .to_vec();
        for (bad, says) in [
            (garbage, "parse"),
            (wrong_proof, "registered_proof 8"),
            (post, "PoSt stays in Curio"),
            (other_sector, "sector 9"),
            (other_miner, "replica id"),
            (other_update, "bind"),
        ] {
            let id = bad.request_id.clone();
            let answer = prove(&mut client, bad).await;
            assert_eq!(status_of(&answer), AwaitStatus::Failed, "{id}: {answer:?}");
            assert!(
                answer.error_message.contains(says),
                "{id}: {:?} does not say {says:?}",
                answer.error_message
            );
        }

        // The good request beside them was proved, and the proof is the sector's.
        let answer = first.await.expect("the first Prove");
        assert_eq!(status_of(&answer), AwaitStatus::Completed, "{answer:?}");
        assert!(verifies_for_sector(
            &fixture("s-t01000-1.json"),
            &answer.proof,
            0
        ));
        assert!(answer.total_ms >= answer.gpu_compute_ms);
        assert!(answer.total_ms > 0);

        // A resubmission is the same job and its proof, also from the outbox.
        let again = prove(
            &mut client,
            porep_request("s-t01000-1.json", "porep-1000-1"),
        )
        .await;
        assert_eq!(again.job_id, job1);
        assert_eq!(again.proof, answer.proof);

        // A SnapDeals update, as Curio's UpdateSnark sends it.
        let update = prove(
            &mut client,
            update_request("s-t01000-11.json", "snap-1000-11"),
        )
        .await;
        assert_eq!(status_of(&update), AwaitStatus::Completed, "{update:?}");
        assert!(verifies_update(
            &update_fixture("s-t01000-11.json"),
            &update.proof
        ));

        let metrics = client
            .get_metrics(GetMetricsRequest {})
            .await
            .expect("GetMetrics")
            .into_inner()
            .prometheus_text;
        assert!(metrics.contains("cuzk_"), "{metrics}");

        // Unknown and unsafe job ids.
        let unknown = client
            .await_proof(AwaitProofRequest {
                job_id: "s-t01000-5.never".into(),
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(unknown.code(), tonic::Code::NotFound);
        let unsafe_id = client
            .await_proof(AwaitProofRequest {
                job_id: "../outbox/x".into(),
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(unsafe_id.code(), tonic::Code::InvalidArgument);
    });
    drop(rt);
    assert_eq!(server.stop(), Some(0));

    // The spool: nothing left in flight, the two proofs, the withdrawn file failed with its
    // record, and no trace of the bad requests.
    assert_eq!(live_inputs(&spool), Vec::<String>::new());
    let outbox = names(&spool.join("outbox"));
    for job in ["s-t01000-1.porep-1000-1", "s-t01000-11.snap-1000-11"] {
        assert!(outbox.contains(&format!("{job}.proof")), "{outbox:?}");
    }
    assert_eq!(
        names(&spool.join("failed")),
        [
            "s-t01000-2.porep-1000-2.error.json",
            "s-t01000-2.porep-1000-2.json"
        ]
    );
    let record =
        fs::read_to_string(spool.join("failed/s-t01000-2.porep-1000-2.error.json")).unwrap();
    assert!(
        record.contains("\"stage\": \"withdrawn\"") || record.contains("\"stage\":\"withdrawn\""),
        "{record}"
    );
}

#[test]
fn requests_accepted_before_a_kill_9_are_proved_after_the_restart() {
    require_params();
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let socket = dir.path().join("cuzk.sock");
    let listen = format!("unix://{}", socket.display());
    let requests = [
        ("s-t01000-1.json", "porep-1000-1"),
        ("s-t01000-2.json", "porep-1000-2"),
        ("s-t02000-7.json", "porep-2000-7"),
    ];
    // Nothing is proved before the kill: the first prover call waits a minute.
    let server = Server::start(
        &spool,
        &listen,
        &[("CUZK_TEST_DEVICE_FAULTS", "stall=1:60")],
    );
    let rt = runtime();
    let jobs: Vec<String> = rt.block_on(async {
        let mut client = connect(&listen).await;
        let mut jobs = Vec::new();
        for (name, id) in requests {
            let accepted = client
                .submit_proof(porep_request(name, id))
                .await
                .expect("SubmitProof accepts")
                .into_inner();
            jobs.push(accepted.job_id);
        }
        jobs
    });
    assert_eq!(live_inputs(&spool).len(), 3, "accepted means written");
    server.kill_9();
    assert!(socket.exists(), "a killed server leaves its socket file");

    let server = Server::start(&spool, &listen, &[]);
    rt.block_on(async {
        let mut client = connect(&listen).await;
        for ((name, _), job) in requests.iter().zip(&jobs) {
            let answer = await_job(&mut client, job, 0).await;
            assert_eq!(
                status_of(&answer),
                AwaitStatus::Completed,
                "{job}: {answer:?}"
            );
            assert!(
                verifies_for_sector(&fixture(name), &answer.proof, 0),
                "{job}"
            );
        }
    });
    drop(rt);
    assert_eq!(server.stop(), Some(0));
    assert!(!socket.exists(), "the socket goes with the server");
    assert_eq!(live_inputs(&spool), Vec::<String>::new());
    assert!(names(&spool.join("failed")).is_empty());
}

#[test]
fn curios_engine_invocation_serves_with_its_config() {
    require_params();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("engine.sock");
    let spool = dir.path().join("zk-spool");
    let params = std::env::var("FIL_PROOFS_PARAMETER_CACHE")
        .unwrap_or_else(|_| "/var/tmp/filecoin-proof-parameters".into());
    let config = dir.path().join("cuzk.toml");
    fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nstatus_listen = \"0.0.0.0:9821\"\n\n[srs]\nparam_cache = \"{params}\"\n\n[gpus]\ngpu_workers_per_device = 2\n\n[cuzk]\nspool = \"{}\"\n",
            socket.display(),
            spool.display()
        ),
    )
    .unwrap();
    let log = dir.path().join("engine.log");
    let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .arg("--config")
        .arg(&config)
        // Only the config's param_cache can find the parameters.
        .env(
            "FIL_PROOFS_PARAMETER_CACHE",
            dir.path().join("no-params-here"),
        )
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .expect("starting cuzk --config");
    let server = Server { child, log };
    let listen = format!("unix://{}", socket.display());
    let rt = runtime();
    rt.block_on(async {
        let mut client = connect(&listen).await;
        let answer = prove(
            &mut client,
            porep_request("s-t02000-7.json", "porep-2000-7"),
        )
        .await;
        assert_eq!(status_of(&answer), AwaitStatus::Completed, "{answer:?}");
        assert!(verifies_for_sector(
            &fixture("s-t02000-7.json"),
            &answer.proof,
            0
        ));
    });
    drop(rt);
    let text = server.log();
    assert!(
        text.contains("not used by cuzk")
            && text.contains("daemon.status_listen")
            && text.contains("gpus.gpu_workers_per_device"),
        "the ignored keys are named once:\n{text}"
    );
    assert_eq!(server.stop(), Some(0));
    assert!(names(&spool.join("outbox")).contains(&"s-t02000-7.porep-2000-7.proof".to_owned()));
}

#[test]
fn priority_orders_the_queue_and_a_queued_request_is_withdrawn_unclaimed() {
    require_params();
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let listen = format!("127.0.0.1:{}", free_port());
    // Nothing is proved: the provers' first calls wait ten minutes, and one synthesis slot
    // and a queue of one hold further claims back, so later requests wait in the inbox.
    let server = Server::start_with(
        &spool,
        &listen,
        &[("CUZK_TEST_DEVICE_FAULTS", "stall=1:600")],
        &["--synth-jobs", "1", "--queue-depth", "1"],
    );
    let rt = runtime();
    rt.block_on(async {
        let client = connect(&listen).await;
        let submit = |name: &'static str, id: String, priority: Priority| {
            let mut client = client.clone();
            async move {
                let mut request = porep_request(name, &id);
                request.priority = priority as i32;
                client
                    .submit_proof(request)
                    .await
                    .expect("SubmitProof accepts")
                    .into_inner()
            }
        };
        // Enough to fill the provers, the queue, the slot and the admitted job.
        for n in 0..5 {
            submit("s-t01000-1.json", format!("fill-{n}"), Priority::Normal).await;
        }
        // The pipeline has taken what it holds once the inbox stops draining.
        let mut last = usize::MAX;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let queued = live_inputs(&spool)
                .iter()
                .filter(|p| p.starts_with("inbox/"))
                .count();
            if queued == last {
                break;
            }
            last = queued;
        }
        let normal = submit("s-t01000-1.json", "normal".into(), Priority::Normal).await;
        let low = submit("s-t01000-1.json", "low".into(), Priority::Low).await;
        let high = submit("s-t01000-1.json", "high".into(), Priority::High).await;
        let critical = submit("s-t01000-1.json", "critical".into(), Priority::Critical).await;
        // What each answer says is ahead of it, and the inbox's own order (oldest first,
        // the order the spool claims in): the highest priority first, whenever it came.
        assert_eq!(
            low.queue_position,
            normal.queue_position + 1,
            "{low:?} {normal:?}"
        );
        assert_eq!((high.queue_position, critical.queue_position), (0, 0));
        let mut queued: Vec<(std::time::SystemTime, String)> = names(&spool.join("inbox"))
            .into_iter()
            .map(|name| {
                let time = fs::metadata(spool.join("inbox").join(&name))
                    .and_then(|m| m.modified())
                    .expect("mtime");
                (time, name)
            })
            .collect();
        queued.sort();
        let order: Vec<String> = queued
            .into_iter()
            .map(|(_, name)| name)
            .filter(|name| !name.contains(".fill-"))
            .collect();
        let file = |job: &str| format!("{job}.json");
        assert_eq!(
            order,
            [
                file(&critical.job_id),
                file(&high.job_id),
                file(&normal.job_id),
                file(&low.job_id)
            ],
            "the inbox's order"
        );

        // A queued request is withdrawn without being claimed, and says so.
        let mut client = client.clone();
        let cancelled = client
            .cancel_proof(CancelProofRequest {
                job_id: normal.job_id.clone(),
            })
            .await
            .expect("CancelProof")
            .into_inner();
        assert!(!cancelled.was_running, "it was still in the inbox");
        let answer = await_job(&mut client, &normal.job_id, 0).await;
        assert_eq!(status_of(&answer), AwaitStatus::Cancelled, "{answer:?}");
        assert!(spool.join("failed").join(file(&normal.job_id)).is_file());
        assert!(!spool.join("inbox").join(file(&normal.job_id)).exists());
    });
    drop(rt);
    server.kill_9();
}

/// A provider may feed the spool both ways: files that cron or rsync drop straight into
/// the inbox are proved by `cuzk serve` beside Curio's requests, each proof checked and
/// written to the outbox as `prove-dir` writes it, and the dropped file's job answers
/// AwaitProof by its name.
#[test]
fn a_file_dropped_into_the_inbox_is_proved_beside_a_grpc_request() {
    require_params();
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let listen = format!("127.0.0.1:{}", free_port());
    let server = Server::start(&spool, &listen, &[]);
    let dropped_job = "s-t01000-2";
    let rt = runtime();
    let (requested, dropped) = rt.block_on(async {
        let mut client = connect(&listen).await;
        let requested = {
            let mut client = client.clone();
            tokio::spawn(async move {
                prove(
                    &mut client,
                    porep_request("s-t01000-1.json", "porep-1000-1"),
                )
                .await
            })
        };
        // As rsync delivers: a hidden temporary name, renamed into place once whole.
        let inbox = spool.join("inbox");
        let temporary = inbox.join(".s-t01000-2.json.Xq3f9a");
        fs::copy(fixture("s-t01000-2.json"), &temporary).expect("copying into the inbox");
        fs::rename(&temporary, inbox.join("s-t01000-2.json")).expect("renaming into place");

        let requested = requested.await.expect("the Prove");
        // Bounded: a file never claimed answers TIMEOUT and fails the assertion below.
        let dropped = await_job(&mut client, dropped_job, 600_000).await;
        (requested, dropped)
    });
    drop(rt);
    assert_eq!(
        status_of(&requested),
        AwaitStatus::Completed,
        "the gRPC request: {requested:?}"
    );
    assert!(
        verifies_for_sector(&fixture("s-t01000-1.json"), &requested.proof, 0),
        "the requested proof verifies"
    );
    assert_eq!(
        status_of(&dropped),
        AwaitStatus::Completed,
        "the dropped file: {dropped:?}"
    );
    assert_eq!(server.stop(), Some(0));

    let outbox = spool.join("outbox");
    let proof = fs::read(outbox.join(format!("{dropped_job}.proof"))).unwrap_or_else(|err| {
        panic!(
            "the dropped file's proof in the outbox ({err}): {:?}",
            names(&outbox)
        )
    });
    assert!(
        verifies_for_sector(&fixture("s-t01000-2.json"), &proof, 0),
        "the dropped file's proof verifies"
    );
    assert_eq!(
        proof, dropped.proof,
        "AwaitProof answers the outbox's proof"
    );
    assert!(
        outbox.join(format!("{dropped_job}.json")).is_file(),
        "its record beside the proof: {:?}",
        names(&outbox)
    );
    assert!(
        spool.join("done/s-t01000-2.json").is_file(),
        "the dropped file is kept in done/: {:?}",
        names(&spool.join("done"))
    );
    assert_eq!(live_inputs(&spool), Vec::<String>::new());
    assert!(names(&spool.join("failed")).is_empty());
}

/// Curio resubmits a request id after cuzk restarts (its task was retried, or it lost the
/// answer): a request proved before the restart is answered COMPLETED by the next server
/// with the same proof bytes, read from the outbox, and the sector is not proved again.
#[test]
fn a_request_proved_before_a_restart_is_answered_from_the_outbox_not_proved_again() {
    require_params();
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let socket = dir.path().join("cuzk.sock");
    let listen = format!("unix://{}", socket.display());
    let job = "s-t01000-1.porep-1000-1";
    let rt = runtime();

    let server = Server::start(&spool, &listen, &[]);
    let first = rt.block_on(async {
        let mut client = connect(&listen).await;
        prove(
            &mut client,
            porep_request("s-t01000-1.json", "porep-1000-1"),
        )
        .await
    });
    assert_eq!(status_of(&first), AwaitStatus::Completed, "{first:?}");
    assert!(verifies_for_sector(
        &fixture("s-t01000-1.json"),
        &first.proof,
        0
    ));
    assert_eq!(server.stop(), Some(0));

    let server = Server::start(&spool, &listen, &[]);
    let (again, status) = rt.block_on(async {
        let mut client = connect(&listen).await;
        let again = prove(
            &mut client,
            porep_request("s-t01000-1.json", "porep-1000-1"),
        )
        .await;
        let status = client
            .get_status(GetStatusRequest {})
            .await
            .expect("GetStatus")
            .into_inner();
        (again, status)
    });
    drop(rt);
    assert_eq!(status_of(&again), AwaitStatus::Completed, "{again:?}");
    assert_eq!(again.job_id, job, "the same job");
    assert_eq!(
        again.proof, first.proof,
        "the proof proved before the restart"
    );
    assert_eq!(
        again.gpu_compute_ms, 0,
        "not proved by this server: {again:?}"
    );
    assert_eq!(
        status.total_proofs_completed, 0,
        "this server wrote no proof: {status:?}"
    );
    assert_eq!(
        status
            .queues
            .iter()
            .map(|q| q.pending + q.in_progress)
            .sum::<u32>(),
        0,
        "nothing was queued again: {status:?}"
    );
    assert_eq!(server.stop(), Some(0));

    // The timeline holds both servers' runs: the job's rows are all the first's.
    let timeline =
        cuzk::timeline::read_timeline(&spool.join("timeline.csv")).expect("the spool's timeline");
    let runs: Vec<&str> = timeline
        .rows
        .iter()
        .filter(|row| row.event == EventName::RunStart.as_str())
        .map(|row| row.run_id.as_str())
        .collect();
    assert_eq!(runs.len(), 2, "one run per server: {runs:?}");
    let events_in = |run: &str| -> Vec<&str> {
        timeline
            .rows
            .iter()
            .filter(|row| row.run_id == run && row.job == job)
            .map(|row| row.event.as_str())
            .collect()
    };
    let proved = events_in(runs[0]);
    for event in [EventName::Claim, EventName::GpuStart, EventName::Done] {
        assert!(
            proved.contains(&event.as_str()),
            "the first server proved it ({event:?}): {proved:?}"
        );
    }
    assert_eq!(
        events_in(runs[1]),
        Vec::<&str>::new(),
        "the second server neither claimed nor proved it"
    );
    assert_eq!(live_inputs(&spool), Vec::<String>::new());
}

/// Curio's PreloadSRS warms a parameter set before its jobs come and EvictSRS gives its
/// memory back; GetStatus's loaded_srs is how a provider sees which sets are held, so it
/// lists a preloaded set (HOT, with its file's size) and no longer lists an evicted one.
/// A CPU-only build reports no GPUs.
#[test]
fn preloaded_parameters_are_listed_by_get_status_until_evicted() {
    require_params();
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let listen = format!("127.0.0.1:{}", free_port());
    let server = Server::start(&spool, &listen, &[]);
    let (params, _) = cuzk::porep::param_paths(2048).expect("param paths");
    let params_bytes = fs::metadata(&params).expect("the 2KiB parameters").len();
    let circuit = "porep-2k";
    let rt = runtime();
    rt.block_on(async {
        let client = connect(&listen).await;
        let status = |mut client: ProvingEngineClient<Channel>| async move {
            client
                .get_status(GetStatusRequest {})
                .await
                .expect("GetStatus")
                .into_inner()
        };
        let listed = |status: &GetStatusResponse| -> Vec<SrsStatus> {
            status
                .loaded_srs
                .iter()
                .filter(|srs| srs.circuit_id == circuit)
                .cloned()
                .collect()
        };

        let preload = |mut client: ProvingEngineClient<Channel>| async move {
            client
                .preload_srs(PreloadSrsRequest {
                    circuit_id: circuit.into(),
                })
                .await
                .expect("PreloadSRS")
                .into_inner()
        };
        let evict = |mut client: ProvingEngineClient<Channel>| async move {
            client
                .evict_srs(EvictSrsRequest {
                    circuit_id: circuit.into(),
                })
                .await
                .expect("EvictSRS")
                .into_inner()
        };

        let before = status(client.clone()).await;
        assert_eq!(listed(&before), [], "nothing loaded yet: {before:?}");
        if !cfg!(feature = "cuda") {
            assert_eq!(before.gpus, [], "a CPU-only build has no GPU: {before:?}");
        }

        let preloaded = preload(client.clone()).await;
        assert!(!preloaded.already_loaded, "{preloaded:?}");
        let loaded = status(client.clone()).await;
        assert_eq!(
            listed(&loaded),
            [SrsStatus {
                circuit_id: circuit.into(),
                tier: srs_status::Tier::Hot as i32,
                size_bytes: params_bytes,
                ref_count: 0,
            }],
            "the preloaded set: {loaded:?}"
        );
        let again = preload(client.clone()).await;
        assert!(again.already_loaded, "{again:?}");

        let evicted = evict(client.clone()).await;
        assert!(evicted.was_loaded, "{evicted:?}");
        assert_eq!(evicted.freed_bytes, params_bytes, "{evicted:?}");
        let after = status(client.clone()).await;
        assert_eq!(listed(&after), [], "the evicted set is gone: {after:?}");
        if !cfg!(feature = "cuda") {
            assert_eq!(after.gpus, [], "a CPU-only build has no GPU: {after:?}");
        }
        let evicted_again = evict(client.clone()).await;
        assert!(!evicted_again.was_loaded, "{evicted_again:?}");
    });
    drop(rt);
    assert_eq!(server.stop(), Some(0));
}
