//! Worker names: who did the work an event reports, written in the timeline's `worker`
//! column and read back by `cuzk waterfall` and `cuzk status`.
//!
//! [`WorkerName`] is the one place a name is spelled (its `Display`) and read
//! ([`WorkerName::parse`]); everything else builds or matches the type.

use std::fmt;

/// Who did the work: a synthesis thread, a prover lane or the parameter loader.
///
/// Parsing is lossless: a name this version does not know (a newer cuzk's, or an empty
/// column) is kept as written in [`WorkerName::Other`], so a row reads back and writes out
/// the same.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkerName {
    /// `synth-N`: thread N of the synthesis pool.
    Synthesis(usize),
    /// `cpu-N`: CPU prover lane N.
    Cpu(usize),
    /// `gpu-N`, or `gpu-N.K` where several ec-gpu provers share GPU N: an ec-gpu prover lane.
    Gpu {
        /// The GPU's index among those this process sees.
        gpu: usize,
        /// Which of the provers sharing the GPU, when there are several.
        lane: Option<usize>,
    },
    /// `cuda-N`: the cuda backend's one prover on GPU N.
    Cuda(usize),
    /// `supraseal`: SupraSeal's one prover, which drives every GPU.
    Supraseal,
    /// `params`: parameter loads started ahead of the provers (while the first partitions
    /// are synthesized); not a prover lane, and every prover waits on it.
    ParamsLoader,
    /// A name this version does not know, or none (an empty column), kept as written.
    Other(String),
}

impl WorkerName {
    /// [`WorkerName::Supraseal`] as written.
    pub const SUPRASEAL: &'static str = "supraseal";
    /// [`WorkerName::ParamsLoader`] as written.
    pub const PARAMS_LOADER: &'static str = "params";

    /// Reads a name as [`WorkerName`]'s `Display` writes it; anything else is
    /// [`WorkerName::Other`].
    pub fn parse(text: &str) -> WorkerName {
        let known = match text {
            WorkerName::PARAMS_LOADER => Some(WorkerName::ParamsLoader),
            WorkerName::SUPRASEAL => Some(WorkerName::Supraseal),
            _ => {
                if let Some(n) = text.strip_prefix("synth-") {
                    index(n).map(WorkerName::Synthesis)
                } else if let Some(n) = text.strip_prefix("cpu-") {
                    index(n).map(WorkerName::Cpu)
                } else if let Some(n) = text.strip_prefix("cuda-") {
                    index(n).map(WorkerName::Cuda)
                } else if let Some(rest) = text.strip_prefix("gpu-") {
                    match rest.split_once('.') {
                        None => index(rest).map(|gpu| WorkerName::Gpu { gpu, lane: None }),
                        Some((gpu, lane)) => {
                            index(gpu)
                                .zip(index(lane))
                                .map(|(gpu, lane)| WorkerName::Gpu {
                                    gpu,
                                    lane: Some(lane),
                                })
                        }
                    }
                } else {
                    None
                }
            }
        };
        known.unwrap_or_else(|| WorkerName::Other(text.to_owned()))
    }

    /// True for the lanes that prove partitions (not synthesis, not the parameter loader).
    pub fn is_prover_lane(&self) -> bool {
        !matches!(self, WorkerName::Synthesis(_) | WorkerName::ParamsLoader)
    }

    /// True when the name is empty (a row that named no worker).
    pub fn is_empty(&self) -> bool {
        matches!(self, WorkerName::Other(name) if name.is_empty())
    }
}

/// An index as `Display` writes it: digits without leading zeros, so that parsing stays
/// lossless (`cpu-01` is not `cpu-1`).
fn index(digits: &str) -> Option<usize> {
    let n: usize = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

impl fmt::Display for WorkerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerName::Synthesis(n) => write!(f, "synth-{n}"),
            WorkerName::Cpu(n) => write!(f, "cpu-{n}"),
            WorkerName::Gpu { gpu, lane: None } => write!(f, "gpu-{gpu}"),
            WorkerName::Gpu {
                gpu,
                lane: Some(lane),
            } => write!(f, "gpu-{gpu}.{lane}"),
            WorkerName::Cuda(n) => write!(f, "cuda-{n}"),
            WorkerName::Supraseal => f.write_str(WorkerName::SUPRASEAL),
            WorkerName::ParamsLoader => f.write_str(WorkerName::PARAMS_LOADER),
            WorkerName::Other(name) => f.write_str(name),
        }
    }
}

impl From<&str> for WorkerName {
    fn from(text: &str) -> WorkerName {
        WorkerName::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_as_written() {
        let names = [
            WorkerName::Synthesis(3),
            WorkerName::Cpu(0),
            WorkerName::Gpu { gpu: 1, lane: None },
            WorkerName::Gpu {
                gpu: 0,
                lane: Some(2),
            },
            WorkerName::Cuda(7),
            WorkerName::Supraseal,
            WorkerName::ParamsLoader,
        ];
        for name in names {
            assert_eq!(WorkerName::parse(&name.to_string()), name);
        }
    }

    #[test]
    fn unknown_names_are_kept_as_written() {
        for text in [
            "", "cpu-01", "gpu-1.x", "gpu-", "feeder", "cuda-0.1", "tpu-0",
        ] {
            let name = WorkerName::parse(text);
            assert_eq!(name, WorkerName::Other(text.to_owned()));
            assert_eq!(name.to_string(), text);
        }
        assert!(WorkerName::parse("").is_empty());
        assert!(!WorkerName::ParamsLoader.is_prover_lane());
        assert!(WorkerName::parse("gpu-0.1").is_prover_lane());
    }
}
