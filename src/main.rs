//! The `cuzk` binary: parses the command line and hands it to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match cuzk::cli::run(cuzk::cli::Cli::parse()) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("cuzk: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
