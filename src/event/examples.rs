//! One example of every event, for tests that must cover them all (the timeline's round
//! trip among them): a new event in the table needs its example here.

use super::{EventKind, EventName, JobStage, ProveTimings, RunStartSettings, WorkerName};
use crate::proof_kind::ProofKind;
use crate::synth::SynthesisProfile;

/// One example of every event, in [`EventName::ALL`] order, for tests that must cover them all.
pub(crate) fn one_of_each() -> Vec<EventKind> {
    let job = || "s-t01000-1".to_owned();
    let worker = || WorkerName::Gpu { gpu: 0, lane: None };
    EventName::ALL
        .into_iter()
        .map(|name| match name {
            EventName::RunStart => EventKind::RunStarted {
                settings: RunStartSettings {
                    version: "0.1.0".into(),
                    provers: vec![worker(), WorkerName::Cuda(1)],
                    synth_jobs: 2,
                    synthesis_threads: 14,
                    prover_cpus: 2,
                    queue_depth: 1,
                    max_memory_bytes: 120 << 30,
                    is_benchmark: true,
                    params_dir: "/var/tmp/a;b=c".into(),
                },
            },
            EventName::Claim => EventKind::JobClaimed {
                job: job(),
                is_resumed: true,
            },
            EventName::Parsed => EventKind::JobParsed {
                job: job(),
                sector: "s-t01000-1".into(),
                sector_size: 32 << 30,
                kind: ProofKind::Update,
                partitions: 10,
                is_benchmark: true,
            },
            EventName::SynthStart => EventKind::SynthStarted {
                job: job(),
                partition: 3,
                worker: WorkerName::Synthesis(1),
            },
            EventName::SynthEnd => EventKind::SynthFinished {
                job: job(),
                partition: 3,
                worker: WorkerName::Synthesis(1),
                constraints: 130_278_869,
                is_precompiled: true,
                is_deferred: true,
                profile: SynthesisProfile {
                    witness_ms: 25_000.5, // the timeline keeps 0.1 ms
                    witness_cpu_ms: 24_000.5,
                    evaluate_ms: 0.0,
                    evaluate_cpu_ms: 0.0,
                    compact_ms: 1_500.5,
                    compact_cpu_ms: 1_400.5,
                    bytes: 92_000_000,
                    witness_path: crate::synth::WitnessPath::Native,
                },
            },
            EventName::ChanSend => EventKind::PartitionQueued {
                job: job(),
                partition: 3,
                worker: WorkerName::Synthesis(1),
            },
            EventName::MemoryWait => EventKind::MemoryWait {
                job: job(),
                partition: 4,
                needed_bytes: 17 << 30,
                in_use_bytes: 80 << 30,
                budget_bytes: 90 << 30,
            },
            EventName::GpuPickup => EventKind::ProverPickedUp {
                job: job(),
                partition: 3,
                worker: worker(),
            },
            EventName::EvalStart => EventKind::HostEvaluationStarted {
                job: job(),
                partition: 3,
                worker: worker(),
            },
            EventName::EvalEnd => EventKind::HostEvaluationFinished {
                job: job(),
                partition: 3,
                worker: worker(),
                memory_wait_ms: 250.5,
                ms: 1_312.5,
                bytes: 17_100_000_000,
            },
            EventName::ParamsGen => EventKind::ParamsGenerating {
                path: "/p/v28.params".into(),
            },
            EventName::ParamsStart => EventKind::ParamsLoadStarted {
                worker: WorkerName::ParamsLoader,
                path: "/p/v28.params".into(),
            },
            EventName::ParamsEnd => EventKind::ParamsLoadFinished {
                worker: worker(),
                path: "/p/v28.params".into(),
            },
            EventName::ConstraintsReady => EventKind::ConstraintsReady {
                path: "/p/cuzk-r1cs-v1-v28.r1cs".into(),
                is_recorded: true,
                bytes: 9 << 30,
                ms: 61_000.5,
            },
            EventName::FullSynth => EventKind::FullSynthesis {
                path: "/p/cuzk-r1cs-v1-v28.r1cs".into(),
                reason: "does not fit the memory budget now: 9 GiB (hint: raise --max-memory)"
                    .into(),
            },
            EventName::PriorityWaitStart => EventKind::PriorityWaitStarted {
                worker: worker(),
                path: "/tmp/bellman.priority.lock".into(),
            },
            EventName::PriorityWaitEnd => EventKind::PriorityWaitFinished {
                worker: worker(),
                waited_ms: 4_200.5, // the timeline keeps 0.1 ms
            },
            EventName::GpuStart => EventKind::ProveStarted {
                job: job(),
                partition: 3,
                worker: worker(),
            },
            EventName::GpuEnd => EventKind::ProveFinished {
                job: job(),
                partition: 3,
                worker: worker(),
                timings: Some(ProveTimings {
                    fft_ms: 1.5,
                    msm_g1_ms: 20.0,
                    msm_g2_ms: 7.5, // the timeline keeps 0.1 ms
                    cpu_tail_ms: 0.5,
                    gpu_call_ms: 12.5,
                    upload_ms: 3.5,
                    msm_g1_split_ms: [10.5, 4.5, 3.0, 2.0],
                    evaluate_ms: 0.5,
                    pcie_bytes: 25_312_400_000, // the timeline keeps 0.1 MB
                    beside_h_ms: 6.5,
                }),
            },
            EventName::CpuFallback => EventKind::CpuFallback {
                job: job(),
                partition: 3,
                worker: worker(),
                reason: "GPU quotient failed, done again on the CPU: out of memory".into(),
            },
            EventName::DeviceFault => EventKind::DeviceFault {
                job: job(),
                partition: 3,
                worker: worker(),
                message: "CUDA error 2: out of memory; a, b".into(),
            },
            EventName::ProverStopped => EventKind::ProverStopped {
                worker: worker(),
                faults: 3,
                message: "CUDA error 999: unknown error; last=x".into(),
            },
            EventName::GpuBusy => EventKind::GpuBusy {
                gpu: 1,
                busy_pct: 46.5,     // the timeline keeps 0.1 %
                period_ms: 1_000.5, // and 0.1 ms
            },
            EventName::VerifyStart => EventKind::VerifyStarted { job: job() },
            EventName::VerifyEnd => EventKind::VerifyFinished {
                job: job(),
                is_valid: true,
            },
            EventName::Done => EventKind::ProofWritten {
                job: job(),
                path: "/o/s-t01000-1.proof".into(),
            },
            EventName::Superseded => EventKind::ResultSuperseded {
                job: job(),
                kept_as: "/o/superseded/s-t01000-1.c1-0123456789abcdef.proof".into(),
            },
            EventName::Failed => EventKind::JobFailed {
                job: "s-t01000-2".into(),
                stage: JobStage::Verify,
                message: "did not verify: a, b; c=d".into(),
            },
            EventName::Deferred => EventKind::FileDeferred {
                job: "s-t01000-3".into(),
                reason: "JSON ends early".into(),
            },
            EventName::SetAside => EventKind::FileSetAside {
                job: "s-t01000-4".into(),
                reason: "failed alone on cuda-0 3 times".into(),
            },
            EventName::ClaimTaken => EventKind::ClaimTaken {
                job: "s-t01000-1".into(),
                reason: "another run took this claim over".into(),
            },
            EventName::Skipped => EventKind::FileSkipped {
                job: "s-t01000-\u{fffd}".into(),
                reason: "claiming it: Operation not permitted (os error 1)".into(),
            },
            EventName::Stop => EventKind::StopRequested,
            EventName::RunEnd => EventKind::RunFinished {
                proved: 1,
                failed: 1,
            },
        })
        .collect()
}

