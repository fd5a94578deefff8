//! Claiming a run directory across machines sharing a file system: the claim file is created
//! exclusively, so of several hosts exactly one wins; another host's claim is live while its
//! heartbeat is fresh and taken over once stale; a dead writer of this host is seen at once.
//! Issue 65: the claim file is read only as a regular file and only so far; a garbage claim is
//! taken over at once when the flock proves no writer; a heartbeat dated in the future ages; a
//! host is printed escaped; a writer whose claim was taken over writes nothing more.

use piecewise_lab::estimators::EstimatorSpec;
use piecewise_lab::optim::{LbfgsSpec, Prior};
use piecewise_lab::run::checkpoint::{CheckpointPolicy, CHECKPOINT};
use piecewise_lab::run::claim::{claim_info, ClaimInfo, ClaimOptions, CLAIM_FILE};
use piecewise_lab::run::store::{is_claimed, Found, RunDir};
use piecewise_lab::run::{
    execute_with, Existing, ModelSpec, RunEvent, RunFiles, RunSpec, RunSummary,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A host on a file system without flock (NFS across nodes, Lustre `noflock`).
fn host(name: &str) -> ClaimOptions {
    ClaimOptions {
        host: name.into(),
        flock: false,
        stale_after: Duration::from_secs(600),
        ..ClaimOptions::default()
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
    claimed_at(dir, host, pid, now() - age);
}

/// Writes another host's claim with its heartbeat at `heartbeat` (seconds since 1970), whole
/// under a temporary name and renamed into place, as a claimer does.
fn claimed_at(dir: &Path, host: &str, pid: u32, heartbeat: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let c = ClaimInfo {
        host: host.into(),
        pid,
        started: "2026-11-27T10:00:00Z".into(),
        heartbeat,
        token: 7,
    };
    let tmp = dir.join(".claim-by-test");
    std::fs::write(&tmp, serde_json::to_string(&c).unwrap()).unwrap();
    std::fs::rename(&tmp, dir.join(CLAIM_FILE)).unwrap();
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

/// `f` on another thread, failed when it takes longer than 20 s (a claim that waits on a FIFO
/// would hang the test otherwise).
fn within_20_s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("finished within 20 s")
}

/// A directory, a FIFO or a symbolic link (to `/dev/zero`, or anywhere) at `.claim.json` is
/// not a claim: claiming the run is refused with an error naming the file and what it is —
/// never read, never waited on, never removed — and the run does not read as claimed.
#[test]
fn a_claim_file_that_is_not_a_regular_file_is_refused_by_name_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, what) in ["a directory", "a FIFO", "a symbolic link"]
        .iter()
        .enumerate()
    {
        let dir = tmp.path().join(format!("run-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(CLAIM_FILE);
        match i {
            0 => std::fs::create_dir(&p).unwrap(),
            1 => {
                let st = std::process::Command::new("mkfifo")
                    .arg(&p)
                    .status()
                    .unwrap();
                assert!(st.success());
            }
            _ => std::os::unix::fs::symlink("/dev/zero", &p).unwrap(),
        }
        for flock in [true, false] {
            let (d, o) = (
                dir.clone(),
                ClaimOptions {
                    flock,
                    ..ClaimOptions::default()
                },
            );
            let e = within_20_s(move || {
                RunDir::claim_with(&d, Existing::Replace, &o)
                    .err()
                    .map(|e| e.to_string())
            })
            .expect("refused");
            assert!(e.contains(CLAIM_FILE), "{e}");
            assert!(e.contains(&format!("is {what}, not a claim file")), "{e}");
            let d = dir.clone();
            assert!(!within_20_s(
                move || is_claimed(&d) || claim_info(&d).is_some()
            ));
        }
        assert!(
            std::fs::symlink_metadata(dir.join(CLAIM_FILE)).is_ok(),
            "{what} is left as it was"
        );
    }
}

/// A regular claim file is read only so far: a gigabyte one (sparse) is refused as no claim
/// without reading it all.
#[test]
fn a_huge_claim_file_is_read_only_so_far() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    let f = std::fs::File::create(dir.join(CLAIM_FILE)).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    // Without flock a damaged claim is waited out (it is fresh), and the error says why.
    let e = RunDir::claim_with(&dir, Existing::Replace, &host("node-b"))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("larger than 64 KiB"), "{e}");
}

/// An empty or garbage claim file is no live writer's (claims are written whole, then
/// linked): when this process gets the directory's flock, no process of this host holds it, and
/// the claim is taken over at once. Without flock it is taken over once as old as a stale
/// claim.
#[test]
fn a_garbage_claim_is_taken_over_at_once_when_the_flock_is_free() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, garbage) in ["", "{\"host\": \"node-a\", \"pi", "\u{0}\u{1}garbage"]
        .iter()
        .enumerate()
    {
        let dir = tmp.path().join(format!("run-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(CLAIM_FILE), garbage).unwrap();
        let claim = RunDir::claim_with(&dir, Existing::Replace, &ClaimOptions::default())
            .unwrap_or_else(|e| panic!("{garbage:?}: {e}"));
        assert_eq!(claim_info(&dir).unwrap().pid, std::process::id());
        drop(claim);
        assert!(!dir.join(CLAIM_FILE).exists());
        // No flock: fresh garbage is waited out, old garbage taken over.
        std::fs::write(dir.join(CLAIM_FILE), garbage).unwrap();
        let e = RunDir::claim_with(&dir, Existing::Replace, &host("node-b"))
            .err()
            .expect("refused while fresh")
            .to_string();
        assert!(e.contains("cannot be read"), "{e}");
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(dir.join(CLAIM_FILE))
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        let claim = RunDir::claim_with(&dir, Existing::Replace, &host("node-b")).unwrap();
        assert_eq!(claim_info(&dir).unwrap().host, "node-b");
        drop(claim);
    }
}

/// A heartbeat dated in the future ages as one as far in the past: a claim an hour ahead (a
/// clock far off, a damaged file) is stale and taken over; one a few seconds ahead (clocks a
/// little apart) is live, and the message says it is ahead.
#[test]
fn a_heartbeat_dated_in_the_future_is_taken_over_once_as_far_as_a_stale_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    claimed_at(&dir, "node-a", 4242, now() + 20);
    assert!(is_claimed(&dir), "20 s ahead: clocks a little apart");
    let e = RunDir::claim_with(&dir, Existing::Replace, &host("node-b"))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("ahead of this host's clock"), "{e}");
    for ahead in [3600, 100 * 365 * 86400] {
        claimed_at(&dir, "node-a", 4242, now() + ahead);
        assert!(!is_claimed(&dir), "{ahead} s ahead");
        let claim = RunDir::claim_with(&dir, Existing::Replace, &host("node-b")).unwrap();
        assert_eq!(claim_info(&dir).unwrap().host, "node-b");
        drop(claim);
    }
}

