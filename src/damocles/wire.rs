//! The protocol's lines, for each stage cuzk serves ([`Stage`]: `c2` and `snap_prove`): a
//! request as damocles sends it, checked; an answer as it reads it; and what an error
//! answer says about trying again.
//!
//! damocles-worker takes every C2 error as final and pauses the sealing thread that asked, so
//! an operator reads each `err_msg`. Every error answer therefore ends by saying whether
//! sending the request again can help ([`Retry`]): `(retrying cannot help: ...)` when the
//! request itself is at fault, `(retrying may help: ...)` when this machine is (a GPU or
//! driver fault, parameters that could not be loaded), which cuzk has already retried.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::c1::SectorIdentity;
use crate::event::JobStage;

/// A request as damocles sends it; `c1out` is kept as the bytes received.
#[derive(Deserialize)]
struct WireRequest<'a> {
    id: u64,
    #[serde(borrow)]
    task: WireTask<'a>,
}

#[derive(Deserialize)]
struct WireTask<'a> {
    #[serde(borrow)]
    c1out: &'a RawValue,
    prover_id: [u8; 32],
    sector_id: u64,
    miner_id: u64,
}

/// A `snap_prove` request as damocles sends it; the task is kept as the bytes received.
#[derive(Deserialize)]
struct WireSnapRequest<'a> {
    id: u64,
    #[serde(borrow)]
    task: &'a RawValue,
}

/// A request that is well formed and consistent.
#[derive(Debug)]
pub struct Request<'a> {
    /// damocles' id, which its answer must carry.
    pub id: u64,
    /// The input file it becomes, as received: a c2 request's SealCommitPhase1Output, or a
    /// snap_prove request's task (which is an update input as it stands).
    pub input: &'a str,
    /// The job name its file gets: `s-t0<miner>-<sector>.r<id>` for a C2 (the lotus
    /// sector name gives the miner and sector), `update.r<id>` for an update.
    pub base_name: String,
    /// The sector it claims to be (c2 requests; snap_prove requests do not say).
    pub sector: Option<SectorIdentity>,
}

/// Why a request line cannot be taken, and its id if one could be read.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct BadRequest {
    /// The id, when the line has a readable one.
    pub id: Option<u64>,
    /// Why.
    pub reason: String,
}

/// One answer line.
#[derive(Debug, Serialize)]
pub struct Answer {
    /// The request's id.
    pub id: u64,
    err_msg: Option<String>,
    output: Option<ProofOutput>,
}

/// A stage's output: c2's `SealCommitPhase2Output` (`{"proof": [bytes]}`), or snap_prove's
/// `SnapProveOutput` (the proof's bytes themselves); serde writes bytes as a number array.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ProofOutput {
    Seal { proof: Vec<u8> },
    Update(Vec<u8>),
}

impl Answer {
    /// The proof for request `id` of `stage`.
    pub fn proof(id: u64, proof: Vec<u8>, stage: Stage) -> Answer {
        Answer {
            id,
            err_msg: None,
            output: Some(match stage {
                Stage::C2 => ProofOutput::Seal { proof },
                Stage::SnapProve => ProofOutput::Update(proof),
            }),
        }
    }

    /// An error for request `id`, ending with what retrying can do.
    pub fn error(id: u64, message: &str, retry: Retry) -> Answer {
        Answer {
            id,
            err_msg: Some(format!("{message} {retry}")),
            output: None,
        }
    }
}

/// Whether sending a failed request again can help, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retry {
    /// The request itself is at fault: the same request fails the same way.
    CannotHelp(String),
    /// This machine is at fault, not the request.
    MayHelp(String),
}

impl Retry {
    /// What retrying a job that failed at `stage` can do. Only a GPU or driver fault is
    /// worth another try of the same request: proving (`prove`), and a proof that did not
    /// verify (`verify`: a GPU that computed wrong, or parameters that do not match their
    /// verifying key). Every other stage fails the same request the same way.
    pub fn after(stage: JobStage) -> Retry {
        match stage {
            JobStage::Prove | JobStage::Verify => Retry::MayHelp(
                "a fault of this machine (GPU, driver, parameters), not of the request".into(),
            ),
            JobStage::Spool | JobStage::Parse | JobStage::Identity | JobStage::Bind => {
                Retry::CannotHelp("the request itself is at fault".into())
            }
            JobStage::Params | JobStage::Write => Retry::MayHelp(
                "a fault of this machine (its parameters or disk), not of the request".into(),
            ),
            JobStage::Synthesis => {
                Retry::CannotHelp("the circuit cannot be synthesized from this C1 output".into())
            }
            JobStage::Crash => {
                Retry::CannotHelp("proving it took the prover down again and again".into())
            }
            // damocles never withdraws a request; another caller's choice stands.
            JobStage::Withdrawn => Retry::CannotHelp("it was withdrawn".into()),
        }
    }

