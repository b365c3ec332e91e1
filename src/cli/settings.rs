//! The flags checked once into the settings each command runs with: [`RunSettings`] for
//! `prove-dir`, `bench` and the damocles processors, [`ProcessorSettings`] for the latter,
//! a [`waterfall::Request`], a [`BenchPlan`]. One route: a run's settings always start from
//! [`RunSettings::new`] and take the flags over it, so a default the flags leave alone is
//! the one tests and damocles get too.
//!
//! A flag that must be a number of seconds, at least 1 or a width is checked here, so each
//! command's room only runs; a bad value is a [`CheckFlagsError`] naming the flag.

use std::path::{Path, PathBuf};
use std::time::{Duration, TryFromFloatSecsError};

use super::flags::{
    BenchArgs, DamoclesC2Args, MetricsArgs, ParamsSizeArgs, ProcessorArgs, ProveDirArgs,
    ReferenceArgs, ServeArgs, StatusArgs, TuningArgs, WatchArgs, WaterfallArgs, DEFAULT_WIDTH,
    MIN_WIDTH,
};
use crate::bench::BenchPlan;
use crate::damocles::{ProcessorSettings, Stage};
use crate::pipeline::RunSettings;
use crate::proof_kind::{CircuitId, ProofKind};
use crate::serve::{ListenAddr, ServeSettings};
use crate::spool::SpoolLayout;
use crate::{prometheus, waterfall};

/// A flag whose value no command can run with.
#[derive(Debug, thiserror::Error)]
pub enum CheckFlagsError {
    /// A `--*-secs` flag that is negative, not finite or too large for a duration.
    #[error("--{flag} {value} is not a number of seconds")]
    NotSeconds {
        /// The flag, without its dashes.
        flag: &'static str,
        /// What it was given.
        value: f64,
        /// Why it is no duration.
        #[source]
        source: TryFromFloatSecsError,
    },
    /// `--synth-jobs 0`: nothing would ever be synthesized.
    #[error("--synth-jobs must be at least 1")]
    ZeroSynthJobs,
    /// `--gap-ms` negative or not finite.
    #[error("--gap-ms wants a non-negative number of milliseconds, not {0}")]
    NotMilliseconds(f64),
    /// `cuzk processor STAGE` for a stage cuzk does not serve.
    #[error("damocles stage {0:?} is not served by cuzk")]
    UnknownStage(String),
    /// `--listen` (or `[daemon] listen`) that is no address.
    #[error("--listen: {0}")]
    Listen(String),
}

/// `value` of `--flag` as a duration.
fn seconds(flag: &'static str, value: f64) -> Result<Duration, CheckFlagsError> {
    Duration::try_from_secs_f64(value).map_err(|source| CheckFlagsError::NotSeconds {
        flag,
        value,
        source,
    })
}

impl ProveDirArgs {
    /// Checks the flags and fills in the defaults.
    pub fn to_settings(&self) -> Result<RunSettings, CheckFlagsError> {
        let mut layout = SpoolLayout::beside(&self.inbox);
        let or = |flag: &Option<PathBuf>, default: PathBuf| flag.clone().unwrap_or(default);
        layout.outbox = or(&self.outbox, layout.outbox);
        layout.failed = or(&self.failed, layout.failed);
        layout.work = or(&self.work, layout.work);
        layout.done = or(&self.done, layout.done);
        let settings = self.tuning.to_settings(layout)?;
        Ok(RunSettings {
            timeline: or(&self.timeline, settings.timeline.clone()),
            once: self.once,
            miner_id: self.miner_id.or(self.miner_addr),
            benchmark: self.benchmark,
            metrics: self
                .metrics
                .to_target(|_| prometheus::spool_label(&crate::spool::spool_dir_of(&self.inbox))),
            ..self.watch.apply(settings)?
        })
    }
}

impl WatchArgs {
    /// `settings` with these flags.
    fn apply(&self, settings: RunSettings) -> Result<RunSettings, CheckFlagsError> {
        Ok(RunSettings {
            // A rescan more often than this only spins.
            poll: seconds("poll-secs", self.poll_secs)?.max(Duration::from_millis(50)),
            settle: seconds("settle-secs", self.settle_secs)?,
            incomplete_grace: seconds("incomplete-grace-secs", self.incomplete_grace_secs)?,
            max_c1_bytes: self.max_c1_bytes,
            lease: seconds("lease-secs", self.lease_secs)?,
            gen_test_params: self.gen_test_params,
            max_attempts: self.max_attempts.max(1),
            ..settings
        })
    }
}

