//! `cuzk serve`: the `cuzk.v1.ProvingEngine` gRPC API that Curio calls when its config says
//! `[Cuzk] Address = "127.0.0.1:9820"`, served over a spool by the same pipeline `prove-dir`
//! runs.
//!
//! # Design
//!
//! The spool is the only record. An accepted request is a file in the inbox, written whole
//! ([`crate::atomic_file`]) before `SubmitProof` or `Prove` says it was accepted, so a
//! server killed at any moment loses nothing it accepted: the next one's run claims the file
//! as it claims a file dropped by cron, and `AwaitProof` finds its proof in the outbox. A
//! job's name comes from its request ([`request`]), so a resubmission finds its job without
//! a table, and every answer reads where the job's file is ([`jobs`]).
//!
//! One pipeline run serves everything (the memory budget, the provers, verification before a
//! proof is written, the timeline and its waterfall), steered by its
//! [`RunRequests`](crate::pipeline::RunRequests) for preloads, evictions and withdrawals. Its
//! events reach [`state::State`], which only keeps what they say for answers (timings,
//! counts, parameter sets loaded) and wakes the waiting handlers; files that cron drops into
//! the same inbox are proved beside the requests.
//!
//! A request is parsed and bound before anything is written, exactly as the run will bind it
//! ([`crate::pipeline::bind_input`]): garbage, another sector's commitments, a wrong proof
//! number or parameters that are not there answer `FAILED` with the reason and leave the
//! spool untouched. A job id is a name the server made; no request can name a path.
//!
//! The gRPC side runs on a small tokio runtime of its own; the pipeline keeps its threads.
//! The first SIGINT or SIGTERM stops the run's claiming, lets the work in flight finish, then
//! the server stops: waiting calls answer `UNAVAILABLE`, and their jobs stay in the spool for
//! the next start.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use crossbeam_channel::unbounded;

use crate::event::Event;
use crate::pipeline::{self, IntakeRules, RunControl, RunSettings};

pub mod config;
mod jobs;
mod listen;
pub mod proto;
mod request;
mod service;
mod state;

pub use listen::{ListenAddr, DEFAULT_LISTEN};
pub use request::PRIORITY_STEP;

/// The largest message either way: what Curio's client allows itself (256 MiB).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// How `cuzk serve` runs.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// Where it listens.
    pub listen: ListenAddr,
    /// The run over the spool (watching, never `--once`).
    pub run: RunSettings,
}

/// Serves until a stop signal, or until the run cannot go on (an error).
pub fn serve(settings: ServeSettings) -> Result<u8> {
    let run = RunSettings {
        once: false,
        ..settings.run
    };
    for dir in [&run.layout.inbox, &run.layout.outbox, &run.layout.failed] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let state = Arc::new(state::State::new(
        run.layout.clone(),
        IntakeRules::of(&run),
        run.gen_test_params,
        run.settle,
        pipeline::RunRequests::default(),
        run.metrics.as_ref().map(|m| m.path.clone()),
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("grpc")
        .enable_all()
        .build()
        .context("starting the gRPC runtime")?;
    // Bound before the run starts: an address in use stops here, before anything is claimed.
    let listener = runtime.block_on(Listener::bind(&settings.listen))?;
    if let Some(note) = settings.listen.beyond_host_note() {
        log::warn!("{note}");
    }
    log::info!(
        "serving cuzk.v1.ProvingEngine on {} over the spool {}",
        settings.listen,
        crate::spool::spool_dir_of(&run.layout.inbox).display()
    );

    let (observer, events) = unbounded::<Event>();
    let control = RunControl {
        observer: Some(observer),
        requests: state.requests.clone(),
        ..RunControl::default()
    };
    let observing = {
        let state = state.clone();
        std::thread::spawn(move || {
            for event in events {
                state.observe(&event);
            }
        })
    };
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
    let pipeline_thread = std::thread::Builder::new()
        .name("pipeline".into())
        .spawn(move || {
            let result = pipeline::run_with(&run, &control);
            drop(control);
            let _ = ended_tx.send(());
            result
        })
        .context("starting the pipeline thread")?;

    let engine = service::Engine {
        state: state.clone(),
    };
    let shutdown = {
        let state = state.clone();
        async move {
            let _ = ended_rx.await;
            state.close();
        }
    };
    let served = runtime.block_on(listener.serve(engine, shutdown));
    state.close();
    let result = pipeline_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the pipeline thread panicked"))?;
    let _ = observing.join();
    runtime.shutdown_timeout(Duration::from_secs(5));
    served?;
    result.map(|_| 0)
}

/// A bound listener of either kind.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener, PathBuf),
}

impl Listener {
    async fn bind(addr: &ListenAddr) -> Result<Listener> {
        match addr {
            ListenAddr::Tcp(socket) => tokio::net::TcpListener::bind(socket)
                .await
                .map(Listener::Tcp)
                .with_context(|| format!("listening on {socket} (hint: another cuzk serve or Curio's own engine may hold it; --listen picks another address)")),
            ListenAddr::Unix(path) => {
                remove_stale_socket(path)?;
                tokio::net::UnixListener::bind(path)
                    .map(|l| Listener::Unix(l, path.clone()))
                    .with_context(|| format!("listening on the unix socket {}", path.display()))
            }
        }
    }

    async fn serve(
        self,
        engine: service::Engine,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<()> {
        let service = proto::proving_engine_server::ProvingEngineServer::new(engine)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let router = tonic::transport::Server::builder().add_service(service);
        match self {
            Listener::Tcp(listener) => router
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    shutdown,
                )
                .await
                .context("serving gRPC"),
            Listener::Unix(listener, path) => {
                let served = router
                    .serve_with_incoming_shutdown(
                        tokio_stream::wrappers::UnixListenerStream::new(listener),
                        shutdown,
                    )
                    .await
                    .context("serving gRPC");
                let _ = std::fs::remove_file(&path);
                served
            }
        }
    }
}

/// Removes a socket file nobody listens on (a server killed before it could), and refuses
/// to touch anything else at the path.
fn remove_stale_socket(path: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        anyhow::bail!(
            "{} exists and is not a socket; cuzk serve does not replace it (hint: another path for unix://)",
            path.display()
        );
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        anyhow::bail!(
            "{} is in use: another server listens there (hint: stop it, or another path for unix://)",
            path.display()
        );
    }
    std::fs::remove_file(path)
        .with_context(|| format!("removing the stale socket {}", path.display()))
}
