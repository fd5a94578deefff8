//! SCL theory for models small enough to enumerate (004 §3.1, Proposition 2): the paper's FLOP
//! counts of components, and the asymptotic variance of the maximum SCL estimator.
//!
//! **FLOPs** (004 §3.1 and its footnote): a family of c components with |A| = k over a model
//! with P parameters costs `P·(c·2^k + 1)` per example for the objective, shared equally by its
//! components, so a component costs `P·(2^k + 1/c)` (for non-binary variables 2^k becomes the
//! number of joint states of A). On the 5-node Boltzmann machine (P = 10): FL 330, a PL1 component
//! 22 (PL 110 per example), a PL2 component 41.
//!
//! **Asymptotic variance**. With g_j(x) = ∇θ log p(x_A | x_B) at θ0 (mean zero: each component is
//! a conditional likelihood), the information identity gives E[−∇²S_j] = E[g_j g_jᵀ], so
//! `Υ = Σ_j β_j λ_j E[g_j g_jᵀ]` and the variance of √n(θ̂ − θ0) is `Υ⁻¹ Σ Υ⁻¹` with
//! - the paper's form (Proposition 2): `Σ = E[(Σ_j β_j λ_j g_j)(Σ_j β_j λ_j g_j)ᵀ]`;
//! - the exact form for random selection: `Σ = Σ_{j,l} β_j β_l E[Z_j Z_l] E[g_j g_lᵀ]`, with
//!   E[Z_j Z_l] from the selection model (the papers README notes the paper's form ignores Z).
//!
//! The MLE's is the inverse Fisher information; relative efficiency is det (and trace) ratios.

use crate::error::{Error, Result};
use crate::estimators::scl::{component_term, ComponentFamily, Selection, SelectionPolicy};
use crate::estimators::{evaluate_terms, TermList, TermWork};
use crate::graph::{Instance, Model};
use crate::inference::enumerate::for_each_assignment;
use crate::inference::InferWork;

/// The components (A, B = the complement) of one family on an instance.
pub fn components(family: ComponentFamily, inst: &Instance) -> Vec<Vec<u32>> {
    let mut out = vec![];
    family.visit(inst, |a| out.push(a.to_vec()));
    out
}

/// The paper's FLOPs of one component of `family` on `inst`, for a model with `n_params`.
pub fn component_flops(
    family: ComponentFamily,
    inst: &Instance,
    a: &[u32],
    n_params: usize,
) -> f64 {
    let c = family.count(inst).max(1) as f64;
    n_params as f64 * (component_states(inst, a) + 1.0 / c)
}

/// The states a component's normaliser visits: the joint states of A (the paper's 2^|A| on
/// binary variables) or, when A's factors with the rest clamped form a forest of pairwise tables
/// and that is cheaper, the table entries sum-product reads (Σ_v |Y_v| + Σ_edges |Y_u||Y_v|):
/// full likelihood on a chain is forward–backward, not enumeration.
pub fn component_states(inst: &Instance, a: &[u32]) -> f64 {
    let card = |v: u32| inst.card[v as usize] as f64;
    let product: f64 = a.iter().map(|&v| card(v)).product();
    let mut parent: Vec<usize> = (0..a.len()).collect();
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let local = |v: u32| {
        if a.len() == inst.n_vars() {
            Some(v as usize)
        } else {
            a.binary_search(&v).ok()
        }
    };
    let mut cost: f64 = a.iter().map(|&v| card(v)).sum();
    for &v in a {
        for &f in inst.var_factors(v) {
            let scope = inst.scope(&inst.factors[f as usize]);
            let mut reduced = scope.iter().filter(|&&u| local(u).is_some());
            if reduced.next() != Some(&v) {
                continue; // counted from its first variable in A
            }
            let rest: Vec<u32> = reduced.copied().collect();
            match rest[..] {
                [] => {}
                [u] => {
                    let (x, y) = (
                        root(&mut parent, local(v).unwrap()),
                        root(&mut parent, local(u).unwrap()),
                    );
                    if x == y {
                        return product;
                    }
                    parent[x] = y;
                    cost += card(v) * card(u);
                }
                _ => return product,
            }
        }
    }
    product.min(cost)
}

