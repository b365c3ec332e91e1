//! `cuzk bench`: size and time this machine for a sector size before buying or fetching its
//! parameters, on inputs of the real shape made of random data.
//!
//! It prepares a benchmark directory (shape parameters in `params/`, marked as synthetic;
//! a fresh spool per run under `runs/`), writes shape C1 files into the spool's inbox and
//! runs the same pipeline `prove-dir` runs, with `--benchmark`, so the timings, the memory
//! budget and the waterfall are the real ones. Nothing it makes is a proof, and its parameters
//! are never written beside real ones.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use rand::SeedableRng;

use crate::c1::SectorIdentity;
use crate::circuits;
use crate::footprint::Footprint;
use crate::memory::show_bytes;
use crate::params::{self, coset_h, load::ParamsLayout};
use crate::pipeline::{self, RunSettings};
use crate::proof_kind::{CircuitId, ProofKind};
use crate::r1cs::ShapeCounts;
use crate::shape;

/// What `cuzk bench` does.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    /// The sector size to benchmark.
    pub sector_size: u64,
    /// What is proved: C2s, or SnapDeals updates.
    pub kind: ProofKind,
    /// Shape sectors to prove.
    pub sectors: u64,
    /// The benchmark directory.
    pub dir: PathBuf,
    /// The run's settings but for its spool, which the bench makes.
    pub run: RunSettings,
    /// Only write the parameters and the shape C1 files (to time other provers on them).
    pub is_prepare_only: bool,
    /// Prove with H's bases in coset evaluation form beside the parameters (written if
    /// missing); without it, a synthetic one left by an earlier run is removed.
    pub coset_h: bool,
}

/// What a benchmark measured.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// The run's spool directory (its timeline is `timeline.csv` there).
    pub run_dir: PathBuf,
    /// Sectors benchmarked.
    pub sectors: usize,
    /// Seconds from the first claim to the run's end.
    pub elapsed_s: f64,
    /// The sizes the run budgeted with.
    pub footprint: Footprint,
    /// The budget.
    pub budget_bytes: u64,
    /// The process's peak resident memory (`VmHWM`: pages of mapped files included).
    pub peak_rss_bytes: Option<u64>,
    /// The most memory in use on the machine during the run, sampled: what the budget is for.
    pub peak_in_use_bytes: Option<u64>,
    /// The most a synthesized partition held, as measured (0: none synthesized).
    pub largest_partition_bytes: u64,
    /// Partitions whose constraints the prover evaluated (on its GPU, or on the host).
    pub deferred_partitions: usize,
    /// Of those, partitions whose a, b and c the prover's thread made on the host.
    pub evaluated_at_prover: usize,
    /// The most one of those held at its prover.
    pub largest_at_prover_bytes: u64,
    /// Seconds per sector from the first partition's proof to the last proof (the steady
    /// state, see [`crate::report::RunSummary::steady_s_per_proof`]).
    pub steady_s: Option<f64>,
}

/// The default benchmark directory.
pub const DEFAULT_DIR: &str = "/var/tmp/cuzk-bench";

