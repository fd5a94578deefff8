//! Stochastic composite likelihood (004, Definitions 1–2, eq. 7).
//!
//! A *component* is an m-pair (A, B): the likelihood object `log p(y_A | y_B)`, everything else
//! summed out. As a term: the factors whose scope is not inside B (factors inside B cancel), A
//! free, B clamped at the data, every other variable of those factors summed out. Families of
//! components by name: `fl` (A = every variable) and `plk` (A = k positions, B = all the others:
//! k consecutive positions on a sequence — a chain's labels, a Boltzmann chain's (label, word)
//! pairs — and every k-subset of variables on other graphs; `pl1` is pseudolikelihood).
//!
//! A [`SelectionPolicy`] gives each family a selection probability λ and a weight β — in the
//! paper's notation `λ1β1 PL1 + λ2(1−β1) PL2` — and a selection model for Z: `independent`
//! (each component of a family selected with probability λ, independently) or `multinomial`
//! (per item and per group, exactly one family of the group with probabilities λ; several groups,
//! separated by `;`, make a product of multinomials). Z is drawn once per training item from the
//! policy's seed and the item's index, so the objective the optimiser sees is deterministic.
//! An item's value is `Σ_j β_j Z_j log p(y_{A_j} | y_{B_j})`.

use super::{Estimator, TermList};
use crate::error::{Error, Result};
use crate::graph::Instance;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Largest number of components one family may have on one item.
pub const MAX_COMPONENTS: u128 = 100_000;

/// A family of components.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ComponentFamily {
    /// Full likelihood: A = every variable, B = ∅.
    Full,
    /// k-th order pseudolikelihood: A = k variables, B = every other variable.
    Pseudo(usize),
}

impl std::fmt::Display for ComponentFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ComponentFamily::Full => write!(f, "fl"),
            ComponentFamily::Pseudo(k) => write!(f, "pl{k}"),
        }
    }
}

impl ComponentFamily {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "fl" => Ok(ComponentFamily::Full),
            _ => s
                .strip_prefix("pl")
                .and_then(|k| k.parse::<usize>().ok())
                .filter(|&k| k >= 1)
                .map(ComponentFamily::Pseudo)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "unknown component family {s:?}: use fl, pl1, pl2, …"
                    ))
                }),
        }
    }

    /// Number of components on an instance (sequences: windows of consecutive positions).
    pub fn count(&self, inst: &Instance) -> u128 {
        let n = inst.n_vars() as u128;
        match (*self, inst.position_width()) {
            (ComponentFamily::Full, _) => 1,
            (ComponentFamily::Pseudo(k), Some(w)) => {
                let p = (n / w as u128) as i128;
                (p - k as i128 + 1).max(0) as u128
            }
            (ComponentFamily::Pseudo(k), None) if k as u128 > n => 0,
            (ComponentFamily::Pseudo(k), None) => binomial(n, k as u128),
        }
    }

    /// Calls `f` with each component's A (sorted).
    pub fn visit(&self, inst: &Instance, f: impl FnMut(&[u32])) {
        self.for_each(inst, &mut Vec::new(), f)
    }

    fn for_each(&self, inst: &Instance, buf: &mut Vec<u32>, mut f: impl FnMut(&[u32])) {
        let n = inst.n_vars();
        match *self {
            ComponentFamily::Full => {
                buf.clear();
                buf.extend(0..n as u32);
                f(buf);
            }
            ComponentFamily::Pseudo(k) if inst.position_width().is_some() => {
                let w = inst.position_width().unwrap();
                let p = n / w;
                for t in 0..(p + 1).saturating_sub(k) {
                    buf.clear();
                    buf.extend((t * w) as u32..((t + k) * w) as u32);
                    f(buf);
                }
            }
            ComponentFamily::Pseudo(k) if k > n => {}
            ComponentFamily::Pseudo(k) => {
                // k-subsets in lexicographic order.
                buf.clear();
                buf.extend(0..k as u32);
                loop {
                    f(buf);
                    let mut i = k;
                    while i > 0 && buf[i - 1] as usize == n - k + i - 1 {
                        i -= 1;
                    }
                    if i == 0 {
                        break;
                    }
                    buf[i - 1] += 1;
                    for j in i..k {
                        buf[j] = buf[j - 1] + 1;
                    }
                }
            }
        }
    }
}

/// n choose k (saturating).
fn binomial(n: u128, k: u128) -> u128 {
    if k > n {
        return 0;
    }
    (0..k.min(n - k)).fold(1u128, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// One family of a policy: selection probability λ, weight β.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PolicyPart {
    pub lambda: f64,
    pub beta: f64,
    pub family: ComponentFamily,
}

/// How Z is drawn.
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
pub enum Selection {
    /// Each component of a family selected with its λ, independently.
    #[default]
    Independent,
    /// Per item and group, exactly one family (with probabilities λ); groups multiply.
    Multinomial,
}

/// λ, β and the selection model of every component family, and the seed Z is drawn from.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SelectionPolicy {
    /// Groups of families (several only matter for `multinomial`: a product of multinomials).
    pub groups: Vec<Vec<PolicyPart>>,
    #[serde(default)]
    pub selection: Selection,
    #[serde(default)]
    pub seed: u64,
    /// Choose β by 004's heuristic (§7, Algorithm 1) instead of keeping the given weights.
    #[serde(default)]
    pub auto_beta: bool,
    /// Draw Z anew every this many optimiser iterations (0: once for the whole run).
    #[serde(default)]
    pub resample_every: usize,
}