/// The asymptotic variance of √n(θ̂ − θ0), and the MLE's, at θ0.
#[derive(Clone, Debug)]
pub struct AsymptoticVariance {
    /// The paper's form (Proposition 2).
    pub paper: Vec<Vec<f64>>,
    /// The exact form for random selection.
    pub exact: Vec<Vec<f64>>,
    /// The MLE's: the inverse Fisher information.
    pub ml: Vec<Vec<f64>>,
}

/// det and trace ratios to the MLE's (004 eq. 8 is the det ratio).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Efficiency {
    pub det_paper: f64,
    pub det_exact: f64,
    pub trace_paper: f64,
    pub trace_exact: f64,
}

impl AsymptoticVariance {
    pub fn efficiency(&self) -> Result<Efficiency> {
        let (dm, tm) = (log_det(&self.ml)?, trace(&self.ml));
        Ok(Efficiency {
            det_paper: (log_det(&self.paper)? - dm).exp(),
            det_exact: (log_det(&self.exact)? - dm).exp(),
            trace_paper: trace(&self.paper) / tm,
            trace_exact: trace(&self.exact) / tm,
        })
    }
}

/// Computes the asymptotic variances of the SCL estimator with `policy` for the model `model`
/// over the graph `inst` (every variable modelled, as in a Boltzmann machine) at parameters
/// `theta`, by enumerating every joint state.
pub fn asymptotic_variance(
    model: &Model,
    inst: &Instance,
    theta: &[f64],
    policy: &SelectionPolicy,
) -> Result<AsymptoticVariance> {
    let states = inst.joint_states();
    if states > 1 << 16 {
        return Err(Error::invalid(format!(
            "the asymptotic variance enumerates every joint state; this model has {states}"
        )));
    }
    let p = model.n_params;
    let mut phi = vec![0.0; inst.table_len];
    model.build_tables(theta, inst, &mut phi, &mut vec![]);
    // Components with their family's λ and β, and a label for E[Z_j Z_l].
    struct Comp {
        a: Vec<u32>,
        b: Vec<u32>,
        lambda: f64,
        beta: f64,
        group: usize,
        family: usize,
    }
    let mut comps = vec![];
    for (gi, group) in policy.groups.iter().enumerate() {
        for (fi, part) in group.iter().enumerate() {
            for a in components(part.family, inst) {
                let b = (0..inst.n_vars() as u32)
                    .filter(|v| !a.contains(v))
                    .collect();
                comps.push(Comp {
                    a,
                    b,
                    lambda: part.lambda,
                    beta: part.beta,
                    group: gi,
                    family: gi * 1000 + fi,
                });
            }
        }
    }
    let k = comps.len();
    let all: Vec<u32> = (0..inst.n_vars() as u32).collect();
    // Per state: probability, each component's gradient, and the full likelihood's.
    let log_z = crate::inference::enumerate(inst, &phi)?.log_z;
    let mut e_gg = vec![vec![vec![0.0; p * p]; k]; k];
    let mut fisher = vec![0.0; p * p];
    let (mut tw, mut iw, mut list) = (
        TermWork::default(),
        InferWork::default(),
        TermList::default(),
    );
    let mut dphi = vec![0.0; inst.table_len];
    let mut grad = |a: &[u32], b: &[u32], x: &[u32], out: &mut Vec<f64>| {
        list.clear();
        component_term(inst, a, b, 1.0, &mut list);
        dphi.fill(0.0);
        evaluate_terms(inst, &phi, x, &list, Some(&mut dphi), &mut tw, &mut iw);
        out.clear();
        out.resize(p, 0.0);
        model.scatter(inst, &dphi, 1.0, out, &mut vec![]);
    };
    let mut g: Vec<Vec<f64>> = vec![vec![]; k];
    let mut gf = vec![];
    let mut result = Ok(());
    for_each_assignment(&inst.card, |x| {
        if result.is_err() {
            return;
        }
        let w = (inst.score(&phi, x) - log_z).exp();
        for (j, c) in comps.iter().enumerate() {
            grad(&c.a, &c.b, x, &mut g[j]);
        }
        grad(&all, &[], x, &mut gf);
        for j in 0..k {
            for l in 0..k {
                let m = &mut e_gg[j][l];
                for r in 0..p {
                    for s in 0..p {
                        m[r * p + s] += w * g[j][r] * g[l][s];
                    }
                }
            }
        }
        for r in 0..p {
            for s in 0..p {
                fisher[r * p + s] += w * gf[r] * gf[s];
            }
        }
        if !w.is_finite() {
            result = Err(Error::invalid("probabilities are not finite"));
        }
    });
    result?;
    // E[Z_j Z_l] under the selection model.
    let ezz = |j: usize, l: usize| -> f64 {
        let (cj, cl) = (&comps[j], &comps[l]);
        match policy.selection {
            Selection::Independent if j == l => cj.lambda,
            Selection::Independent => cj.lambda * cl.lambda,
            Selection::Multinomial if cj.family == cl.family => cj.lambda,
            Selection::Multinomial if cj.group == cl.group => 0.0,
            Selection::Multinomial => cj.lambda * cl.lambda,
        }
    };
    let mut upsilon = vec![0.0; p * p];
    let (mut sig_paper, mut sig_exact) = (vec![0.0; p * p], vec![0.0; p * p]);
    for j in 0..k {
        let cj = &comps[j];
        for (u, &v) in upsilon.iter_mut().zip(&e_gg[j][j]) {
            *u += cj.beta * cj.lambda * v;
        }
        for l in 0..k {
            let cl = &comps[l];
            let (wp, we) = (
                cj.beta * cj.lambda * cl.beta * cl.lambda,
                cj.beta * cl.beta * ezz(j, l),
            );
            for ((sp, se), &v) in sig_paper
                .iter_mut()
                .zip(sig_exact.iter_mut())
                .zip(&e_gg[j][l])
            {
                *sp += wp * v;
                *se += we * v;
            }
        }
    }
    let ui = inverse(&to_rows(&upsilon, p))?;
    let sandwich = |s: &[f64]| mul(&mul(&ui, &to_rows(s, p)), &ui);
    Ok(AsymptoticVariance {
        paper: sandwich(&sig_paper),
        exact: sandwich(&sig_exact),
        ml: inverse(&to_rows(&fisher, p))?,
    })
}

