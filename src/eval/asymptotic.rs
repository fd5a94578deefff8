//! SCL theory for models small enough to enumerate (004 §3.1, Proposition 2): the asymptotic
//! variance of the maximum SCL estimator (the paper's FLOP counts are in `estimators::scl`).
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
use crate::estimators::scl::{component_term, components, Selection, SelectionPolicy};
use crate::estimators::{evaluate_terms, TermList, TermWork};
use crate::graph::{Instance, Model};
use crate::inference::enumerate::for_each_assignment;
use crate::inference::InferWork;

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