/// A claim file's host and start are whatever the file says: printed with control characters
/// (a terminal's escape sequences, line breaks) escaped.
#[test]
fn the_claims_host_is_printed_with_its_control_characters_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    claimed_by(&dir, "node\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake", 4242, 5);
    let e = RunDir::claim_with(&dir, Existing::Replace, &host("node-b"))
        .err()
        .expect("refused")
        .to_string();
    assert!(!e.chars().any(|c| c.is_control()), "{e:?}");
    assert!(e.contains(r"node\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake"), "{e}");
    let shown = Found::Running {
        host: "a\u{1b}[31mb".into(),
        here: false,
    }
    .to_string();
    assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
}

/// Another host's claim written over this one's (this process stalled past the stale time and
/// was taken over): every write of the run is refused with an error naming the host, the
/// run's files stay as they were, and the other host's claim stays when this claim ends.
#[test]
fn a_writer_whose_claim_was_taken_over_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let claim = RunDir::claim_with(&dir, Existing::Replace, &host("node-a")).unwrap();
    let files = claim.files();
    let running = RunSummary {
        status: "running".into(),
        ..Default::default()
    };
    files.write_summary(&running).unwrap();
    claimed_by(&dir, "node-b", 4242, 0);
    let finished = RunSummary {
        status: "finished".into(),
        ..Default::default()
    };
    let e = files.write_summary(&finished).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "the claim on {} was taken over by node-b; this process stops without writing",
            dir.display()
        )
    );
    assert!(claim.lost());
    assert!(files.write_weights(&[1.0]).is_err());
    assert!(files.write_curve("").is_err());
    assert_eq!(files.summary().unwrap().status, "running");
    assert!(!files.weights_path().exists());
    drop(claim);
    assert_eq!(claim_info(&dir).unwrap().host, "node-b", "theirs stays");
}

/// The heartbeat reads the claim back: a takeover is noticed by it too, with no write.
#[test]
fn the_heartbeat_notices_a_takeover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let o = ClaimOptions {
        heartbeat: Duration::from_millis(50),
        ..host("node-a")
    };
    let claim = RunDir::claim_with(&dir, Existing::Replace, &o).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!claim.lost(), "its own heartbeat is no takeover");
    claimed_by(&dir, "node-b", 4242, 0);
    let t = std::time::Instant::now();
    while !claim.lost() {
        assert!(t.elapsed() < Duration::from_secs(10), "noticed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spec() -> RunSpec {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RunSpec {
        name: Some("t".into()),
        train: root.join("sample_data/hmm-a0.5-train.conll"),
        test: None,
        template: Some(root.join("assets/templates/hmm.tpl")),
        model: ModelSpec::default(),
        estimator: EstimatorSpec::Ml,
        optimiser: LbfgsSpec {
            max_iter: 40,
            ..Default::default()
        },
        prior: Prior::from_c2(1.0),
        eval_every: 0,
        seed: 0,
        threads: 1,
        decode: Default::default(),
        train_sample: None,
        eval_train: false,
        per_state_scaling: false,
        subset_scaling: false,
        init_from: None,
    }
}

/// A run whose claim another host takes over at its third iteration stops training and ends
/// with the takeover's error, writing nothing more: no weights, no model, no checkpoint at
/// the stop, its summary still the `running` one (the other host's to write).
#[test]
fn a_run_whose_claim_is_taken_over_stops_without_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let mut failed = None;
    let r = execute_with(
        &spec(),
        &dir,
        Existing::Refuse,
        CheckpointPolicy {
            every_iterations: 0,
            every: None,
            at_cancel: true,
        },
        &cancel,
        &mut |e| match e {
            RunEvent::Progress(p) if p.iteration == 3 => claimed_by(&dir, "node-b", 4242, 0),
            RunEvent::Failed(why) => failed = Some(why),
            _ => {}
        },
    );
    let e = r.expect_err("stopped").to_string();
    assert_eq!(
        e,
        format!(
            "the claim on {} was taken over by node-b; this process stops without writing",
            dir.display()
        )
    );
    assert_eq!(failed.as_deref(), Some(e.as_str()));
    for f in ["weights.bin", "model.json", CHECKPOINT] {
        assert!(!dir.join(f).exists(), "{f} written");
    }
    let files = RunFiles::at(&dir);
    assert_eq!(files.summary().unwrap().status, "running");
    assert_eq!(claim_info(&dir).unwrap().host, "node-b");
}
