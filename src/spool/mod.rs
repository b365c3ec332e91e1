//! Spool: the directories a run works in, and every move of a C1 file between them.
//!
//! ```text
//! inbox/ --claim (rename)--> work/<host>-<pid>/ --proof written--> done/ (+ outbox/<job>.proof, .json)
//!                                               --job failed-----> failed/ (+ <job>.error.json)
//!        <--hand back (rename)--
//! ```
//!
//! Claims are atomic renames, so two runs on one spool (or hosts sharing it over NFS) never
//! take the same file, and a C1 file is always in exactly one directory: a crash loses
//! nothing. Each run claims into its own owner directory, `<host>-<pid>-<nonce>`, whose
//! `.owner.json` names the process ([`ProcessIdentity`]: host, pid, a per-run nonce, the boot
//! id and pid namespace) and whose modification time is a heartbeat. A restarted run takes
//! back the work of dead runs: at once for a process of this boot and pid namespace that is
//! gone, after the lease for any other run that stopped beating (another host's, or another
//! container's, whose pid means nothing here). Results are written through [`atomic_file`], so
//! the outbox never holds a partial proof, and each result records the digest of the C1 file
//! it was proved from (see [`provenance`]). Which files to prove and when is the pipeline's
//! business, not this module's.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use crossbeam_channel::{bounded, Sender};
use serde::Serialize;

use crate::atomic_file::{self, remove_stale_temporaries, sync_dir};
use crate::event::JobStage;
use crate::process::{Liveness, ProcessIdentity};

mod attempts;
mod provenance;

pub use attempts::AttemptRecord;
pub use provenance::{C1Digest, Provenance, DIGEST_FIELD, SUPERSEDED_DIR};

/// The directories of a spool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoolLayout {
    /// Where C1 files arrive.
    pub inbox: PathBuf,
    /// Claimed C1 files being proved.
    pub work: PathBuf,
    /// Proofs and their metadata.
    pub outbox: PathBuf,
    /// C1 files that could not be proved, each with an `.error.json`.
    pub failed: PathBuf,
    /// C1 files whose proofs are in the outbox.
    pub done: PathBuf,
}

impl SpoolLayout {
    /// The default layout: `work/`, `outbox/`, `failed/` and `done/` beside the inbox.
    pub fn beside(inbox: &Path) -> SpoolLayout {
        let parent = spool_dir_of(inbox);
        SpoolLayout {
            inbox: inbox.to_owned(),
            work: parent.join("work"),
            outbox: parent.join("outbox"),
            failed: parent.join("failed"),
            done: parent.join("done"),
        }
    }
}

/// The directory an inbox sits in (`.` for a bare name): the spool's other directories
/// and its timeline go there by default.
pub fn spool_dir_of(inbox: &Path) -> PathBuf {
    inbox
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .to_owned()
}

/// A C1 file claimed into the work directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job's name: the file name without `.json`; it names every result file.
    pub name: String,
    /// The C1 file's name as it arrived.
    pub file_name: String,
    /// Where the C1 file is now.
    pub path: PathBuf,
}

/// What `failed/<job>.error.json` says.
#[derive(Debug, Serialize)]
pub struct FailureRecord<'a> {
    /// The job.
    pub job: &'a str,
    /// The C1 file's name, now in `failed/`.
    pub c1_file: &'a str,
    /// The stage that failed.
    pub stage: JobStage,
    /// What went wrong and, where known, how to fix it.
    pub message: &'a str,
    /// The run that failed it.
    pub run_id: &'a str,
    /// When, RFC 3339 UTC.
    pub failed_at: String,
}

/// Why a proof could not be put in the outbox.
#[derive(Debug, thiserror::Error)]
pub enum FinishJobError {
    /// A result of the same name is there already (another file of the same name was proved
    /// meanwhile): the job fails, the run goes on.
    #[error("a proof named {job} is already in {outbox}; it was not overwritten (hint: two C1 files had the same name; rename one and put it back in the inbox)")]
    AlreadyProved {
        /// The job.
        job: String,
        /// The outbox.
        outbox: PathBuf,
    },
    /// The claimed file is no longer in this run's work directory: another run took the
    /// claim over (this run's heartbeat went unseen for its lease) and proves the file now.
    /// Nothing is written; this run drops the job and goes on.
    #[error("{job}: another run took this claim over ({path} is gone: this run's heartbeat went unseen past its lease, so that run proves the file now); this run's proof was not written (hint: a run stalled that long, by a suspended VM or an overloaded host, loses its claims; give every run sharing the spool a longer --lease-secs)")]
    ClaimTaken {
        /// The job.
        job: String,
        /// Where this run held the file.
        path: PathBuf,
    },
    /// The outbox could not be written (disk full, permissions): the run stops.
    #[error(transparent)]
    Io(#[from] anyhow::Error),
}

/// Who holds the claims in an owner directory of `work/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Owner {
    /// The process: host and pid, and what tells it from another with the same two (see
    /// [`ProcessIdentity`]).
    #[serde(flatten)]
    pub process: ProcessIdentity,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// The lease the run beats for: other runs wait at least this long before taking its
    /// claims over, whatever lease they were given themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_secs: Option<u64>,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        Owner {
            process: ProcessIdentity::current(),
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            lease_secs: None,
        }
    }

    /// The owner directory's name: `<host>-<pid>-<nonce>`, so that two runs with the same
    /// host name and pid (containers) never share one.
    pub fn dir_name(&self) -> String {
        let ProcessIdentity {
            host, pid, nonce, ..
        } = &self.process;
        if nonce.is_empty() {
            format!("{host}-{pid}")
        } else {
            format!("{host}-{pid}-{nonce}")
        }
    }

    /// True when the owner is known to be gone: a process of this boot and pid namespace
    /// that no longer runs. Elsewhere only its heartbeat can tell.
    pub fn is_gone(&self) -> bool {
        self.process.liveness() == Liveness::Gone
    }
}

