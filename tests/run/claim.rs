//! Claiming a run directory across machines sharing a file system: the claim file is created
//! exclusively, so of several hosts exactly one wins; another host's claim is live while its
//! heartbeat is fresh and taken over once stale; a dead writer of this host is seen at once.

use piecewise_lab::run::claim::{claim_info, ClaimInfo, ClaimOptions, CLAIM_FILE};
use piecewise_lab::run::store::{is_claimed, RunDir};
use piecewise_lab::run::{Existing, RunFiles, RunSummary};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A host on a file system without flock (NFS across nodes, Lustre `noflock`).
fn host(name: &str) -> ClaimOptions {
    ClaimOptions {
        host: name.into(),
        flock: false,
        stale_after: Duration::from_secs(600),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Writes the claim file another host would have written, its heartbeat `age` seconds old.
fn claimed_by(dir: &Path, host: &str, pid: u32, age: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let c = ClaimInfo {
        host: host.into(),
        pid,
        started: "2026-11-27T10:00:00Z".into(),
        heartbeat: now() - age,
        token: 7,
    };
    std::fs::write(dir.join(CLAIM_FILE), serde_json::to_string(&c).unwrap()).unwrap();
}

#[test]
fn of_eight_hosts_claiming_one_run_exactly_one_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let barrier = std::sync::Barrier::new(8);
    let results: Vec<_> = std::thread::scope(|s| {
        let kids: Vec<_> = (0..8)
            .map(|i| {
                let (dir, barrier) = (&dir, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    RunDir::claim_with(dir, Existing::Replace, &host(&format!("node-{i}")))
                })
            })
            .collect();
        kids.into_iter().map(|k| k.join().unwrap()).collect()
    });
    let won: Vec<usize> = (0..8).filter(|&i| results[i].is_ok()).collect();
    assert_eq!(
        won.len(),
        1,
        "{:?}",
        results
            .iter()
            .map(|r| r.as_ref().err().map(|e| e.to_string()))
            .collect::<Vec<_>>()
    );
    let winner = format!("node-{}", won[0]);
    assert_eq!(claim_info(&dir).unwrap().host, winner);
    for r in &results {
        if let Err(e) = r {
            let e = e.to_string();
            assert!(
                e.contains(&format!("host {winner} (process ")) || e.contains("at the same moment"),
                "{e}"
            );
        }
    }
    drop(results);
    assert!(
        !dir.join(CLAIM_FILE).exists(),
        "the claim file goes with the claim"
    );
}

#[test]
fn another_hosts_fresh_claim_is_live_and_a_stale_one_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    // A run another host is writing: its summary says running, its heartbeat is 20 s old.
    claimed_by(&dir, "node-a", 4242, 20);
    let files = RunFiles::at(&dir);
    files
        .write_summary(&RunSummary {
            status: "running".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(is_claimed(&dir), "a fresh claim of another host is live");
    assert_eq!(files.status().as_deref(), Some("running"));
    let e = RunDir::claim_with(&dir, Existing::Replace, &host("node-b"))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("host node-a (process 4242"), "{e}");
    assert!(e.contains("heartbeat is 2"), "{e}");
    // Its heartbeat stopped an hour ago: the writer died; the run reads interrupted and another
    // host takes it over.
    claimed_by(&dir, "node-a", 4242, 3600);
    assert!(!is_claimed(&dir));
    assert_eq!(files.status().as_deref(), Some("interrupted"));
    let claim = RunDir::claim_with(&dir, Existing::Replace, &host("node-b")).unwrap();
    assert_eq!(claim_info(&dir).unwrap().host, "node-b");
    drop(claim);
    assert!(claim_info(&dir).is_none());
}

/// A claim file this host left (its writer killed): with flock the writer's lock is gone, and
/// without flock its process is, so the claim is taken over at once.
#[test]
fn a_dead_writer_of_this_host_is_taken_over_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let here = piecewise_lab::provenance::host();
    for flock in [true, false] {
        let dir = tmp.path().join(format!("run-{flock}"));
        // Fresh heartbeat, but no process 4 000 000 000 on this machine.
        claimed_by(&dir, &here, 4_000_000_000, 1);
        let o = ClaimOptions {
            flock,
            ..ClaimOptions::default()
        };
        let claim = RunDir::claim_with(&dir, Existing::Replace, &o).unwrap();
        assert_eq!(claim_info(&dir).unwrap().pid, std::process::id());
        drop(claim);
    }
    // And a live one (this process) is not.
    let dir = tmp.path().join("live");
    claimed_by(&dir, &here, std::process::id(), 1);
    let e = RunDir::claim_with(&dir, Existing::Replace, &host(&here))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("this host (process "), "{e}");
}