impl ServeArgs {
    /// The server's settings: the run over SPOOL, its metrics in SPOOL/metrics.prom unless
    /// --metrics-textfile says elsewhere.
    pub fn to_settings(&self) -> Result<ServeSettings, CheckFlagsError> {
        let layout = SpoolLayout::beside(&self.spool.join("inbox"));
        let settings = self.tuning.to_settings(layout)?;
        let listen = ListenAddr::parse(&self.listen).map_err(CheckFlagsError::Listen)?;
        let label = || prometheus::spool_label(&self.spool);
        let metrics = self.metrics.to_target(|_| label()).unwrap_or_else(|| {
            prometheus::run::MetricsTextfile {
                path: self.spool.join("metrics.prom"),
                spool_label: label(),
            }
        });
        Ok(ServeSettings {
            listen,
            run: RunSettings {
                timeline: self.spool.join("timeline.csv"),
                once: false,
                metrics: Some(metrics),
                ..self.watch.apply(settings)?
            },
        })
    }
}

impl TuningArgs {
    /// Settings for a run on `layout` with these flags and every other default.
    pub fn to_settings(&self, layout: SpoolLayout) -> Result<RunSettings, CheckFlagsError> {
        let defaults = RunSettings::new(layout);
        if self.synth_jobs == Some(0) {
            return Err(CheckFlagsError::ZeroSynthJobs);
        }
        Ok(RunSettings {
            synth_jobs: self.synth_jobs.or(defaults.synth_jobs),
            backend: self.backend,
            gpus: self.gpus.clone(),
            provers_per_gpu: self.provers_per_gpu,
            require_gpu: self.require_gpu,
            queue_depth: self.queue_depth,
            max_memory: self.max_memory,
            gpu_memory: self.gpu_memory,
            is_precompiled: self.synthesis.is_precompiled(),
            is_native_witness: self.synthesis.is_native_witness(),
            synthesis_threads: self.synthesis_threads.unwrap_or(defaults.synthesis_threads),
            prover_cpus: self.prover_cpus,
            max_device_faults: self.max_device_faults.max(1),
            call_deadline: self
                .call_deadline_secs
                .map(std::time::Duration::from_secs_f64),
            ..defaults
        })
    }

    /// Applies `--prover-cpus` (see [`crate::backend::gpu::cpu_split`]): before anything else
    /// a run does, since it may restart the process.
    pub fn split_cpus(&self) -> anyhow::Result<()> {
        if let Some(split) = crate::backend::gpu::cpu_split::apply(self.prover_cpus)? {
            log::info!("CPUs split: {split}");
        }
        Ok(())
    }
}

impl MetricsArgs {
    /// Where the metrics go, labelled `--metrics-label` or else `default_label` of the file.
    fn to_target(
        &self,
        default_label: impl FnOnce(&Path) -> String,
    ) -> Option<prometheus::run::MetricsTextfile> {
        let path = self.metrics_textfile.clone()?;
        let spool_label = self
            .metrics_label
            .clone()
            .unwrap_or_else(|| default_label(&path));
        Some(prometheus::run::MetricsTextfile { path, spool_label })
    }
}

impl DamoclesC2Args {
    /// The processor's settings for `stage`: its private spool in `--tmp-dir`, else the
    /// system's temporary directory.
    pub fn to_settings(self, stage: Stage) -> Result<ProcessorSettings, CheckFlagsError> {
        let tmp_dir = self.tmp_dir.unwrap_or_else(std::env::temp_dir);
        let layout = SpoolLayout::beside(&tmp_dir.join("inbox"));
        Ok(ProcessorSettings {
            stage,
            run: RunSettings {
                metrics: self
                    .metrics
                    .to_target(prometheus::run::label_from_file_name),
                ..self.tuning.to_settings(layout)?
            },
            tmp_dir,
            timeline: self.timeline,
            attempts: self.attempts.max(1),
            retry_pause: seconds("retry-pause-secs", self.retry_pause_secs)?,
        })
    }
}