/// An owner directory found in `work/` and whether its claims may be taken over.
#[derive(Clone, Debug, Serialize)]
pub struct OwnerState {
    /// The directory.
    pub dir: PathBuf,
    /// Who wrote it, if its `.owner.json` is readable.
    pub owner: Option<Owner>,
    /// Seconds since the last heartbeat.
    pub heartbeat_age_s: f64,
    /// C1 files it holds.
    pub jobs: usize,
    /// True when its process is gone or its lease ran out.
    pub is_dead: bool,
}

const OWNER_FILE: &str = ".owner.json";

/// Left in an owner directory by a run aborted on purpose (a second stop signal): its files
/// were not taken down by any of them.
const ABORT_MARKER: &str = ".aborted";

/// How the run that held a claim before this one ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreviousEnd {
    /// It died (killed, crashed, lost its host): the files in flight may be to blame.
    Crashed,
    /// It was aborted on purpose (a second Ctrl-C): nobody is to blame.
    Aborted,
}

/// The outbox's lock, held while a result is written.
const FINISH_LOCK: &str = ".finish.lock";

/// Beats while alive: see [`Spool::keep_alive`].
pub struct Heartbeat {
    _stop: Sender<()>,
}

/// An open spool.
#[derive(Clone, Debug)]
pub struct Spool {
    layout: SpoolLayout,
    owner: Owner,
    /// `work/<host>-<pid>/`: this run's claims.
    claims: PathBuf,
}

