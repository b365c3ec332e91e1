//! Intake: turns a claimed file into a sector ready to prove, or says why it is not one.
//!
//! In order: the entry must be a regular file, its JSON must be complete and a C1 output or
//! an update input ([`input`](crate::input) tells them apart by their content), a C1 file's
//! miner and sector must be known, it must bind to its circuits (a C1 file's replica id is
//! recomputed here, an update's vanilla proofs are checked against its commitments, before
//! any proving), and its parameters must be in the cache (real
//! parameters for a real file: never a directory of synthetic benchmark ones). Nothing
//! here waits long: a file still being written is handed back, and parameters that must be
//! generated are the feeder's to arrange.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::c1::{self, SectorIdentity};
use crate::input::{self, JobInput};
use crate::params::{self, MissingParamsError, SyntheticParamsError};
use crate::porep;
use crate::proof_kind::ProofKind;
use crate::sector::{BindSectorError, Sector};
use crate::spool::{C1Digest, ClaimedJob};
use crate::update::UpdateInput;

use super::job::JobError;
use crate::util::panic_message;

/// Why a claimed file did not become a sector.
pub enum IntakeError {
    /// The file is not a provable C1 file: fail the job.
    Job(JobError),
    /// The file is not complete yet: hand it back and look again later.
    NotReady(String),
    /// Its parameters are not in the cache; the sector is ready otherwise.
    MissingParams(Box<Bound>, MissingParamsError),
    /// A real file whose parameter cache holds synthetic benchmark parameters: the run is
    /// misconfigured, the file is not at fault.
    SyntheticParams(SyntheticParamsError),
}

/// A claimed file that became a sector, with the parameter file it is proved with: found
/// here once, for every stage after.
pub struct Bound {
    /// The sector and its circuits.
    pub sector: Sector,
    /// Its `.params` file in the cache.
    pub params_path: PathBuf,
    /// The digest of the C1 file's bytes, which its outbox record will carry.
    pub c1_digest: C1Digest,
}

impl IntakeRules {
    /// The rules of a run with `settings`.
    pub fn of(settings: &super::RunSettings) -> IntakeRules {
        IntakeRules {
            max_c1_bytes: settings.max_c1_bytes,
            incomplete_grace: settings.incomplete_grace,
            miner_id: settings.miner_id,
            allow_benchmark: settings.benchmark,
        }
    }
}

impl From<JobError> for IntakeError {
    fn from(err: JobError) -> Self {
        IntakeError::Job(err)
    }
}

/// What intake needs to know of the run.
#[derive(Clone, Debug)]
pub struct IntakeRules {
    /// Largest C1 file accepted.
    pub max_c1_bytes: u64,
    /// How long a file whose JSON ends early is waited for.
    pub incomplete_grace: Duration,
    /// The miner of files whose name does not say.
    pub miner_id: Option<u64>,
    /// Take benchmark shape files (`--benchmark`).
    pub allow_benchmark: bool,
}

/// Reads, identifies and binds the claimed file, and finds its parameters in the cache.
/// `waited` is how long this run has already seen the file unchanged and unfinished: a file
/// whose modification time is ahead of our clock never ages, and must not be waited for
/// forever.
pub fn bind_claimed(
    claimed: &ClaimedJob,
    rules: &IntakeRules,
    waited: Duration,
) -> Result<Bound, IntakeError> {
    if let Some(reason) = not_a_c1_file(&claimed.path) {
        return Err(JobError::Spool(reason).into());
    }
    let input = match input::read_job_input(&claimed.path, rules.max_c1_bytes) {
        Ok(input) => input,
        Err(err)
            if err.is_incomplete() && age(&claimed.path).max(waited) < rules.incomplete_grace =>
        {
            return Err(IntakeError::NotReady(err.to_string()))
        }
        Err(err) => return Err(JobError::Parse(err).into()),
    };
    // Of the bytes just parsed: the file is this run's claim, nothing writes it any more.
    let c1_digest =
        C1Digest::of_file(&claimed.path).map_err(|e| JobError::Spool(format!("{e:#}")))?;
    let sector = bind_input(&claimed.file_name, input, rules)?;
    let params_path = sector.circuits.params_path().map_err(|error| {
        JobError::Bind(BindSectorError::Invalid {
            kind: sector.kind(),
            error,
        })
    })?;
    if !sector.is_benchmark {
        params::require_real(&params_path).map_err(IntakeError::SyntheticParams)?;
    }
    let missing = params::require(&params_path, sector.circuit).err();
    let bound = Bound {
        sector,
        params_path,
        c1_digest,
    };
    match missing {
        None => Ok(bound),
        Some(missing) => Err(IntakeError::MissingParams(Box::new(bound), missing)),
    }
}