/// Prepares the shape inputs and runs the benchmark. Progress goes to stderr.
pub fn run(plan: &BenchPlan) -> Result<BenchReport> {
    let circuit = CircuitId {
        kind: plan.kind,
        sector_size: plan.sector_size,
    };
    let params_dir = plan.dir.join("params");
    shape::ensure_synthetic_dir(&params_dir)?;
    params::use_params_dir(&params_dir);
    let (params_path, vk_path) = circuits::param_paths(circuit)?;
    let counts = shape_counts(circuit, &params_path)?;
    log::info!(
        "{circuit} partition circuit: {} constraints, {} aux variables, {} inputs",
        counts.constraints,
        counts.aux,
        counts.inputs
    );
    let layout_matches =
        ParamsLayout::read(&params_path).is_ok_and(|layout| layout_fits(&layout, &counts));
    if !layout_matches {
        let started = Instant::now();
        log::info!(
            "writing synthetic {circuit} parameters (valid points, real sizes; proofs made with them never verify) to {}",
            params_path.display()
        );
        let mut rng = rand::rngs::StdRng::from_entropy();
        shape::write_synthetic_params(&params_path, &vk_path, &counts, &mut rng)?;
        let bytes = fs::metadata(&params_path).map_or(0, |m| m.len());
        log::info!(
            "wrote {} in {:.1} s",
            show_bytes(bytes),
            started.elapsed().as_secs_f64()
        );
    }
    set_coset_h(&params_path, &counts, plan.coset_h)?;
    let footprint = Footprint::of_file(&params_path)
        .with_context(|| format!("reading {}", params_path.display()))?;

    let run_dir = plan.dir.join("runs").join(run_stamp());
    let inbox = run_dir.join("inbox");
    fs::create_dir_all(&inbox).with_context(|| format!("creating {}", inbox.display()))?;
    let started = Instant::now();
    let mut rng = rand::rngs::StdRng::from_entropy();
    for sector_num in 1..=plan.sectors {
        let identity = SectorIdentity {
            miner_id: 1000,
            sector_num,
        };
        let bytes = match plan.kind {
            ProofKind::Seal => {
                let output = shape::synthetic_c1(plan.sector_size, identity, &mut rng)?;
                shape::wrap_benchmark_c1(&output, identity)?
            }
            ProofKind::Update => shape::synthetic_update(plan.sector_size, identity, &mut rng)?,
        };
        let path = inbox.join(format!("{identity}.json"));
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    log::info!(
        "wrote {} {circuit} shape input files to {} in {:.1} s",
        plan.sectors,
        inbox.display(),
        started.elapsed().as_secs_f64()
    );

    if plan.is_prepare_only {
        return Ok(BenchReport {
            run_dir,
            sectors: 0,
            elapsed_s: 0.0,
            footprint,
            budget_bytes: 0,
            peak_rss_bytes: None,
            peak_in_use_bytes: None,
            largest_partition_bytes: 0,
            deferred_partitions: 0,
            evaluated_at_prover: 0,
            largest_at_prover_bytes: 0,
            steady_s: None,
        });
    }
    let mut settings = plan.run.clone();
    settings.layout = crate::spool::SpoolLayout::beside(&inbox);
    settings.timeline = run_dir.join("timeline.csv");
    settings.once = true;
    // The shape files were written whole before the run starts: nothing to let settle.
    settings.settle = std::time::Duration::ZERO;
    settings.benchmark = true;
    let budget_bytes = pipeline::budget_bytes(&settings);
    let sampler = InUseSampler::start();
    let summary = pipeline::run(&settings)?;
    let peak_in_use_bytes = sampler.finish();
    Ok(BenchReport {
        run_dir,
        sectors: summary.benchmarked,
        elapsed_s: summary.elapsed_s,
        footprint,
        budget_bytes,
        peak_rss_bytes: peak_rss_bytes(),
        peak_in_use_bytes,
        largest_partition_bytes: summary.largest_partition_bytes,
        deferred_partitions: summary.deferred_partitions,
        evaluated_at_prover: summary.evaluated_at_prover,
        largest_at_prover_bytes: summary.largest_at_prover_bytes,
        steady_s: summary.steady_s_per_proof(),
    })
}

/// The report as JSON for scripts: what [`render`] says, in numbers (bytes and seconds).
pub fn to_json(report: &BenchReport, circuit: CircuitId) -> serde_json::Value {
    let f = &report.footprint;
    let per_sector = (report.sectors > 0).then(|| report.elapsed_s / report.sectors as f64);
    serde_json::json!({
        "circuit": circuit.to_string(),
        "kind": circuit.kind.as_str(),
        "sector_size": circuit.sector_size,
        "sectors": report.sectors,
        "run_dir": report.run_dir.display().to_string(),
        "timeline": report.run_dir.join("timeline.csv").display().to_string(),
        "wall_s": report.elapsed_s,
        "wall_s_per_sector": per_sector,
        "steady_s_per_sector": report.steady_s,
        "budget_bytes": report.budget_bytes,
        "params_bytes": f.params_bytes,
        "partition_bytes": f.partition_bytes,
        "largest_partition_bytes": report.largest_partition_bytes,
        "deferred_partitions": report.deferred_partitions,
        "evaluated_at_prover": report.evaluated_at_prover,
        "largest_at_prover_bytes": report.largest_at_prover_bytes,
        "peak_rss_bytes": report.peak_rss_bytes,
        "peak_in_use_bytes": report.peak_in_use_bytes,
    })
}

/// The sizing table a benchmark prints.
pub fn render(report: &BenchReport, circuit: CircuitId) -> String {
    let (inputs, unit) = match circuit.kind {
        ProofKind::Seal => ("C1 files", "sector"),
        ProofKind::Update => ("update inputs", "update"),
    };
    if report.sectors == 0 {
        return format!(
            "{circuit} benchmark inputs are ready: {inputs} in {}, parameters beside them in ../../params\n",
            report.run_dir.join("inbox").display()
        );
    }
    let f = &report.footprint;
    let per_sector = if report.sectors > 0 {
        format!("{:.1} s", report.elapsed_s / report.sectors as f64)
    } else {
        "-".into()
    };
    let rss = report.peak_rss_bytes.map_or("-".into(), |bytes| {
        format!(
            "{} (this process, VmHWM: mapped file pages included)",
            show_bytes(bytes)
        )
    });
    let in_use = report.peak_in_use_bytes.map_or("-".into(), |bytes| {
        format!("{} (the whole machine, sampled)", show_bytes(bytes))
    });
    let steady = report.steady_s.map_or(String::new(), |s| {
        format!("; {s:.1} s per {unit} steady, from the first partition's proof to the last proof")
    });
    // As measured: a partition whose constraints the prover evaluates holds its witness alone
    // until it reaches its prover.
    let in_flight = match report.largest_partition_bytes {
        0 => show_bytes(f.partition_bytes),
        bytes if report.evaluated_at_prover > 0 => format!(
            "{} ({} partitions waited as their witness; a, b and c made on the host at the \
             prover, {} each while there)",
            show_bytes(bytes),
            report.evaluated_at_prover,
            show_bytes(report.largest_at_prover_bytes)
        ),
        bytes if report.deferred_partitions > 0 => format!(
            "{} ({} partitions evaluated on the GPU, the witness alone in flight)",
            show_bytes(bytes),
            report.deferred_partitions
        ),
        bytes => show_bytes(bytes),
    };
    format!(
        "\n{circuit} benchmark (synthetic shape: timings and memory, no proofs)\n\
         {:<27}{}\n\
         wall time                  {:.1} s ({per_sector} per {unit}{steady})\n\
         parameter set              {}\n\
         per partition in flight    {}\n\
         memory budget              {}\n\
         peak memory in use         {in_use}\n\
         peak resident memory       {rss}\n\
         timeline                   {}\n\
         (draw it with: cuzk waterfall {})\n",
        format!("{unit}s benchmarked"),
        report.sectors,
        report.elapsed_s,
        show_bytes(f.params_bytes),
        in_flight,
        show_bytes(report.budget_bytes),
        report.run_dir.join("timeline.csv").display(),
        report.run_dir.join("timeline.csv").display(),
    )
}

/// Puts H's bases in coset evaluation form beside the shape parameters when `wanted`, and
/// takes them away when not, so a run measures the form it was asked for.
fn set_coset_h(params_path: &Path, counts: &ShapeCounts, wanted: bool) -> Result<()> {
    let path = coset_h::coset_h_path(params_path)?;
    if wanted && !path.is_file() {
        let started = Instant::now();
        let mut rng = rand::rngs::StdRng::from_entropy();
        shape::write_synthetic_coset_h(params_path, counts, &mut rng)?;
        log::info!(
            "wrote synthetic H bases in coset evaluation form to {} in {:.1} s",
            path.display(),
            started.elapsed().as_secs_f64()
        );
    } else if !wanted && path.is_file() {
        fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
}

/// The circuit's counts, cached beside the shape parameters (counting 32GiB takes a minute).
fn shape_counts(circuit: CircuitId, params_path: &Path) -> Result<ShapeCounts> {
    let cache = params_path.with_extension("shape.json");
    if let Some(counts) = fs::read(&cache)
        .ok()
        .and_then(|b| serde_json::from_slice::<ShapeCounts>(&b).ok())
    {
        return Ok(counts);
    }
    log::info!("counting the {circuit} partition circuit (about a minute for 32GiB)");
    let counts = circuits::count_shape(circuit)?;
    fs::write(&cache, serde_json::to_vec_pretty(&counts)?)
        .with_context(|| format!("writing {}", cache.display()))?;
    Ok(counts)
}

/// True when a parameter file's counts are the ones `counts` needs.
fn layout_fits(layout: &ParamsLayout, counts: &ShapeCounts) -> bool {
    layout.h == counts.domain() - 1
        && layout.l == counts.aux
        && layout.ic == counts.inputs
        && layout.a == counts.inputs + counts.a_aux_density
        && layout.b == counts.b_input_density + counts.b_aux_density
}

/// `20261130T101500Z`, so runs sort by time.
fn run_stamp() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(['-', ':'], "")
}

/// CPU seconds this process has used, user and system, over all its threads.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Memory in use on the machine: `MemTotal - MemAvailable` of `/proc/meminfo`, the figure
/// the memory budget is about. The process's `VmHWM` also counts pages of files it maps (the
/// recorded constraints, a parameter file SupraSeal reads), which the kernel drops when memory
/// is short: at the 32GiB shape with SupraSeal it read 132.6 GB while 102.4 GB were in use.
pub fn memory_in_use_bytes() -> Option<u64> {
    in_use_of_meminfo(&fs::read_to_string("/proc/meminfo").ok()?)
}

fn in_use_of_meminfo(meminfo: &str) -> Option<u64> {
    Some(kib_field(meminfo, "MemTotal")?.saturating_sub(kib_field(meminfo, "MemAvailable")?))
}

/// The `name:  N kB` line of a /proc file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let kib: u64 = line
            .strip_prefix(name)?
            .strip_prefix(':')?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    })
}

