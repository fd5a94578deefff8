//! Locally normalised training of a chain (001, 003): the MEMM and piecewise training with
//! "none of the above" (CRF-PT).
//!
//! Position t's *next-state classifier* is the term over the factors at t (its unary factors
//! and those over `(y_{t−1}, y_t)`: with the `edge` factorisation, the edge factor), y_t free,
//! y_{t−1} clamped; t = 0 conditions on the start (its unary factors alone).
//!
//! - `memm`: `Σ_t log p̃(y*_t | y*_{t−1}, x)` (001 eq. 1).
//! - `nota` (001 eq. 6): every normaliser holds the NOTA outcome,
//!   `log p̃(y*_t | y*_{t−1}) = M_t(y*_{t−1}, y*_t) − log(1 + Σ_y exp M_t(y*_{t−1}, y))`, and each
//!   selected wrong source state y′ ≠ y*_{t−1} adds `log p̃(NOTA | y′) = −log(1 + Σ_y exp M_t(y′, y))`,
//!   times a NOTA weight w (001: w = 1; with w < 1 the NOTA terms of a position can weigh as
//!   much as its one gold term, a controlled experiment on 001 Table 1).

use super::terms::Nota as NotaOutcome;
use super::{Estimator, TermList};
use crate::error::{Error, Result};
use crate::graph::Instance;
use std::sync::Arc;

/// Which wrong source states y′ get a NOTA term.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum NotaSelection {
    /// Every wrong source state at every position (001 Table 1, named entities).
    #[default]
    Exhaustive,
    /// Each (position, wrong source state) kept with probability `fraction`, seeded.
    Sampled { fraction: f64, seed: u64 },
    /// 003 (POS): train `after` iterations with no NOTA terms, then add one for every wrong
    /// state y_t whose marginal under the current model exceeds `threshold`; with `refresh`
    /// > 0, choose them anew every `refresh` iterations.
    ErrorDriven {
        after: usize,
        threshold: f64,
        #[serde(default)]
        refresh: usize,
    },
}

impl NotaSelection {
    /// 003's setting: after 20 iterations, marginals above 0.2, chosen once.
    pub fn error_driven() -> Self {
        NotaSelection::ErrorDriven {
            after: 20,
            threshold: 0.2,
            refresh: 0,
        }
    }

    pub fn check(&self) -> Result<()> {
        match *self {
            NotaSelection::Exhaustive => Ok(()),
            NotaSelection::Sampled { fraction, .. } => {
                if (0.0..=1.0).contains(&fraction) {
                    Ok(())
                } else {
                    Err(Error::invalid(
                        "the NOTA sampling fraction must be in [0, 1]",
                    ))
                }
            }
            NotaSelection::ErrorDriven { threshold, .. } => {
                if (0.0..1.0).contains(&threshold) {
                    Ok(())
                } else {
                    Err(Error::invalid(
                        "the NOTA marginal threshold must be in [0, 1)",
                    ))
                }
            }
        }
    }

    /// A one-line description for tables and legends.
    pub fn describe(&self) -> String {
        match self {
            NotaSelection::Exhaustive => "exhaustive".into(),
            NotaSelection::Sampled { fraction, seed } => {
                format!("sampled {fraction} (seed {seed})")
            }
            NotaSelection::ErrorDriven {
                after,
                threshold,
                refresh,
            } => {
                let r = if *refresh > 0 {
                    format!(", every {refresh}")
                } else {
                    String::new()
                };
                format!("error-driven: after {after} iterations, p > {threshold}{r}")
            }
        }
    }
}

/// The NOTA terms chosen for each training item (by its `id`): (position t, source state y′).
pub type NotaChoice = Vec<Vec<(u32, u32)>>;

/// Whether `inst` is a chain the local estimators can cut into next-state classifiers.
fn need_chain(inst: &Instance) -> Result<()> {
    if inst.chain.is_none() {
        return Err(Error::invalid(
            "memm and nota train linear chains (next-state classifiers); this model is not one",
        ));
    }
    Ok(())
}

/// Position t's classifier: its factors, y_t free, y_{t−1} clamped (at gold, or at `source`).
fn position_term(
    inst: &Instance,
    t: usize,
    source: Option<u32>,
    nota: NotaOutcome,
    weight: f64,
    out: &mut TermList,
) {
    let lay = inst.chain.as_ref().expect("checked: a chain");
    out.begin();
    for &f in lay.unary(t).iter().chain(lay.pair(t)) {
        out.factor(f);
    }
    out.free(t as u32);
    if t > 0 {
        match source {
            Some(y) => out.clamp_at(t as u32 - 1, y),
            None => out.clamp(t as u32 - 1),
        }
    }
    out.nota(nota);
    out.end(weight, 1.0);
}

/// The maximum-entropy Markov model's conditional likelihood (001 eq. 1), as terms.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memm;

impl Estimator for Memm {
    fn name(&self) -> &'static str {
        "memm"
    }
    fn terms(&self, inst: &Instance, out: &mut TermList) {
        if inst.chain.is_none() {
            return;
        }
        for t in 0..inst.n_vars() {
            position_term(inst, t, None, NotaOutcome::Without, 1.0, out);
        }
    }
    fn check(&self, inst: &Instance) -> Result<()> {
        need_chain(inst)?;
        super::check_terms(self, inst)
    }
}

