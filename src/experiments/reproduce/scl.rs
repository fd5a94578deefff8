//! 004 (stochastic composite likelihood): the experiments on Boltzmann machines whose data are
//! drawn exactly from known parameters θ0, so every run reports ‖θ̂ − θ0‖.

use super::slope::{error_points, log_slope, CONSISTENT_SLOPE};
use super::tasks::*;
use super::*;
use crate::error::{Error, Result};
use crate::estimators::scl::{Selection, SelectionPolicy};
use crate::estimators::EstimatorSpec;
use crate::eval::asymptotic::Efficiency;
use crate::experiments::scl_theory::{fig2_curves, Machine, TheoryCurve};
use crate::graph::boltzmann::{samples_with_theta, BoltzmannOptions};
use crate::optim::LbfgsSpec;
use crate::run::ModelSpec;
use std::path::PathBuf;

/// The estimators of 004-consistency: name in the report, and the estimator for seed `k`.
fn consistency_estimators() -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    // (group key, label, SCL policy in 004's notation: LOW always selected with weight 1 − β,
    // HIGH with probability λ and weight β).
    vec![
        ("ml", "ML", None),
        ("pl", "PL", None),
        ("bp", "BP (Bethe)", None),
        (
            "pl1-pl2",
            "SCL PL1/PL2, λ = 0.5, β = 0.5",
            Some("1:0.5*pl1 + 0.5:0.5*pl2"),
        ),
        (
            "pl1-fl",
            "SCL PL1/FL, λ = 0.1, β = 0.5",
            Some("1:0.5*pl1 + 0.1:0.5*fl"),
        ),
    ]
}

/// Exact samples of the m-node Boltzmann machine at 004's θ0, written with θ0 in the file.
fn boltzmann_data(o: &Options, m: usize, n: usize, seed: u64) -> Result<PathBuf> {
    let theta = crate::data::synth_loopy::paper_theta(m);
    let samples = crate::data::synth_loopy::boltzmann_samples(m, &theta, &[], n, seed)?;
    let p = o
        .out
        .join("data")
        .join(format!("boltzmann-m{m}-n{n}-seed{seed}.txt"));
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    crate::util::write_atomic(&p, samples_with_theta(&theta, &[], &samples).as_bytes())?;
    Ok(p)
}

