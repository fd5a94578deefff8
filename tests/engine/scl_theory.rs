//! SCL theory on the 5-node Boltzmann machine of 004 Fig. 1: the paper's FLOP counts, and the
//! asymptotic variance in the paper's and the exact form against known identities.

use piecewise_lab::data::synth_loopy::paper_theta;
use piecewise_lab::estimators::scl::{component_flops, components};
use piecewise_lab::estimators::scl::{ComponentFamily, Selection, SelectionPolicy};
use piecewise_lab::eval::asymptotic::asymptotic_variance;
use piecewise_lab::graph::boltzmann::{BoltzmannMachine, BoltzmannOptions};
use piecewise_lab::graph::Family;

fn machine(m: usize) -> (BoltzmannMachine, piecewise_lab::graph::Instance) {
    let bm = BoltzmannMachine::new(m, BoltzmannOptions::default()).unwrap();
    let inst = bm.graph().unwrap();
    (bm, inst)
}

fn policy(text: &str) -> SelectionPolicy {
    SelectionPolicy::parse(text, Selection::Independent, 0).unwrap()
}

#[test]
fn fig1_flop_counts() {
    let (bm, inst) = machine(5);
    let p = bm.model().n_params;
    assert_eq!(p, 10);
    let per = |f: ComponentFamily| -> Vec<f64> {
        components(f, &inst)
            .iter()
            .map(|a| component_flops(f, &inst, a, p))
            .collect()
    };
    let fl = per(ComponentFamily::Full);
    let pl1 = per(ComponentFamily::Pseudo(1));
    let pl2 = per(ComponentFamily::Pseudo(2));
    assert_eq!(fl, vec![330.0]);
    assert_eq!(pl1.len(), 5);
    assert!(pl1.iter().all(|&x| (x - 22.0).abs() < 1e-12));
    assert!(pl2.iter().all(|&x| (x - 41.0).abs() < 1e-12));
    // Fig. 1 totals over fourteen samples.
    assert!((14.0 * fl.iter().sum::<f64>() - 4620.0).abs() < 1e-9);
    assert!((14.0 * pl1.iter().sum::<f64>() - 1540.0).abs() < 1e-9);
}

#[test]
fn full_likelihood_is_efficient_and_deterministic_policies_agree_in_both_forms() {
    let (bm, inst) = machine(5);
    let theta = paper_theta(5);
    let eff = |t: &str| {
        asymptotic_variance(bm.model(), &inst, &theta, &policy(t))
            .unwrap()
            .efficiency()
            .unwrap()
    };
    let fl = eff("1:1*fl");
    for x in [fl.det_paper, fl.det_exact, fl.trace_paper, fl.trace_exact] {
        assert!((x - 1.0).abs() < 1e-9, "{fl:?}");
    }
    for t in ["1:1*pl1", "1:1*pl2", "1:2*pl1 + 1:1*pl2"] {
        let e = eff(t);
        assert!(
            (e.det_paper - e.det_exact).abs() < 1e-9 * e.det_exact,
            "{t}: {e:?}"
        );
        assert!(e.det_paper > 1.0 && e.trace_paper > 1.0, "{t}: {e:?}");
    }
    let pl = eff("1:1*pl1");
    let mix = eff("0.7:1*pl1 + 0.3:1*pl2");
    println!(
        "PL: det {:.3} (paper 1.83), trace {:.3}",
        pl.det_paper, pl.trace_paper
    );
    println!(
        "0.7 PL1 + 0.3 PL2: det paper form {:.3}, exact {:.3} (paper 1.48); trace {:.3} / {:.3}",
        mix.det_paper, mix.det_exact, mix.trace_paper, mix.trace_exact
    );
    // Random selection adds variance the paper's form leaves out.
    assert!(mix.det_exact > mix.det_paper && mix.trace_exact > mix.trace_paper);
}

