//! `cuzk status`: what a spool holds and how its last run went, as text, JSON or
//! Prometheus metrics.

use anyhow::Result;

use super::flags::StatusArgs;
use super::print;
use crate::{prometheus, status};

/// The top-level entry point for `cuzk status`.
pub(super) fn show_status(args: StatusArgs) -> Result<u8> {
    let lease = args.lease()?;
    if args.prometheus || args.textfile.is_some() {
        let metrics = prometheus::collect(&args.spool, args.timeline.as_deref(), lease)?;
        let text = prometheus::render(&metrics);
        if let Some(path) = &args.textfile {
            prometheus::write_textfile(path, &text)?;
        }
        if args.prometheus {
            print(&text)?;
        }
        if !args.json {
            return Ok(0);
        }
    }
    let status = status::inspect_spool(&args.spool, args.timeline.as_deref(), lease)?;
    if args.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&status)?))?;
    } else {
        print(&status::render(&status))?;
    }
    Ok(0)
}