/// 004 §8.1's Boltzmann machines, m = 5 and 9: does each estimator's error ‖θ̂ − θ0‖ shrink as
/// the sample grows (consistency, 004 Prop. 1 for SCL), or stay (BP's Bethe bias)?
pub(super) fn consistency(o: &Options) -> Result<Experiment> {
    let (ms, ns, reps): (Vec<usize>, Vec<usize>, u64) = if o.quick {
        (vec![5], vec![100, 300], 1)
    } else {
        (vec![5, 9], vec![100, 300, 1000, 3000, 10000], 5)
    };
    let ests = consistency_estimators();
    let mut gs = vec![];
    for &m in &ms {
        for &n in &ns {
            let files: Vec<PathBuf> = (0..reps)
                .map(|k| boltzmann_data(o, m, n, k + 1))
                .collect::<Result<_>>()?;
            for (key, _, policy) in &ests {
                let runs = files
                    .iter()
                    .enumerate()
                    .map(|(k, f)| {
                        let mut s = base_spec(
                            o,
                            f.clone(),
                            f.clone(),
                            ModelSpec::Boltzmann(BoltzmannOptions::default()),
                        );
                        s.test = None;
                        s.name = Some(format!("m{m}-n{n}-{key}-{k}"));
                        s.seed = k as u64 + 1;
                        s.optimiser = LbfgsSpec {
                            max_iter: if o.quick { 20 } else { 500 },
                            ..LbfgsSpec::default()
                        };
                        s.estimator = match policy {
                            Some(text) => EstimatorSpec::Scl {
                                policy: SelectionPolicy::parse(
                                    text,
                                    Selection::Independent,
                                    s.seed,
                                )
                                .expect("a valid policy"),
                            },
                            None => estimator(key),
                        };
                        s
                    })
                    .collect();
                gs.push(Group {
                    name: format!("consistency/m{m}-n{n}/{key}"),
                    runs,
                });
            }
        }
    }
    let g = |m: usize, n: usize, key: &str| format!("consistency/m{m}-n{n}/{key}");
    let tables = ms
        .iter()
        .map(|&m| Table {
            title: format!("‖θ̂ − θ0‖ on the {m}-node Boltzmann machine, by sample size n"),
            columns: ests.iter().map(|e| e.0.to_uppercase()).collect(),
            rows: ns
                .iter()
                .map(|&n| {
                    (
                        format!("n = {n}"),
                        ests.iter()
                            .map(|e| cell(&g(m, n, e.0), Metric::ParamError, None))
                            .collect(),
                    )
                })
                .collect(),
        })
        .collect();
    let (n_lo, n_hi) = (ns[0], *ns.last().unwrap());
    let mean = move |r: &Results, m: usize, n: usize, key: &str| {
        report::stat(
            r,
            &Cell {
                group: g(m, n, key),
                metric: Metric::ParamError,
                paper: None,
            },
        )
        .map(|s| s.mean)
    };
    let mut claims = vec![];
    // The rate over the largest sample sizes, where a bias floor shows (BP's error falls at
    // small n too: "below half at n = 100" passed it, 2.07 → 0.59).
    let top: Vec<usize> = ns.iter().rev().take(3).rev().copied().collect();
    for (key, label, _) in ests.iter().filter(|e| e.0 != "bp") {
        let (ms, top) = (ms.clone(), top.clone());
        let key = key.to_string();
        claims.push(Claim {
            test: None,
            says: format!(
                "{label} is consistent: its error falls at least like n^{CONSISTENT_SLOPE} over \
                 n = {} (a consistent estimator's falls like n^-0.5, a biased one's levels off \
                 at its bias, slope 0): the 95 % interval of the slope of log error against \
                 log n, over every sample at those n, below {CONSISTENT_SLOPE}, on every m",
                top.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
            ),
            check: Box::new(move |r| {
                let mut verdict = Verdict::Holds;
                let mut ev = vec![];
                for &m in &ms {
                    let points = error_points(r, &|n| g(m, n, &key), &top)?;
                    let (b, lo, hi) = log_slope(&points)?;
                    verdict = verdict.weaker(Verdict::at_most(lo, hi, CONSISTENT_SLOPE));
                    ev.push(format!(
                        "m = {m}: {:.3} at n = {n_lo} → {:.3} at n = {n_hi}; slope {b:.2} [{lo:.2}, {hi:.2}]",
                        mean(r, m, n_lo, &key)?,
                        mean(r, m, n_hi, &key)?
                    ));
                }
                Some((verdict, ev.join("; ")))
            }),
        });
    }
    let m_hi = *ms.last().unwrap();
    claims.push(bp_inconsistent(ms.clone(), top.clone()));
    Ok(Experiment {
        name: "004-consistency",
        title: "004 §8.1: consistency on Boltzmann machines".into(),
        protocol: vec![
            format!(
                "Data: exact samples (by enumeration of the 2^m states) of the fully connected Boltzmann machine p(x) ∝ exp(Σ_{{i<j}} θ_ij x_i x_j), x ∈ {{0,1}}^m, m ∈ {ms:?}; θ0 is 004's (half the couplings −1, half +1; for m = 9 ±1 alternating in pair order). {reps} independent sample(s) (seeds 1…{reps}) per n ∈ {ns:?}."
            ),
            "Estimators: ml (exact likelihood), pl (pseudolikelihood, 004's PL1), bp (loopy BP's Bethe likelihood), and two SCL policies in 004's notation (LOW always selected with weight 1 − β, HIGH with probability λ and weight β, independent selection, seeded): PL1/PL2 at λ = 0.5, β = 0.5 and PL1/FL at λ = 0.1, β = 0.5.".into(),
            format!(
                "L-BFGS to convergence (at most {} iterations); σ² = 10, the piecewise papers' prior (the bench this replaces used it; without a prior a small sample that never sees a pair fire together has no MLE). The prior's pull vanishes as n grows, so it does not hide inconsistency.",
                if o.quick { 20 } else { 500 }
            ),
            "Cells: mean ± sd of ‖θ̂ − θ0‖ (Euclidean, over the couplings) across the samples. 004 gives no table here (its Figs. 2–3 are the asymptotic variance, `004-fig2`, `004-fig3`); the claims are its Prop. 1 (SCL is consistent when every variable's PL1 component is always selected) and the known bias of Bethe training.".into(),
        ],
        groups: gs,
        tables,
        figure: Figure::Lines {
            x_label: format!("sample size n (m = {m_hi})"),
            xs: ns.iter().map(|&n| n as f64).collect(),
            series: ests
                .iter()
                .map(|e| {
                    (
                        e.1.to_string(),
                        ns.iter().map(|&n| g(m_hi, n, e.0)).collect(),
                    )
                })
                .collect(),
            metric: Metric::ParamError,
        },
        analysis: None,
        claims,
    })
}