/// 004 Fig. 2: λ PL(k+1) + (1 − λ) PL(k) for k = 1, 2, 3 (paper's form): the relative variance
/// falls as λ grows, and the PL4 mixtures are near 1.
#[test]
fn fig2_relative_variance_falls_with_the_higher_order_share() {
    let (bm, inst) = machine(5);
    let theta = paper_theta(5);
    for k in 1..=3 {
        let mut last = (f64::INFINITY, f64::INFINITY);
        for i in 0..=10 {
            let l = i as f64 / 10.0;
            let t = format!("{l}:1*pl{} + {}:1*pl{k}", k + 1, 1.0 - l);
            let e = asymptotic_variance(bm.model(), &inst, &theta, &policy(&t))
                .unwrap()
                .efficiency()
                .unwrap();
            println!(
                "k={k} λ={l:.1}: det {:.4} trace {:.4}",
                e.det_paper, e.trace_paper
            );
            assert!(
                e.det_paper <= last.0 + 1e-9 && e.trace_paper <= last.1 + 1e-9,
                "{t}"
            );
            last = (e.det_paper, e.trace_paper);
            // With PL4 carrying at least half the weight, within 10 % of the MLE.
            if k == 3 && l >= 0.5 {
                assert!(e.det_paper < 1.1, "{t}: {e:?}");
            }
        }
    }
}

/// Monte Carlo of the estimator itself: 400 data sets of n = 1,000 drawn from θ0, each fitted by
/// SCL with PL1 components selected independently with λ = 0.5 (a fresh Z each time); the trace
/// of the empirical variance of √n(θ̂ − θ0) is within 10 % of the exact form. The paper's form,
/// which treats Z as its mean, is printed beside it.
#[test]
fn monte_carlo_matches_the_exact_form() {
    let (bm, inst) = machine(5);
    let theta0 = paper_theta(5);
    let text = "0.5:1*pl1";
    let v = asymptotic_variance(bm.model(), &inst, &theta0, &policy(text)).unwrap();
    let (n, reps) = (1000usize, 400usize);
    let mc = piecewise_lab::experiments::monte_carlo::monte_carlo(
        &bm,
        &theta0,
        &policy(text),
        (n, reps, 0),
        &std::sync::atomic::AtomicBool::new(false),
        &|_| {},
    )
    .unwrap();
    assert!(
        mc.log_det.is_some(),
        "400 replications of {} parameters",
        mc.dim
    );
    // Fewer replications than parameters: the empirical covariance is singular, and the
    // determinant is reported missing, not 0 (issue 24, 5.10).
    let few = piecewise_lab::experiments::monte_carlo::monte_carlo(
        &bm,
        &theta0,
        &policy(text),
        (n, mc.dim, 0),
        &std::sync::atomic::AtomicBool::new(false),
        &|_| {},
    )
    .unwrap();
    assert_eq!(
        few.log_det, None,
        "{} replications of {} parameters",
        few.reps, few.dim
    );
    let emp_trace = mc.trace;
    let (exact, paper) = (v.exact.diag().sum(), v.paper.diag().sum());
    println!("Monte Carlo trace {emp_trace:.3}; exact form {exact:.3}; paper's form {paper:.3}");
    assert!(
        (emp_trace / exact - 1.0).abs() < 0.10,
        "MC {emp_trace} vs exact {exact}"
    );
    // The error bar (jackknife, 95 %) holds the estimate and the exact form, and is not so
    // wide that it would hold anything: its half-width is a few per cent of the trace at
    // 400 replications (the trace of a sample covariance has relative error ~ √(2/reps)).
    let (lo, hi) = mc.trace_ci;
    println!("Monte Carlo trace 95 % interval [{lo:.3}, {hi:.3}]");
    assert!(lo < emp_trace && emp_trace < hi, "{lo} {emp_trace} {hi}");
    assert!(
        lo < exact && exact < hi,
        "exact {exact} outside [{lo}, {hi}]"
    );
    // … and tells the forms apart: the paper's form lies outside it.
    assert!(paper < lo, "paper's form {paper} inside [{lo}, {hi}]");
    assert!(
        (hi - lo) / emp_trace < 0.3,
        "[{lo}, {hi}] around {emp_trace}"
    );
    let (dlo, dhi) = mc.log_det_ci.expect("a determinant has an interval");
    let d = mc.log_det.unwrap();
    assert!(dlo < d && d < dhi, "{dlo} {d} {dhi}");
    assert!(few.log_det_ci.is_none());
}