fn to_rows(m: &[f64], p: usize) -> Vec<Vec<f64>> {
    m.chunks(p).map(|r| r.to_vec()).collect()
}

fn mul(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = b[0].len();
    a.iter()
        .map(|r| {
            (0..n)
                .map(|j| r.iter().zip(b).map(|(x, row)| x * row[j]).sum())
                .collect()
        })
        .collect()
}

pub fn trace(m: &[Vec<f64>]) -> f64 {
    (0..m.len()).map(|i| m[i][i]).sum()
}

/// Gauss–Jordan elimination with partial pivoting.
pub fn inverse(m: &[Vec<f64>]) -> Result<Vec<Vec<f64>>> {
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
            .expect("rows");
        if a[piv][c].abs() < 1e-300 {
            return Err(Error::invalid(
                "the matrix is singular (the components do not identify θ)",
            ));
        }
        a.swap(c, piv);
        let d = a[c][c];
        for x in a[c].iter_mut() {
            *x /= d;
        }
        for r in 0..n {
            if r != c {
                let f = a[r][c];
                if f != 0.0 {
                    let pivot_row = a[c].clone();
                    for (x, y) in a[r].iter_mut().zip(pivot_row) {
                        *x -= f * y;
                    }
                }
            }
        }
    }
    Ok(a.into_iter().map(|r| r[n..].to_vec()).collect())
}