/// "BP is not consistent", decided on each m whose BP runs converged: at the largest n, BP's
/// error against twice ML's on the same sample, paired t over the samples, p < 0.05. A BP run
/// stopped by a failed line search, the iteration cap or a risen objective (BP at another fixed
/// point), or whose loopy BP had not converged at its final weights (its gradient is then
/// inexact), would mix a stalled optimiser into the Bethe bias: such an m is counted and left
/// out.
fn bp_inconsistent(ms: Vec<usize>, top: Vec<usize>) -> Claim {
    let n_hi = *top.last().expect("sample sizes");
    use crate::optim::lbfgs::StopReason;
    let g = move |m: usize, key: &str| format!("consistency/m{m}-n{n_hi}/{key}");
    Claim {
        test: None,
        says: format!(
            "BP is not consistent: at n = {n_hi} its error is over twice ML's on the same sample \
             (the Bethe approximation's bias does not shrink with n; paired t over the samples, \
             p < 0.05), on every m whose BP runs converged, loopy BP included (an m with a run \
             that did not is counted, not used)"
        ),
        check: Box::new(move |r| {
            let mut verdicts = vec![];
            let mut ev = vec![];
            for &m in &ms {
                let (bp, ml) = (r.get(&g(m, "bp"))?, r.get(&g(m, "ml"))?);
                let stalled: Vec<String> = bp
                    .iter()
                    .filter_map(|(_, s)| match &s.stop_reason {
                        // Loopy BP itself unconverged at the final weights: its gradient was
                        // not the Bethe objective's, whatever the optimiser's rule said.
                        _ if s.bp_unconverged > 0 => Some(format!(
                            "{} iterations, loopy BP unconverged on {} of the training samples at its final weights",
                            s.iterations, s.bp_unconverged
                        )),
                        Some(StopReason::Converged | StopReason::SmallGradient) => None,
                        Some(StopReason::ObjectiveRose) => Some(format!(
                            "{} iterations, stopped as the Bethe objective rose (loopy BP settled at another fixed point)",
                            s.iterations
                        )),
                        other => Some(format!("{} iterations, {other:?}", s.iterations)),
                    })
                    .collect();
                if !stalled.is_empty() {
                    ev.push(format!(
                        "m = {m}: {} of {} BP runs did not converge ({}), not used",
                        stalled.len(),
                        bp.len(),
                        stalled.join("; ")
                    ));
                    continue;
                }
                let err = |rs: &[(PathBuf, RunSummary)]| -> Option<Vec<f64>> {
                    rs.iter().map(|(_, s)| s.param_error).collect()
                };
                let (b, a) = (err(bp)?, err(ml)?);
                let twice: Vec<f64> = a.iter().map(|x| 2.0 * x).collect();
                let t = crate::eval::significance::paired_t(&b, &twice);
                let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len().max(1) as f64;
                verdicts.push(Verdict::paired(t.mean_difference, t.p, 0.05));
                // The consistency rule the other estimators pass, applied to BP: a rule it
                // can fail.
                let slope = error_points(
                    r,
                    &|n| format!("consistency/m{m}-n{n}/bp"),
                    &top,
                )
                .and_then(|p| log_slope(&p))
                .map_or(String::new(), |(b, lo, hi)| {
                    format!(
                        "; BP's slope of log error over n = {}: {b:.2} [{lo:.2}, {hi:.2}] (the consistency rule: {})",
                        top.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", "),
                        Verdict::at_most(lo, hi, CONSISTENT_SLOPE).words()
                    )
                });
                ev.push(format!(
                    "m = {m}: BP {:.3} against ML {:.3} over {} samples, BP − 2·ML paired t {}{slope}",
                    mean(&b),
                    mean(&a),
                    b.len(),
                    p_value(t.p)
                ));
            }
            let verdict = if verdicts.is_empty() {
                return Some((
                    Verdict::NotDecided,
                    format!("no m with converged BP runs: {}", ev.join("; ")),
                ));
            } else if verdicts.iter().all(|v| *v == Verdict::Holds) {
                Verdict::Holds
            } else if verdicts.contains(&Verdict::DoesNotHold) {
                Verdict::DoesNotHold
            } else {
                Verdict::NotSignificant
            };
            Some((verdict, ev.join("; ")))
        }),
    }
}

