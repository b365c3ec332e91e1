use super::*;
use crate::process::ProcessIdentity;

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
    let mut found: Vec<PathBuf> = spool
        .scan_inbox()
        .expect("scan")
        .into_iter()
        .map(|(_, path)| path)
        .collect();
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

#[test]
fn a_file_handed_back_for_a_retry_waits_behind_the_files_there_by_its_record() {
    let (_dir, spool) = spool();
    let inbox = spool.layout().inbox.clone();
    let set_time = |name: &str, secs_ago: u64| {
        let file = File::options()
            .write(true)
            .open(inbox.join(name))
            .expect("open");
        file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
            .expect("mtime");
    };
    for name in ["a.json", "b.json", "c.json"] {
        fs::write(inbox.join(name), b"{}").expect("write");
    }
    set_time("a.json", 300);
    set_time("b.json", 200);
    set_time("c.json", 100);
    let job = spool
        .claim(&inbox.join("a.json"))
        .expect("claim")
        .expect("a");
    spool.start_attempt(&job, None).expect("record");
    spool.note_device_fault(&job, "cuda-0").expect("fault");
    let before = fs::metadata(&job.path)
        .and_then(|m| m.modified())
        .expect("mtime");
    spool.hand_back_for_retry(&job).expect("hand back");
    let listed: Vec<String> = spool
        .scan_inbox()
        .expect("scan")
        .iter()
        .map(|(_, p)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, ["b.json", "c.json", "a.json"], "a goes last");
    let after = fs::metadata(inbox.join("a.json"))
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(before, after, "the C1 file itself is not touched");
    // Once it leaves for good, its record goes, and a new file of its name is not held back.
    let job = spool
        .claim(&inbox.join("a.json"))
        .expect("claim")
        .expect("a");
    spool.hand_back(&job).expect("hand back");
    assert!(spool.handed_back_times().contains_key("a"), "still retried");
    let job = spool
        .claim(&inbox.join("a.json"))
        .expect("claim")
        .expect("a");
    spool
        .quarantine(
            &job,
            &FailureRecord {
                job: "a",
                c1_file: "a.json",
                stage: JobStage::Prove,
                message: "m",
                run_id: "r",
                failed_at: String::new(),
            },
        )
        .expect("quarantine");
    assert!(spool.handed_back_times().is_empty());
}

#[test]
fn a_file_being_read_is_in_flight_and_one_waiting_after_is_not() {
    let (_dir, spool) = spool();
    let c1 = spool.layout().inbox.join("s-t01000-1.json");
    fs::write(&c1, b"{}").expect("write");
    let job = spool.claim(&c1).expect("claim").expect("claimed");
    spool.start_attempt(&job, None).expect("record");
    spool.note_attempt_stage(&job, JobStage::Parse, None);
    let reading = spool.read_attempts(&job.name).expect("record");
    assert!(reading.is_started, "a crash while it is read is its doing");
    assert_eq!(reading.last_seen(), "stage parse");
    spool.note_attempt_waiting(&job);
    let waiting = spool.read_attempts(&job.name).expect("record");
    assert!(!waiting.is_started, "bound and waiting: not in flight");
    assert_eq!(
        waiting.last_seen(),
        "stage parse",
        "where it was last seen stays"
    );
}

#[test]
fn a_record_write_cut_short_by_a_kill_leaves_nothing_after_the_next_run() {
    let (_dir, spool) = spool();
    let c1 = spool.layout().inbox.join("s-t01000-1.json");
    fs::write(&c1, b"{}").expect("write");
    let job = spool.claim(&c1).expect("claim").expect("claimed");
    spool.start_attempt(&job, None).expect("record");
    // What a run killed half-way through rewriting the record leaves: a temporary of a
    // writer of this namespace that is gone (a pid above the kernel's limit).
    let me = ProcessIdentity::current();
    let attempts = spool.layout().work.join(".attempts");
    let temporary = attempts.join(format!(
        ".s-t01000-1.json.tmp-{}-{}-{}-0",
        me.host,
        4_194_304 + 7,
        me.namespace_tag()
    ));
    fs::write(&temporary, b"{\"runs\":").expect("temporary");
    spool
        .finish(&job, &[7u8; 192], &serde_json::json!({}))
        .expect("finish");
    assert!(
        spool.read_attempts(&job.name).is_none(),
        "the record goes with the file"
    );
    spool.release().expect("release");
    assert!(
        !attempts.exists(),
        "the attempts directory is removed with the dead writer's temporary"
    );
}
