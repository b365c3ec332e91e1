//! Waterfall (placeholder while being written).
use anyhow::Result;
/// Arguments of `cuzk waterfall`.
#[derive(Debug, clap::Args)]
pub struct WaterfallArgs {
    /// The timeline CSV.
    pub timeline: std::path::PathBuf,
}
/// Entry point.
pub fn run(_args: WaterfallArgs) -> Result<u8> {
    anyhow::bail!("waterfall: work in progress")
}
