//! Sends every C1 file of a directory to a running `cuzk serve` as Curio does (one `Prove`
//! call per sector, `porep-<miner>-<sector>`), from several clients at once, checks each
//! proof with filecoin-proofs' `verify_seal`, and prints a table: seconds per proof over the
//! whole load and each request's latency.
//!
//! ```text
//! cargo run --release --example serve_load -- 127.0.0.1:9820 c1-dir 4
//! ```
//!
//! A benchmark, not a test: it says how fast, the test suite says whether right.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cuzk::serve::proto::await_proof_response::Status;
use cuzk::serve::proto::proving_engine_client::ProvingEngineClient;
use cuzk::serve::proto::{Priority, ProofKind, ProveRequest, SubmitProofRequest};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One sector's request, and what is needed to check its proof.
struct Sector {
    path: PathBuf,
    request: SubmitProofRequest,
}

fn sector(path: &Path) -> Result<Sector, Error> {
    let id = cuzk::c1::identity_from_file_name(path)
        .ok_or_else(|| format!("{}: not a lotus sector name", path.display()))?;
    let c1 = cuzk::c1::read_c1_file(path, cuzk::c1::DEFAULT_MAX_C1_BYTES)?;
    let proof = c1.registered_proof();
    let number = (0..20)
        .find(|&n| cuzk::proof_kind::seal_proof_by_number(n) == Some(proof))
        .ok_or_else(|| format!("{proof:?} has no number"))?;
    Ok(Sector {
        path: path.to_owned(),
        request: SubmitProofRequest {
            request_id: format!("porep-{}-{}", id.miner_id, id.sector_num),
            proof_kind: ProofKind::PorepSealCommit as i32,
            sector_size: u64::from(proof.sector_size()),
            registered_proof: number,
            priority: Priority::Normal as i32,
            vanilla_proof: std::fs::read(path)?,
            sector_number: id.sector_num,
            miner_id: id.miner_id,
            ..SubmitProofRequest::default()
        },
    })
}

/// The sector's own check (`verify_seal`), as the spool's finisher makes it.
fn verifies(path: &Path, proof: &[u8]) -> bool {
    let check = || -> Result<bool, Error> {
        let c1 = cuzk::c1::read_c1_file(path, cuzk::c1::DEFAULT_MAX_C1_BYTES)?;
        let id = cuzk::c1::resolve_identity(path, &c1, None)?;
        Ok(cuzk::porep::bind(c1, id)?.verify(proof)?)
    };
    check().unwrap_or(false)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let [_, addr, dir, clients] = args.as_slice() else {
        return Err("usage: serve_load ADDR C1_DIR CLIENTS".into());
    };
    let clients: usize = clients.parse()?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let sectors: Vec<Sector> = paths.iter().map(|p| sector(p)).collect::<Result<_, _>>()?;
    let total = sectors.len();
    let queue = Arc::new(Mutex::new(sectors));
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let queue = queue.clone();
        let mut client = ProvingEngineClient::new(channel.clone());
        tasks.push(tokio::spawn(async move {
            let mut results = Vec::new();
            loop {
                let Some(sector) = queue.lock().unwrap().pop() else {
                    return Ok::<_, Error>(results);
                };
                let sent = Instant::now();
                let answer = client
                    .prove(ProveRequest {
                        submit: Some(sector.request.clone()),
                    })
                    .await?
                    .into_inner()
                    .result
                    .ok_or("no result")?;
                let latency = sent.elapsed().as_secs_f64();
                let is_ok = answer.status == Status::Completed as i32
                    && verifies(&sector.path, &answer.proof);
                if !is_ok {
                    eprintln!(
                        "{}: {:?} {}",
                        sector.request.request_id, answer.status, answer.error_message
                    );
                }
                results.push((latency, is_ok));
            }
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.extend(task.await??);
    }
    let wall = started.elapsed().as_secs_f64();
    let verified = results.iter().filter(|(_, ok)| *ok).count();
    let mut latencies: Vec<f64> = results.iter().map(|(l, _)| *l).collect();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    println!("| requests | clients | verified | wall s | s/proof | latency p50 s | latency p90 s | latency max s |");
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {total} | {clients} | {verified} | {wall:.2} | {:.3} | {:.2} | {:.2} | {:.2} |",
        wall / total as f64,
        at(0.5),
        at(0.9),
        at(1.0)
    );
    if verified != total {
        return Err(format!(
            "{} of {total} requests were not proved and verified",
            total - verified
        )
        .into());
    }
    Ok(())
}