/// An experiment computed without runs: its analysis writes the tables, the figure and decides
/// the claims.
fn analysis_only(
    name: &'static str,
    title: &str,
    protocol: Vec<String>,
    analysis: fn(&Experiment, &Options, &Results) -> Result<Section>,
) -> Experiment {
    Experiment {
        name,
        title: title.into(),
        protocol,
        groups: vec![],
        tables: vec![],
        figure: Figure::Analysis,
        analysis: Some(analysis),
        claims: vec![],
    }
}

/// 004 Fig. 1's three policies on the 5-node machine: FL, PL, and PL1 selected with
/// probability 0.7 plus PL2 with 0.3.
const FIG1_POLICIES: [(&str, &str, f64); 3] = [
    ("FL", "1:1*fl", 1.0),
    ("PL", "1:1*pl1", 1.83),
    ("0.7 PL1 + 0.3 PL2", "0.7:1*pl1 + 0.3:1*pl2", 1.48),
];

/// The couplings −1 on pairs (1,2), (1,3), (1,4), (2,3), (3,4) and +1 elsewhere: the 5-node
/// θ0 whose PL and mixture efficiencies come closest to the paper's printed ones, found by a
/// search with those numbers in view (004 names θ0 = (−1 ×5, +1 ×5) without saying how its
/// entries map to pairs). The report shows it labelled as searched and decides nothing on it.
fn fig1_alternative_theta() -> Vec<f64> {
    // Pairs in the machine's order: (1,2) (1,3) (1,4) (1,5) (2,3) (2,4) (2,5) (3,4) (3,5) (4,5).
    let neg = [0, 1, 2, 4, 7];
    (0..10)
        .map(|i| if neg.contains(&i) { -1.0 } else { 1.0 })
        .collect()
}

pub(super) fn fig1(_o: &Options) -> Result<Experiment> {
    Ok(analysis_only(
        "004-fig1",
        "004 Fig. 1: three SCL policies on a 5-node Boltzmann machine — cost and efficiency",
        vec![
            "Model: the fully connected Boltzmann machine on m = 5 binary variables, θ0 = (−1 ×5, +1 ×5) (004 §3), in the machine's pair order (1,2), (1,3), …, (4,5).".into(),
            "Policies (004 Fig. 1): FL; PL (every PL1 component); PL1 components selected with probability 0.7 and PL2 components with 0.3, weights 1, independent selection.".into(),
            "Cost: 004 §3.1's FLOPs per example, a family of c components over |A| variables costing P·(c·2^|A| + 1) for P = 10 parameters, times the selection rate. Efficiency: det of the asymptotic variance over the MLE's (004 eq. 8), computed exactly by enumerating the 32 states, in the paper's form (Prop. 2, Z replaced by its mean λ) and in the exact form for random selection (E[Z_j Z_l] in the middle of the sandwich; see ../shared/papers/README.md). No runs, no data: the numbers are the model's.".into(),
        ],
        fig1_analysis,
    ))
}

