//! 004 (stochastic composite likelihood): the experiments on Boltzmann machines whose data are
//! drawn exactly from known parameters θ0, so every run reports ‖θ̂ − θ0‖.

use super::tasks::*;
use super::*;
use crate::error::{Error, Result};
use crate::estimators::scl::{Selection, SelectionPolicy};
use crate::estimators::EstimatorSpec;
use crate::graph::boltzmann::{samples_with_theta, BoltzmannOptions};
use crate::graph::ModelSpec;
use crate::train::LbfgsSpec;
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
    for (key, label, _) in ests.iter().filter(|e| e.0 != "bp") {
        let ms = ms.clone();
        let key = key.to_string();
        claims.push(Claim {
            says: format!(
                "{label} is consistent: its error at n = {n_hi} is below half its error at \
                 n = {n_lo}, on every m"
            ),
            check: Box::new(move |r| {
                let mut ok = true;
                let mut ev = vec![];
                for &m in &ms {
                    let (a, b) = (mean(r, m, n_lo, &key)?, mean(r, m, n_hi, &key)?);
                    ok &= b < a / 2.0;
                    ev.push(format!("m = {m}: {a:.3} → {b:.3}"));
                }
                Some((ok, ev.join("; ")))
            }),
        });
    }
    let m_hi = *ms.last().unwrap();
    claims.push(Claim {
        says: format!(
            "BP is not consistent: on m = {m_hi} at n = {n_hi} its error is over twice ML's \
             (the Bethe approximation's bias does not shrink with n)"
        ),
        check: Box::new(move |r| {
            let (bp, ml) = (mean(r, m_hi, n_hi, "bp")?, mean(r, m_hi, n_hi, "ml")?);
            Some((bp > 2.0 * ml, format!("BP {bp:.3} against ML {ml:.3}")))
        }),
    });
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