/// A run's objective carries the paper's count: 14 samples cost 4,620 FLOPs under FL and 1,540
/// under PL (Fig. 1); a random policy costs what its selected components cost.
#[test]
fn the_objective_reports_fig1_flop_totals() {
    use piecewise_lab::data::synth_loopy::boltzmann_samples;
    use piecewise_lab::data::Corpus;
    use piecewise_lab::estimators::objective::DatasetObjective;
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::optim::Prior;
    let (bm, _) = machine(5);
    let corpus = Corpus {
        path: "fig1".into(),
        sequences: boltzmann_samples(5, &paper_theta(5), &[], 14, 1).unwrap(),
        n_columns: 1,
    };
    let insts = bm.instances(&corpus).unwrap();
    let flops = |text: &str| {
        let spec = EstimatorSpec::from_name("scl")
            .unwrap()
            .with_policy(policy(text));
        let est = spec.build(bm.model()).unwrap();
        DatasetObjective::new(bm.model(), &insts, est.as_ref(), Prior { sigma2: None }, 1)
            .unwrap()
            .paper_flops
            .unwrap()
    };
    assert!((flops("1:1*fl") - 4620.0).abs() < 1e-9);
    assert!((flops("1:1*pl1") - 1540.0).abs() < 1e-9);
    let mixed = flops("0.7:1*pl1 + 0.3:1*pl2");
    assert!(mixed > 0.0 && mixed < 14.0 * (110.0 + 410.0));
    // Every selected pl1 component costs 22 and every pl2 component 41.
    assert!(
        (0..=70).any(|a| {
            let rest = (mixed - 22.0 * a as f64) / 41.0;
            rest >= 0.0 && (rest - rest.round()).abs() < 1e-9
        }),
        "{mixed}"
    );
}

