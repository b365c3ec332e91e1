//! A corpus of broken inputs, made from the C1 fixtures, around a valid input (a 2KiB
//! SnapDeals update, which proves in about half a C1 file's time): every broken one ends in
//! `failed/` with a reason naming its problem, nothing is followed or written outside the
//! spool, and the valid file is still proved.

mod common;

use std::fs;
use std::path::Path;

use base64::Engine;
use common::{
    copy_update_fixture, fixture, names, prove_inbox_once, require_params, require_update_params,
    spool, verifies_update,
};
use serde_json::{json, Value};

/// `(file name, failing stage, words its reason must contain)`.
type Case = (String, &'static str, &'static str);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn wrapper(inner: &Value, sector_num: Value, sector_size: Value) -> Vec<u8> {
    let phase1 = serde_json::to_vec(inner).expect("json");
    serde_json::to_vec(
        &json!({"SectorNum": sector_num, "Phase1Out": b64(&phase1), "SectorSize": sector_size}),
    )
    .expect("json")
}

/// Writes the corpus into `inbox` and returns what each file must fail with.
fn write_corpus(inbox: &Path, outbox: &Path) -> Vec<Case> {
    let wrapped_bytes = fs::read(fixture("s-t01000-1.json")).expect("fixture");
    let wrapped: Value = serde_json::from_slice(&wrapped_bytes).expect("wrapper");
    let inner_1: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(wrapped["Phase1Out"].as_str().expect("Phase1Out"))
            .expect("base64"),
    )
    .expect("inner");
    let bare_2: Value =
        serde_json::from_slice(&fs::read(fixture("s-t01000-2.json")).expect("fixture"))
            .expect("bare");
    let with = |base: &Value, edit: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        edit(&mut v);
        serde_json::to_vec(&v).expect("json")
    };
    let zero = json!(vec![0u8; 32]);
    let mut cases: Vec<(String, Vec<u8>, &'static str, &'static str)> = vec![
        ("empty.json".into(), vec![], "parse", "ends early"),
        (
            "truncated.json".into(),
            wrapped_bytes[..wrapped_bytes.len() / 2].to_vec(),
            "parse",
            "ends early",
        ),
        (
            "text.json".into(),
            b"hello, world".to_vec(),
            "parse",
            "not a C1 JSON file",
        ),
        (
            "binary.json".into(),
            (0..=255u8).cycle().take(4096).collect(),
            "parse",
            "not a C1 JSON file",
        ),
        (
            "array.json".into(),
            b"[1, 2, 3]".to_vec(),
            "parse",
            "not an object",
        ),
        (
            "number.json".into(),
            b"42".to_vec(),
            "parse",
            "not an object",
        ),
        (
            "empty-object.json".into(),
            b"{}".to_vec(),
            "parse",
            "neither a lotus-bench",
        ),
        (
            "bom.json".into(),
            [b"\xef\xbb\xbf".as_slice(), &wrapped_bytes].concat(),
            "parse",
            "not a C1 JSON file",
        ),
        (
            "trailing.json".into(),
            [wrapped_bytes.as_slice(), b" garbage"].concat(),
            "parse",
            "trailing",
        ),
        (
            // Nested past any recursion limit, and whole: skipped while the keys are read,
            // refused by the first type it meets.
            "deep.json".into(),
            [
                b"{\"registered_proof\":".as_slice(),
                &[b'['; 100_000],
                &[b']'; 100_000],
                b"}",
            ]
            .concat(),
            "parse",
            "is not a SealCommitPhase1Output",
        ),
        (
            "deep-array.json".into(),
            vec![b'['; 100_000],
            "parse",
            "not an object",
        ),
        (
            "bad-base64.json".into(),
            br#"{"SectorNum":1,"Phase1Out":"!!not base64!!","SectorSize":2048}"#.to_vec(),
            "parse",
            "not base64",
        ),
        (
            "base64-garbage.json".into(),
            format!(
                r#"{{"SectorNum":1,"Phase1Out":"{}","SectorSize":2048}}"#,
                b64(b"garbage")
            )
            .into_bytes(),
            "parse",
            "decoded Phase1Out",
        ),
        (
            "null-phase1.json".into(),
            br#"{"SectorNum":1,"Phase1Out":null,"SectorSize":2048}"#.to_vec(),
            "parse",
            "Phase1Out is null",
        ),
        (
            "size-mismatch.json".into(),
            wrapper(&inner_1, json!(1), json!(8u64 << 20)),
            "parse",
            "disagrees",
        ),
        (
            "negative-sector.json".into(),
            wrapper(&inner_1, json!(-1), json!(2048)),
            "parse",
            "negative",
        ),
        (
            "unknown-proof.json".into(),
            with(&bare_2, &|v| {
                v["registered_proof"] = json!("StackedDrg3KiBV1")
            }),
            "parse",
            "unknown variant",
        ),
        (
            "wrong-size-vanilla.json".into(),
            with(&bare_2, &|v| {
                v["registered_proof"] = json!("StackedDrg8MiBV1_1")
            }),
            "parse",
            "vanilla proofs are for 2KiB",
        ),
        (
            "extra-partition.json".into(),
            with(&bare_2, &|v| {
                let p = v["vanilla_proofs"]["StackedDrg2KiBV1"][0].clone();
                v["vanilla_proofs"]["StackedDrg2KiBV1"]
                    .as_array_mut()
                    .expect("array")
                    .push(p);
            }),
            "parse",
            "partitions",
        ),
        (
            "no-partition.json".into(),
            with(&bare_2, &|v| {
                v["vanilla_proofs"]["StackedDrg2KiBV1"] = json!([])
            }),
            "parse",
            "partitions",
        ),
        // One vanilla proof per challenge, exactly: more would only cost memory, fewer
        // cannot make the circuit.
        (
            "s-t01000-2.extra-challenge.json".into(),
            with(&bare_2, &|v| {
                let partition = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"][0];
                let first = partition[0].clone();
                partition.as_array_mut().expect("array").push(first);
            }),
            "bind",
            "one per challenge",
        ),
        (
            "s-t01000-2.missing-challenge.json".into(),
            with(&bare_2, &|v| {
                v["vanilla_proofs"]["StackedDrg2KiBV1"][0]
                    .as_array_mut()
                    .expect("array")
                    .pop();
            }),
            "bind",
            "one per challenge",
        ),
        (
            "no-vanilla-field.json".into(),
            with(&bare_2, &|v| {
                v.as_object_mut().expect("object").remove("vanilla_proofs");
            }),
            "parse",
            "vanilla_proofs",
        ),
        (
            "s-t01001-1.json".into(),
            wrapped_bytes.clone(),
            "bind",
            "replica id",
        ),
        (
            "s-t01000-99.json".into(),
            serde_json::to_vec(&bare_2).expect("json"),
            "bind",
            "replica id",
        ),
        (
            "s-t01000-5.json".into(),
            wrapped_bytes.clone(),
            "identity",
            "SectorNum is 1",
        ),
        (
            "nameless.json".into(),
            wrapped_bytes.clone(),
            "identity",
            "no miner id",
        ),
        (
            "s-t01000-2.zero-comm-r.json".into(),
            with(&bare_2, &|v| v["comm_r"] = zero.clone()),
            "bind",
            "comm_r is all zeros",
        ),
        (
            "s-t01000-2.zero-seed.json".into(),
            with(&bare_2, &|v| v["seed"] = zero.clone()),
            "bind",
            "seed is all zeros",
        ),
        (
            "s-t01000-2.other-comm-d.json".into(),
            with(&bare_2, &|v| {
                v["comm_d"][0] = json!((v["comm_d"][0].as_u64().unwrap_or(0) + 1) % 256)
            }),
            "bind",
            "replica id",
        ),
        (
            "s-t01000-2.other-ticket.json".into(),
            with(&bare_2, &|v| {
                v["ticket"][5] = json!((v["ticket"][5].as_u64().unwrap_or(0) + 1) % 256)
            }),
            "bind",
            "replica id",
        ),
        (
            "s-t01000-2.ni-porep.json".into(),
            with(&bare_2, &|v| {
                v["registered_proof"] = json!("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")
            }),
            "bind",
            // Says what proving it would take, not only that it is refused.
            "SnarkPack aggregate of 13 partition proofs",
        ),
        (
            "big.json".into(),
            vec![b' '; 300_000],
            "parse",
            "over the 250000-byte cap",
        ),
        // A file whose name has a result: another C1's (the record names no digest), so
        // that result is set aside and the file is judged as any other.
        (
            "s-t01000-7.json".into(),
            b"{}".to_vec(),
            "parse",
            "neither a lotus-bench",
        ),
    ];
    // `cuzk bench` shape inputs, a C1 file and an update: refused by a run that is no
    // benchmark, each named for its kind.
    let shape_identity = |sector_num| cuzk::c1::SectorIdentity {
        miner_id: 1000,
        sector_num,
    };
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(41);
    let shape_c1 = cuzk::shape::synthetic_c1(2048, shape_identity(901), &mut rng).expect("shape");
    cases.push((
        "s-t01000-901.json".into(),
        cuzk::shape::wrap_benchmark_c1(&shape_c1, shape_identity(901)).expect("wrap"),
        "spool",
        "benchmark input: synthetic data in the shape of a real sector",
    ));
    cases.push((
        "s-t01000-902.json".into(),
        cuzk::shape::synthetic_update(2048, shape_identity(902), &mut rng).expect("shape update"),
        "spool",
        "benchmark input: synthetic data in the shape of a real update",
    ));
    // A finished result of the same name is already in the outbox, proved from other bytes.
    fs::create_dir_all(outbox).expect("outbox");
    fs::write(outbox.join("s-t01000-7.proof"), [1u8; 192]).expect("proof");
    fs::write(outbox.join("s-t01000-7.json"), b"{}").expect("meta");
    let mut expected: Vec<Case> = Vec::new();
    for (name, bytes, stage, words) in cases.drain(..) {
        fs::write(inbox.join(&name), bytes).expect("write case");
        expected.push((name, stage, words));
    }
    // Entries that are not files: never opened, never followed.
    std::os::unix::fs::symlink("/etc/passwd", inbox.join("link.json")).expect("symlink");
    expected.push(("link.json".into(), "spool", "symbolic link"));
    std::os::unix::fs::symlink("../../outside.json", inbox.join("dangling.json")).expect("symlink");
    expected.push(("dangling.json".into(), "spool", "symbolic link"));
    fs::create_dir(inbox.join("dir.json")).expect("dir");
    fs::write(inbox.join("dir.json").join("inner.json"), b"{}").expect("inner");
    expected.push(("dir.json".into(), "spool", "directory"));
    let fifo =
        std::ffi::CString::new(inbox.join("fifo.json").to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0, "mkfifo");
    expected.push(("fifo.json".into(), "spool", "not a regular file"));
    expected
}

