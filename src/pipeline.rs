//! Pipeline (placeholder while being written).
use anyhow::Result;
/// Arguments of `cuzk prove-dir`.
#[derive(Debug, clap::Args)]
pub struct ProveDirArgs {
    /// The inbox.
    pub inbox: std::path::PathBuf,
}
/// Entry point.
pub fn prove_dir(_args: ProveDirArgs) -> Result<u8> {
    anyhow::bail!("prove-dir: work in progress")
}
