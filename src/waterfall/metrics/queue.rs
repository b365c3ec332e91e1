//! The queue: how long synthesized partitions waited for a prover, and how much of that the
//! provers could not have helped because every lane was busy or loading.

use serde::Serialize;

use super::lanes::LaneMetrics;
use super::waits::WaitSets;
use crate::waterfall::intervals::Intervals;
use crate::waterfall::shared::ratio;

/// The channel between synthesis and the provers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueMetrics {
    /// Time with at least one partition queued.
    pub queued_s: f64,
    pub queued_fraction: f64,
    /// Queue time summed over partitions (can exceed the span).
    pub partition_wait_s: f64,
    /// Time with a partition queued while every lane was busy or loading parameters.
    pub prover_bound_s: f64,
    pub prover_bound_fraction: f64,
    /// Of that, time with some lane loading parameters: partitions queued behind a load, held
    /// back by the parameters rather than by the provers' speed.
    pub behind_loading_s: f64,
}

/// Queued time over the span, and how much of it every lane was occupied.
pub(super) fn queue_metrics(
    lanes: &[LaneMetrics],
    window: &Intervals,
    waits: &WaitSets,
) -> QueueMetrics {
    let queued = waits.queued.intersect(window);
    let every_lane_occupied = lanes
        .iter()
        .map(|lane| lane.proving.union(&lane.loading))
        .reduce(|all, lane| all.intersect(&lane))
        .unwrap_or_default();
    let prover_bound = queued.intersect(&every_lane_occupied);
    let some_lane_loading = lanes
        .iter()
        .map(|lane| lane.loading.clone())
        .reduce(|all, lane| all.union(&lane))
        .unwrap_or_default();
    let prover_bound_s = prover_bound.total();
    QueueMetrics {
        behind_loading_s: prover_bound.intersect(&some_lane_loading).total(),
        queued_s: queued.total(),
        queued_fraction: ratio(queued.total(), window.total()),
        partition_wait_s: waits.queued_sum,
        prover_bound_s,
        prover_bound_fraction: ratio(prover_bound_s, window.total()),
    }
}