impl Spool {
    /// Opens the spool, creating the directories it needs. The inbox must exist: a typo in
    /// its path should not silently create an empty inbox and wait forever.
    pub fn open(layout: SpoolLayout) -> Result<Spool> {
        if !layout.inbox.is_dir() {
            anyhow::bail!(
                "{}: inbox is not a directory (hint: create it, or check the path given to prove-dir)",
                layout.inbox.display()
            );
        }
        for dir in [&layout.work, &layout.outbox, &layout.failed, &layout.done] {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        same_file_system(&layout)?;
        for dir in [&layout.outbox, &layout.failed] {
            remove_stale_temporaries(dir)?;
        }
        let owner = Owner::current();
        let claims = layout.work.join(owner.dir_name());
        fs::create_dir_all(&claims).with_context(|| format!("creating {}", claims.display()))?;
        let spool = Spool {
            layout,
            owner,
            claims,
        };
        spool.heartbeat()?;
        Ok(spool)
    }

    /// This run's owner record.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Rewrites `.owner.json`, whose modification time tells other runs this one is alive.
    pub fn heartbeat(&self) -> Result<()> {
        let record = serde_json::to_vec_pretty(&self.owner).context("encoding owner record")?;
        atomic_file::write(&self.claims.join(OWNER_FILE), &record)
    }

    /// Keeps this run's owner record fresh until the returned guard is dropped, so other runs
    /// sharing the spool do not take over its claims.
    pub fn keep_alive(&self, lease: Duration) -> Heartbeat {
        let (stop, stopped) = bounded::<()>(0);
        let every = (lease / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        let mut spool = self.clone();
        spool.owner.lease_secs = Some(lease.as_secs() + u64::from(lease.subsec_nanos() > 0));
        if let Err(err) = spool.heartbeat() {
            log::warn!("heartbeat: {err:#}");
        }
        std::thread::spawn(move || {
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(every)
            {
                if let Err(err) = spool.heartbeat() {
                    log::warn!("heartbeat: {err:#}");
                }
            }
        });
        Heartbeat { _stop: stop }
    }

    /// Every owner directory in `work/` (this run's included) and whether it is dead:
    /// a process of this host that no longer exists, or no heartbeat within `lease`.
    pub fn owners(&self, lease: Duration) -> Result<Vec<OwnerState>> {
        owner_states(&self.layout.work, lease)
    }

    /// The spool's directories.
    pub fn layout(&self) -> &SpoolLayout {
        &self.layout
    }

    /// Entries waiting in the inbox, oldest first. Dotfiles and temporary names are left
    /// alone; links, directories and other non-files are listed too, so that the pipeline
    /// can move them to `failed/` with a reason instead of ignoring them forever.
    pub fn scan_inbox(&self) -> Result<Vec<PathBuf>> {
        list_candidates(&self.layout.inbox)
    }

    /// Where a second stop signal leaves its marker ([`PreviousEnd::Aborted`]): inside this
    /// run's own directory, so the run that takes its claims over knows.
    pub fn abort_marker(&self) -> PathBuf {
        self.claims.join(ABORT_MARKER)
    }

    /// Takes over the claims of dead runs (see [`Spool::owners`]) and any file lying loose
    /// in `work/`, moving each into this run's directory, with how the run that held it
    /// ended. A rename that fails because another run took the file first is skipped.
    pub fn take_over_orphans(&self, lease: Duration) -> Result<Vec<(ClaimedJob, PreviousEnd)>> {
        let mut sources = vec![self.layout.work.clone()];
        for state in owner_states(&self.layout.work, lease)? {
            if state.dir != self.claims && state.is_dead {
                sources.push(state.dir);
            }
        }
        let mut taken = Vec::new();
        for dir in sources {
            let previous = if dir.join(ABORT_MARKER).exists() {
                PreviousEnd::Aborted
            } else {
                PreviousEnd::Crashed
            };
            for path in list_owner_claims(&dir)? {
                // Directly under work/, directories are owner directories, not claims.
                if dir == self.layout.work && path.is_dir() {
                    continue;
                }
                let Some(file_name) = path.file_name().and_then(OsStr::to_str) else {
                    continue;
                };
                let target = self.claims.join(file_name);
                if is_present(&target) {
                    log::warn!(
                        "{}: not taken over, {} already holds a job of that name",
                        path.display(),
                        self.claims.display()
                    );
                    continue;
                }
                match fs::rename(&path, &target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!("taking over {} into {}", path.display(), target.display())
                        })
                    }
                }
                taken.push((
                    ClaimedJob {
                        name: job_name(file_name),
                        file_name: file_name.to_owned(),
                        path: target,
                    },
                    previous,
                ));
            }
            if dir != self.layout.work {
                remove_owner_dir(&dir);
            }
        }
        if !taken.is_empty() {
            sync_dir(&self.claims)?;
        }
        Ok(taken)
    }

    /// Removes this run's owner directory if it holds no claims (at the end of a run).
    pub fn release(&self) -> Result<()> {
        if list_candidates(&self.claims)?.is_empty() {
            remove_owner_dir(&self.claims);
        }
        self.tidy_attempts();
        Ok(())
    }

    /// Claims `path` from the inbox by renaming it into `work/`. `Ok(None)` means another
    /// run claimed it first.
    pub fn claim(&self, path: &Path) -> Result<Option<ClaimedJob>> {
        let file_name = path
            .file_name()
            .and_then(OsStr::to_str)
            .with_context(|| {
                format!(
                    "{}: the file name is not UTF-8, and job names and results are named after it (hint: rename it, s-t0<miner>-<sector>.json as lotus names C1 files)",
                    path.display()
                )
            })?
            .to_owned();
        let target = self.claims.join(&file_name);
        if !is_present(path) {
            return Ok(None);
        }
        if is_present(&target) {
            anyhow::bail!(
                "{}: a job of the same name is already in {} (hint: wait for it to finish, or rename the new file)",
                path.display(),
                self.claims.display()
            );
        }
        match fs::rename(path, &target) {
            Ok(()) => {}
            // Not ours to claim after all, unless what vanished is our own directory: then
            // another run took our claims over (or someone removed them), and claiming on
            // quietly would prove files twice.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.claims.is_dir() => {
                return Ok(None)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
                "{}: this run's claims directory {} is gone, so another run may have taken its claims over (hint: give runs on hosts that pause a longer --lease-secs, and never remove work/ while runs use it)",
                path.display(),
                self.claims.display()
            ),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("claiming {} into {}", path.display(), target.display())
                })
            }
        }
        sync_dir(&self.claims)?;
        Ok(Some(ClaimedJob {
            name: job_name(&file_name),
            file_name,
            path: target,
        }))
    }

    /// Puts a claimed file back into the inbox (not ready yet, or the run stops), and says where.
    /// A file of the same name that arrived meanwhile is kept: the one handed back then takes
    /// a free name.
    pub fn hand_back(&self, job: &ClaimedJob) -> Result<PathBuf> {
        let target = move_to_free_name(&job.path, &self.layout.inbox, &job.file_name)
            .with_context(|| format!("handing {} back to the inbox", job.path.display()))?;
        if target.file_name().and_then(OsStr::to_str) != Some(job.file_name.as_str()) {
            log::warn!(
                "{}: handed back as {}, since a new file of that name is in the inbox",
                job.file_name,
                target.display()
            );
        }
        // A file that met a device fault keeps its record: its next try is proved alone.
        self.forget_attempts_unless_faulted(&job.name);
        sync_dir(&self.layout.inbox)?;
        Ok(target)
    }

    /// Puts a claimed file back into the inbox after a fault of the prover's device, keeping
    /// its attempt record (see [`attempts`]): its next claim proves it alone. Its
    /// modification time becomes now, so that the files already waiting (oldest first) are
    /// claimed before it and can show whether the device works.
    pub fn hand_back_for_retry(&self, job: &ClaimedJob) -> Result<PathBuf> {
        if let Err(err) = File::options()
            .write(true)
            .open(&job.path)
            .and_then(|file| file.set_modified(SystemTime::now()))
        {
            log::warn!(
                "{}: not stamped for the back of the queue: {err}",
                job.path.display()
            );
        }
        let target = move_to_free_name(&job.path, &self.layout.inbox, &job.file_name)
            .with_context(|| format!("handing {} back to the inbox", job.path.display()))?;
        sync_dir(&self.layout.inbox)?;
        Ok(target)
    }

    /// Paths of a job's proof and metadata in the outbox.
    pub fn outbox_paths(&self, job_name: &str) -> (PathBuf, PathBuf) {
        (
            self.layout.outbox.join(format!("{job_name}.proof")),
            self.layout.outbox.join(format!("{job_name}.json")),
        )
    }

    /// True when the outbox already holds a finished result for `job_name` (the metadata
    /// file is written last, so its presence means the proof is complete).
    pub fn has_result(&self, job_name: &str) -> bool {
        let (proof, meta) = self.outbox_paths(job_name);
        proof.is_file() && meta.is_file()
    }

    /// Writes a proof and its metadata to the outbox, then moves the C1 file to `done/`.
    /// A finished result of the same name is never overwritten (a proof without its
    /// metadata is a crash's leftover and is replaced).
    pub fn finish(
        &self,
        job: &ClaimedJob,
        proof: &[u8],
        metadata: &impl Serialize,
    ) -> Result<PathBuf, FinishJobError> {
        let (proof_path, meta_path) = self.outbox_paths(&job.name);
        // Runs finishing jobs of one name at once must not pair one's proof with the other's
        // metadata: "no result yet, write both" is one step under the outbox's lock.
        let _finishing = self.lock_outbox()?;
        // A claim another run took over is that run's now: writing here would race its
        // proof, and moving the file to done/ would fail for want of it.
        if !is_present(&job.path) {
            return Err(FinishJobError::ClaimTaken {
                job: job.name.clone(),
                path: job.path.clone(),
            });
        }
        if is_present(&meta_path) {
            return Err(FinishJobError::AlreadyProved {
                job: job.name.clone(),
                outbox: self.layout.outbox.clone(),
            });
        }
        atomic_file::write(&proof_path, proof)?;
        let meta = serde_json::to_vec_pretty(metadata).context("encoding proof metadata")?;
        atomic_file::write(&meta_path, &meta)?;
        self.retire(job, &self.layout.done)?;
        Ok(proof_path)
    }

    /// Holds the outbox's lock until dropped (a dotfile there, which readers of the outbox
    /// skip like the temporaries).
    fn lock_outbox(&self) -> Result<File> {
        let path = self.layout.outbox.join(FINISH_LOCK);
        let file = File::options()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        file.lock()
            .with_context(|| format!("locking {}", path.display()))?;
        Ok(file)
    }

    /// Writes a benchmark job's timings to `outbox/<job>.benchmark.json` (never a `.proof`:
    /// a benchmark shape's proof cannot verify), then moves its C1 file to `done/`.
    pub fn finish_benchmark(
        &self,
        job: &ClaimedJob,
        record: &impl Serialize,
    ) -> Result<PathBuf, FinishJobError> {
        let path = self
            .layout
            .outbox
            .join(format!("{}.benchmark.json", job.name));
        let bytes = serde_json::to_vec_pretty(record).context("encoding benchmark result")?;
        atomic_file::write(&path, &bytes)?;
        self.retire(job, &self.layout.done)?;
        Ok(path)
    }

    /// Moves a job whose result is already in the outbox to `done/` (a crash after writing
    /// the proof but before moving the C1 file).
    pub fn retire_finished(&self, job: &ClaimedJob) -> Result<()> {
        self.retire(job, &self.layout.done)
    }

    /// Moves the C1 file to `failed/` with `<job>.error.json` beside it.
    pub fn quarantine(&self, job: &ClaimedJob, record: &FailureRecord<'_>) -> Result<PathBuf> {
        let reason_path = self.layout.failed.join(format!("{}.error.json", job.name));
        let reason = serde_json::to_vec_pretty(record).context("encoding failure record")?;
        // The reason first: a crash in between leaves the file in work/ to be retried.
        atomic_file::write(&reason_path, &reason)?;
        self.retire(job, &self.layout.failed)?;
        Ok(reason_path)
    }

    fn retire(&self, job: &ClaimedJob, dir: &Path) -> Result<()> {
        move_to_free_name(&job.path, dir, &job.file_name)
            .with_context(|| format!("moving {} to {}", job.path.display(), dir.display()))?;
        self.forget_attempts(&job.name);
        sync_dir(dir)?;
        sync_dir(&self.claims)
    }
}

