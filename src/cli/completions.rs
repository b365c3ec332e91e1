//! `cuzk completions` and `cuzk man`: a shell's completion script and the manual pages, made
//! from the same command definition as the parser.

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::flags::{CompletionShell, CompletionsArgs, ManArgs};
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

/// The top-level entry point for `cuzk man`: `cuzk.1` on stdout, or with `--dir` a page per
/// command written there (`cuzk.1`, `cuzk-prove-dir.1`, `cuzk-serve.1`, ...).
pub(super) fn print_man(args: ManArgs) -> Result<u8> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir)
                .with_context(|| format!("writing the manual pages into {}", dir.display()))?;
            Ok(0)
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .context("rendering the manual page")?;
            print(&String::from_utf8_lossy(&page))?;
            Ok(0)
        }
    }
}