#[test]
fn every_broken_input_is_quarantined_with_its_reason_and_the_valid_one_is_proved() {
    // The corpus is of C1 files, some of which fail only at bind; the valid file is an update.
    require_params();
    require_update_params();
    let (dir, inbox) = spool();
    let outbox = dir.path().join("outbox");
    let expected = write_corpus(&inbox, &outbox);
    assert!(
        expected.len() >= 30,
        "a corpus of at least 30 broken inputs"
    );
    copy_update_fixture(&inbox, "s-t01000-11.json");
    let passwd_before = fs::read("/etc/passwd").expect("passwd");

    let out = prove_inbox_once(
        dir.path(),
        &["--incomplete-grace-secs", "0", "--max-c1-bytes", "250000"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "exit 1: jobs failed");

    let failed = dir.path().join("failed");
    let mut problems = Vec::new();
    for (name, stage, words) in &expected {
        let job = name.strip_suffix(".json").unwrap_or(name);
        if fs::symlink_metadata(failed.join(name)).is_err() {
            problems.push(format!("{name}: not in failed/"));
            continue;
        }
        let reason: Value = match fs::read(failed.join(format!("{job}.error.json")))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            Some(reason) => reason,
            None => {
                problems.push(format!("{name}: no readable {job}.error.json"));
                continue;
            }
        };
        let message = reason["message"].as_str().unwrap_or_default();
        if reason["stage"] != *stage || !message.contains(words) {
            problems.push(format!(
                "{name}: expected stage {stage} mentioning {words:?}, got {} {message:?}",
                reason["stage"]
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // The valid file was proved and checked; the links' targets were never touched.
    let proof = fs::read(outbox.join("s-t01000-11.proof")).expect("valid file proved");
    assert!(
        verifies_update(&dir.path().join("done/s-t01000-11.json"), &proof),
        "the valid file's proof verifies"
    );
    assert_eq!(
        fs::read(outbox.join("superseded/s-t01000-7.c1-unrecorded.proof")).expect("old proof kept"),
        vec![1u8; 192],
        "the earlier result is kept aside, never deleted"
    );
    assert!(!outbox.join("s-t01000-7.proof").exists());
    assert_eq!(fs::read("/etc/passwd").expect("passwd"), passwd_before);
    assert!(fs::symlink_metadata(failed.join("link.json"))
        .expect("link")
        .file_type()
        .is_symlink());
    assert!(!dir.path().join("outside.json").exists());
    assert!(
        names(&inbox).is_empty(),
        "inbox drained: {:?}",
        names(&inbox)
    );
    let work: Vec<_> = names(&dir.path().join("work"));
    assert!(work.is_empty(), "work left: {work:?}");
}
