//! The `cuzk` binary: parses the command line and hands it to the library.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cuzk::cli::Cli::parse();
    let (format, level) = cli.logging();
    cuzk::logging::init(format, level.as_deref());
    let code = match cuzk::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            log::error!("{err:#}");
            2
        }
    };
    if cuzk::pipeline::has_lost_calls() {
        // A call that never answered may still hold its GPU, and the CUDA runtime's teardown
        // at exit would wait for it for ever: leave without it, everything written.
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: `_exit` ends the process at once; nothing of it is used after.
        unsafe { libc::_exit(i32::from(code)) }
    }
    ExitCode::from(code)
}
