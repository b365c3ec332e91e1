//! What the program feeding the inbox asked of the run
//! ([`RunRequests`](crate::pipeline::RunRequests)), carried out by the
//! feeder between scans, since it owns what each request touches: parameter sets loaded
//! ahead within the budget, dropped only when no job in flight proves with them, and jobs
//! withdrawn (an inbox file claimed and failed, a job in flight stopped before its next
//! partition).

use std::sync::Weak;

use anyhow::Result;

use super::Feeder;
use crate::circuits;
use crate::pipeline::job::{JobError, Outcome};
use crate::proof_kind::CircuitId;

impl Feeder<'_> {
    /// Carries out what the program feeding the inbox asked, and tells
    /// it which parameter sets are held.
    pub(super) fn carry_out_requests(&mut self) -> Result<()> {
        let asked = self.requests.take();
        for circuit in asked.preload {
            self.preload_asked(circuit);
        }
        for (circuit, answer) in asked.evict {
            let was_loaded = self.evict_asked(circuit);
            // The sets held are told before the answer, so a status asked right after it
            // no longer lists the set.
            self.requests.set_resident(self.params.resident());
            let _ = answer.send(was_loaded);
        }
        for (job, reason) in asked.withdraw {
            self.withdraw(&job, reason)?;
        }
        self.requests.set_resident(self.params.resident());
        Ok(())
    }

    /// Loads `circuit`'s parameters ahead of its first job, within the budget (making room
    /// as a job would); a set that cannot be had now is said and left to its first job.
    fn preload_asked(&mut self, circuit: CircuitId) {
        let Ok((path, _)) = circuits::param_paths(circuit) else {
            return;
        };
        if !path.is_file() {
            log::warn!(
                "not preloading {}: the file is not there (hint: fetch the parameters)",
                path.display()
            );
            return;
        }
        let footprint = match self.footprint(circuit, &path) {
            Ok(footprint) => footprint,
            Err(err) => {
                log::warn!("not preloading {}: {err:#}", path.display());
                return;
            }
        };
        let reserve = |feeder: &Self| {
            feeder
                .params
                .reserve_memory(&path, &feeder.memory, footprint.params_bytes)
        };
        if reserve(self) || (self.evict_unused(&path) && reserve(self)) {
            self.params.preload(&path, &self.events);
        } else {
            log::warn!(
                "not preloading {}: the memory budget has no room for it now; its first job loads it",
                path.display()
            );
        }
    }

    /// Drops `circuit`'s parameters unless a job in flight proves with them.
    fn evict_asked(&mut self, circuit: CircuitId) -> bool {
        let Ok((path, _)) = circuits::param_paths(circuit) else {
            return false;
        };
        self.in_flight.retain(|job| job.strong_count() > 0);
        let is_used = self
            .in_flight
            .iter()
            .filter_map(Weak::upgrade)
            .any(|job| job.params_path == path);
        if is_used || !self.params.evict(&path) {
            return false;
        }
        self.constraints.evict(&path);
        true
    }

    /// Withdraws the job named `name`: a job admitted or in flight fails before its next
    /// partition, an inbox file is claimed and failed at once; `reason` goes in its record.
    fn withdraw(&mut self, name: &str, reason: String) -> Result<()> {
        let live = self
            .admitted
            .iter()
            .map(|admitted| admitted.job.clone())
            .chain(self.in_flight.iter().filter_map(Weak::upgrade))
            .find(|job| job.name() == name && !job.is_cancelled());
        if let Some(job) = live {
            self.admitted.retain(|admitted| admitted.job.id != job.id);
            // Sent before the cancel: a stage that sees the cancel and hands the job back
            // sends after this, and the finisher keeps the first word on a job.
            let _ = self.outcome_tx.send(Outcome::Failed {
                job: job.clone(),
                error: JobError::Withdrawn(reason),
            });
            job.cancel();
            return Ok(());
        }
        let path = self.spool.layout().inbox.join(format!("{name}.json"));
        if !path.is_file() {
            return Ok(());
        }
        match self.spool.claim(&path) {
            Ok(Some(claimed)) => {
                self.inbox.claimed(&path);
                self.fail(&claimed, &JobError::Withdrawn(reason))
            }
            Ok(None) => Ok(()),
            Err(err) => {
                self.report_skipped(&path, format!("{err:#}"));
                Ok(())
            }
        }
    }
}
