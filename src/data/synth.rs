//! Synthetic data of the piecewise-training paper (000, §5.2.1, eq. 43–44): a second-order HMM
//! mixed with a first-order one by α, five states and 26 observation values.
//!
//! `p_α(y_t | y_{t−1}, y_{t−2}) = α p₂(y_t | y_{t−1}, y_{t−2}) + (1 − α) p₁(y_t | y_{t−1})`
//! `p_α(x_t | y_t, x_{t−1}) = α p₂(x_t | y_t, x_{t−1}) + (1 − α) p₁(x_t | y_t)`
//!
//! Every conditional distribution (and the initial state distribution) is drawn from a uniform
//! Dirichlet, as in the Lafferty et al. (2001) setup the paper replicates. Where a history is
//! missing (t = 0, 1 for states, t = 0 for observations) the first-order part is used alone.

use crate::data::Sequence;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const STATES: usize = 5;
pub const OBSERVATIONS: usize = 26;

pub struct HmmMixture {
    pub alpha: f64,
    init: Vec<f64>,
    p1: Vec<Vec<f64>>, // [y_prev] -> y
    p2: Vec<Vec<f64>>, // [y_prev2 * S + y_prev] -> y
    e1: Vec<Vec<f64>>, // [y] -> x
    e2: Vec<Vec<f64>>, // [y * O + x_prev] -> x
}

fn dirichlet(rng: &mut StdRng, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
    let s: f64 = v.iter().sum();
    v.iter_mut().for_each(|x| *x /= s);
    v
}

fn draw(rng: &mut StdRng, p: impl Iterator<Item = f64>) -> usize {
    let u: f64 = rng.random();
    let mut acc = 0.0;
    let mut last = 0;
    for (i, x) in p.enumerate() {
        acc += x;
        last = i;
        if u < acc {
            return i;
        }
    }
    last
}

impl HmmMixture {
    /// Draws a generating distribution for mixing weight `alpha`.
    pub fn sample(alpha: f64, rng: &mut StdRng) -> Self {
        HmmMixture {
            alpha,
            init: dirichlet(rng, STATES),
            p1: (0..STATES).map(|_| dirichlet(rng, STATES)).collect(),
            p2: (0..STATES * STATES)
                .map(|_| dirichlet(rng, STATES))
                .collect(),
            e1: (0..STATES).map(|_| dirichlet(rng, OBSERVATIONS)).collect(),
            e2: (0..STATES * OBSERVATIONS)
                .map(|_| dirichlet(rng, OBSERVATIONS))
                .collect(),
        }
    }

    /// Samples one sequence of length `len`: observation letters `a`–`z`, labels `S0`–`S4`.
    pub fn sequence(&self, len: usize, rng: &mut StdRng) -> Sequence {
        let a = self.alpha;
        let mut y: Vec<usize> = Vec::with_capacity(len);
        let mut x: Vec<usize> = Vec::with_capacity(len);
        for t in 0..len {
            let yt = match t {
                0 => draw(rng, self.init.iter().cloned()),
                1 => draw(rng, self.p1[y[0]].iter().cloned()),
                _ => {
                    let (y1, y2) = (y[t - 1], y[t - 2]);
                    let p2 = &self.p2[y2 * STATES + y1];
                    draw(
                        rng,
                        (0..STATES).map(|s| a * p2[s] + (1.0 - a) * self.p1[y1][s]),
                    )
                }
            };
            y.push(yt);
            let xt = if t == 0 {
                draw(rng, self.e1[yt].iter().cloned())
            } else {
                let e2 = &self.e2[yt * OBSERVATIONS + x[t - 1]];
                draw(
                    rng,
                    (0..OBSERVATIONS).map(|o| a * e2[o] + (1.0 - a) * self.e1[yt][o]),
                )
            };
            x.push(xt);
        }
        Sequence {
            columns: x
                .iter()
                .map(|&o| vec![((b'a' + o as u8) as char).to_string()])
                .collect(),
            labels: y.iter().map(|s| format!("S{s}")).collect(),
            line: 0,
            shape: None,
            attrs: Vec::new(),
            layers: vec![],
        }
    }
}

/// `n` sequences of length `len` from one generating distribution drawn with `seed`.
pub fn hmm_mixture(alpha: f64, seed: u64, n: usize, len: usize) -> Vec<Sequence> {
    let mut rng = StdRng::seed_from_u64(seed);
    let model = HmmMixture::sample(alpha, &mut rng);
    (0..n).map(|_| model.sequence(len, &mut rng)).collect()
}