    /// True when another try of the same request can succeed.
    pub fn may_help(&self) -> bool {
        matches!(self, Retry::MayHelp(_))
    }
}

impl std::fmt::Display for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Retry::CannotHelp(why) => write!(f, "(retrying cannot help: {why})"),
            Retry::MayHelp(why) => write!(f, "(retrying may help: {why})"),
        }
    }
}

/// The damocles stages cuzk serves, each a processor of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Commit phase 2 (`c2`): a PoRep proof from a C1 output.
    C2,
    /// `snap_prove`: a SnapDeals update proof from ProveReplicaUpdate1's output.
    SnapProve,
}

impl Stage {
    /// The stage's name, as damocles-worker passes it (`processor c2`, `processor snap_prove`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::C2 => "c2",
            Stage::SnapProve => "snap_prove",
        }
    }

    /// The stage named `name`.
    pub fn from_name(name: &str) -> Option<Stage> {
        [Stage::C2, Stage::SnapProve]
            .into_iter()
            .find(|stage| stage.name() == name)
    }

    /// The line a processor of this stage prints when it is ready for requests.
    pub fn ready_line(self) -> String {
        format!("{} processor ready", self.name())
    }
}

/// Reads a request line of `stage`.
pub fn parse_request(line: &str, stage: Stage) -> Result<Request<'_>, BadRequest> {
    match stage {
        Stage::C2 => parse_c2_request(line),
        Stage::SnapProve => parse_snap_request(line),
    }
}

/// Reads a snap_prove request line: a task that is an update input.
fn parse_snap_request(line: &str) -> Result<Request<'_>, BadRequest> {
    let wire: WireSnapRequest<'_> = serde_json::from_str(line).map_err(|e| BadRequest {
        id: request_id(line),
        reason: format!("not a snap_prove request: {e} (expected {{\"id\":N,\"task\":{{\"registered_proof\":..,\"vannilla_proofs\":[[bytes],..],\"comm_r_old\":[32 numbers],\"comm_r_new\":[..],\"comm_d_new\":[..]}}}})"),
    })?;
    let task = wire.task.get();
    let is_update = crate::c1::top_keys(std::path::Path::new("task"), task.as_bytes())
        .is_ok_and(|keys| crate::update::input::is_update_input(&keys));
    if !is_update {
        return Err(BadRequest {
            id: Some(wire.id),
            reason: "the task is not a SnapProve task: it has no comm_r_old (a c2 request sent to the snap_prove processor?)".into(),
        });
    }
    Ok(Request {
        id: wire.id,
        input: task,
        base_name: format!("update.r{}", wire.id),
        sector: None,
    })
}

/// Reads a c2 request line: well formed, with a prover id that is the miner's.
fn parse_c2_request(line: &str) -> Result<Request<'_>, BadRequest> {
    let wire: WireRequest<'_> = serde_json::from_str(line).map_err(|e| BadRequest {
        id: request_id(line),
        reason: format!("not a c2 request: {e} (expected {{\"id\":N,\"task\":{{\"c1out\":{{...}},\"prover_id\":[32 numbers],\"sector_id\":N,\"miner_id\":N}}}})"),
    })?;
    let bad = |reason: String| BadRequest {
        id: Some(wire.id),
        reason,
    };
    let task = wire.task;
    let sector = SectorIdentity {
        miner_id: task.miner_id,
        sector_num: task.sector_id,
    };
    if task.prover_id != sector.prover_id() {
        return Err(bad(format!(
            "prover_id {} is not the prover id of miner_id {} (t0{}), which is {}; the proof would be for another miner (hint: damocles derives both from the sector's miner; check the sector's miner id)",
            hex::encode(task.prover_id),
            task.miner_id,
            task.miner_id,
            hex::encode(sector.prover_id())
        )));
    }
    let c1out = task.c1out.get();
    if !c1out.starts_with('{') {
        return Err(bad(
            "c1out is not a JSON object; expected the SealCommitPhase1Output of commit phase 1"
                .into(),
        ));
    }
    Ok(Request {
        id: wire.id,
        input: c1out,
        base_name: format!("{sector}.r{}", wire.id),
        sector: Some(sector),
    })
}

