//! The UAI formats: a random tree written as a `.uai` file gives BP marginals and MAP equal to
//! enumeration (exact on trees); evidence gives the conditional marginals; malformed files name
//! the line; the `infer` command writes the UAI answer formats.

use piecewise_lab::data::uai::{format_mar, parse_evid, parse_uai};
use piecewise_lab::inference::{bp_node_marginals, enumerate, exact_node_marginals, BpOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A random tree in UAI text: variable i > 0 hangs on a random earlier one.
fn random_tree_uai(rng: &mut StdRng, n: usize) -> String {
    let card: Vec<usize> = (0..n).map(|_| rng.random_range(2..=3)).collect();
    let mut scopes: Vec<Vec<usize>> = (0..n).map(|v| vec![v]).collect();
    for v in 1..n {
        scopes.push(vec![rng.random_range(0..v), v]);
    }
    let mut o = format!("MARKOV\n{n}\n");
    o += &card
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    o += &format!("\n{}\n", scopes.len());
    for s in &scopes {
        o += &format!(
            "{} {}\n",
            s.len(),
            s.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    for s in &scopes {
        let len: usize = s.iter().map(|&v| card[v]).product();
        o += &format!("\n{len}\n");
        for _ in 0..len {
            o += &format!(" {:.6}", rng.random_range(0.05..3.0));
        }
        o += "\n";
    }
    o
}

#[test]
fn bp_on_uai_trees_equals_enumeration_and_evidence_conditions() {
    let mut rng = StdRng::seed_from_u64(17);
    for _ in 0..20 {
        let n = rng.random_range(2..=8);
        let text = random_tree_uai(&mut rng, n);
        let g = parse_uai(&text, "t.uai").unwrap();
        let (_m, inst, phi) = g.instance(&[]).unwrap();
        assert!(inst.forest);
        let exact = enumerate(&inst, &phi).unwrap();
        let opts = BpOptions {
            tol: 1e-13,
            ..BpOptions::default()
        };
        let (bp, report, log_z) = bp_node_marginals(&inst, &phi, &opts);
        assert!(report.converged);
        assert!((log_z - exact.log_z).abs() < 1e-9);
        for (a, b) in bp.iter().zip(&exact.node_marginals) {
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() < 1e-9);
            }
        }
        // Evidence: the first variable observed at state 1; marginals are the conditionals.
        let ev = parse_evid("1 0 1", "t.evid", &g).unwrap();
        let (_m, inst_e, phi_e) = g.instance(&ev).unwrap();
        let (cond, _) = exact_node_marginals(&inst_e, &phi_e).unwrap();
        let mut want = vec![vec![0.0; 3]; n];
        let mut z = 0.0;
        piecewise_lab::inference::enumerate::for_each_assignment(&inst.card, |y| {
            if y[0] == 1 {
                let p = (inst.score(&phi, y) - exact.log_z).exp();
                z += p;
                for (v, &yv) in y.iter().enumerate() {
                    want[v][yv as usize] += p;
                }
            }
        });
        for (a, b) in cond.iter().zip(&want) {
            for (x, y) in a.iter().zip(b) {
                assert!((x - y / z).abs() < 1e-9);
            }
        }
        let (bp_e, _, _) = bp_node_marginals(&inst_e, &phi_e, &opts);
        for (a, b) in bp_e.iter().zip(&cond) {
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() < 1e-9);
            }
        }
    }
    assert!(format_mar(&[vec![0.25, 0.75]]).starts_with("MAR\n1 2 0.25"));
}

#[test]
fn malformed_uai_and_evidence_files_name_the_line() {
    let cases = [
        ("", "t.uai:1", "preamble"),
        ("GRAPH\n1\n2\n", "t.uai:1", "MARKOV or BAYES"),
        ("MARKOV\n2\n2 x\n", "t.uai:3", "cardinality of variable 1"),
        ("MARKOV\n2\n2 2\n1\n2 0 7\n", "t.uai:5", "names variable 7"),
        ("MARKOV\n2\n2 2\n1\n2 0 0\n", "t.uai:5", "twice"),
        ("MARKOV\n2\n2 2\n1\n2 0 1\n3\n1 1 1\n", "t.uai:6", "needs 4"),
        (
            "MARKOV\n1\n2\n1\n1 0\n2\n0.5 -1\n",
            "t.uai:7",
            "non-negative",
        ),
        ("MARKOV\n1\n2\n1\n1 0\n2\n0.5\n", "t.uai:7", "ends where"),
        (
            "MARKOV\n1\n2\n1\n1 0\n2\n0.5 0.5 9\n",
            "t.uai:7",
            "after the last table",
        ),
    ];
    for (text, at, what) in cases {
        let e = parse_uai(text, "t.uai").unwrap_err().to_string();
        assert!(e.starts_with(at) && e.contains(what), "{text:?}: {e}");
    }
    let g = parse_uai("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n", "t.uai").unwrap();
    let e = parse_evid("1\n0 5\n", "t.evid", &g)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.evid:2") && e.contains("not in the model"),
        "{e}"
    );
    assert_eq!(parse_evid("1 1 0 1", "t.evid", &g).unwrap(), vec![(0, 1)]);
}

