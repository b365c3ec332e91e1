//! `cuzk serve SPOOL` and Curio's engine invocation, `cuzk --config /data/zk/cuzk.toml`: the
//! gRPC server ([`crate::serve`]) with its flags checked, or with Curio's engine config read
//! into the same flags.

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;

use super::flags::ServeArgs;
use crate::serve::config::CurioConfig;

/// The top-level entry point for `cuzk serve`.
pub(super) fn serve(args: ServeArgs) -> Result<u8> {
    args.tuning.split_cpus()?;
    let settings = args.to_settings()?;
    crate::serve::serve(settings)
}

/// `cuzk serve`'s flags alone, to read Curio's config into.
#[derive(Parser)]
struct ServeFlags {
    #[command(flatten)]
    args: ServeArgs,
}

/// Curio's engine invocation: the config's keys as `serve`'s flags (the command line's
/// `--listen` and `--params` win), every other key named once as ignored. `CUZK_*`
/// variables still apply to what the config leaves unsaid.
pub(super) fn serve_curio(
    config_path: Option<PathBuf>,
    listen: Option<String>,
    has_params_flag: bool,
) -> Result<u8> {
    let path = config_path.unwrap_or_else(|| PathBuf::from(crate::serve::config::DEFAULT_CONFIG));
    let config = CurioConfig::read(&path)?;
    if !config.ignored.is_empty() {
        log::info!(
            "{}: not used by cuzk, which sizes its pipeline by its memory budget: {}",
            path.display(),
            config.ignored.join(", ")
        );
    }
    if let (Some(dir), false) = (&config.param_cache, has_params_flag) {
        crate::params::use_params_dir(dir);
    }
    let mut argv: Vec<String> = vec!["cuzk serve".into(), config.spool.display().to_string()];
    if let Some(listen) = listen.or(config.listen.clone()) {
        argv.extend(["--listen".into(), listen]);
    }
    if !config.gpu_devices.is_empty() {
        let list: Vec<String> = config.gpu_devices.iter().map(usize::to_string).collect();
        argv.extend(["--gpus".into(), list.join(",")]);
    }
    if let Some(bytes) = config.total_budget {
        argv.extend(["--max-memory".into(), bytes.to_string()]);
    }
    if let Some(threads) = config.synthesis_threads {
        argv.extend(["--synthesis-threads".into(), threads.to_string()]);
    }
    let flags = ServeFlags::try_parse_from(&argv)
        .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
    log::info!(
        "{}: serving the spool {}",
        path.display(),
        config.spool.display()
    );
    serve(flags.args)
}

/// The log's level and whether it is JSON, as Curio's engine config says: read before the
/// logger starts, so a config that cannot be read says nothing here (serving reports it).
pub(super) fn config_logging(config_path: Option<&PathBuf>) -> (Option<String>, bool) {
    let path = config_path
        .cloned()
        .unwrap_or_else(|| PathBuf::from(crate::serve::config::DEFAULT_CONFIG));
    match CurioConfig::read(&path) {
        Ok(config) => (config.log_level, config.is_json_log),
        Err(_) => (None, false),
    }
}