#[test]
fn theory_command_prints_flops_and_efficiency() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["theory", "--policy", "0.7:1*pl1 + 0.3:1*pl2", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 0.7 × 110 + 0.3 × 410 expected FLOPs per example.
    assert!((j["expected_flops_per_example"].as_f64().unwrap() - 200.0).abs() < 1e-9);
    let e = &j["efficiency"];
    assert!(e["det_exact"].as_f64().unwrap() > e["det_paper"].as_f64().unwrap());
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["theory", "--policy", "0.7:1*pl9"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

/// `theory --monte-carlo` (the Theory pane's points, now from the engine): the relative trace
/// it prints is the library's Monte Carlo over the MLE's asymptotic variance, computed here
/// independently, and its interval holds it; too few fits are refused.
#[test]
fn theory_command_runs_the_monte_carlo_check() {
    let text = "0.5:1*pl1";
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args([
            "theory",
            "--policy",
            text,
            "--monte-carlo",
            "60",
            "--monte-carlo-n",
            "500",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mc = &j["monte_carlo"];
    let t = mc["trace"].as_f64().unwrap();
    let ci = mc["trace_ci"].as_array().unwrap();
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    assert!(lo < t && t < hi, "{lo} {t} {hi}");
    assert!(
        mc["det"].as_f64().is_some(),
        "60 fits of 15 parameters have a determinant"
    );
    let (bm, inst) = machine(5);
    let theta0 = paper_theta(5);
    let v = asymptotic_variance(bm.model(), &inst, &theta0, &policy(text)).unwrap();
    let lib = piecewise_lab::experiments::monte_carlo::monte_carlo(
        &bm,
        &theta0,
        &policy(text),
        (500, 60, 0),
        &std::sync::atomic::AtomicBool::new(false),
        &|_| {},
    )
    .unwrap();
    let want = lib.trace / v.ml.diag().sum();
    assert!((t - want).abs() <= 1e-9 * want, "{t} vs {want}");
    let few = std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
        .args(["theory", "--policy", text, "--monte-carlo", "1"])
        .output()
        .unwrap();
    assert!(!few.status.success());
    assert!(String::from_utf8_lossy(&few.stderr).contains("--monte-carlo"));
}

/// `--beta auto` on the Boltzmann machine with PL1 and PL2 always selected: the heuristic moves
/// the weight to PL2, where the exact asymptotic variance is smallest (checked independently).
#[test]
fn the_beta_heuristic_moves_weight_where_the_exact_variance_is_smallest() {
    use piecewise_lab::data::samples::format_samples;
    use piecewise_lab::data::synth_loopy::boltzmann_samples;
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::optim::Prior;
    use piecewise_lab::run::{execute, ModelSpec, RunSpec};
    let (bm, inst) = machine(5);
    let theta = paper_theta(5);
    let det = |b: f64| {
        asymptotic_variance(
            bm.model(),
            &inst,
            &theta,
            &policy(&format!("1:{b}*pl1 + 1:{}*pl2", 1.0 - b)),
        )
        .unwrap()
        .efficiency()
        .unwrap()
        .det_exact
    };
    assert!(det(0.0) < det(0.25) && det(0.25) < det(0.5));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("bm.txt");
    std::fs::write(
        &data,
        format_samples(&boltzmann_samples(5, &theta, &[], 3000, 2).unwrap()),
    )
    .unwrap();
    let mut p = policy("1:0.5*pl1 + 1:0.5*pl2");
    p.auto_beta = true;
    let spec = RunSpec {
        name: None,
        train: data,
        test: None,
        template: None,
        model: ModelSpec::Boltzmann(Default::default()),
        estimator: EstimatorSpec::from_name("scl").unwrap().with_policy(p),
        optimiser: Default::default(),
        prior: Prior { sigma2: Some(10.0) },
        eval_every: 0,
        seed: 0,
        threads: 2,
        decode: Default::default(),
        train_sample: None,
        eval_train: false,
        per_state_scaling: false,
        subset_scaling: false,
        init_from: None,
    };
    let s = execute(
        &spec,
        &dir.path().join("run"),
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    assert!(!s.beta_rounds.is_empty());
    let last = s.beta_rounds.last().unwrap();
    assert!(
        last.beta[0] < 0.1 && (last.beta[0] + last.beta[1] - 1.0).abs() < 1e-9,
        "{:?}",
        s.beta_rounds
    );
    assert!(last.j.is_finite());
}

/// The Gauss–Jordan inverse with partial pivoting that the asymptotic variance used before its
/// matrices moved to ndarray and a Cholesky factorisation: the reference they must agree with.
fn gauss_jordan_inverse(m: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = m.len();
    let mut a: Vec<Vec<f64>> = m
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = r.clone();
            row.extend((0..n).map(|j| (i == j) as u8 as f64));
            row
        })
        .collect();
    for c in 0..n {
        let piv = (c..n)
            .max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))
            .unwrap();
        a.swap(c, piv);
        let d = a[c][c];
        for x in a[c].iter_mut() {
            *x /= d;
        }
        for r in 0..n {
            if r != c {
                let f = a[r][c];
                let pivot_row = a[c].clone();
                for (x, y) in a[r].iter_mut().zip(pivot_row) {
                    *x -= f * y;
                }
            }
        }
    }
    a.into_iter().map(|r| r[n..].to_vec()).collect()
}

/// log |det| by LU with partial pivoting, as before.
fn lu_log_det(m: &[Vec<f64>]) -> f64 {
    let n = m.len();
    let mut a = m.to_vec();
    let mut ld = 0.0;
    for c in 0..n {
        let piv = (c..n)
            .max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))
            .unwrap();
        a.swap(c, piv);
        ld += a[c][c].abs().ln();
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            let pivot_row = a[c].clone();
            for (x, y) in a[r].iter_mut().zip(pivot_row) {
                *x -= f * y;
            }
        }
    }
    ld
}