/// The owner directories in `work/`, with whether each is dead.
pub fn owner_states(work: &Path, lease: Duration) -> Result<Vec<OwnerState>> {
    let mut states = Vec::new();
    for entry in fs::read_dir(work).with_context(|| format!("listing {}", work.display()))? {
        let entry = entry.with_context(|| format!("listing {}", work.display()))?;
        // Dot-directories (`.attempts`) are the spool's own bookkeeping, not owners.
        let is_hidden = entry.file_name().to_string_lossy().starts_with('.');
        if is_hidden || !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let dir = entry.path();
        let owner_path = dir.join(OWNER_FILE);
        let owner: Option<Owner> = fs::read(&owner_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        // Without a readable record the directory's own age stands in for the heartbeat.
        let beat = fs::metadata(&owner_path)
            .or_else(|_| fs::metadata(&dir))
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let heartbeat_age = beat.elapsed().unwrap_or_default();
        // A pid is looked at only where it is provably of this boot and pid namespace: a
        // container's run with this host's name and pid is not this host's process.
        let is_gone = owner.as_ref().is_some_and(Owner::is_gone);
        let owner_lease =
            Duration::from_secs(owner.as_ref().and_then(|o| o.lease_secs).unwrap_or(0));
        states.push(OwnerState {
            jobs: list_owner_claims(&dir)?.len(),
            dir,
            owner,
            heartbeat_age_s: heartbeat_age.as_secs_f64(),
            is_dead: is_gone || heartbeat_age > lease.max(owner_lease),
        });
    }
    states.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(states)
}

/// The job name for a C1 file name: without a `.json` extension.
pub fn job_name(file_name: &str) -> String {
    file_name
        .strip_suffix(".json")
        .unwrap_or(file_name)
        .to_owned()
}

/// True for names writers use while a file is incomplete: dotfiles (rsync's `.name.XXXXXX`)
/// and temporary suffixes.
pub fn is_temporary_name(file_name: &str) -> bool {
    const TEMP_SUFFIXES: [&str; 6] = [".tmp", ".part", ".partial", ".swp", "~", ".crdownload"];
    file_name.starts_with('.') || TEMP_SUFFIXES.iter().any(|s| file_name.ends_with(s))
}

fn list_candidates(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        // A name that is not UTF-8 is listed too: claiming it fails with a reason, which
        // beats leaving it in the inbox unmentioned.
        let name = entry.file_name();
        if is_temporary_name(&name.to_string_lossy()) {
            continue;
        }
        // symlink_metadata: a link's own time, never its target's.
        let modified = fs::symlink_metadata(entry.path())
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        files.push((modified, entry.path()));
    }
    files.sort();
    Ok(files.into_iter().map(|(_, path)| path).collect())
}