/// Binds a parsed input named `file_name` (a lotus sector name gives the miner and sector)
/// to its circuits: every check of intake but reading the file and finding its parameters.
/// `cuzk serve` judges a request with it before writing the request into the inbox.
pub fn bind_input(
    file_name: &str,
    input: JobInput,
    rules: &IntakeRules,
) -> Result<Sector, JobError> {
    let kind = input.kind();
    if input.is_benchmark() && !rules.allow_benchmark {
        let (what, bench) = match kind {
            ProofKind::Seal => ("sector", "cuzk bench"),
            ProofKind::Update => ("update", "cuzk bench --update"),
        };
        return Err(JobError::Spool(format!(
            "{file_name} is a cuzk benchmark input: synthetic data in the shape of a real {what}, whose proofs cannot verify; it is not proved as a real {what} (hint: time it with `{bench}`, or `cuzk prove-dir --benchmark` on a spool of its own)"
        )));
    }
    // storage-proofs asserts on some malformed vanilla proofs: a panic fails this job only.
    let bound = match input {
        JobInput::Seal(c1) => {
            let identity = c1::resolve_identity(Path::new(file_name), &c1, rules.miner_id)
                .map_err(JobError::Identity)?;
            catch_unwind(AssertUnwindSafe(|| porep::bind(c1, identity)))
        }
        JobInput::Update(update) => {
            let identity = update_identity(file_name, &update, rules.miner_id);
            catch_unwind(AssertUnwindSafe(|| crate::update::bind(update, identity)))
        }
    };
    match bound {
        Ok(bound) => bound.map_err(JobError::Bind),
        Err(panic) => Err(JobError::Bind(BindSectorError::Invalid {
            kind,
            error: anyhow::anyhow!(panic_message(panic.as_ref())),
        })),
    }
}

/// The sector an update input is for, when something says: the lotus file name, else the
/// file's own `miner_id` and `sector_num` (the miner from `--miner-id` if the file has only
/// the number). The proof does not depend on it; it names the job in the timeline and the
/// outbox record.
fn update_identity(
    file_name: &str,
    update: &UpdateInput,
    default_miner: Option<u64>,
) -> Option<SectorIdentity> {
    c1::identity_from_file_name(Path::new(file_name)).or_else(|| {
        Some(SectorIdentity {
            miner_id: update.miner_id.or(default_miner)?,
            sector_num: update.sector_num?,
        })
    })
}

fn age(path: &Path) -> Duration {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| m.elapsed().ok())
        .unwrap_or_default()
}

/// Why the claimed entry at `path` is not a C1 file at all, if it is not: links are never
/// followed (they could point anywhere), and directories, FIFOs and devices are never opened.
pub fn not_a_c1_file(path: &Path) -> Option<String> {
    let kind = std::fs::symlink_metadata(path).ok()?.file_type();
    let name = path.file_name()?.to_string_lossy().into_owned();
    if kind.is_symlink() {
        Some(format!("{name} is a symbolic link; cuzk never follows links out of the spool (hint: copy the C1 file into the inbox instead)"))
    } else if kind.is_dir() {
        Some(format!(
            "{name} is a directory, not a C1 file (hint: put the C1 files themselves in the inbox)"
        ))
    } else if !kind.is_file() {
        Some(format!("{name} is not a regular file (a FIFO, socket or device); cuzk only reads regular files"))
    } else {
        None
    }
}
