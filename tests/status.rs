//! `cuzk status` on a spool laid out by hand: counts, the oldest waiting file, the owners of
//! claims and the last run, as text and as JSON.

mod common;

use std::fs;

use common::{cuzk, spool};

#[test]
fn status_counts_every_directory_and_reads_the_last_run() {
    let (dir, inbox) = spool();
    let root = dir.path();
    fs::write(inbox.join("s-t01000-1.json"), b"{}").expect("inbox");
    fs::write(inbox.join("s-t01000-2.json"), b"{}").expect("inbox");
    fs::write(inbox.join(".s-t01000-3.json.Xy12"), b"{").expect("rsync temp");
    let dead = root.join("work/otherhost-42");
    fs::create_dir_all(&dead).expect("owner");
    fs::write(
        dead.join(".owner.json"),
        br#"{"host":"otherhost","pid":42,"started_at":"2026-01-01T00:00:00Z"}"#,
    )
    .expect("owner record");
    fs::write(dead.join("s-t01000-4.json"), b"{}").expect("claim");
    for d in ["outbox", "failed", "done"] {
        fs::create_dir_all(root.join(d)).expect("dir");
    }
    fs::write(root.join("outbox/s-t01000-5.proof"), [0u8; 192]).expect("proof");
    fs::write(root.join("outbox/s-t01000-5.json"), b"{}").expect("meta");
    fs::write(root.join("done/s-t01000-5.json"), b"{}").expect("done");
    fs::write(root.join("failed/bad.json"), b"x").expect("failed");
    fs::write(root.join("failed/bad.error.json"), b"{}").expect("reason");
    fs::write(
        root.join("timeline.csv"),
        "run_id,t_ms,wall_clock,event,job,partition,worker,detail\n\
         r1,0.0,2026-11-30T00:00:00.000Z,RUN_START,,,,\n\
         r1,10.0,2026-11-30T00:00:00.010Z,RUN_END,,,,proved=0;failed=0\n\
         r2,0.0,2026-11-30T01:00:00.000Z,RUN_START,,,,\n\
         r2,1500.0,2026-11-30T01:00:01.500Z,DONE,s-t01000-5,,,outbox/s-t01000-5.proof\n\
         r2,1600.0,2026-11-30T01:00:01.600Z,FAILED,bad,,,parse: nope\n",
    )
    .expect("timeline");

    let out = cuzk(&["status", ".", "--json", "--lease-secs", "60"], root, &[]);
    assert_eq!(out.status.code(), Some(0));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(status["inbox"], 2);
    assert_eq!(status["work"], 1);
    assert_eq!(status["outbox"], 1);
    assert_eq!(status["failed"], 1);
    assert_eq!(status["done"], 1);
    assert_eq!(
        status["oldest_waiting"][0]
            .as_str()
            .map(|s| s.starts_with("s-t01000-")),
        Some(true)
    );
    assert_eq!(status["owners"][0]["owner"]["host"], "otherhost");
    assert_eq!(
        status["owners"][0]["is_dead"], false,
        "fresh heartbeat, other host"
    );
    assert_eq!(status["last_run"]["run_id"], "r2");
    assert_eq!(status["last_run"]["proved"], 1);
    assert_eq!(status["last_run"]["failed"], 1);
    assert_eq!(status["last_run"]["is_finished"], false);

    let text = cuzk(&["status", "inbox"], root, &[]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("inbox 2  work 1  outbox 1  failed 1  done 1"),
        "{text}"
    );
    assert!(text.contains("last run r2"), "{text}");

    let missing = cuzk(&["status", "nowhere"], root, &[]);
    assert_eq!(missing.status.code(), Some(2));
}