#[test]
fn infer_writes_uai_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let f = dir.path().join("t.uai");
    std::fs::write(&f, random_tree_uai(&mut rng, 6)).unwrap();
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let f = f.display().to_string();
    let bp = run(&["infer", "--uai", &f, "--bp-tol", "1e-12"]);
    let ex = run(&["infer", "--uai", &f, "--algo", "exact"]);
    let nums = |s: &str| -> Vec<f64> {
        s.lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect()
    };
    assert!(bp.starts_with("MAR\n6 "));
    for (a, b) in nums(&bp).iter().zip(nums(&ex)) {
        assert!((a - b).abs() < 1e-9);
    }
    let map_bp = run(&["infer", "--uai", &f, "--max"]);
    let map_ex = run(&["infer", "--uai", &f, "--max", "--algo", "exact"]);
    assert!(map_bp.starts_with("MAP\n6 "));
    assert_eq!(map_bp, map_ex);
}

/// Issue 21's UAI findings: sizes read from the file are checked before anything is allocated
/// from them (a 2^64 variable count panicked with a capacity overflow; a cardinality of 2^32
/// wrapped to a 0-entry table that panicked in BP, or printed `MAR 2 0 0` with exit 0), and
/// what has no answer is an error, not NaN or a uniform guess.
#[test]
fn damaged_sizes_and_impossible_models_are_errors_not_panics() {
    let err = |text: &str| {
        parse_uai(text, "t.uai")
            .map(|_| ())
            .expect_err("a damaged file must be refused")
            .to_string()
    };
    let e = err("MARKOV\n18446744073709551615\n");
    assert!(e.contains("t.uai:2") && e.contains("ends where"), "{e}");
    let e = err("MARKOV\n2\n4294967296 4294967296\n1\n2 0 1\n0\n");
    assert!(
        e.contains("t.uai:3") && e.contains("4294967296 states"),
        "{e}"
    );
    // A table size whose product overflows is refused by the count check or the product check.
    let e = err("MARKOV\n3\n16777216 16777216 16777216\n1\n3 0 1 2\n18446744073709551615\n");
    assert!(
        e.contains("t.uai:6") && e.contains("more than can be counted"),
        "{e}"
    );
    let e = err("MARKOV\n1\n2\n1\n1 0\n2\n0 0\n");
    assert!(e.contains("zero everywhere"), "{e}");
    // Contradictory evidence: variable 0 observed as 1 and as 0.
    let g = parse_uai("MARKOV\n1\n2\n1\n1 0\n2\n1 1\n", "t.uai").unwrap();
    let e = parse_evid("2 0 1 0 0", "t.evid", &g)
        .unwrap_err()
        .to_string();
    assert!(e.contains("observed twice"), "{e}");
    // The same observation twice is harmless.
    assert_eq!(parse_evid("2 0 1 0 1", "t.evid", &g).unwrap(), vec![(0, 1)]);
    // Evidence on a zero-probability state: exact inference says so instead of NaN.
    let g = parse_uai("MARKOV\n1\n2\n1\n1 0\n2\n1 0\n", "t.uai").unwrap();
    let ev = parse_evid("1 0 1", "t.evid", &g).unwrap();
    let (_m, inst, phi) = g.instance(&ev).unwrap();
    let e = piecewise_lab::inference::exact_node_marginals(&inst, &phi)
        .unwrap_err()
        .to_string();
    assert!(e.contains("probability zero"), "{e}");
}

/// `infer --uai --pr`: log10 of the partition function written out by hand — Z = Σ_a Σ_b
/// f0(a) f1(a, b) = 0.5 (1 + 2) + 2 (3 + 4) = 15.5 — and with b observed as 1 the sum over a
/// alone, 0.5 · 2 + 2 · 4 = 9; exact and BP (exact on this tree) agree.
#[test]
fn the_pr_answer_is_log10_of_the_partition_function() {
    let dir = tempfile::tempdir().unwrap();
    let uai = dir.path().join("g.uai");
    std::fs::write(
        &uai,
        "MARKOV\n2\n2 2\n2\n1 0\n2 0 1\n\n2\n 0.5 2\n\n4\n 1 2 3 4\n",
    )
    .unwrap();
    let evid = dir.path().join("g.evid");
    std::fs::write(&evid, "1 1 1\n").unwrap();
    for (ev, z) in [(None, 15.5f64), (Some(&evid), 9.0)] {
        for algo in ["exact", "bp"] {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"));
            c.args(["infer", "--pr", "--algo", algo, "--uai"]).arg(&uai);
            if let Some(e) = ev {
                c.arg("--evid").arg(e);
            }
            let o = c.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let out = String::from_utf8(o.stdout).unwrap();
            let mut lines = out.lines();
            assert_eq!(lines.next(), Some("PR"));
            let got: f64 = lines.next().unwrap().parse().unwrap();
            assert!(
                (got - z.log10()).abs() < 1e-9,
                "{algo} {ev:?}: {got} against {}",
                z.log10()
            );
        }
    }
}
