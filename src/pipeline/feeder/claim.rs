//! Claiming from the inbox: each scan lists the files waiting, and the feeder claims and
//! admits them one at a time, in [`claim_order`], while the pool could use more work. A file
//! still settling is left for a later scan, and one that cannot be claimed is said once per
//! reason and left in the inbox.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use anyhow::Result;

use super::Feeder;
use crate::event::EventKind;
use crate::pipeline::claim_order::claim_order;
use crate::pipeline::inbox::{FileState, Readiness};
use crate::pipeline::stop::is_stopping;

impl Feeder<'_> {
    /// Claims and admits inbox files while the pool could use more work. True when files
    /// were left that a later scan may claim (still settling, or more than the pool wants).
    pub(super) fn claim_from_inbox(&mut self) -> Result<bool> {
        let mut is_waiting = false;
        let mut listed = self.spool.scan_inbox()?;
        let paths: Vec<PathBuf> = listed.iter().map(|(_, path)| path.clone()).collect();
        self.inbox.start_scan(&paths);
        while !listed.is_empty() {
            // Each claim may change the last job's circuit: what is left is ordered again.
            listed = claim_order(listed, self.last_circuit, crate::input::peek_circuit);
            let (_, path) = listed.remove(0);
            if !self.admitted.is_empty() || is_stopping() || self.halt.is_set() {
                return Ok(true);
            }
            // A file gone since the listing is left to the claim, which says so.
            let readiness = FileState::of(&path).map_or(Readiness::Ready, |state| {
                self.inbox
                    .readiness(&path, state, SystemTime::now(), Instant::now())
            });
            if readiness == Readiness::Waiting {
                is_waiting = true;
                continue;
            }
            // A sector that can never fit stops the run before its file is even claimed.
            if let Some(circuit) = crate::input::peek_circuit(&path) {
                self.check_fits(circuit)?;
            }
            let claimed = match self.spool.claim(&path) {
                Ok(Some(claimed)) => claimed,
                Ok(None) => continue,
                Err(err) => {
                    // Left in the inbox and tried again at the next scan; said once per
                    // reason, so a --once run can tell why it ends without proving it.
                    self.report_skipped(&path, format!("{err:#}"));
                    continue;
                }
            };
            self.inbox.claimed(&path);
            self.admit(claimed, None)?;
            self.start_partitions();
        }
        Ok(is_waiting)
    }

    /// Reports once per reason that the inbox file at `path` cannot be claimed.
    pub(super) fn report_skipped(&mut self, path: &Path, reason: String) {
        if !self.inbox.is_new_skip(path, &reason) {
            return;
        }
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.events.emit(EventKind::FileSkipped {
            job: crate::spool::job_name(&file_name),
            reason,
        });
    }
}
