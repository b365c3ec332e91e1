//! `cuzk params gen`, `path`, `constraints`, `coset-h`, `check` and `prune`: a parameter
//! cache's files generated (test sizes only), located, completed with recorded constraints
//! or the coset H query, checked against filecoin-proofs' digests, or rid of recorded
//! constraints no circuit uses.

use std::time::Instant;

use anyhow::{Context, Result};

use super::flags::{ParamsCheckArgs, ParamsPruneArgs, ParamsSizeArgs};
use super::print;
use super::progress::{HashProgress, Spinner};
use crate::c1::SectorSizeName;
use crate::proof_kind::ProofKind;
use crate::{circuits, params};

/// The top-level entry point for `cuzk params gen`.
pub(super) fn generate(args: ParamsSizeArgs) -> Result<u8> {
    let size = SectorSizeName(args.sector_size);
    let circuit = args.circuit();
    let (params_path, vk_path) = circuits::param_paths(circuit)?;
    if params_path.is_file() && vk_path.is_file() {
        log::info!(
            "parameters for {circuit} already present: {}",
            params_path.display()
        );
        return Ok(0);
    }
    params::is_test_size(args.sector_size)
        .then_some(())
        .with_context(|| {
            format!("refusing to generate parameters for {size} sectors: random parameters make proofs the chain rejects (hint: fetch the official ones with `lotus fetch-params {size}`)")
        })?;
    log::info!(
        "generating INSECURE random Groth16 parameters for {} into {}\n\
         these are for tests and private networks only: the chain rejects proofs made with them.\n\
         this takes a while (2KiB: about 3 minutes on 2 cores, 2 GB of memory)",
        match circuit.kind {
            ProofKind::Seal => format!("{size} sectors"),
            ProofKind::Update => format!("{size} sector updates"),
        },
        params::params_dir().display()
    );
    let started = Instant::now();
    let progress = Spinner::start(format!("generating {circuit} parameters"));
    let result = circuits::generate_params(circuit);
    progress.finish();
    let (params_path, vk_path) = result?;
    log::info!(
        "wrote {} and {} in {:.0} s",
        params_path.display(),
        vk_path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// The top-level entry point for `cuzk params path`.
pub(super) fn show_paths(args: ParamsSizeArgs) -> Result<u8> {
    let (params_path, vk_path) = circuits::param_paths(args.circuit())?;
    print(&format!(
        "{}\n{}\n",
        params_path.display(),
        vk_path.display()
    ))?;
    Ok(0)
}

/// The top-level entry point for `cuzk params constraints`.
pub(super) fn record_constraints(args: ParamsSizeArgs) -> Result<u8> {
    let circuit = args.circuit();
    let (params_path, _) = circuits::param_paths(circuit)?;
    let file = crate::r1cs::r1cs_path(&params_path)?;
    // Recording a 32GiB circuit takes minutes; a whole file of this circuit is kept as it is.
    if file.is_file() {
        let loaded = crate::r1cs::R1cs::load(&file)
            .and_then(|r1cs| crate::params::check_recorded(&r1cs, &file, &params_path));
        match loaded {
            Ok(()) => {
                log::info!("{circuit} constraints already recorded: {}", file.display());
                return Ok(0);
            }
            Err(err) => log::warn!("{err:#}"),
        }
    }
    let started = Instant::now();
    let progress = Spinner::start(format!("recording the {circuit} circuit's constraints"));
    let recorded = circuits::record_constraints(circuit, crate::r1cs::R1cs::recording_threads());
    progress.finish();
    let r1cs = recorded?;
    if !r1cs.save(&file)? {
        log::info!(
            "{} is there already and was left as it is (another run may have it mapped); delete it first to record it again",
            file.display()
        );
        return Ok(0);
    }
    log::info!(
        "recorded {} constraints ({}) in {:.0} s: {}",
        r1cs.counts().constraints,
        crate::memory::show_bytes(r1cs.memory_bytes()),
        started.elapsed().as_secs_f64(),
        file.display()
    );
    Ok(0)
}

/// Seconds one core takes to multiply a G1 point by a scalar (blst, measured on the 2-core
/// build machine: 69 µs), for the estimate `cuzk params coset-h` prints.
const POINT_MULTIPLICATION_SECS: f64 = 70e-6;

/// The coset H query of `h`, checked against `h` by one random combination of both
/// (`coset_h::matches`) before anything is written: derived on GPU 0 where cuzk is built
/// with CUDA and one answers, else, or where that fails or fails the check, on the CPU.
fn derive_checked(h: &[blstrs::G1Affine]) -> Result<Vec<blstrs::G1Affine>> {
    use crate::params::coset_h;
    #[cfg(feature = "cuda")]
    if h.len() + 1 >= crate::backend::cuda::coset_h::SMALLEST_ON_GPU
        && crate::backend::cuda::gpu_count() > 0
    {
        let started = Instant::now();
        match crate::backend::cuda::coset_h::derive(h) {
            Ok(derived) if coset_h::matches(h, &derived)? => {
                log::info!(
                    "derived on the GPU in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
                return Ok(derived);
            }
            Ok(_) => log::warn!(
                "the GPU's coset H query failed its check against the H query; deriving on the CPU"
            ),
            Err(err) => log::warn!("deriving on the GPU failed ({err}); deriving on the CPU"),
        }
    }
    let derived = coset_h::derive(h)?;
    anyhow::ensure!(
        coset_h::matches(h, &derived)?,
        "the derived query does not match the H query"
    );
    Ok(derived)
}

/// The top-level entry point for `cuzk params coset-h`.
pub(super) fn derive_coset_h(args: ParamsSizeArgs) -> Result<u8> {
    use crate::params::coset_h::{self, CosetHError};
    let circuit = args.circuit();
    let (params_path, _) = circuits::param_paths(circuit)?;
    let layout = params::load::ParamsLayout::read(&params_path).with_context(|| {
        format!(
            "reading {} (hint: fetch the parameters, or `cuzk params gen` for a test size)",
            params_path.display()
        )
    })?;
    let m = layout.h as usize + 1;
    match coset_h::load(&params_path, m) {
        Ok(_) => {
            log::info!(
                "the {circuit} H query in coset evaluation form is kept already: {}",
                coset_h::coset_h_path(&params_path)?.display()
            );
            return Ok(0);
        }
        Err(CosetHError::Missing { .. }) => {}
        Err(err) => {
            log::error!("{err}");
            return Ok(1);
        }
    }
    let threads = rayon::current_num_threads();
    let multiplications = (m as f64) * (1.0 + f64::from(m.trailing_zeros()) / 2.0);
    log::info!(
        "deriving the {circuit} H query in coset evaluation form ({m} points, about {} multiplications of a point): about {} on {threads} threads",
        multiplications as u64,
        about_minutes(multiplications * POINT_MULTIPLICATION_SECS / threads as f64)
    );
    let started = Instant::now();
    let progress = Spinner::start(format!("deriving the {circuit} coset H query"));
    let h = params::load::read_h_query(&params_path)
        .with_context(|| format!("reading the H query of {}", params_path.display()));
    let derived = h.and_then(|h| {
        derive_checked(&h).with_context(|| {
            format!(
                "deriving the coset H query of {} (nothing written)",
                params_path.display()
            )
        })
    });
    progress.finish();
    let (file, is_written) = coset_h::save(&derived?, &params_path)?;
    if is_written {
        log::info!(
            "derived in {:.0} s: {}",
            started.elapsed().as_secs_f64(),
            file.display()
        );
    } else {
        log::info!(
            "{} appeared meanwhile and was left as it is",
            file.display()
        );
    }
    Ok(0)
}

/// `secs` as a rough duration: seconds under two minutes, minutes under two hours, hours.
fn about_minutes(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} minutes", secs / 60.0)
    } else {
        format!("{:.1} hours", secs / 3600.0)
    }
}

/// The top-level entry point for `cuzk params check`: 0 when every file is whole and
/// official (or generated by cuzk and intact), 1 when one is missing, damaged or of unknown
/// origin.
pub(super) fn check(args: ParamsCheckArgs) -> Result<u8> {
    let dir = params::params_dir();
    let required: Vec<String> = match args.sector_size {
        Some(size) => {
            let (params_path, vk_path) = crate::porep::param_paths(size)?;
            [params_path, vk_path]
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        }
        None => Vec::new(),
    };
    anyhow::ensure!(
        dir.is_dir(),
        "{}: no parameter cache there (hint: fetch parameters with `lotus fetch-params 32GiB` or `curio fetch-params 32GiB`, or point --params at the cache)",
        dir.display()
    );
    let manifest = params::check::official_manifest();
    let request = params::check::CheckRequest {
        dir: &dir,
        manifest: &manifest,
        sector_size: args.sector_size,
        required: &required,
    };
    let mut progress = HashProgress::default();
    let checks = params::check::check_cache(&request, &mut |name, done, total| {
        progress.show(name, done, total)
    })
    .with_context(|| format!("listing {}", dir.display()))?;
    progress.finish();
    let problems = checks.iter().filter(|c| c.verdict.is_problem()).count();
    let code = if problems > 0 || checks.is_empty() {
        1
    } else {
        0
    };
    if args.json {
        let files: Vec<serde_json::Value> = checks
            .iter()
            .map(|check| {
                serde_json::json!({
                    "name": check.name,
                    "sector_size": check.sector_size,
                    "verdict": check.verdict.name(),
                    "detail": check.verdict.describe(),
                    "is_problem": check.verdict.is_problem(),
                })
            })
            .collect();
        let report = serde_json::json!({
            "dir": dir.display().to_string(),
            "files": files,
            "problems": problems,
        });
        print(&(serde_json::to_string_pretty(&report)? + "\n"))?;
        return Ok(code);
    }
    let mut out = format!(
        "{}: checked against filecoin-proofs' parameters.json\n",
        dir.display()
    );
    for check in &checks {
        let size = check
            .sector_size
            .map(|s| format!(" ({})", SectorSizeName(s)))
            .unwrap_or_default();
        out += &format!("{}{size}: {}\n", check.name, check.verdict.describe());
    }
    if checks.is_empty() {
        out += "no parameter files found (hint: `lotus fetch-params 32GiB` or `curio fetch-params 32GiB` fetch them)\n";
    } else {
        out += &format!(
            "{} file(s), {problems} missing, damaged or of unknown origin\n",
            checks.len()
        );
    }
    print(&out)?;
    Ok(code)
}

/// The top-level entry point for `cuzk params prune`.
pub(super) fn prune(args: ParamsPruneArgs) -> Result<u8> {
    let dir = params::params_dir();
    anyhow::ensure!(
        dir.is_dir(),
        "{}: no parameter cache there (hint: point --params or FIL_PROOFS_PARAMETER_CACHE at the cache)",
        dir.display()
    );
    let verdicts = params::prune::prune(&dir, !args.dry_run)?;
    if args.json {
        print(&(serde_json::to_string_pretty(&verdicts)? + "\n"))?;
        return Ok(0);
    }
    let show = crate::memory::show_bytes;
    let removing = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut out = String::new();
    let mut freed = 0;
    for verdict in &verdicts {
        let path = verdict.path.display();
        let bytes = show(verdict.bytes);
        match &verdict.stale {
            None => out += &format!("kept {path} ({bytes}): in use by the current circuit\n"),
            Some(why) if verdict.is_in_use => {
                out += &format!("kept {path} ({bytes}): {why}, but a run has it open\n")
            }
            Some(why) => {
                freed += verdict.bytes;
                out += &format!("{removing} {path} ({bytes}): {why}\n");
            }
        }
    }
    out += &format!(
        "{} derived file(s) (recorded constraints, coset H queries) in {}; {removing} {}\n",
        verdicts.len(),
        dir.display(),
        show(freed)
    );
    print(&out)?;
    Ok(0)
}
