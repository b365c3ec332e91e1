//! `cuzk completions`: a shell's completion script, made from the same command definition
//! as the parser.

use anyhow::Result;
use clap::CommandFactory;

use super::flags::{CompletionShell, CompletionsArgs};
use super::{print, Cli};

/// The top-level entry point for `cuzk completions`: the script for the shell on stdout.
pub(super) fn print_completions(args: CompletionsArgs) -> Result<u8> {
    let shell = match args.shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "cuzk", &mut script);
    print(&String::from_utf8_lossy(&script))?;
    Ok(0)
}