fn fig1_analysis(_e: &Experiment, _o: &Options, _r: &Results) -> Result<Section> {
    use std::fmt::Write;
    let machine = Machine::new(5, None)?;
    let alt = Machine::new(5, Some(&fig1_alternative_theta()))?;
    let mut md = String::from(
        "| policy | FLOPs per example | rel. efficiency, paper's form | exact form | paper | paper's form, θ0 searched (see below) |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut rows = vec![];
    for (label, text, paper) in FIG1_POLICIES {
        let policy = SelectionPolicy::parse(text, Selection::Independent, 0)?;
        let e = machine.efficiency(&policy)?;
        let ea = alt.efficiency(&policy)?;
        let flops = machine.expected_flops(&policy);
        let _ = writeln!(
            md,
            "| {label} | {flops:.0} | {:.2} | {:.2} | {paper:.2} | {:.2} |",
            e.det_paper, e.det_exact, ea.det_paper
        );
        rows.push((label, flops, e, ea, paper));
    }
    let json = serde_json::json!(rows
        .iter()
        .map(|(l, f, e, ea, p)| serde_json::json!({
            "policy": l, "flops_per_example": f, "efficiency": e,
            "efficiency_other_ordering": ea, "paper": p,
        }))
        .collect::<Vec<_>>());
    let (fl, pl, mix) = (&rows[0], &rows[1], &rows[2]);
    let _ = writeln!(
        md,
        "\nThe primary rows use 004's θ0 as written, its five −1s on the first five pairs in order. The last column is **not** the paper's setting: another placement of the five −1s (on (1,2), (1,3), (1,4), (2,3), (3,4)), found by searching the placements for efficiencies close to the paper's printed numbers, with those numbers in view; it shows how much θ0's unstated pair order moves them, and decides nothing."
    );
    // The model is computed exactly, so a number agrees with the paper's only to its printed
    // two decimals (± 0.005); a looser tolerance would pass values another θ0 ordering gives.
    let close = |a: f64, b: f64| (a - b).abs() <= 0.005 + 1e-12;
    let claims = vec![
        (
            "PL costs less than half of FL's FLOPs, and the mixture lies between them (004 §3)"
                .to_string(),
            pl.1 < fl.1 / 2.0 && pl.1 < mix.1 && mix.1 < fl.1,
            format!("FL {:.0}, PL {:.0}, mixture {:.0} per example", fl.1, pl.1, mix.1),
        ),
        (
            "PL's relative efficiency is 1.83 (to the paper's printed two decimals, ± 0.005: the efficiency is computed exactly, so only θ0's pair order can move it)".to_string(),
            close(pl.2.det_paper, 1.83),
            format!(
                "{:.2} at θ0 in pair order; {:.2} at the searched ordering (not decided on) — the paper's number depends on which pairs carry −1, which it does not say",
                pl.2.det_paper, pl.3.det_paper
            ),
        ),
        (
            "The mixture's relative efficiency is 1.48, in the paper's form (± 0.005, as above)".to_string(),
            close(mix.2.det_paper, 1.48),
            format!(
                "{:.2} at θ0 in pair order; {:.2} at the searched ordering (not decided on)",
                mix.2.det_paper, mix.3.det_paper
            ),
        ),
        (
            "Adding PL2 components lowers the variance below PL's (148 % against 183 %), in the exact form for random selection".to_string(),
            mix.2.det_exact < pl.2.det_exact,
            format!(
                "exact form: mixture {:.2} against PL {:.2} (paper's form {:.2} against {:.2}): selecting PL1 components only 70 % of the time loses more than the PL2 components add — Prop. 2's form, which replaces Z by its mean, hides it",
                mix.2.det_exact, pl.2.det_exact, mix.2.det_paper, pl.2.det_paper
            ),
        ),
    ];
    let cats: Vec<String> = rows.iter().map(|r| r.0.to_string()).collect();
    let svg = crate::experiments::charts::svg_bars(
        "004 Fig. 1's policies: relative efficiency (det over the MLE's)",
        "relative efficiency",
        &cats,
        &[
            (
                "paper's form".into(),
                [70, 120, 220],
                rows.iter().map(|r| r.2.det_paper).collect(),
            ),
            (
                "exact form".into(),
                [220, 120, 60],
                rows.iter().map(|r| r.2.det_exact).collect(),
            ),
            (
                "paper (Fig. 1)".into(),
                [90, 90, 90],
                rows.iter().map(|r| r.4).collect(),
            ),
        ],
        0.0,
    );
    Ok(Section {
        title: "Cost and relative efficiency".into(),
        markdown: md,
        json,
        svg: Some(svg),
        claims: claims
            .into_iter()
            .map(|(s, b, e)| (s, Verdict::from(b), e))
            .collect(),
    })
}

pub(super) fn fig2(o: &Options) -> Result<Experiment> {
    let steps = if o.quick { 2 } else { 20 };
    Ok(analysis_only(
        "004-fig2",
        "004 Fig. 2: asymptotic variance of PL mixtures on a 5-node Boltzmann machine",
        vec![
            "Model: the fully connected Boltzmann machine on m = 5 binary variables at 004's θ0 (−1 ×5, +1 ×5 in pair order).".into(),
            format!("Policies: λ PL(k+1) + (1 − λ) PL(k) for k = 1, 2, 3 (higher order selected with probability λ, lower with 1 − λ, weights 1, independent selection), λ = 0, {}, …, 1; FL is 1 and PL1 is the k = 1 curve at λ = 0.", 1.0 / steps as f64),
            "Measures: trace and det of the asymptotic variance of √n(θ̂ − θ0) over the MLE's, by enumeration, in the paper's form (Prop. 2: Z replaced by λ) and in the exact form for random selection.".into(),
        ],
        fig2_analysis,
    ))
}

fn fig2_analysis(_e: &Experiment, o: &Options, _r: &Results) -> Result<Section> {
    use crate::experiments::charts::{svg_lines, Series};
    use std::fmt::Write;
    let steps = if o.quick { 2 } else { 20 };
    let machine = Machine::new(5, None)?;
    let curves = fig2_curves(&machine, &[1, 2, 3], steps, Selection::Independent)?;
    let mut md = String::from(
        "Relative det (trace) of the asymptotic variance; paper's form / exact form.\n\n| λ |",
    );
    for c in &curves {
        let _ = write!(
            md,
            " PL{}/PL{} det | PL{}/PL{} trace |",
            c.k + 1,
            c.k,
            c.k + 1,
            c.k
        );
    }
    md.push_str("\n|---:|");
    for _ in &curves {
        md.push_str("---:|---:|");
    }
    md.push('\n');
    let every = (steps / 4).max(1);
    for i in (0..=steps).step_by(every) {
        let _ = write!(md, "| {:.2} |", curves[0].points[i][0]);
        for c in &curves {
            let p = c.points[i];
            let _ = write!(
                md,
                " {:.3} / {:.3} | {:.4} / {:.4} |",
                p[1], p[2], p[3], p[4]
            );
        }
        md.push('\n');
    }
    // 004 §8.1's observations (c)–(e), each in both forms.
    let last = |c: &TheoryCurve, f: usize| c.points.last().unwrap()[f];
    let first = |c: &TheoryCurve, f: usize| c.points[0][f];
    let mut claims = vec![];
    for (form, f) in [("paper's form", 1), ("exact form", 2)] {
        let falls = curves.iter().all(|c| last(c, f) < first(c, f));
        let monotone = curves
            .iter()
            .all(|c| c.points.windows(2).all(|w| w[1][f] <= w[0][f] + 1e-9));
        let ev = curves
            .iter()
            .map(|c| {
                let (lo, hi) = c.points.iter().fold((f64::MAX, 0.0f64), |(lo, hi), p| {
                    (lo.min(p[f]), hi.max(p[f]))
                });
                format!(
                    "PL{}/PL{}: {:.3} at λ = 0 → {:.3} at λ = 1 (range {lo:.3}–{hi:.3})",
                    c.k + 1,
                    c.k,
                    first(c, f),
                    last(c, f)
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        claims.push((
            format!(
                "(d) the variance falls as the higher order's selection probability λ grows, monotonically ({form}, det)"
            ),
            falls && monotone,
            ev,
        ));
        let c3 = curves.iter().find(|c| c.k == 3);
        if let Some(c3) = c3 {
            claims.push((
                format!("(e) PL4 brings the variance very close to the MLE's: PL4/PL3 at λ = 1 within 5 % of 1 ({form}, det)"),
                last(c3, f) < 1.05,
                format!("{:.4}", last(c3, f)),
            ));
        }
    }
    let colors: [[u8; 3]; 3] = [[60, 120, 220], [220, 120, 60], [60, 160, 90]];
    let mut series = vec![];
    for (c, col) in curves.iter().zip(colors) {
        for (form, f) in [("paper's form", 1), ("exact", 2)] {
            series.push(Series {
                name: format!("PL{}/PL{}, {form}", c.k + 1, c.k),
                color: if f == 1 {
                    col
                } else {
                    [col[0] / 2, col[1] / 2, col[2] / 2]
                },
                points: c.points.iter().map(|p| [p[0], p[f]]).collect(),
                markers: false,
            });
        }
    }
    let svg = svg_lines(
        "004 Fig. 2 (right): relative det of the asymptotic variance, m = 5",
        "λ (selection probability of the higher order)",
        "det ratio to the MLE's",
        &series,
    );
    let json = serde_json::json!(curves
        .iter()
        .map(|c| serde_json::json!({"k": c.k, "points": c.points}))
        .collect::<Vec<_>>());
    Ok(Section {
        title: "Relative efficiency against λ".into(),
        markdown: md,
        json,
        svg: Some(svg),
        claims: claims
            .into_iter()
            .map(|(s, b, e)| (s, Verdict::from(b), e))
            .collect(),
    })
}

/// 004 Fig. 3's families on the 9-node machine: `λ1 β1 LOW + λ2 (1 − β1) HIGH`.
const FIG3_FAMILIES: [(usize, usize); 3] = [(1, 2), (1, 3), (2, 3)];

pub(super) fn fig3(o: &Options) -> Result<Experiment> {
    let (m, grid) = fig3_grid(o);
    Ok(analysis_only(
        "004-fig3",
        "004 Fig. 3: accuracy and complexity of SCL policies on a 9-node Boltzmann machine",
        vec![
            format!("Model: the fully connected Boltzmann machine on m = {m} binary variables at θ0 = ±1 alternating in pair order (004 does not give its m = 9 θ0)."),
            format!("Policies (004 Fig. 3): λ1 β1 PL(a) + λ2 (1 − β1) PL(b) for (a, b) = (1, 2), (1, 3), (2, 3); λ1, λ2 ∈ {:?}, β1 ∈ {:?}; independent selection.", grid.0, grid.1),
            "Each policy a point: x its relative efficiency (det of the asymptotic variance over the MLE's, 004 eq. 8, by enumerating the 512 states; the paper's form of Prop. 2 and the exact form for random selection), y its expected FLOPs per example (004 §3.1). The frontier: the points no other point beats on both.".into(),
        ],
        fig3_analysis,
    ))
}

/// m and the (λ, β) grids: the paper's m = 9, or a small machine for `--quick`.
fn fig3_grid(o: &Options) -> (usize, (Vec<f64>, Vec<f64>)) {
    if o.quick {
        (4, (vec![0.5, 1.0], vec![0.5]))
    } else {
        (9, (vec![0.25, 0.5, 0.75, 1.0], vec![0.25, 0.5, 0.75]))
    }
}

/// Indices of the points not dominated in both coordinates (lower is better in each).
fn frontier(points: &[(f64, f64)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len())
        .filter(|&i| {
            !points.iter().enumerate().any(|(j, q)| {
                j != i
                    && q.0 <= points[i].0
                    && q.1 <= points[i].1
                    && (q.0 < points[i].0 || q.1 < points[i].1)
            })
        })
        .collect();
    idx.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0));
    idx
}

fn fig3_analysis(_e: &Experiment, o: &Options, _r: &Results) -> Result<Section> {
    use crate::experiments::charts::{svg_lines, Series};
    use std::fmt::Write;
    let (m, (lambdas, betas)) = fig3_grid(o);
    let machine = Machine::new(m, None)?;
    // (family, λ1, λ2, β1, FLOPs, efficiency)
    let mut pts = vec![];
    for &(a, b) in &FIG3_FAMILIES {
        if b > m {
            continue;
        }
        for &l1 in &lambdas {
            for &l2 in &lambdas {
                for &b1 in &betas {
                    let text = format!("{l1}:{b1}*pl{a} + {l2}:{}*pl{b}", 1.0 - b1);
                    let policy = SelectionPolicy::parse(&text, Selection::Independent, 0)?;
                    let e = machine.efficiency(&policy)?;
                    pts.push(((a, b), l1, l2, b1, machine.expected_flops(&policy), e));
                }
            }
        }
    }
    let mut md = String::new();
    let mut claims = vec![];
    let mut json = vec![];
    for (form, det) in [
        (
            "paper's form",
            (|e: &Efficiency| e.det_paper) as fn(&Efficiency) -> f64,
        ),
        ("exact form", |e: &Efficiency| e.det_exact),
    ] {
        let xy: Vec<(f64, f64)> = pts.iter().map(|p| (det(&p.5), p.4)).collect();
        let front = frontier(&xy);
        let _ = writeln!(
            md,
            "**Frontier, {form}** (relative efficiency, FLOPs per example, policy):\n\n| rel. efficiency | FLOPs | family | λ1 | λ2 | β1 |\n|---:|---:|---|---:|---:|---:|"
        );
        for &i in &front {
            let p = &pts[i];
            let _ = writeln!(
                md,
                "| {:.3} | {:.0} | PL{}/PL{} | {} | {} | {} |",
                xy[i].0, p.4, p.0 .0, p.0 .1, p.1, p.2, p.3
            );
        }
        md.push('\n');
        let families: std::collections::BTreeSet<(usize, usize)> =
            front.iter().map(|&i| pts[i].0).collect();
        let best = front.first().map(|&i| pts[i].0);
        let cheapest = front.last().map(|&i| pts[i].0);
        claims.push((
            format!("Higher orders buy accuracy with computation ({form}): the most accurate point on the frontier uses PL3, the cheapest uses PL1, and the frontier mixes families"),
            best.is_some_and(|f| f.1 == 3 || m < 3)
                && cheapest.is_some_and(|f| f.0 == 1)
                && families.len() > 1,
            {
                let name = |f: Option<(usize, usize)>| {
                    f.map_or("none".to_string(), |(a, b)| format!("PL{a}/PL{b}"))
                };
                format!(
                    "{} frontier points from {}; most accurate {}, cheapest {}",
                    front.len(),
                    families
                        .iter()
                        .map(|&f| name(Some(f)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    name(best),
                    name(cheapest)
                )
            },
        ));
        json.push(serde_json::json!({
            "form": form,
            "frontier": front.iter().map(|&i| serde_json::json!({
                "family": [pts[i].0 .0, pts[i].0 .1], "lambda1": pts[i].1, "lambda2": pts[i].2,
                "beta1": pts[i].3, "flops": pts[i].4, "efficiency": det(&pts[i].5),
            })).collect::<Vec<_>>(),
        }));
    }
    let colors = [[70, 120, 220], [220, 120, 60], [60, 160, 90]];
    let mut series: Vec<Series> = FIG3_FAMILIES
        .iter()
        .zip(colors)
        .map(|(&f, color)| Series {
            name: format!("PL{}/PL{}", f.0, f.1),
            color,
            points: pts
                .iter()
                .filter(|p| p.0 == f)
                .map(|p| [p.5.det_paper, p.4])
                .collect(),
            markers: true,
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.5.det_paper, p.4)).collect();
    series.push(Series {
        name: "frontier".into(),
        color: [90, 90, 90],
        points: frontier(&xy).iter().map(|&i| [xy[i].0, xy[i].1]).collect(),
        markers: false,
    });
    let svg = svg_lines(
        &format!("004 Fig. 3: SCL policies on a {m}-node Boltzmann machine (paper's form)"),
        "relative efficiency (det ratio to the MLE's)",
        "FLOPs per example",
        &series,
    );
    Ok(Section {
        title: "Accuracy–complexity frontier".into(),
        markdown: md,
        json: serde_json::json!({ "points": pts.len(), "frontiers": json }),
        svg: Some(svg),
        claims: claims
            .into_iter()
            .map(|(s, b, e)| (s, Verdict::from(b), e))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::frontier;

    #[test]
    fn the_frontier_keeps_exactly_the_undominated_points() {
        let pts = [(1.0, 5.0), (2.0, 2.0), (3.0, 3.0), (4.0, 1.0), (2.0, 2.0)];
        // (3, 3) is beaten by (2, 2); the tie (2, 2) twice dominates neither.
        assert_eq!(frontier(&pts), vec![0, 1, 4, 3]);
    }
}
