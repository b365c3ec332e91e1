//! What a long `cuzk params` step shows on stderr while it works: a bar or spinner on a
//! terminal, a line now and then otherwise, so a log shows it is alive.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Shows hashing progress on stderr: a bar on a terminal, else a line every ten seconds.
#[derive(Default)]
pub(super) struct HashProgress {
    bar: Option<(String, indicatif::ProgressBar)>,
    last_line: Option<Instant>,
}

impl HashProgress {
    /// Shows `done` of `total` bytes of `name` hashed.
    pub(super) fn show(&mut self, name: &str, done: u64, total: u64) {
        if std::io::stderr().is_terminal() {
            let is_same = self.bar.as_ref().is_some_and(|(shown, _)| shown == name);
            if !is_same {
                self.finish();
                let bar = indicatif::ProgressBar::new(total).with_message(name.to_owned());
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "hashing {msg} {bar:30} {bytes}/{total_bytes} ({eta})",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                self.bar = Some((name.to_owned(), bar));
            }
            if let Some((_, bar)) = &self.bar {
                bar.set_position(done);
            }
            return;
        }
        let is_due = self
            .last_line
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(10));
        if is_due || done == total {
            self.last_line = Some(Instant::now());
            log::info!(
                "hashing {name}: {:.1} of {:.1} GB ({:.0}%)",
                done as f64 / 1e9,
                total as f64 / 1e9,
                100.0 * done as f64 / total.max(1) as f64
            );
        }
    }

    /// Clears the bar, if any.
    pub(super) fn finish(&mut self) {
        if let Some((_, bar)) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Shows that a long step is alive: a spinner on a terminal, a line a minute otherwise.
pub(super) struct Spinner {
    bar: Option<indicatif::ProgressBar>,
    stop: Option<std::sync::mpsc::Sender<()>>,
}

impl Spinner {
    /// Starts showing `message`.
    pub(super) fn start(message: String) -> Spinner {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new_spinner().with_message(message);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            return Spinner {
                bar: Some(bar),
                stop: None,
            };
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let started = Instant::now();
        std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_secs(60))
            {
                log::info!("{message}: {:.0} s so far", started.elapsed().as_secs_f64());
            }
        });
        Spinner {
            bar: None,
            stop: Some(stop),
        }
    }

    /// Stops showing it.
    pub(super) fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        drop(self.stop);
    }
}
