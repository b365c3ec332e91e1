//! `cuzk waterfall`: a timeline drawn as an ASCII waterfall (or SVG, or its metrics as
//! JSON) on stdout.

use anyhow::Result;

use super::flags::WaterfallArgs;
use super::print;

/// The top-level entry point for `cuzk waterfall`.
pub(super) fn draw_waterfall(args: WaterfallArgs) -> Result<u8> {
    let request = args.to_request()?;
    print(&crate::waterfall::draw(&args.timeline, &request)?)?;
    Ok(0)
}
