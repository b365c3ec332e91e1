//! Curio's engine config, so that cuzk starts where Curio's own engine did: `cuzk --config
//! /data/zk/cuzk.toml` (Curio's systemd unit), with `--listen` and `--log-level` as Curio
//! passes them. The keys that mean something here are used; every other key is named once,
//! at start, as ignored: cuzk sizes its pipeline by its own memory budget and plan.
//!
//! | key | what cuzk does with it |
//! |---|---|
//! | `[daemon] listen` | where `serve` listens (TCP, or `unix:///path`) |
//! | `[srs] param_cache` | the parameter directory (`--params`) |
//! | `[memory] total_budget` | `--max-memory`, unless `"auto"` |
//! | `[gpus] devices` | `--gpus` (empty: every GPU) |
//! | `[synthesis] threads` | `--synthesis-threads` (0: cuzk's default) |
//! | `[logging] level`, `format` | the log's level (under `RUST_LOG`) and `--log-format json` |
//! | `[cuzk] spool` | cuzk's own key: the spool [default: `spool/` beside the file] |

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use toml::Value;

/// Where Curio's engine looks for its config.
pub const DEFAULT_CONFIG: &str = "/data/zk/cuzk.toml";

/// What cuzk takes from Curio's engine config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurioConfig {
    /// `[daemon] listen`.
    pub listen: Option<String>,
    /// `[srs] param_cache`.
    pub param_cache: Option<PathBuf>,
    /// `[memory] total_budget`, in bytes (`None` for `"auto"`).
    pub total_budget: Option<u64>,
    /// `[gpus] devices`; empty for every GPU.
    pub gpu_devices: Vec<usize>,
    /// `[synthesis] threads`, when not 0.
    pub synthesis_threads: Option<usize>,
    /// `[logging] level`.
    pub log_level: Option<String>,
    /// `[logging] format = "json"`.
    pub is_json_log: bool,
    /// `[cuzk] spool`, or `spool/` beside the file.
    pub spool: PathBuf,
    /// Keys present that cuzk does not use, as `section.key`.
    pub ignored: Vec<String>,
}

impl CurioConfig {
    /// Reads the config at `path`; a file that is not there gives every default (as
    /// Curio's engine does), with the spool beside where it would be.
    pub fn read(path: &Path) -> Result<CurioConfig> {
        let beside = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join("spool");
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(CurioConfig {
                    spool: beside,
                    ..CurioConfig::default()
                })
            }
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        let table: toml::Table = text
            .parse()
            .with_context(|| format!("{} is not TOML", path.display()))?;
        parse(&table, beside).with_context(|| format!("{}", path.display()))
    }
}

fn parse(table: &toml::Table, beside: PathBuf) -> Result<CurioConfig> {
    let mut config = CurioConfig {
        spool: beside,
        ..CurioConfig::default()
    };
    for (section, value) in table {
        let Value::Table(keys) = value else {
            config.ignored.push(section.clone());
            continue;
        };
        for (key, value) in keys {
            let name = format!("{section}.{key}");
            let text = || -> Result<&str> {
                value
                    .as_str()
                    .with_context(|| format!("{name} is {value}, not a string"))
            };
            match name.as_str() {
                "daemon.listen" => config.listen = Some(text()?.to_owned()),
                "srs.param_cache" => config.param_cache = Some(PathBuf::from(text()?)),
                "memory.total_budget" => {
                    let budget = text()?;
                    if !budget.eq_ignore_ascii_case("auto") {
                        let bytes = crate::memory::parse_bytes(budget)
                            .map_err(anyhow::Error::msg)
                            .with_context(|| name.clone())?;
                        config.total_budget = Some(bytes);
                    }
                }
                "gpus.devices" => {
                    let list = value.as_array().with_context(|| {
                        format!("{name} is {value}, not a list of GPU ordinals")
                    })?;
                    config.gpu_devices = list
                        .iter()
                        .map(|v| {
                            v.as_integer()
                                .and_then(|n| usize::try_from(n).ok())
                                .with_context(|| format!("{name}: {v} is not a GPU ordinal"))
                        })
                        .collect::<Result<_>>()?;
                }
                "synthesis.threads" => {
                    let n = value
                        .as_integer()
                        .and_then(|n| usize::try_from(n).ok())
                        .with_context(|| format!("{name} is {value}, not a thread count"))?;
                    config.synthesis_threads = (n > 0).then_some(n);
                }
                "logging.level" => config.log_level = Some(text()?.to_owned()),
                "logging.format" => config.is_json_log = text()?.eq_ignore_ascii_case("json"),
                "cuzk.spool" => config.spool = PathBuf::from(text()?),
                _ => config.ignored.push(name),
            }
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curios_example_config_is_read_and_the_rest_named() {
        // The sections and keys of Curio's extern/cuzk/cuzk.example.toml, values of our own.
        let text = r#"
[daemon]
listen = "unix:///run/curio/cuzk.sock"
status_listen = "0.0.0.0:9821"
[srs]
param_cache = "/data/zk/params"
[memory]
total_budget = "256GiB"
safety_margin = "5GiB"
eviction_min_idle = "5m"
[gpus]
devices = [0, 1]
gpu_threads = 32
gpu_workers_per_device = 2
[scheduler]
max_batch_size = 1
[synthesis]
threads = 0
[pipeline]
enabled = true
[logging]
level = "debug"
format = "json"
"#;
        let config = parse(&text.parse().unwrap(), PathBuf::from("/data/zk/spool")).unwrap();
        assert_eq!(
            config.listen.as_deref(),
            Some("unix:///run/curio/cuzk.sock")
        );
        assert_eq!(config.param_cache, Some(PathBuf::from("/data/zk/params")));
        assert_eq!(config.total_budget, Some(256 << 30));
        assert_eq!(config.gpu_devices, vec![0, 1]);
        assert_eq!(config.synthesis_threads, None);
        assert_eq!(config.log_level.as_deref(), Some("debug"));
        assert!(config.is_json_log);
        assert_eq!(config.spool, PathBuf::from("/data/zk/spool"));
        assert_eq!(
            config.ignored,
            [
                "daemon.status_listen",
                "gpus.gpu_threads",
                "gpus.gpu_workers_per_device",
                "memory.eviction_min_idle",
                "memory.safety_margin",
                "pipeline.enabled",
                "scheduler.max_batch_size",
            ]
        );
    }

    #[test]
    fn a_missing_file_gives_the_defaults_and_bad_values_name_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let config = CurioConfig::read(&dir.path().join("cuzk.toml")).unwrap();
        assert_eq!(config.spool, dir.path().join("spool"));
        assert_eq!(config.listen, None);
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[memory]\ntotal_budget = \"lots\"\n").unwrap();
        let err = format!("{:#}", CurioConfig::read(&bad).unwrap_err());
        assert!(
            err.contains("memory.total_budget") && err.contains("bad.toml"),
            "{err}"
        );
        std::fs::write(&bad, "[gpus]\ndevices = \"all\"\n").unwrap();
        let err = format!("{:#}", CurioConfig::read(&bad).unwrap_err());
        assert!(err.contains("gpus.devices"), "{err}");
    }
}