impl ProcessorArgs {
    /// The damocles stage named.
    pub fn stage(&self) -> Result<Stage, CheckFlagsError> {
        Stage::from_name(&self.stage)
            .ok_or_else(|| CheckFlagsError::UnknownStage(self.stage.clone()))
    }
}

impl StatusArgs {
    /// `--lease-secs` as a duration.
    pub fn lease(&self) -> Result<Duration, CheckFlagsError> {
        seconds("lease-secs", self.lease_secs)
    }
}

impl WaterfallArgs {
    /// What to draw, with the width resolved.
    pub fn to_request(&self) -> Result<waterfall::Request, CheckFlagsError> {
        if !(self.gap_ms.is_finite() && self.gap_ms >= 0.0) {
            return Err(CheckFlagsError::NotMilliseconds(self.gap_ms));
        }
        Ok(waterfall::Request {
            selection: match (&self.run, self.all) {
                (Some(id), _) => waterfall::Selection::Run(id.clone()),
                (None, true) => waterfall::Selection::All,
                (None, false) => waterfall::Selection::Last,
            },
            per_partition: self.partitions,
            gap_s: self.gap_ms / 1000.0,
            width: resolve_width(self.width),
            svg: self.svg.clone(),
            is_json: self.json,
        })
    }
}

/// `--width`, else `$COLUMNS`, else [`DEFAULT_WIDTH`]; at least [`MIN_WIDTH`].
fn resolve_width(flag: Option<usize>) -> usize {
    flag.or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

impl ReferenceArgs {
    /// The miner id of `--miner-id` or `--miner-addr`, which clap lets only one of be given.
    pub fn miner_id(&self) -> Option<u64> {
        self.miner_id.or(self.miner_addr)
    }
}

impl BenchArgs {
    /// The benchmark to run: at least one sector, its runs' spools inside `--dir`.
    pub fn to_plan(self) -> Result<BenchPlan, CheckFlagsError> {
        let layout = SpoolLayout::beside(&self.dir.join("inbox"));
        Ok(BenchPlan {
            sector_size: self.sector_size,
            kind: if self.update {
                ProofKind::Update
            } else {
                ProofKind::Seal
            },
            sectors: self.sectors.max(1),
            run: self.tuning.to_settings(layout)?,
            dir: self.dir,
            is_prepare_only: self.prepare_only,
            coset_h: self.coset_h,
        })
    }
}

impl ParamsSizeArgs {
    /// The circuit named.
    pub fn circuit(&self) -> CircuitId {
        if self.update {
            CircuitId::update(self.sector_size)
        } else {
            CircuitId::seal(self.sector_size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> super::super::Cli {
        super::super::Cli::try_parse_from(std::iter::once("cuzk").chain(args.iter().copied()))
            .expect("parses")
    }

    /// The flags a user leaves alone give the settings tests and damocles build without a
    /// command line: one route, one set of defaults.
    #[test]
    fn prove_dir_defaults_are_run_settings_defaults() {
        let Some(super::super::Command::ProveDir(args)) =
            parse(&["prove-dir", "/spool/inbox"]).command
        else {
            panic!("not prove-dir");
        };
        let flags = args.to_settings().expect("settings");
        let plain = RunSettings::new(SpoolLayout::beside(Path::new("/spool/inbox")));
        assert_eq!(format!("{flags:?}"), format!("{plain:?}"));
    }

    #[test]
    fn bad_values_name_their_flag() {
        let Some(super::super::Command::ProveDir(args)) =
            parse(&["prove-dir", "in", "--lease-secs=-1"]).command
        else {
            panic!("not prove-dir");
        };
        let err = args.to_settings().expect_err("negative lease");
        assert_eq!(
            err.to_string(),
            "--lease-secs -1 is not a number of seconds"
        );
        let Some(super::super::Command::Waterfall(args)) =
            parse(&["waterfall", "t.csv", "--gap-ms=-1"]).command
        else {
            panic!("not waterfall");
        };
        let err = args.to_request().expect_err("negative gap");
        assert_eq!(
            err.to_string(),
            "--gap-ms wants a non-negative number of milliseconds, not -1"
        );
    }

    #[test]
    fn width_has_a_floor() {
        assert_eq!(resolve_width(Some(5)), MIN_WIDTH);
        assert_eq!(resolve_width(Some(150)), 150);
    }
}
