//! Synthetic data of the piecewise-training paper (000, §5.2.1, eq. 43–44): a second-order HMM
//! mixed with a first-order one by α, five states and 26 observation values.
//!
//! `p_α(y_t | y_{t−1}, y_{t−2}) = α p₂(y_t | y_{t−1}, y_{t−2}) + (1 − α) p₁(y_t | y_{t−1})`
//! `p_α(x_t | y_t, x_{t−1}) = α p₂(x_t | y_t, x_{t−1}) + (1 − α) p₁(x_t | y_t)`
//!
//! Every conditional distribution (and the initial state distribution) is drawn from a uniform
//! Dirichlet, as in the Lafferty et al. (2001) setup the paper replicates. Where a history is
//! missing (t = 0, 1 for states, t = 0 for observations) the first-order part is used alone.
//!
//! [`Concentration`] sets the Dirichlets' parameter: 1 (the paper's uniform Dirichlet) gives
//! noisy data on which even the right model labels 40 % of tokens; below 1 the drawn
//! distributions are peaked — each state emits a few letters of its own and keeps or leaves
//! its state by habit — which is the learnable data the lessons train on.

use crate::data::Sequence;
use ndarray::{Array2, Array3};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma};

pub const STATES: usize = 5;
pub const OBSERVATIONS: usize = 26;

pub struct HmmMixture {
    pub alpha: f64,
    states: usize,
    init: Vec<f64>,
    /// p(y | y_prev): [y_prev, y].
    p1: Array2<f64>,
    /// p(y | y_prev2, y_prev): [y_prev2, y_prev, y].
    p2: Array3<f64>,
    /// p(x | y): [y, x].
    e1: Array2<f64>,
    /// p(x | y, x_prev): [y, x_prev, x].
    e2: Array3<f64>,
}

/// `rows` draws of a distribution over `n` outcomes, one after another (the order the random
/// numbers are drawn in), as the rows of a table of shape `shape`.
fn table<D: ndarray::Dimension>(
    shape: impl ndarray::ShapeBuilder<Dim = D>,
    rows: usize,
    mut draw: impl FnMut() -> Vec<f64>,
) -> ndarray::Array<f64, D> {
    let flat: Vec<f64> = (0..rows).flat_map(|_| draw()).collect();
    ndarray::Array::from_shape_vec(shape, flat).expect("rows × outcomes entries")
}

/// The number of states and the Dirichlet parameters of the drawn distributions: 1 is the
/// paper's uniform Dirichlet; smaller values give peaked distributions (a few likely outcomes
/// each).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Concentration {
    pub states: usize,
    pub transitions: f64,
    pub emissions: f64,
}

impl Default for Concentration {
    fn default() -> Self {
        Concentration {
            states: STATES,
            transitions: 1.0,
            emissions: 1.0,
        }
    }
}

/// A draw from the symmetric Dirichlet(c, …, c) on `n` outcomes. c = 1 keeps the paper's
/// exponential draws (the bundled data and reproductions stay bit-identical).
fn dirichlet_c(rng: &mut StdRng, n: usize, c: f64) -> Vec<f64> {
    if c == 1.0 {
        return dirichlet(rng, n);
    }
    let g = Gamma::new(c, 1.0).expect("concentration checked positive");
    let mut v: Vec<f64> = (0..n).map(|_| g.sample(rng).max(1e-300)).collect();
    let s: f64 = v.iter().sum();
    v.iter_mut().for_each(|x| *x /= s);
    v
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
        Self::sample_with(alpha, Concentration::default(), rng)
    }

    /// Draws a generating distribution whose Dirichlets have concentration `c`.
    pub fn sample_with(alpha: f64, c: Concentration, rng: &mut StdRng) -> Self {
        let (t, e, n) = (c.transitions, c.emissions, c.states);
        let o = OBSERVATIONS;
        let init = dirichlet(rng, n);
        let p1 = table((n, n), n, || dirichlet_c(rng, n, t));
        let p2 = table((n, n, n), n * n, || dirichlet_c(rng, n, t));
        let e1 = table((n, o), n, || dirichlet_c(rng, o, e));
        let e2 = table((n, o, o), n * o, || dirichlet_c(rng, o, e));
        HmmMixture {
            alpha,
            states: n,
            init,
            p1,
            p2,
            e1,
            e2,
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
                1 => draw(rng, self.p1.row(y[0]).iter().cloned()),
                _ => {
                    let (y1, y2) = (y[t - 1], y[t - 2]);
                    draw(
                        rng,
                        (0..self.states)
                            .map(|s| a * self.p2[(y2, y1, s)] + (1.0 - a) * self.p1[(y1, s)]),
                    )
                }
            };
            y.push(yt);
            let xt = if t == 0 {
                draw(rng, self.e1.row(yt).iter().cloned())
            } else {
                let xp = x[t - 1];
                draw(
                    rng,
                    (0..OBSERVATIONS)
                        .map(|o| a * self.e2[(yt, xp, o)] + (1.0 - a) * self.e1[(yt, o)]),
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
    hmm_mixture_with(alpha, Concentration::default(), seed, n, len)
}

/// [`hmm_mixture`] with Dirichlet concentration `c` for the drawn distributions.
pub fn hmm_mixture_with(
    alpha: f64,
    c: Concentration,
    seed: u64,
    n: usize,
    len: usize,
) -> Vec<Sequence> {
    hmm_mixture_stream(alpha, c, seed, len).take(n).collect()
}

/// The sequences of [`hmm_mixture_with`], one at a time (the same sequences, in the same order,
/// for the same seed): `generate` writes millions of tokens without holding them.
pub fn hmm_mixture_stream(
    alpha: f64,
    c: Concentration,
    seed: u64,
    len: usize,
) -> impl Iterator<Item = Sequence> {
    let mut rng = StdRng::seed_from_u64(seed);
    let model = HmmMixture::sample_with(alpha, c, &mut rng);
    std::iter::repeat_with(move || model.sequence(len, &mut rng))
}