/// [`list_candidates`] of an owner directory (or `work/` itself). Another run may remove an
/// owner directory at any moment, after taking its claims over or on releasing its own, so
/// one that is gone holds nothing rather than failing the run that looked.
fn list_owner_claims(dir: &Path) -> Result<Vec<PathBuf>> {
    match list_candidates(dir) {
        Err(err) if is_not_found(&err) => Ok(Vec::new()),
        listed => listed,
    }
}

fn is_not_found(err: &anyhow::Error) -> bool {
    err.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// True if an entry named `path` exists, links included (a dangling link exists too; `Path::
/// exists` would follow it and say no).
fn is_present(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// Moves `from` to `dir/name`, or to `dir/name.N` if that exists, never replacing a file:
/// runs retiring files of one name at once, or a new file dropped into the inbox while one of
/// its name was claimed, must not cost a C1 file.
fn move_to_free_name(from: &Path, dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    let candidates =
        std::iter::once(dir.join(name)).chain((1..).map(|n| dir.join(format!("{name}.{n}"))));
    for target in candidates {
        match rename_no_replace(from, &target) {
            Ok(()) => return Ok(target),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the candidate names never end")
}

/// Renames `from` to `to` unless an entry named `to` exists (`AlreadyExists`, and nothing
/// moved), atomically where the file system can tell.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::io::{Error, ErrorKind};
    use std::os::unix::ffi::OsStrExt;
    let c_path = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| Error::new(ErrorKind::InvalidInput, "a path with a NUL byte"))
    };
    let (from_c, to_c) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = Error::last_os_error();
    if !matches!(
        err.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
    ) {
        return Err(err);
    }
    // A file system without RENAME_NOREPLACE (NFS, say): a hard link fails atomically if
    // the target exists. A crash between link and unlink leaves the file in both places,
    // which costs a duplicate job, never a lost file.
    match fs::hard_link(from, to) {
        Ok(()) => fs::remove_file(from),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(e),
        // No hard links either: check, then rename (racy, but the best this file system allows).
        Err(_) if is_present(to) => Err(Error::from(ErrorKind::AlreadyExists)),
        Err(_) => fs::rename(from, to),
    }
}

/// Removes an owner directory that holds no claims: its `.owner.json` and any temporary
/// file a killed run left, then the directory. Races with another run tidying the same
/// directory are harmless, so errors are ignored.
fn remove_owner_dir(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    let _ = fs::remove_dir(dir);
}

/// Fails unless the inbox, work, done and failed directories share a file system: a C1 file
/// moves between them by renames, which cannot cross file systems (every claim would fail).
/// The outbox may live anywhere: results are written inside it.
fn same_file_system(layout: &SpoolLayout) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let device = |dir: &Path| {
        fs::metadata(dir)
            .map(|m| m.dev())
            .with_context(|| format!("reading {}", dir.display()))
    };
    let inbox = device(&layout.inbox)?;
    for (flag, dir) in [
        ("--work", &layout.work),
        ("--done", &layout.done),
        ("--failed", &layout.failed),
    ] {
        if device(dir)? != inbox {
            anyhow::bail!(
                "{}: not on the file system of the inbox {}; C1 files move between them by renames, which cannot cross file systems (hint: give {flag} a directory on the inbox's file system, or leave it out to use the one beside the inbox)",
                dir.display(),
                layout.inbox.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spool() -> (tempfile::TempDir, Spool) {
        let dir = tempfile::tempdir().expect("tempdir");
        let inbox = dir.path().join("inbox");
        fs::create_dir(&inbox).expect("inbox");
        let spool = Spool::open(SpoolLayout::beside(&inbox)).expect("open");
        (dir, spool)
    }

    #[test]
    fn scan_skips_temporary_names_directories_and_links() {
        let (_dir, spool) = spool();
        let inbox = &spool.layout().inbox;
        for name in [
            "s-t01000-1.json",
            ".s-t01000-2.json.Ab12Cd",
            "x.json.tmp",
            "y.part",
        ] {
            fs::write(inbox.join(name), b"{}").expect("write");
        }
        fs::create_dir(inbox.join("dir.json")).expect("dir");
        std::os::unix::fs::symlink("/etc/hostname", inbox.join("link.json")).expect("link");
        let mut found = spool.scan_inbox().expect("scan");
        found.sort();
        // The directory and the link are listed (to be failed with a reason), the
        // temporary names are not.
        assert_eq!(
            found,
            vec![
                inbox.join("dir.json"),
                inbox.join("link.json"),
                inbox.join("s-t01000-1.json")
            ]
        );
    }

    #[test]
    fn a_claimed_file_is_in_exactly_one_place() {
        let (_dir, spool) = spool();
        let c1 = spool.layout().inbox.join("s-t01000-1.json");
        fs::write(&c1, b"{}").expect("write");
        let job = spool.claim(&c1).expect("claim").expect("claimed");
        assert_eq!(job.name, "s-t01000-1");
        assert!(!c1.exists() && job.path.exists());
        // A second claimant finds nothing.
        assert_eq!(spool.claim(&c1).expect("claim"), None);
        // A live run's own claims are never "orphans".
        assert!(spool
            .take_over_orphans(Duration::ZERO)
            .expect("orphans")
            .is_empty());
        spool.hand_back(&job).expect("hand back");
        assert!(c1.exists() && !job.path.exists());
    }

    #[test]
    fn a_file_handed_back_never_replaces_a_new_one_of_its_name() {
        let (_dir, spool) = spool();
        let c1 = spool.layout().inbox.join("s-t01000-1.json");
        fs::write(&c1, b"first").expect("write");
        let job = spool.claim(&c1).expect("claim").expect("claimed");
        fs::write(&c1, b"second").expect("a new file of the same name");
        spool.hand_back(&job).expect("hand back");
        let inbox = &spool.layout().inbox;
        assert_eq!(fs::read(&c1).expect("new"), b"second");
        assert_eq!(
            fs::read(inbox.join("s-t01000-1.json.1")).expect("handed back"),
            b"first"
        );
        assert!(!job.path.exists());
    }

    #[test]
    fn files_of_one_name_moved_into_one_directory_at_once_are_all_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let done = dir.path().join("done");
        fs::create_dir(&done).expect("done");
        let sources: Vec<PathBuf> = (0..8u8)
            .map(|i| {
                let from = dir.path().join(format!("claims-{i}"));
                fs::create_dir(&from).expect("claims");
                let file = from.join("a.json");
                fs::write(&file, [i]).expect("c1");
                file
            })
            .collect();
        let start = std::sync::Barrier::new(sources.len());
        std::thread::scope(|scope| {
            for from in &sources {
                let (done, start) = (&done, &start);
                scope.spawn(move || {
                    start.wait();
                    move_to_free_name(from, done, "a.json").expect("move");
                });
            }
        });
        let mut contents: Vec<u8> = fs::read_dir(&done)
            .expect("list")
            .map(|e| fs::read(e.expect("entry").path()).expect("read")[0])
            .collect();
        contents.sort();
        assert_eq!(
            contents,
            (0..8).collect::<Vec<u8>>(),
            "no file replaced another"
        );
    }

    #[test]
    fn a_run_whose_claims_directory_vanished_says_so_instead_of_claiming_nothing() {
        let (_dir, spool) = spool();
        let c1 = spool.layout().inbox.join("s-t01000-1.json");
        fs::write(&c1, b"{}").expect("write");
        fs::remove_dir_all(&spool.claims).expect("taken over and removed");
        let err = spool.claim(&c1).expect_err("not a quiet Ok(None)");
        assert!(format!("{err:#}").contains("claims directory"), "{err:#}");
        assert!(c1.exists(), "left in the inbox");
    }

    #[test]
    fn an_owner_directory_removed_by_another_run_holds_nothing() {
        let (dir, _spool) = spool();
        assert!(list_owner_claims(&dir.path().join("work/gone-1"))
            .expect("gone is empty")
            .is_empty());
        let not_a_dir = dir.path().join("file");
        fs::write(&not_a_dir, b"x").expect("file");
        assert!(
            list_owner_claims(&not_a_dir).is_err(),
            "other errors still fail"
        );
    }

    #[test]
    fn dead_owners_are_taken_over_and_live_ones_are_not() {
        let (_dir, spool) = spool();
        let work = spool.layout().work.clone();
        let lease = Duration::from_secs(3600);
        let plant = |owner: &Owner, file: &str| {
            let dir = work.join(owner.dir_name());
            fs::create_dir_all(&dir).expect("owner dir");
            fs::write(
                dir.join(OWNER_FILE),
                serde_json::to_vec(owner).expect("json"),
            )
            .expect("owner");
            fs::write(dir.join(file), b"{}").expect("c1");
        };
        // A process of this boot and pid namespace that is gone (pid beyond pid_max), one
        // that is alive (this test), another host's run with a fresh heartbeat, and a loose
        // file.
        let here = ProcessIdentity::current();
        let owner = |process: ProcessIdentity, lease_secs: Option<u64>| Owner {
            process,
            started_at: "x".into(),
            lease_secs,
        };
        let dead = owner(
            ProcessIdentity {
                pid: 4_999_999,
                nonce: "dead".into(),
                ..here.clone()
            },
            None,
        );
        let alive = owner(here.clone(), None);
        let remote = owner(
            ProcessIdentity {
                host: "elsewhere".into(),
                pid: 1,
                nonce: "remote".into(),
                boot_id: Some("another-boot".into()),
                ..here.clone()
            },
            None,
        );
        // Another host's run that beats for an hour's lease: judged by its lease, not ours.
        let patient = owner(
            ProcessIdentity {
                host: "elsewhere".into(),
                pid: 2,
                nonce: "patient".into(),
                boot_id: Some("another-boot".into()),
                ..here.clone()
            },
            Some(3600),
        );
        plant(&dead, "a.json");
        plant(&alive, "b.json");
        plant(&remote, "c.json");
        plant(&patient, "e.json");
        fs::write(work.join("d.json"), b"{}").expect("loose");
        let mut taken: Vec<String> = spool
            .take_over_orphans(lease)
            .expect("take over")
            .into_iter()
            .map(|(j, _)| j.file_name)
            .collect();
        taken.sort();
        assert_eq!(taken, vec!["a.json", "d.json"]);
        assert!(
            !work.join(dead.dir_name()).exists(),
            "dead owner's directory removed"
        );
        assert!(work.join(alive.dir_name()).join("b.json").exists());
        // Once the lease runs out, the silent remote run's work is taken too.
        let taken = spool.take_over_orphans(Duration::ZERO).expect("take over");
        assert!(taken.iter().any(|(j, _)| j.file_name == "c.json"));
        assert!(!taken.iter().any(|(j, _)| j.file_name == "e.json"));
        assert!(work.join(patient.dir_name()).join("e.json").exists());
    }

    /// Two runs with one host name and pid (containers with host networking, cuzk as PID 1
    /// in each) in two pid namespaces: neither is taken for dead while it beats, and their
    /// directories are their own.
    #[test]
    fn a_run_with_this_host_and_pid_in_another_namespace_is_left_alone_while_it_beats() {
        let (_dir, spool) = spool();
        let work = spool.layout().work.clone();
        let here = ProcessIdentity::current();
        let twin = Owner {
            process: ProcessIdentity {
                nonce: "twin".into(),
                pid_ns: here.pid_ns.map(|ns| ns + 1),
                ..here.clone()
            },
            started_at: "x".into(),
            lease_secs: None,
        };
        assert_ne!(
            twin.dir_name(),
            spool.owner().dir_name(),
            "a directory each"
        );
        let dir = work.join(twin.dir_name());
        fs::create_dir_all(&dir).expect("owner dir");
        fs::write(
            dir.join(OWNER_FILE),
            serde_json::to_vec(&twin).expect("json"),
        )
        .expect("owner");
        fs::write(dir.join("a.json"), b"{}").expect("c1");
        assert!(spool
            .take_over_orphans(Duration::from_secs(3600))
            .expect("take over")
            .is_empty());
        assert!(dir.join("a.json").exists(), "its claim is its own");
        // Silent beyond the lease, it is taken over as any run elsewhere would be.
        let taken = spool.take_over_orphans(Duration::ZERO).expect("take over");
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].1, PreviousEnd::Crashed);
    }

    #[test]
    fn the_claims_of_a_run_aborted_on_purpose_say_so() {
        let (_dir, spool) = spool();
        let work = spool.layout().work.clone();
        let gone = Owner {
            process: ProcessIdentity {
                pid: 4_999_999,
                nonce: "aborted".into(),
                ..ProcessIdentity::current()
            },
            started_at: "x".into(),
            lease_secs: None,
        };
        let dir = work.join(gone.dir_name());
        fs::create_dir_all(&dir).expect("owner dir");
        fs::write(
            dir.join(OWNER_FILE),
            serde_json::to_vec(&gone).expect("json"),
        )
        .expect("owner");
        fs::write(dir.join("a.json"), b"{}").expect("c1");
        fs::write(dir.join(ABORT_MARKER), b"").expect("marker");
        let taken = spool
            .take_over_orphans(Duration::from_secs(3600))
            .expect("take over");
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].1, PreviousEnd::Aborted);
        assert!(!dir.exists(), "its directory, marker and all, is gone");
    }

    #[test]
    fn runs_finishing_jobs_of_one_name_at_once_leave_one_whole_result() {
        let (dir, spool) = spool();
        let jobs: Vec<ClaimedJob> = (0..4u8)
            .map(|round| {
                let claims = dir.path().join(format!("claims-{round}"));
                fs::create_dir(&claims).expect("claims");
                let path = claims.join("a.json");
                fs::write(&path, format!("{round}")).expect("c1");
                ClaimedJob {
                    name: "a".into(),
                    file_name: "a.json".into(),
                    path,
                }
            })
            .collect();
        let start = std::sync::Barrier::new(jobs.len());
        let finished: Vec<bool> = std::thread::scope(|scope| {
            let runs: Vec<_> = jobs
                .iter()
                .enumerate()
                .map(|(round, job)| {
                    let (spool, start) = (spool.clone(), &start);
                    scope.spawn(move || {
                        start.wait();
                        match spool.finish(
                            job,
                            &[round as u8; 192],
                            &serde_json::json!({ "round": round }),
                        ) {
                            Ok(_) => true,
                            Err(FinishJobError::AlreadyProved { .. }) => false,
                            Err(err) => panic!("{err}"),
                        }
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().expect("run")).collect()
        });
        assert_eq!(finished.iter().filter(|&&f| f).count(), 1, "{finished:?}");
        let round = finished.iter().position(|&f| f).expect("one finished");
        let outbox = &spool.layout().outbox;
        assert_eq!(
            fs::read(outbox.join("a.proof")).expect("proof"),
            vec![round as u8; 192],
            "the proof is the one its metadata describes"
        );
        assert!(fs::read_to_string(outbox.join("a.json"))
            .expect("metadata")
            .contains(&format!("\"round\": {round}")));
    }

    #[test]
    fn a_claim_another_run_took_over_is_never_written() {
        let (_dir, spool) = spool();
        let layout = spool.layout().clone();
        let c1 = layout.inbox.join("b.json");
        fs::write(&c1, "b").expect("write");
        let claimed = spool.claim(&c1).expect("claim").expect("claimed");
        // The other run's takeover moves the file out of this run's work directory.
        fs::rename(&claimed.path, layout.inbox.join("b.json")).expect("take over");
        let err = spool
            .finish(&claimed, &[5u8; 192], &serde_json::json!({}))
            .expect_err("the claim is gone");
        assert!(matches!(err, FinishJobError::ClaimTaken { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("another run took this claim over") && text.contains("--lease-secs"),
            "{text}"
        );
        assert!(!text.contains("free space"), "{text}");
        assert!(!spool.has_result("b"), "nothing written");
        assert!(!layout.outbox.join("b.proof").exists());
        assert_eq!(
            fs::read_to_string(layout.inbox.join("b.json")).expect("c1"),
            "b"
        );
    }

    #[test]
    fn finish_and_quarantine_leave_results_and_never_overwrite() {
        let (_dir, spool) = spool();
        let layout = spool.layout().clone();
        let claim = |round: u8| {
            let c1 = layout.inbox.join("a.json");
            fs::write(&c1, format!("{round}")).expect("write");
            spool.claim(&c1).expect("claim").expect("claimed")
        };
        let first = claim(0);
        spool
            .finish(&first, &[7u8; 192], &serde_json::json!({"round": 0}))
            .expect("finish");
        // A second file of the same name must not replace the first proof.
        let second = claim(1);
        let err = spool
            .finish(&second, &[9u8; 192], &serde_json::json!({"round": 1}))
            .expect_err("an existing proof is never overwritten");
        assert!(matches!(err, FinishJobError::AlreadyProved { .. }), "{err}");
        assert!(spool.has_result("a"));
        assert_eq!(
            fs::read(layout.outbox.join("a.proof")).expect("proof"),
            vec![7u8; 192]
        );
        assert!(fs::read_to_string(layout.outbox.join("a.json"))
            .expect("metadata")
            .contains("\"round\": 0"));
        assert_eq!(
            fs::read_to_string(layout.done.join("a.json")).expect("c1"),
            "0"
        );
        // The refused file is still claimed, not lost.
        assert_eq!(fs::read_to_string(&second.path).expect("c1"), "1");
        // Retiring never overwrites either: a file of the same name in done/ gets a suffix.
        spool.retire_finished(&second).expect("retire");
        assert_eq!(
            fs::read_to_string(layout.done.join("a.json.1")).expect("c1"),
            "1"
        );

        fs::write(layout.inbox.join("b.json"), b"junk").expect("write");
        let job = spool
            .claim(&layout.inbox.join("b.json"))
            .expect("claim")
            .expect("claimed");
        let record = FailureRecord {
            job: &job.name,
            c1_file: &job.file_name,
            stage: JobStage::Parse,
            message: "not JSON",
            run_id: "r",
            failed_at: "now".into(),
        };
        let reason = spool.quarantine(&job, &record).expect("quarantine");
        let text = fs::read_to_string(reason).expect("reason");
        assert!(text.contains("\"stage\": \"parse\""), "{text}");
        assert!(layout.failed.join("b.json").exists());
        let leftovers: Vec<_> = fs::read_dir(&layout.outbox)
            .expect("outbox")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.') && name != FINISH_LOCK)
            .collect();
        assert!(
            leftovers.is_empty(),
            "temporary files left behind: {leftovers:?}"
        );
    }
}