/// The id of a request line that is not a valid request, if it has one: read as JSON, or
/// from the line's start (`{"id":N,`) when the JSON is cut short.
pub fn request_id(line: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct IdOnly {
        id: u64,
    }
    if let Ok(only) = serde_json::from_str::<IdOnly>(line) {
        return Some(only.id);
    }
    let rest = line.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"id\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let digits: &str = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    let after = rest[digits.len()..].chars().next();
    if !matches!(after, Some(',') | Some('}') | Some(' ') | Some('\t')) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: u64, prover_miner: u64, miner: u64, c1out: &str) -> String {
        let prover_id = SectorIdentity {
            miner_id: prover_miner,
            sector_num: 0,
        }
        .prover_id();
        format!(
            r#"{{"id":{id},"task":{{"c1out":{c1out},"prover_id":{},"sector_id":7,"miner_id":{miner}}}}}"#,
            serde_json::to_string(&prover_id.to_vec()).expect("json")
        )
    }

    #[test]
    fn a_good_request_keeps_its_c1_bytes() {
        let text = line(
            3,
            1000,
            1000,
            r#"{"registered_proof": "StackedDrg2KiBV1_1"}"#,
        );
        let request = parse_request(&text, Stage::C2).expect("good request");
        assert_eq!(request.id, 3);
        assert_eq!(
            request.input,
            r#"{"registered_proof": "StackedDrg2KiBV1_1"}"#
        );
        assert_eq!(
            request.sector,
            Some(SectorIdentity {
                miner_id: 1000,
                sector_num: 7
            })
        );
        assert_eq!(request.base_name, "s-t01000-7.r3");
    }

    #[test]
    fn a_prover_id_of_another_miner_is_refused_with_the_id() {
        let bad = parse_request(&line(4, 2000, 1000, "{}"), Stage::C2).expect_err("mismatch");
        assert_eq!(bad.id, Some(4));
        assert!(bad.reason.contains("miner_id 1000"), "{bad}");
        assert!(bad.reason.contains("hint"), "{bad}");
    }

    #[test]
    fn bad_lines_give_their_id_when_they_have_one() {
        let id = |text: &str| parse_request(text, Stage::C2).expect_err(text).id;
        assert_eq!(id(r#"{"id":5,"task":"nonsense"}"#), Some(5));
        assert_eq!(id(r#"{"id":6,"task":{"c1out":{"x":1}}}"#), Some(6));
        assert_eq!(id(&line(8, 1000, 1000, "[1,2]")), Some(8));
        // Cut short: the JSON is invalid, but the id leads the line as damocles writes it.
        assert_eq!(id(r#"{"id":9,"task":{"c1out":{"registered_pr"#), Some(9));
        assert_eq!(id(r#"{ "id" : 10 , "task""#), Some(10));
        assert_eq!(id("not json at all"), None);
        assert_eq!(id(r#"{"id":"eleven","task":{}}"#), None);
        assert_eq!(id(r#"{"id":12x,"task":{}}"#), None);
        assert_eq!(id(r#"{"task":{},"id":-1}"#), None);
    }

    #[test]
    fn answers_are_the_vc_processors_response_shape() {
        let ok =
            serde_json::to_string(&Answer::proof(1, vec![1, 2, 255], Stage::C2)).expect("json");
        assert_eq!(
            ok,
            r#"{"id":1,"err_msg":null,"output":{"proof":[1,2,255]}}"#
        );
        // SnapProveOutput is the bytes themselves.
        let ok =
            serde_json::to_string(&Answer::proof(2, vec![9, 0], Stage::SnapProve)).expect("json");
        assert_eq!(ok, r#"{"id":2,"err_msg":null,"output":[9,0]}"#);
        let retry = Retry::CannotHelp("x".into());
        let err = serde_json::to_string(&Answer::error(2, "no \"way\"", retry)).expect("json");
        assert_eq!(
            err,
            r#"{"id":2,"err_msg":"no \"way\" (retrying cannot help: x)","output":null}"#
        );
    }

    #[test]
    fn snap_prove_requests_keep_their_task_and_refuse_c2_tasks() {
        let task = r#"{"registered_proof":"StackedDrg2KiBV1","vannilla_proofs":[[1]],"comm_r_old":[0],"comm_r_new":[0],"comm_d_new":[0]}"#;
        let text = format!(r#"{{"id":11,"task":{task}}}"#);
        let request = parse_request(&text, Stage::SnapProve).expect("snap request");
        assert_eq!((request.id, request.input), (11, task));
        assert_eq!(request.base_name, "update.r11");
        assert_eq!(request.sector, None);
        let c2 = line(
            12,
            1000,
            1000,
            r#"{"registered_proof": "StackedDrg2KiBV1_1"}"#,
        );
        let bad = parse_request(&c2, Stage::SnapProve).expect_err("a c2 task");
        assert_eq!(bad.id, Some(12));
        assert!(bad.reason.contains("not a SnapProve task"), "{bad}");
        assert_eq!(Stage::from_name("snap_prove"), Some(Stage::SnapProve));
        assert_eq!(Stage::SnapProve.ready_line(), "snap_prove processor ready");
        assert_eq!(Stage::C2.ready_line(), "c2 processor ready");
    }

    #[test]
    fn only_faults_of_the_machine_are_worth_another_try() {
        let worth: Vec<JobStage> = JobStage::ALL
            .into_iter()
            .filter(|&stage| Retry::after(stage).may_help())
            .collect();
        assert_eq!(
            worth,
            [
                JobStage::Params,
                JobStage::Prove,
                JobStage::Verify,
                JobStage::Write
            ]
        );
    }
}