/// Piecewise training with "none of the above" (001 eq. 6, 003 §3).
#[derive(Clone, Debug)]
pub struct NotaPt {
    pub selection: NotaSelection,
    /// For error-driven selection: the NOTA terms chosen so far, per item (none before).
    pub chosen: Option<Arc<NotaChoice>>,
    /// The weight w of every NOTA outcome term (001: 1).
    pub weight: f64,
}

/// A deterministic uniform draw in [0, 1) for (seed, item, position, state).
fn draw(seed: u64, id: u64, t: u64, y: u64) -> f64 {
    let mut z = seed
        ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ t.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ y.wrapping_mul(0x1656_67B1_9E37_79F9);
    // SplitMix64's finaliser.
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl NotaPt {
    pub fn new(selection: NotaSelection, weight: f64) -> Self {
        NotaPt {
            selection,
            chosen: None,
            weight,
        }
    }

    /// Calls `f(t, y′)` for each NOTA term of `inst`.
    pub fn for_each_nota(&self, inst: &Instance, mut f: impl FnMut(usize, u32)) {
        let gold = match inst.gold.as_deref() {
            Some(g) => g,
            None => return,
        };
        let l = inst.chain.as_ref().map_or(0, |c| c.l) as u32;
        match &self.selection {
            NotaSelection::Exhaustive | NotaSelection::Sampled { .. } => {
                for t in 1..inst.n_vars() {
                    for y in (0..l).filter(|&y| y != gold[t - 1]) {
                        let keep = match self.selection {
                            NotaSelection::Sampled { fraction, seed } => {
                                draw(seed, inst.id, t as u64, y as u64) < fraction
                            }
                            _ => true,
                        };
                        if keep {
                            f(t, y);
                        }
                    }
                }
            }
            NotaSelection::ErrorDriven { .. } => {
                if let Some(c) = self.chosen.as_ref().and_then(|c| c.get(inst.id as usize)) {
                    for &(t, y) in c {
                        f(t as usize, y);
                    }
                }
            }
        }
    }

    /// Number of NOTA terms over `instances`.
    pub fn count(&self, instances: &[Instance]) -> usize {
        instances
            .iter()
            .map(|i| {
                let mut k = 0;
                self.for_each_nota(i, |_, _| k += 1);
                k
            })
            .sum()
    }
}

impl Estimator for NotaPt {
    fn name(&self) -> &'static str {
        "nota"
    }
    fn terms(&self, inst: &Instance, out: &mut TermList) {
        if inst.chain.is_none() {
            return;
        }
        // Each position's NOTA terms follow its own term: terms of one shape side by side are
        // evaluated together, the position's scores built once. A NOTA term of weight 0 adds
        // nothing to the value or the gradient: none is built, so w = 0 costs what the MEMM
        // costs (issue 46: it cost 5.9× the position terms alone).
        let mut next = 0;
        if self.weight != 0.0 {
            self.for_each_nota(inst, |t, y| {
                while next <= t {
                    position_term(inst, next, None, NotaOutcome::Normaliser, 1.0, out);
                    next += 1;
                }
                position_term(inst, t, Some(y), NotaOutcome::Outcome, self.weight, out)
            });
        }
        for t in next..inst.n_vars() {
            position_term(inst, t, None, NotaOutcome::Normaliser, 1.0, out);
        }
    }
    fn check(&self, inst: &Instance) -> Result<()> {
        need_chain(inst)?;
        self.selection.check()?;
        check_weight(self.weight)?;
        super::check_terms(self, inst)
    }
}

/// A NOTA weight must be finite and non-negative (0: NOTA only in the normalisers).
pub fn check_weight(w: f64) -> Result<()> {
    if !(w.is_finite() && w >= 0.0) {
        return Err(Error::invalid(format!(
            "nota-weight {w}: a NOTA term's weight must be finite and at least 0"
        )));
    }
    Ok(())
}

/// 003's error-driven choice: for every item, every position t < n − 1 and every wrong state
/// y ≠ y*_t whose marginal p(y_t = y) exceeds `threshold`, a NOTA term at t + 1 with source y.
/// `marginals(i, t, y)` gives the current model's marginals.
pub fn choose_by_marginals(
    instances: &[Instance],
    threshold: f64,
    marginals: impl Fn(&Instance, &mut crate::inference::transitions::Transitions) + Sync,
) -> NotaChoice {
    use crate::inference::transitions::Transitions;
    use rayon::prelude::*;
    let mut out = vec![
        Vec::new();
        instances
            .iter()
            .map(|i| i.id as usize + 1)
            .max()
            .unwrap_or(0)
    ];
    let chosen: Vec<(usize, Vec<(u32, u32)>)> = instances
        .par_iter()
        .map_init(Transitions::default, |tr, inst| {
            let mut c = Vec::new();
            if let (Some(gold), Some(lay)) = (inst.gold.as_deref(), inst.chain.as_ref()) {
                marginals(inst, tr);
                for (t, &g) in gold.iter().enumerate().take(lay.n.saturating_sub(1)) {
                    for y in 0..lay.l {
                        if y as u32 != g && tr.node_marginal(t, y) > threshold {
                            c.push((t as u32 + 1, y as u32));
                        }
                    }
                }
            }
            (inst.id as usize, c)
        })
        .collect();
    for (i, c) in chosen {
        out[i] = c;
    }
    out
}