impl Default for SelectionPolicy {
    /// Pseudolikelihood: every pl1 component, weight 1.
    fn default() -> Self {
        SelectionPolicy {
            groups: vec![vec![PolicyPart {
                lambda: 1.0,
                beta: 1.0,
                family: ComponentFamily::Pseudo(1),
            }]],
            selection: Selection::Independent,
            seed: 0,
            auto_beta: false,
            resample_every: 0,
        }
    }
}

impl std::fmt::Display for SelectionPolicy {
    /// The text form [`SelectionPolicy::parse`] reads: `λ:β*family + …`, groups split by `;`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|p| format!("{}:{}*{}", p.lambda, p.beta, p.family))
                    .collect::<Vec<_>>()
                    .join(" + ")
            })
            .collect();
        write!(f, "{}", groups.join("; "))
    }
}

impl SelectionPolicy {
    /// Reads `λ:β*family + λ:β*family` (e.g. `0.7:1*pl1 + 0.3:1*pl2`); `;` separates groups.
    pub fn parse(text: &str, selection: Selection, seed: u64) -> Result<Self> {
        let bad = |why: String| Error::invalid(format!("policy {text:?}: {why}"));
        let mut groups = vec![];
        for g in text.split(';').map(str::trim).filter(|g| !g.is_empty()) {
            let mut parts = vec![];
            for p in g.split('+').map(str::trim) {
                let (weights, fam) = p
                    .split_once('*')
                    .ok_or_else(|| bad(format!("{p:?} is not λ:β*family")))?;
                let (l, b) = weights
                    .split_once(':')
                    .ok_or_else(|| bad(format!("{weights:?} is not λ:β")))?;
                let num = |x: &str, what: &str| {
                    x.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| bad(format!("{what} {x:?} is not a number ≥ 0")))
                };
                let lambda = num(l, "λ")?;
                if lambda > 1.0 {
                    return Err(bad(format!("λ = {lambda} is a probability: at most 1")));
                }
                parts.push(PolicyPart {
                    lambda,
                    beta: num(b, "β")?,
                    family: ComponentFamily::parse(fam.trim())?,
                });
            }
            if selection == Selection::Multinomial {
                let total: f64 = parts.iter().map(|p| p.lambda).sum();
                if total > 1.0 + 1e-9 {
                    return Err(bad(format!(
                        "a multinomial group's λ add up to {total}, more than 1"
                    )));
                }
            }
            groups.push(parts);
        }
        if groups.is_empty() {
            return Err(bad("no component family".into()));
        }
        Ok(SelectionPolicy {
            groups,
            selection,
            seed,
            auto_beta: false,
            resample_every: 0,
        })
    }

    /// Sets every family's weight, in policy order.
    pub fn set_betas(&mut self, betas: &[f64]) {
        for (p, &b) in self.groups.iter_mut().flatten().zip(betas) {
            p.beta = b;
        }
    }

    pub fn parts(&self) -> impl Iterator<Item = &PolicyPart> {
        self.groups.iter().flatten()
    }
}

/// Adds the term of component (A, B) to `out` with weight `w`: the factors whose scope is not
/// inside B, A free, B clamped, their other variables summed out.
pub fn component_term(inst: &Instance, a: &[u32], b: &[u32], w: f64, out: &mut TermList) {
    out.begin();
    for &v in a {
        out.free(v);
    }
    for (fi, f) in inst.factors.iter().enumerate() {
        let scope = inst.scope(f);
        if scope.iter().all(|v| b.contains(v)) {
            continue;
        }
        out.factor(fi as u32);
        for &v in scope {
            if b.contains(&v) {
                out.clamp(v);
            } else if !a.contains(&v) && !out.has_summed(v) {
                out.sum(v);
            }
        }
    }
    out.end(w, 1.0);
}

/// [`component_term`] with B the complement of A (SCL's components: every other variable
/// clamped), built from A's own factors found through its adjacency, in factor order, so the
/// cost is linear in the component's neighbourhood rather than in the item: setting up PL1 on
/// a 10,000-token sequence visited every factor for every component, against every clamped
/// variable. `a` is sorted; `factors` is scratch.
pub fn conditional_term(
    inst: &Instance,
    a: &[u32],
    w: f64,
    out: &mut TermList,
    factors: &mut Vec<u32>,
) {
    let in_a = |v: u32| a.len() == inst.n_vars() || a.binary_search(&v).is_ok();
    factors.clear();
    for &v in a {
        factors.extend_from_slice(inst.var_factors(v));
    }
    factors.sort_unstable();
    factors.dedup();
    out.begin();
    for &v in a {
        out.free(v);
    }
    for &fi in factors.iter() {
        out.factor(fi);
        for &v in inst.scope(&inst.factors[fi as usize]) {
            if !in_a(v) {
                out.clamp(v);
            }
        }
    }
    out.end(w, 1.0);
}

