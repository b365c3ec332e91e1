//! Spool: the directories a run works in, and every move of a C1 file between them.
//!
//! ```text
//! inbox/ --claim (rename)--> work/<host>-<pid>/ --proof written--> done/ (+ outbox/<job>.proof, .json)
//!                                               --job failed-----> failed/ (+ <job>.error.json)
//!                                               --set aside------> set-aside/ (+ <job>.set-aside.json)
//!        <--hand back (rename)--
//! ```
//!
//! Claims are atomic renames, so two runs on one spool (or hosts sharing it over NFS) never
//! take the same file, and a C1 file is always in exactly one directory: a crash loses
//! nothing. Each run claims into its own owner directory, `<host>-<pid>-<nonce>`, whose
//! `.owner.json` names the process ([`ProcessIdentity`](crate::process::ProcessIdentity): host, pid, a per-run nonce, the boot
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

mod attempts;
mod owner;
mod provenance;
mod renames;
#[cfg(test)]
mod tests;

pub use attempts::AttemptRecord;
pub use owner::{owner_states, Owner, OwnerState, PreviousEnd};
use owner::{remove_owner_dir, ABORT_MARKER, OWNER_FILE};
pub use provenance::{recorded_digest, C1Digest, Provenance, DIGEST_FIELD, SUPERSEDED_DIR};
use renames::{is_not_found, is_present, move_to_free_name, rename_no_replace, same_file_system};

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
    /// C1 files that kept failing alone on a prover not known to work, so that neither the
    /// file nor the device can be blamed: kept out of the inbox (made when first needed)
    /// until someone moves them back.
    pub set_aside: PathBuf,
}

impl SpoolLayout {
    /// The default layout: `work/`, `outbox/`, `failed/`, `done/` and `set-aside/` beside the
    /// inbox.
    pub fn beside(inbox: &Path) -> SpoolLayout {
        let parent = spool_dir_of(inbox);
        SpoolLayout {
            inbox: inbox.to_owned(),
            work: parent.join("work"),
            outbox: parent.join("outbox"),
            failed: parent.join("failed"),
            done: parent.join("done"),
            set_aside: parent.join("set-aside"),
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

/// What `set-aside/<job>.set-aside.json` says.
#[derive(Serialize)]
pub struct SetAsideRecord<'a> {
    /// The job.
    pub job: &'a str,
    /// The C1 file's name, now in `set-aside/`.
    pub c1_file: &'a str,
    /// Why, and how to try it again.
    pub reason: &'a str,
    /// The run that set it aside.
    pub run_id: &'a str,
    /// When, RFC 3339 UTC.
    pub set_aside_at: String,
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
            let mut has_warned = false;
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(every)
            {
                if !spool.claims.is_dir() {
                    // This run stood still past its lease (a suspended VM, an overloaded host)
                    // and another run took its claims over and removed the directory: it is
                    // alive again, so it keeps a directory to claim into.
                    log::warn!(
                        "{}: this run's claims were taken over by another run while its heartbeat went unseen past its lease ({} s); that run proves them, and this run's proofs of them will not be written (hint: give every run sharing the spool a longer --lease-secs)",
                        spool.claims.display(),
                        spool.owner.lease_secs.unwrap_or(0)
                    );
                    if let Err(err) = fs::create_dir_all(&spool.claims) {
                        log::warn!("{}: {err}", spool.claims.display());
                    }
                }
                match spool.heartbeat() {
                    Ok(()) => has_warned = false,
                    // Said once until it works again, not every beat.
                    Err(err) if !has_warned => {
                        has_warned = true;
                        log::warn!("heartbeat: {err:#}");
                    }
                    Err(_) => {}
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

    /// Entries waiting in the inbox, oldest first; a file handed back after a fault counts
    /// from when it was handed back (its attempt record says), so the files already waiting
    /// go before it. Dotfiles and temporary names are left alone; links, directories and
    /// other non-files are listed too, so that the pipeline can move them to `failed/` with a
    /// reason instead of ignoring them forever. Each entry comes with the time it queues at.
    pub fn scan_inbox(&self) -> Result<Vec<(SystemTime, PathBuf)>> {
        let handed_back = self.handed_back_times();
        let mut files = list_timed(&self.layout.inbox)?;
        if !handed_back.is_empty() {
            for (time, path) in &mut files {
                let name = path.file_name().map(|n| job_name(&n.to_string_lossy()));
                if let Some(at) = name.and_then(|n| handed_back.get(&n)) {
                    *time = (*time).max(*at);
                }
            }
            files.sort();
        }
        Ok(files)
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
        // Gone already when another run took this one's claims over.
        if self.claims.is_dir() && list_candidates(&self.claims)?.is_empty() {
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
        // A file that met a device fault or a rejected proof keeps its record: its next try
        // is proved alone.
        self.forget_attempts_unless_retried(&job.name);
        sync_dir(&self.layout.inbox)?;
        Ok(target)
    }

    /// Puts a claimed file back into the inbox after a fault of the prover's device (or a
    /// rejected proof), keeping its attempt record (see [`attempts`]): its next claim proves
    /// it alone. The record notes when, so that the files already waiting (oldest first) are
    /// claimed before it and can show whether the device works; the file itself is not
    /// touched (it may be read-only, or another user's).
    pub fn hand_back_for_retry(&self, job: &ClaimedJob) -> Result<PathBuf> {
        self.note_handed_back(job);
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

    /// Moves the C1 file to `set-aside/` with `<job>.set-aside.json` beside it: it kept
    /// failing alone where nothing shows whether the file or the device is to blame.
    pub fn set_aside(&self, job: &ClaimedJob, record: &SetAsideRecord<'_>) -> Result<PathBuf> {
        let dir = &self.layout.set_aside;
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let reason_path = dir.join(format!("{}.set-aside.json", job.name));
        let reason = serde_json::to_vec_pretty(record).context("encoding set-aside record")?;
        // The reason first: a crash in between leaves the file in work/ to be retried.
        atomic_file::write(&reason_path, &reason)?;
        self.retire(job, dir)?;
        Ok(reason_path)
    }

    fn retire(&self, job: &ClaimedJob, dir: &Path) -> Result<()> {
        // The record first: a run killed in between leaves the file claimed without one (the
        // next run starts it afresh), never a record that no file owns and a later file of
        // the same name would inherit.
        self.forget_attempts(&job.name);
        move_to_free_name(&job.path, dir, &job.file_name)
            .with_context(|| format!("moving {} to {}", job.path.display(), dir.display()))?;
        sync_dir(dir)?;
        sync_dir(&self.claims)
    }
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

/// The regular files directly in `dir` (none if it is not there) whose names `keep` takes,
/// temporary names left out, with their modification times: what `cuzk status` and `cuzk
/// serve` count.
pub fn list_files(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<(String, SystemTime)>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if is_file && !is_temporary_name(&name) && keep(&name) {
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((name, modified));
        }
    }
    Ok(found)
}

fn list_candidates(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(list_timed(dir)?.into_iter().map(|(_, path)| path).collect())
}

/// The candidates in `dir` with their modification times, oldest first.
fn list_timed(dir: &Path) -> Result<Vec<(SystemTime, PathBuf)>> {
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
    Ok(files)
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
