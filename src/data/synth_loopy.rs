//! Synthetic data for loopy models: grid segmentation images and exact Boltzmann-machine samples.
//!
//! **Grids.** A label image of K classes comes from a Potts model sampled by Gibbs sweeps
//! (`potts`: coupling β, from a uniform random start) or from smooth random fields (`smooth`: per
//! class a sum of random Gaussian bumps, each pixel taking the class of the largest field).
//! Each pixel observes a noisy one-hot code of its class, `x_k = 1[y = k] + σ·ε`, ε ~ N(0, 1),
//! so a per-pixel classifier is weak when σ is large and the neighbours carry the signal.
//!
//! **Boltzmann machines.** Exact samples of `p(x) ∝ exp(Σ_{i<j} θ_ij x_i x_j + Σ_i b_i x_i)`,
//! x ∈ {0, 1}^m, by enumerating the 2^m states and inverting the cumulative distribution.

use crate::data::Sequence;
use crate::error::{Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

/// How label images are drawn.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum LabelField {
    /// Gibbs sweeps of a Potts model with coupling β.
    Potts,
    /// Class of the largest of K smooth random fields.
    #[default]
    Smooth,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GridGen {
    pub classes: usize,
    pub height: usize,
    pub width: usize,
    pub field: LabelField,
    /// Potts coupling β (for `potts`).
    pub beta: f64,
    /// Gibbs sweeps (for `potts`).
    pub sweeps: usize,
    /// Observation noise σ.
    pub noise: f64,
    /// Write a weak per-pixel classifier's log-probabilities, log softmax(e), in place of the
    /// noisy one-hot evidence e (002 §4's node potentials from a pre-trained classifier).
    #[serde(default)]
    pub scores: bool,
}

impl Default for GridGen {
    fn default() -> Self {
        GridGen {
            classes: 5,
            height: 16,
            width: 16,
            field: LabelField::Smooth,
            beta: 1.3,
            sweeps: 60,
            noise: 1.0,
            scores: false,
        }
    }
}

impl GridGen {
    pub fn check(&self) -> Result<()> {
        if self.classes < 2 || self.height == 0 || self.width == 0 {
            return Err(Error::invalid(
                "a grid needs at least 2 classes and 1×1 pixels",
            ));
        }
        if !(self.noise >= 0.0 && self.noise.is_finite()) {
            return Err(Error::invalid("the noise σ must be ≥ 0"));
        }
        Ok(())
    }

    /// `n` images from `seed`.
    pub fn images(&self, n: usize, seed: u64) -> Result<Vec<Sequence>> {
        self.check()?;
        let mut rng = StdRng::seed_from_u64(seed);
        Ok((0..n).map(|_| self.image(&mut rng)).collect())
    }

    fn image(&self, rng: &mut StdRng) -> Sequence {
        let (h, w, k) = (self.height, self.width, self.classes);
        let y = match self.field {
            LabelField::Potts => self.potts(rng),
            LabelField::Smooth => {
                let scale = (h.max(w) as f64 / 3.0).max(1.0);
                let bumps: Vec<Vec<(f64, f64, f64, f64)>> = (0..k)
                    .map(|_| {
                        (0..3)
                            .map(|_| {
                                (
                                    rng.random_range(0.0..h as f64),
                                    rng.random_range(0.0..w as f64),
                                    rng.random_range(0.5..1.5) * scale,
                                    rng.random_range(0.5..1.0),
                                )
                            })
                            .collect()
                    })
                    .collect();
                (0..h * w)
                    .map(|v| {
                        let (r, c) = ((v / w) as f64, (v % w) as f64);
                        let f = |b: &Vec<(f64, f64, f64, f64)>| {
                            b.iter()
                                .map(|&(br, bc, s, a)| {
                                    a * (-((r - br).powi(2) + (c - bc).powi(2)) / (2.0 * s * s))
                                        .exp()
                                })
                                .sum::<f64>()
                        };
                        (0..k)
                            .max_by(|&a, &b| f(&bumps[a]).total_cmp(&f(&bumps[b])))
                            .unwrap_or(0)
                    })
                    .collect()
            }
        };
        let columns = y
            .iter()
            .map(|&yv| {
                let e: Vec<f64> = (0..k)
                    .map(|j| {
                        let n: f64 = StandardNormal.sample(rng);
                        (j == yv) as u8 as f64 + self.noise * n
                    })
                    .collect();
                let lse = if self.scores {
                    crate::util::log_sum_exp(&e)
                } else {
                    0.0
                };
                e.iter().map(|x| format!("{:.3}", x - lse)).collect()
            })
            .collect();
        Sequence {
            columns,
            labels: y.iter().map(|c| c.to_string()).collect(),
            line: 0,
            shape: Some((h, w)),
            attrs: Vec::new(),
            layers: vec![],
        }
    }

    /// Gibbs sweeps of a 4-connected Potts model, `p(y) ∝ exp(β Σ_edges 1[y_i = y_j])`.
    fn potts(&self, rng: &mut StdRng) -> Vec<usize> {
        let (h, w, k) = (self.height, self.width, self.classes);
        let mut y: Vec<usize> = (0..h * w).map(|_| rng.random_range(0..k)).collect();
        let mut p = vec![0.0; k];
        for _ in 0..self.sweeps {
            for v in 0..h * w {
                let (r, c) = (v / w, v % w);
                p.fill(0.0);
                let mut add = |u: usize| p[y[u]] += self.beta;
                if r > 0 {
                    add(v - w);
                }
                if r + 1 < h {
                    add(v + w);
                }
                if c > 0 {
                    add(v - 1);
                }
                if c + 1 < w {
                    add(v + 1);
                }
                let m = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = p.iter().map(|x| (x - m).exp()).sum();
                let mut u = rng.random::<f64>() * z;
                let mut pick = k - 1;
                for (j, x) in p.iter().enumerate() {
                    u -= (x - m).exp();
                    if u <= 0.0 {
                        pick = j;
                        break;
                    }
                }
                y[v] = pick;
            }
        }
        y
    }
}

/// The default θ0 for m variables. For m = 5 it is 004's (−1 ×5, +1 ×5): the first five pairs in
/// lexicographic order at −1, the rest at +1 (the paper does not say which pairs carry −1). For
/// other m, −1 and +1 alternate in pair order: halving would make the last variables a clique of
/// +1 couplings that is almost always all on, whose couplings samples then barely identify.
pub fn paper_theta(m: usize) -> Vec<f64> {
    let p = m * (m - 1) / 2;
    if m == 5 {
        (0..p).map(|i| if i < p / 2 { -1.0 } else { 1.0 }).collect()
    } else {
        (0..p)
            .map(|i| if i % 2 == 0 { -1.0 } else { 1.0 })
            .collect()
    }
}

/// `n` exact samples of a Boltzmann machine with couplings `theta` (pair order) and `biases`
/// (empty: none).
pub fn boltzmann_samples(
    m: usize,
    theta: &[f64],
    biases: &[f64],
    n: usize,
    seed: u64,
) -> Result<Vec<Sequence>> {
    if !(2..=20).contains(&m) {
        return Err(Error::invalid(
            "exact sampling enumerates 2^m states: m must be in 2..=20",
        ));
    }
    if theta.len() != m * (m - 1) / 2 {
        return Err(Error::invalid(format!(
            "{m} variables have {} couplings, got {}",
            m * (m - 1) / 2,
            theta.len()
        )));
    }
    if !biases.is_empty() && biases.len() != m {
        return Err(Error::invalid(format!(
            "{m} variables need {m} biases, got {}",
            biases.len()
        )));
    }
    let states = 1usize << m;
    let bit = |s: usize, i: usize| (s >> (m - 1 - i)) & 1;
    let scores: Vec<f64> = (0..states)
        .map(|s| {
            let mut e = 0.0;
            let mut k = 0;
            for i in 0..m {
                for j in i + 1..m {
                    e += theta[k] * (bit(s, i) * bit(s, j)) as f64;
                    k += 1;
                }
                if let Some(b) = biases.get(i) {
                    e += b * bit(s, i) as f64;
                }
            }
            e
        })
        .collect();
    let mx = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut cdf: Vec<f64> = Vec::with_capacity(states);
    let mut acc = 0.0;
    for s in &scores {
        acc += (s - mx).exp();
        cdf.push(acc);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    Ok((0..n)
        .map(|_| {
            let u = rng.random::<f64>() * acc;
            let s = cdf.partition_point(|&c| c < u).min(states - 1);
            Sequence {
                columns: vec![vec![]; m],
                labels: (0..m).map(|i| bit(s, i).to_string()).collect(),
                line: 0,
                shape: None,
                attrs: Vec::new(),
                layers: vec![],
            }
        })
        .collect())
}