/// SCL with a selection policy.
#[derive(Clone, Debug)]
pub struct Scl {
    pub policy: SelectionPolicy,
}

impl Scl {
    /// The item's selection stream: seeded by the policy's seed and the item's index.
    fn rng(&self, inst: &Instance) -> StdRng {
        let mix = self
            .policy
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(inst.id.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            ^ 0x5DEE_CE66_D1CE_4E5B;
        StdRng::seed_from_u64(mix)
    }

    /// Calls `f(part index, part, component index, A, selected)` for every component of every
    /// family on this item, drawing Z as it goes: the one place the selection is drawn, for the
    /// terms, the FLOP count and the GUI's preview (004 Fig. 1).
    fn visit(
        &self,
        inst: &Instance,
        buf: &mut Vec<u32>,
        mut f: impl FnMut(usize, &PolicyPart, usize, &[u32], bool),
    ) {
        let mut rng = self.rng(inst);
        match self.policy.selection {
            Selection::Independent => {
                for (pi, part) in self.policy.parts().enumerate() {
                    let mut i = 0;
                    part.family.for_each(inst, buf, |a| {
                        let on = rng.random::<f64>() < part.lambda;
                        f(pi, part, i, a, on);
                        i += 1;
                    });
                }
            }
            Selection::Multinomial => {
                let mut pi = 0;
                for group in &self.policy.groups {
                    let u: f64 = rng.random();
                    let mut acc = 0.0;
                    let chosen = group.iter().position(|p| {
                        acc += p.lambda;
                        u < acc
                    });
                    for (gi, part) in group.iter().enumerate() {
                        let mut i = 0;
                        part.family.for_each(inst, buf, |a| {
                            f(pi + gi, part, i, a, chosen == Some(gi));
                            i += 1;
                        });
                    }
                    pi += group.len();
                }
            }
        }
    }

    /// Calls `f(part, A)` for every component Z selects on this item.
    fn select(&self, inst: &Instance, buf: &mut Vec<u32>, mut f: impl FnMut(&PolicyPart, &[u32])) {
        self.visit(inst, buf, |_, part, _, a, on| {
            if on {
                f(part, a)
            }
        });
    }

    /// Every component of every family on this item with whether Z selects it.
    pub fn draw(&self, inst: &Instance) -> Vec<Drawn> {
        let mut out = vec![];
        self.visit(inst, &mut Vec::new(), |part, _, index, a, selected| {
            out.push(Drawn {
                part,
                index,
                a: a.to_vec(),
                selected,
            })
        });
        out
    }
}

/// One component of one item's draw (see [`Scl::draw`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// Index of the family in the policy (groups flattened).
    pub part: usize,
    /// Index of the component within its family on this item.
    pub index: usize,
    pub a: Vec<u32>,
    pub selected: bool,
}

impl Estimator for Scl {
    fn name(&self) -> &'static str {
        "scl"
    }

    fn terms(&self, inst: &Instance, out: &mut TermList) {
        let mut a = std::mem::take(&mut out.scratch);
        let mut factors = std::mem::take(&mut out.scratch_vars);
        self.select(inst, &mut a, |part, av| {
            conditional_term(inst, av, part.beta, out, &mut factors);
        });
        out.scratch = a;
        out.scratch_vars = factors;
    }

    fn paper_flops(&self, inst: &Instance, n_params: usize) -> Option<f64> {
        let mut total = 0.0;
        self.select(inst, &mut Vec::new(), |part, a| {
            total += component_flops(part.family, inst, a, n_params);
        });
        Some(total)
    }

    fn check(&self, inst: &Instance) -> Result<()> {
        for p in self.policy.parts() {
            let c = p.family.count(inst);
            if c > MAX_COMPONENTS {
                return Err(Error::invalid(format!(
                    "{} has {c} components on an item of {} variables (limit {MAX_COMPONENTS})",
                    p.family,
                    inst.n_vars()
                )));
            }
        }
        super::need_gold(inst)?;
        let mut list = TermList::default();
        self.terms(inst, &mut list);
        for t in list.iter() {
            t.check(inst)?;
        }
        Ok(())
    }
}

// ---- The paper's FLOPs of components ----
//
// **FLOPs** (004 §3.1 and its footnote): a family of c components with |A| = k over a model
// with P parameters costs `P·(c·2^k + 1)` per example for the objective, shared equally by its
// components, so a component costs `P·(2^k + 1/c)` (for non-binary variables 2^k becomes the
// number of joint states of A). On the 5-node Boltzmann machine (P = 10): FL 330, a PL1 component
// 22 (PL 110 per example), a PL2 component 41.
//

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