/// log |det| by LU with partial pivoting.
pub fn log_det(m: &[Vec<f64>]) -> Result<f64> {
    let n = m.len();
    let mut a = m.to_vec();
    let mut ld = 0.0;
    for c in 0..n {
        let piv = (c..n)
            .max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))
            .expect("rows");
        if a[piv][c].abs() < 1e-300 {
            return Err(Error::invalid("the matrix is singular"));
        }
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
    Ok(ld)
}

/// The empirical variance of √n(θ̂ − θ0) over replications: `reps` data sets of `n` samples
/// drawn exactly from a Boltzmann machine at θ0, each fitted by the SCL estimator with a fresh
/// Z (no prior). The check on [`asymptotic_variance`]: its exact form must match.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MonteCarlo {
    pub n: usize,
    pub reps: usize,
    pub trace: f64,
    pub log_det: Option<f64>,
}

/// Runs the Monte Carlo of [`MonteCarlo`] on rayon's pool; `progress` gets the replications
/// finished so far. `cancel` stops it between fits.
pub fn monte_carlo(
    bm: &crate::graph::boltzmann::BoltzmannMachine,
    theta0: &[f64],
    policy: &SelectionPolicy,
    (n, reps, seed): (usize, usize, u64),
    cancel: &std::sync::atomic::AtomicBool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<MonteCarlo> {
    use crate::data::synth_loopy::boltzmann_samples;
    use crate::data::Corpus;
    use crate::estimators::EstimatorSpec;
    use crate::graph::Family;
    use crate::train::{minimize, DatasetObjective, LbfgsSpec, Prior};
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    if reps < 2 {
        return Err(Error::invalid(
            "a Monte Carlo needs at least 2 replications",
        ));
    }
    let done = AtomicUsize::new(0);
    let draws: Vec<Vec<f64>> = (0..reps as u64)
        .into_par_iter()
        .map(|r| -> Result<Vec<f64>> {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let corpus = Corpus {
                path: "monte-carlo".into(),
                sequences: boltzmann_samples(bm.m, theta0, &[], n, seed + 1000 + r)?,
                n_columns: 1,
            };
            let insts = bm.instances(&corpus)?;
            let mut p = policy.clone();
            p.seed = seed + 5000 + r;
            let est = EstimatorSpec::Scl { policy: p }.build(bm.model())?;
            let obj =
                DatasetObjective::new(bm.model(), &insts, est.as_ref(), Prior { sigma2: None }, 1)?;
            let opt = LbfgsSpec {
                max_iter: 300,
                delta: 1e-12,
                epsilon: 1e-9,
                ..LbfgsSpec::default()
            };
            let res = minimize(&obj, vec![0.0; theta0.len()], &opt, cancel, &mut |_, _| {})?;
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            Ok(res
                .theta
                .iter()
                .zip(theta0)
                .map(|(a, b)| (n as f64).sqrt() * (a - b))
                .collect())
        })
        .collect::<Result<_>>()?;
    let p = theta0.len();
    let mean: Vec<f64> = (0..p)
        .map(|j| draws.iter().map(|d| d[j]).sum::<f64>() / reps as f64)
        .collect();
    let cov: Vec<Vec<f64>> = (0..p)
        .map(|j| {
            (0..p)
                .map(|k| {
                    draws
                        .iter()
                        .map(|d| (d[j] - mean[j]) * (d[k] - mean[k]))
                        .sum::<f64>()
                        / (reps - 1) as f64
                })
                .collect()
        })
        .collect();
    Ok(MonteCarlo {
        n,
        reps,
        trace: trace(&cov),
        log_det: log_det(&cov).ok(),
    })
}
