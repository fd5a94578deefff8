//! The β heuristic of 004 §7 (eq. 16, Algorithm 1): given λ, choose the family weights β that
//! minimise `J(β) = log det Σ − 2 log det Υ` with both log-determinants replaced by the sums of
//! the logs of their diagonals (Hadamard), and the covariances `K^(ij)` of the families' score
//! vectors estimated empirically over the training items at the current θ:
//!
//! `J(β) ≈ Σ_l log Σ_{i,j} β_i λ_i β_j λ_j K^(ij)_ll − 2 Σ_l log Σ_j β_j λ_j K^(jj)_ll`.
//!
//! J is unchanged by scaling β, so β is searched on the simplex (Σ β = 1): on a fine grid for two
//! families, by coordinate steps for more. A run alternates fitting θ and choosing β
//! (Algorithm 1) and records β and J(β) per round.

use crate::error::Result;
use crate::estimators::scl::{conditional_term, SelectionPolicy};
use crate::estimators::{evaluate_terms, TermList, TermWork};
use crate::graph::{Instance, Model};
use crate::inference::InferWork;

/// Per parameter l: `K^(ij)_ll` for every pair of families (i, j), from per-item score vectors.
pub struct DiagCovariances {
    /// `k[(i * f + j) * p + l]`.
    k: Vec<f64>,
    families: usize,
    params: usize,
}

/// Empirical diagonal covariances of the families' score vectors `Σ_c ∇θ log p(y_A | y_B)` (every
/// component of the family, whatever Z selects) over the items, at θ.
pub fn diag_covariances(
    model: &Model,
    instances: &[Instance],
    policy: &SelectionPolicy,
    theta: &[f64],
) -> Result<DiagCovariances> {
    let parts: Vec<_> = policy.groups.iter().flatten().collect();
    let (f, p) = (parts.len(), model.n_params);
    let mut sum = vec![0.0; f * p];
    let mut cross = vec![0.0; f * f * p];
    let (mut tw, mut iw, mut list) = (
        TermWork::default(),
        InferWork::default(),
        TermList::default(),
    );
    let mut g = vec![vec![0.0; p]; f];
    for inst in instances {
        let gold = crate::estimators::need_gold(inst)?;
        let mut phi = vec![0.0; inst.table_len];
        model.build_tables(theta, inst, &mut phi, &mut vec![]);
        for (i, part) in parts.iter().enumerate() {
            list.clear();
            let mut factors = vec![];
            part.family.visit(inst, |a| {
                conditional_term(inst, a, 1.0, &mut list, &mut factors);
            });
            let mut dphi = vec![0.0; inst.table_len];
            evaluate_terms(inst, &phi, gold, &list, Some(&mut dphi), &mut tw, &mut iw);
            g[i].fill(0.0);
            model.scatter(inst, &dphi, 1.0, &mut g[i], &mut vec![]);
        }
        for i in 0..f {
            for l in 0..p {
                sum[i * p + l] += g[i][l];
            }
            for j in 0..f {
                for l in 0..p {
                    cross[(i * f + j) * p + l] += g[i][l] * g[j][l];
                }
            }
        }
    }
    let n = instances.len().max(1) as f64;
    let mut k = vec![0.0; f * f * p];
    for i in 0..f {
        for j in 0..f {
            for l in 0..p {
                k[(i * f + j) * p + l] =
                    cross[(i * f + j) * p + l] / n - (sum[i * p + l] / n) * (sum[j * p + l] / n);
            }
        }
    }
    Ok(DiagCovariances {
        k,
        families: f,
        params: p,
    })
}

impl DiagCovariances {
    /// The Hadamard approximation of J(β) for selection probabilities λ (one per family).
    pub fn j(&self, beta: &[f64], lambda: &[f64]) -> f64 {
        let (f, p) = (self.families, self.params);
        let mut total = 0.0;
        for l in 0..p {
            let (mut sigma, mut upsilon) = (0.0, 0.0);
            for i in 0..f {
                let wi = beta[i] * lambda[i];
                upsilon += wi * self.k[(i * f + i) * p + l];
                for j in 0..f {
                    sigma += wi * beta[j] * lambda[j] * self.k[(i * f + j) * p + l];
                }
            }
            // Parameters no family's score moves carry no information either way.
            if sigma > 0.0 && upsilon > 0.0 {
                total += sigma.ln() - 2.0 * upsilon.ln();
            }
        }
        total
    }

    /// β on the simplex minimising J: a grid of 1/1000 steps for two families, coordinate steps
    /// of shrinking size for more.
    pub fn best_beta(&self, lambda: &[f64]) -> (Vec<f64>, f64) {
        let f = self.families;
        if f == 1 {
            return (vec![1.0], self.j(&[1.0], lambda));
        }
        if f == 2 {
            return (1..1000)
                .map(|i| {
                    let b = vec![i as f64 / 1000.0, 1.0 - i as f64 / 1000.0];
                    let j = self.j(&b, lambda);
                    (b, j)
                })
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("grid");
        }
        let mut b = vec![1.0 / f as f64; f];
        let mut best = self.j(&b, lambda);
        let mut step = 0.25;
        while step > 1e-4 {
            let mut improved = false;
            for i in 0..f {
                for dir in [-1.0, 1.0] {
                    let mut c = b.clone();
                    c[i] = (c[i] + dir * step).max(1e-6);
                    let s: f64 = c.iter().sum();
                    c.iter_mut().for_each(|x| *x /= s);
                    let j = self.j(&c, lambda);
                    if j < best {
                        (b, best, improved) = (c, j, true);
                    }
                }
            }
            if !improved {
                step /= 2.0;
            }
        }
        (b, best)
    }
}

#[cfg(test)]
mod tests {
    use super::DiagCovariances;

    /// Uncorrelated families with covariances a_j·I and λ = 1: the variance per parameter is
    /// Σ β_j² a_j / (Σ β_j a_j)², minimised (Cauchy–Schwarz) by equal β whatever the a_j.
    #[test]
    fn uncorrelated_families_get_equal_weights() {
        let (f, p) = (2, 3);
        let a = [2.0, 5.0];
        let mut k = vec![0.0; f * f * p];
        for i in 0..f {
            for l in 0..p {
                k[(i * f + i) * p + l] = a[i];
            }
        }
        let d = DiagCovariances {
            k,
            families: f,
            params: p,
        };
        let (b, j) = d.best_beta(&[1.0, 1.0]);
        assert!((b[0] - 0.5).abs() < 2e-3, "{b:?}");
        // At the optimum the per-parameter variance is 1/(a_1 + a_2); J is p times its log.
        let want = p as f64 * (1.0 / (a[0] + a[1])).ln();
        assert!((j - want).abs() < 1e-5, "{j} vs {want}");
        // J does not change when β is scaled.
        assert!((d.j(&[0.3, 0.7], &[1.0, 1.0]) - d.j(&[3.0, 7.0], &[1.0, 1.0])).abs() < 1e-12);
    }
}
