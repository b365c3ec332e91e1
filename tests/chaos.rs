//! Chaos: the real binary killed with SIGKILL at random moments, over and over, while it
//! proves six sectors of two partitions each, with a device fault injected at a random call
//! of one run and every native witness of another made wrong (so their proofs are rejected).
//! After every kill each C1 file is in exactly one place; at the end every one is proved
//! exactly once, its proof verifies, and none is in `failed/` or `set-aside/`: files in
//! flight at a crash are proved alone afterwards, a crash counts against a file only when it
//! was alone in flight, a device fault and a first rejected proof hand the file back.
//!
//! The sectors are 2KiB sectors with two partitions: filecoin-proofs' `POREP_PARTITIONS` is
//! set to 2 for 2KiB in this test's own process (to seal them, generate their parameters and
//! verify), and `CUZK_TEST_POREP_PARTITIONS` sets it in the binary. Their parameters are
//! their own, generated into the parameter cache on first use (as tests/multi_partition.rs
//! does) and kept there.

mod common;

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use common::{c1_locations, cuzk_command, names, show, verifies_for_sector};
use cuzk::c1::SectorIdentity;
use rand::SeedableRng;

const SECTORS: u64 = 6;

/// Kills: three, so that even a file killed every time could be blamed twice at most, under
/// the default `--max-attempts` of three (the first kill of a file in flight with others
/// only makes it solo).
const KILLS: usize = 3;

const ONCE: [&str; 7] = [
    "prove-dir",
    "inbox",
    "--once",
    "--settle-secs",
    "0",
    "--incomplete-grace-secs",
    "0",
];

fn two_partitions_for_2kib() {
    let mut partitions = filecoin_proofs::POREP_PARTITIONS
        .write()
        .expect("POREP_PARTITIONS lock");
    partitions.insert(2048, 2);
}

fn run_binary(root: &Path) -> std::process::Command {
    let mut cmd = cuzk_command(&ONCE, root);
    cmd.env(cuzk::test_sizes::VARIABLE, "2048=2");
    cmd
}

/// Ten two-partition sectors in the inbox, oldest first.
fn seal_sectors(inbox: &Path) -> Vec<String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(21);
    (1..=SECTORS)
        .map(|sector_num| {
            let identity = SectorIdentity {
                miner_id: 1000,
                sector_num,
            };
            let c1 = cuzk::sealing::seal_random_sector(2048, identity, &mut rng).expect("seal");
            let json = serde_json::to_value(&c1).expect("C1 to JSON");
            let partitions = json["vanilla_proofs"]["StackedDrg2KiBV1"]
                .as_array()
                .map_or(0, Vec::len);
            assert_eq!(partitions, 2, "sealed with two partitions");
            let name = format!("{identity}.json");
            fs::write(inbox.join(&name), serde_json::to_vec(&json).expect("JSON"))
                .expect("write C1");
            std::thread::sleep(Duration::from_millis(20));
            name
        })
        .collect()
}

/// Each of `expected` is in exactly one place.
fn assert_each_in_one_place(root: &Path, expected: &[String], when: &str) {
    let found = c1_locations(root);
    for name in expected {
        let places = found.iter().filter(|(n, _)| n == name).count();
        assert_eq!(places, 1, "{when}: {name} is in {places} places: {found:?}");
    }
    assert_eq!(found.len(), expected.len(), "{when}: no copies: {found:?}");
}

#[test]
fn kill_nine_at_random_points_proves_every_file_exactly_once() {
    two_partitions_for_2kib();
    let (params, vk) = cuzk::porep::param_paths(2048).expect("param paths");
    if !(params.is_file() && vk.is_file()) {
        eprintln!(
            "generating 2KiB two-partition test parameters into {}",
            params.display()
        );
        cuzk::circuits::generate_params(cuzk::proof_kind::CircuitId::seal(2048))
            .expect("generate parameters");
    }
    let (dir, inbox) = common::spool();
    let root = dir.path();
    let files = seal_sectors(&inbox);

    // A small generator seeded by the clock; the seed is printed to replay a failure.
    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("kill schedule seed: {seed}");
    let mut next = |max: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % max
    };
    let timeline = root.join("timeline.csv");
    let faulty_call = 1 + next(6);
    eprintln!("the first run's device fault: call {faulty_call}");
    for round in 0..KILLS {
        let mut run = run_binary(root);
        match round {
            0 => {
                run.env(
                    cuzk::pipeline::FAULT_INJECTION_VARIABLE,
                    format!("call={faulty_call}"),
                );
            }
            1 => {
                run.env(cuzk::pipeline::WRONG_WITNESS_VARIABLE, "native");
            }
            _ => {}
        }
        let mut child = run
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cuzk");
        // After the run starts proving (the parameters load first), at a random point of the
        // next stretch: in synthesis, at the prover, in verification or writing.
        let started = Instant::now();
        let proved_before =
            fs::read_to_string(&timeline).map_or(0, |t| t.matches(",GPU_START,").count());
        while started.elapsed() < Duration::from_secs(300) {
            let proving =
                fs::read_to_string(&timeline).map_or(0, |t| t.matches(",GPU_START,").count());
            if proving > proved_before {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let delay = Duration::from_millis(next(8_000));
        std::thread::sleep(delay);
        let _ = child.kill();
        let out = child.wait_with_output().expect("wait");
        show(
            &[
                "prove-dir (killed",
                &format!("{delay:?} after proving started)"),
            ],
            root,
            &out,
        );
        assert_each_in_one_place(root, &files, &format!("after kill {round}"));
        assert!(
            names(&root.join("failed")).is_empty(),
            "after kill {round}: nothing failed"
        );
    }

    let out = run_binary(root).output().expect("the last run");
    show(&ONCE, root, &out);
    assert_eq!(out.status.code(), Some(0), "every file proved");
    assert_each_in_one_place(root, &files, "at the end");
    assert!(names(&root.join("failed")).is_empty(), "none in failed/");
    assert!(!root.join("set-aside").exists(), "none set aside");
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(names(&root.join("done")), sorted, "all in done/, each once");
    assert!(
        !root.join("outbox/superseded").exists(),
        "no proof was made twice and set aside"
    );
    let timeline = fs::read_to_string(&timeline).expect("timeline");
    for name in &files {
        let job = name.trim_end_matches(".json");
        let proof = fs::read(root.join(format!("outbox/{job}.proof"))).expect("proof");
        assert_eq!(proof.len(), 2 * 192, "{job}: two partition proofs");
        assert!(
            verifies_for_sector(&root.join("done").join(name), &proof, 0),
            "{job} verifies"
        );
        // A kill between a proof and its row can lose the row, never add a second one.
        let written = timeline
            .lines()
            .filter(|l| l.contains(",DONE,") && l.contains(&format!(",{job},")))
            .count();
        assert!(written <= 1, "{job} proved {written} times:\n{timeline}");
        let crashes = timeline
            .lines()
            .filter(|l| l.contains(",FAILED,") && l.contains(&format!(",{job},")))
            .count();
        assert_eq!(crashes, 0, "{job} never failed");
    }
    assert!(
        names(&root.join("work")).iter().all(|n| n.starts_with('.')),
        "no claims left: {:?}",
        names(&root.join("work"))
    );
}
