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
use linfa_linalg::cholesky::{CholeskyInplace, InverseC};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView1, ArrayView2, Axis};

/// The asymptotic variance of √n(θ̂ − θ0), and the MLE's, at θ0.
#[derive(Clone, Debug)]
pub struct AsymptoticVariance {
    /// The paper's form (Proposition 2).
    pub paper: Array2<f64>,
    /// The exact form for random selection.
    pub exact: Array2<f64>,
    /// The MLE's: the inverse Fisher information.
    pub ml: Array2<f64>,
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
        let (dm, tm) = (log_det(self.ml.view())?, self.ml.diag().sum());
        Ok(Efficiency {
            det_paper: (log_det(self.paper.view())? - dm).exp(),
            det_exact: (log_det(self.exact.view())? - dm).exp(),
            trace_paper: self.paper.diag().sum() / tm,
            trace_exact: self.exact.diag().sum() / tm,
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
    let mut e_gg = vec![vec![Array2::<f64>::zeros((p, p)); k]; k];
    let mut fisher = Array2::<f64>::zeros((p, p));
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
        // E[g_j g_lᵀ] += w g_j g_lᵀ: the outer products as (p × 1)(1 × p) products in place.
        let column = |v: &[f64]| ArrayView1::from(v).insert_axis(Axis(1)).to_owned();
        let cols: Vec<Array2<f64>> = g.iter().map(|v| column(v)).collect();
        for j in 0..k {
            for l in 0..k {
                general_mat_mul(w, &cols[j], &cols[l].t(), 1.0, &mut e_gg[j][l]);
            }
        }
        let cf = column(&gf);
        general_mat_mul(w, &cf, &cf.t(), 1.0, &mut fisher);
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
    let mut upsilon = Array2::<f64>::zeros((p, p));
    let (mut sig_paper, mut sig_exact) = (upsilon.clone(), upsilon.clone());
    for j in 0..k {
        let cj = &comps[j];
        upsilon.scaled_add(cj.beta * cj.lambda, &e_gg[j][j]);
        for l in 0..k {
            let cl = &comps[l];
            sig_paper.scaled_add(cj.beta * cj.lambda * cl.beta * cl.lambda, &e_gg[j][l]);
            sig_exact.scaled_add(cj.beta * cl.beta * ezz(j, l), &e_gg[j][l]);
        }
    }
    let ui = inverse(upsilon.view())
        .map_err(|_| Error::invalid("the matrix is singular (the components do not identify θ)"))?;
    let sandwich = |s: &Array2<f64>| ui.dot(s).dot(&ui);
    Ok(AsymptoticVariance {
        paper: sandwich(&sig_paper),
        exact: sandwich(&sig_exact),
        ml: inverse(fisher.view())?,
    })
}

/// A pivot of a symmetric positive definite matrix's Cholesky factor below this fraction of its
/// diagonal entry (`L_jj² < TOL·A_jj`) means the matrix is singular to working precision: the
/// variable is (almost) a combination of the ones before it.
const RELATIVE_PIVOT: f64 = 1e-12;

/// The Cholesky factor L (A = L Lᵀ) of a symmetric positive definite matrix, refusing one that
/// is singular relative to its diagonal ([`RELATIVE_PIVOT`]).
fn cholesky(m: ArrayView2<f64>) -> Result<Array2<f64>> {
    let singular = || Error::invalid("the matrix is singular");
    let mut l = m.to_owned();
    l.cholesky_inplace().map_err(|_| singular())?;
    for j in 0..l.nrows() {
        let pivot = l[(j, j)] * l[(j, j)];
        if pivot.is_nan() || pivot < RELATIVE_PIVOT * m[(j, j)].abs() {
            return Err(singular());
        }
    }
    Ok(l)
}

/// The inverse of a symmetric positive definite matrix, through its Cholesky factor.
pub fn inverse(m: ArrayView2<f64>) -> Result<Array2<f64>> {
    cholesky(m)?;
    m.invc()
        .map_err(|_| Error::invalid("the matrix is singular"))
}

/// log det of a symmetric positive definite matrix: 2 Σ log L_jj.
pub fn log_det(m: ArrayView2<f64>) -> Result<f64> {
    Ok(2.0 * cholesky(m)?.diag().iter().map(|d| d.ln()).sum::<f64>())
}