/// Issue 44: the asymptotic variances' inverses and log-determinants by Cholesky (ndarray) equal
/// the Gauss–Jordan and LU ones to 1e-12 relative, on every matrix of Fig. 2's policies.
#[test]
fn cholesky_inverses_and_log_dets_equal_the_old_decompositions() {
    use piecewise_lab::eval::asymptotic::{inverse, log_det};
    let mut compared = 0;
    for m in [5, 9] {
        let (bm, inst) = machine(m);
        let theta = paper_theta(m);
        for t in ["1:1*pl1", "0.5:1*pl1 + 0.5:1*pl2", "0.3:1*pl1 + 0.7:1*fl"] {
            let v = asymptotic_variance(bm.model(), &inst, &theta, &policy(t)).unwrap();
            for (name, a) in [("paper", &v.paper), ("exact", &v.exact), ("ml", &v.ml)] {
                let rows: Vec<Vec<f64>> = a.outer_iter().map(|r| r.to_vec()).collect();
                let (new, old) = (inverse(a.view()).unwrap(), gauss_jordan_inverse(&rows));
                let scale = old.iter().flatten().fold(0.0f64, |s, x| s.max(x.abs()));
                let diff = new
                    .iter()
                    .zip(old.iter().flatten())
                    .fold(0.0f64, |d, (x, y)| d.max((x - y).abs()));
                assert!(
                    diff <= 1e-12 * scale,
                    "m {m}, {t}, {name}: inverse {diff:e} of {scale:e}"
                );
                let (ld_new, ld_old) = (log_det(a.view()).unwrap(), lu_log_det(&rows));
                assert!(
                    (ld_new - ld_old).abs() <= 1e-12 * ld_old.abs().max(1.0),
                    "m {m}, {t}, {name}: log det {ld_new} against {ld_old}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 18);
}

/// Lesson 8's last step asks which curve the Monte Carlo points follow: on the lesson's own
/// settings (the pane's seed, 0) each point's 95 % bar must hold the exact form and exclude the
/// paper's, or the screen would support both answers (issue 66: at λ = 0.6 it did).
#[test]
fn lesson_8_monte_carlo_tells_the_forms_apart() {
    use piecewise_lab::app::lesson_format::Lesson;
    use piecewise_lab::experiments::scl_theory::{mixture, Machine};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/lessons/08-stochastic-composite-likelihood.toml");
    let lesson = Lesson::read(&path).unwrap();
    let last = lesson.steps.len() - 1;
    let t = lesson.state_at(last).theory;
    assert_eq!(t.exact, Some(true), "the last step shows the exact form");
    assert_eq!(t.det, Some(true), "the lesson reads the det ratio");
    let (m, n, reps) = (t.m.unwrap(), t.mc_n.unwrap(), t.mc_reps.unwrap());
    let orders = t.orders.unwrap();
    let lambdas: Vec<f64> = t
        .mc_lambdas
        .unwrap()
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    assert!(lambdas.len() >= 2, "{lambdas:?}");
    let machine = Machine::new(m, None).unwrap();
    for k in (1..=3).filter(|&k| orders[k - 1]) {
        for &l in &lambdas {
            let policy = mixture(k, l, Selection::Independent).unwrap();
            let e = machine.efficiency(&policy).unwrap();
            let mc = machine
                .relative_monte_carlo(
                    &policy,
                    (n, reps, 0),
                    &std::sync::atomic::AtomicBool::new(false),
                    &|_| {},
                )
                .unwrap();
            let (lo, hi) = mc.det_ci.expect("more fits than parameters");
            println!(
                "PL{}/PL{k} λ = {l}: Monte Carlo {:.2} [{lo:.2}, {hi:.2}]; exact {:.2}, paper's {:.2}",
                k + 1,
                mc.det.unwrap(),
                e.det_exact,
                e.det_paper
            );
            assert!(
                e.det_paper < lo,
                "λ = {l}: the paper's form {} inside [{lo}, {hi}]",
                e.det_paper
            );
            assert!(
                lo < e.det_exact && e.det_exact < hi,
                "λ = {l}: the exact form {} outside [{lo}, {hi}]",
                e.det_exact
            );
        }
    }
}
