//! Sectors of several partitions, end to end, as 32GiB and 64GiB sectors are proved.
//!
//! filecoin-proofs' `POREP_PARTITIONS` is set to 2 for 2KiB sectors in this test's own process
//! (each integration test file is a process of its own, so no other test sees it). Sectors are
//! sealed under it with filecoin-proofs, proved through the same pipeline `cuzk prove-dir`
//! runs, and checked with `verify_seal`. The two-partition circuit has one challenge per
//! partition instead of two, so it has parameters of its own: scripts/test.sh generates them
//! into the parameter cache up front, and this test does on first use if they are missing
//! (about half the time of the 2KiB ones); they are kept there.

mod common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use cuzk::backend::gpu::GpuSelection;
use cuzk::c1::SectorIdentity;
use cuzk::pipeline::RunSettings;
use cuzk::spool::SpoolLayout;
use rand::SeedableRng;

fn two_partitions_for_2kib() {
    let mut partitions = filecoin_proofs::POREP_PARTITIONS
        .write()
        .expect("POREP_PARTITIONS lock");
    partitions.insert(2048, 2);
}

fn settings(root: &Path) -> RunSettings {
    RunSettings {
        timeline: root.join("timeline.csv"),
        once: true,
        synth_jobs: Some(1),
        backend: cuzk::backend::BackendChoice::Cpu,
        gpus: GpuSelection::None,
        provers_per_gpu: 1,
        poll: Duration::from_millis(100),
        settle: Duration::ZERO,
        incomplete_grace: Duration::ZERO,
        synthesis_threads: 2,
        ..RunSettings::new(SpoolLayout::beside(&root.join("inbox")))
    }
}

#[test]
fn two_partition_sectors_prove_in_order_and_a_failed_partition_cancels_its_sibling() {
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

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let inbox = root.join("inbox");
    fs::create_dir(&inbox).expect("inbox");
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    // Sector 1 is proved; sector 2 has a partition that cannot be synthesized.
    for sector_num in 1..=2 {
        let identity = SectorIdentity {
            miner_id: 1000,
            sector_num,
        };
        let c1 = cuzk::sealing::seal_random_sector(2048, identity, &mut rng).expect("seal");
        let mut json = serde_json::to_value(&c1).expect("C1 to JSON");
        let partitions = json["vanilla_proofs"]["StackedDrg2KiBV1"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(partitions, 2, "sealed with two partitions");
        if sector_num == 2 {
            // A Merkle path one hash short in partition 0: that partition cannot be
            // synthesized, the file binds fine.
            let path = &mut json["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["comm_r_last_proof"]
                ["data"]["Single"]["path"]["path"][0]["hashes"];
            path.as_array_mut().expect("hashes").pop();
        }
        let name = inbox.join(format!("{identity}.json"));
        fs::write(&name, serde_json::to_vec(&json).expect("JSON")).expect("write C1");
        // Claims go oldest first: keep the files' order.
        std::thread::sleep(Duration::from_millis(20));
    }

    // A budget of the parameters and one and a half partitions: partitions must take turns
    // (a partition holds its memory until it is proved, so sector 1's second partition
    // waits for its first).
    let footprint = cuzk::footprint::Footprint::of_file(&params).expect("footprint");
    let mut settings = settings(root);
    settings.max_memory = Some(footprint.params_bytes + footprint.partition_bytes * 3 / 2);
    let summary = cuzk::pipeline::run(&settings).expect("the run");
    assert_eq!((summary.proved, summary.failed), (1, 1));

    let job = "s-t01000-1";
    let proof = fs::read(root.join(format!("outbox/{job}.proof"))).expect("proof");
    assert_eq!(proof.len(), 2 * 192, "two partition proofs");
    let c1 = root.join(format!("done/{job}.json"));
    assert!(
        common::verifies_for_sector(&c1, &proof, 0),
        "{job} verifies"
    );
    let mut second_flipped = proof.clone();
    second_flipped[192 + 100] ^= 1;
    assert!(
        !common::verifies_for_sector(&c1, &second_flipped, 0),
        "{job}: the second partition's proof is checked too"
    );

    let timeline = fs::read_to_string(root.join("timeline.csv")).expect("timeline");
    let synth_starts: Vec<String> = timeline
        .lines()
        .filter(|l| l.contains(",SYNTH_START,"))
        .map(|l| {
            let cols: Vec<&str> = l.split(',').collect();
            format!("{}/{}", cols[4], cols[5])
        })
        .collect();
    // One synthesis worker: a sector's partitions go before the next sector's, and the
    // failed partition 0 of sector 2 cancels its partition 1.
    assert_eq!(
        synth_starts,
        ["s-t01000-1/0", "s-t01000-1/1", "s-t01000-2/0"]
    );
    assert!(
        timeline.contains(",MEMORY_WAIT,"),
        "partitions waited for memory rather than over-committing: {timeline}"
    );
    let reason: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("failed/s-t01000-2.error.json")).expect("reason"),
    )
    .expect("JSON");
    assert_eq!(reason["stage"], "synthesis", "{reason}");
    assert!(
        reason["message"]
            .as_str()
            .unwrap_or_default()
            .contains("partition 0"),
        "{reason}"
    );
}
