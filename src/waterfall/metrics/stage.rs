//! Stages: what a row or a lane was doing at a moment, the unit every bar is drawn in.
//! Each drawing decides how a stage looks; this module only says which stages exist, which
//! of them rows and lanes go through, and their names in words.

use serde::Serialize;

/// What a row or a lane was doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Queue,
    Synthesis,
    Channel,
    Prove,
    Verify,
    Write,
    Params,
    /// A lane giving way to a PoSt holding the GPU priority lock (idle, on purpose).
    GpuLock,
    Idle,
}

impl Stage {
    /// Every stage, in declaration order.
    pub const ALL: [Stage; 9] = [
        Stage::Queue,
        Stage::Synthesis,
        Stage::Channel,
        Stage::Prove,
        Stage::Verify,
        Stage::Write,
        Stage::Params,
        Stage::GpuLock,
        Stage::Idle,
    ];
    /// The stages of a row (a job or a partition), in the order a job goes through them.
    pub const JOB: [Stage; 6] = [
        Stage::Queue,
        Stage::Synthesis,
        Stage::Channel,
        Stage::Prove,
        Stage::Verify,
        Stage::Write,
    ];
    /// The stages of a prover lane.
    pub const LANE: [Stage; 4] = [Stage::Prove, Stage::Params, Stage::GpuLock, Stage::Idle];

    /// The stage in words, the same in every drawing's legend and tooltips.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Queue => "queue wait",
            Stage::Synthesis => "synthesis",
            Stage::Channel => "channel wait",
            Stage::Prove => "proving",
            Stage::Verify => "verify",
            Stage::Write => "write",
            Stage::Params => "loading params",
            Stage::GpuLock => "gpu lock (PoSt)",
            Stage::Idle => "idle",
        }
    }
}