mod tests {
    use super::*;

    #[test]
    fn every_name_has_its_event() {
        let events = one_of_each();
        assert_eq!(events.len(), EventName::ALL.len());
        for (event, name) in events.iter().zip(EventName::ALL) {
            assert_eq!(event.name(), name);
        }
    }

    #[test]
    fn events_about_a_job_name_it() {
        for event in one_of_each() {
            let expected = match event.name() {
                EventName::Failed => Some("s-t01000-2"),
                EventName::Deferred => Some("s-t01000-3"),
                EventName::SetAside => Some("s-t01000-4"),
                EventName::Skipped => Some("s-t01000-\u{fffd}"),
                EventName::RunStart
                | EventName::ParamsGen
                | EventName::ParamsStart
                | EventName::ParamsEnd
                | EventName::ConstraintsReady
                | EventName::FullSynth
                | EventName::PriorityWaitStart
                | EventName::PriorityWaitEnd
                | EventName::ProverStopped
                | EventName::GpuBusy
                | EventName::Stop
                | EventName::RunEnd => None,
                _ => Some("s-t01000-1"),
            };
            assert_eq!(event.job(), expected, "{}", event.name());
        }
    }

    #[test]
    fn names_and_stages_parse_back() {
        for name in EventName::ALL {
            assert_eq!(EventName::parse(name.as_str()), Some(name));
        }
        for stage in JobStage::ALL {
            assert_eq!(JobStage::parse(stage.as_str()), Some(stage));
        }
        assert_eq!(EventName::parse("GPU_WARMUP"), None);
        assert_eq!(JobStage::parse("lunch"), None);
    }
}