/// Samples [`memory_in_use_bytes`] four times a second on a thread of its own while a
/// benchmark runs, keeping the peak.
struct InUseSampler {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Option<u64>>,
}

impl InUseSampler {
    fn start() -> InUseSampler {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut peak = memory_in_use_bytes();
            // A message or a hung-up sender both end the sampling.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(std::time::Duration::from_millis(250))
            {
                peak = peak.max(memory_in_use_bytes());
            }
            peak.max(memory_in_use_bytes())
        });
        InUseSampler { stop, thread }
    }

    fn finish(self) -> Option<u64> {
        let _ = self.stop.send(());
        self.thread.join().ok().flatten()
    }
}

/// The peak resident memory of this process (`VmHWM`), if the platform says.
pub fn peak_rss_bytes() -> Option<u64> {
    kib_field(&fs::read_to_string("/proc/self/status").ok()?, "VmHWM")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coset_h_query_is_written_when_asked_and_removed_when_not() {
        use crate::params::coset_h::CosetHError;
        let dir = tempfile::tempdir().expect("tempdir");
        shape::ensure_synthetic_dir(dir.path()).expect("marked as the bench's");
        let params_path = dir.path().join("v28-shape.params");
        fs::write(params_path.with_extension("vk"), b"a shape's verifying key").expect("vk");
        let counts = ShapeCounts {
            constraints: 1000,
            ..Default::default()
        };
        set_coset_h(&params_path, &counts, true).expect("written");
        let points = coset_h::load(&params_path, 1024).expect("a query of the domain's size");
        assert_eq!(points.len(), 1024);
        assert!(points.iter().all(|p| bool::from(p.is_on_curve())));
        assert!(matches!(
            coset_h::load(&params_path, 2048),
            Err(CosetHError::Unusable { .. })
        ));
        set_coset_h(&params_path, &counts, true).expect("kept as it is");
        set_coset_h(&params_path, &counts, false).expect("removed");
        assert!(matches!(
            coset_h::locate(&params_path, 1024),
            Err(CosetHError::Missing { .. })
        ));
    }

    #[test]
    fn memory_in_use_is_total_less_available() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(in_use_of_meminfo(meminfo), Some(4_000_000 * 1024));
        assert_eq!(in_use_of_meminfo("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn the_sampler_keeps_the_peak_it_saw() {
        let sampler = InUseSampler::start();
        // A quarter of a GB touched while it samples: the peak is at least what is in use
        // afterwards less what the rest of the machine may have given back meanwhile.
        let block = vec![1u8; 256 << 20];
        std::thread::sleep(std::time::Duration::from_millis(600));
        let held = memory_in_use_bytes().expect("/proc/meminfo on Linux");
        let peak = sampler.finish().expect("sampled");
        assert!(block.iter().step_by(4096).all(|&b| b == 1));
        assert!(
            peak + (64 << 20) >= held,
            "peak {peak} against {held} in use"
        );
    }
}
