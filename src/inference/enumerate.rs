//! Exact inference by enumerating every joint assignment: the reference for small graphs.

use crate::error::{Error, Result};
use crate::graph::Instance;
use crate::util::log_sum_exp;

/// Largest number of joint states [`enumerate`] accepts.
pub const MAX_ENUMERATION_STATES: u128 = 1 << 22;

#[derive(Clone, Debug)]
pub struct Enumeration {
    pub log_z: f64,
    /// Marginals in table-buffer layout (slots shared by several factors hold their sum).
    pub table_marginals: Vec<f64>,
    /// Per variable, its marginal distribution.
    pub node_marginals: Vec<Vec<f64>>,
    /// A most probable assignment and its score.
    pub map: Vec<u32>,
    pub map_score: f64,
}

/// Visits every assignment of `card` in mixed radix (last variable fastest).
pub fn for_each_assignment(card: &[u32], mut f: impl FnMut(&[u32])) {
    let mut y = vec![0u32; card.len()];
    if card.contains(&0) {
        return;
    }
    loop {
        f(&y);
        let mut i = card.len();
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            y[i] += 1;
            if y[i] < card[i] {
                break;
            }
            y[i] = 0;
        }
    }
}

fn check_size(inst: &Instance) -> Result<u128> {
    let states = inst.joint_states();
    if states > MAX_ENUMERATION_STATES {
        return Err(Error::invalid(format!(
            "exact enumeration needs at most {MAX_ENUMERATION_STATES} joint states; this graph has {states}"
        )));
    }
    Ok(states)
}

/// Every assignment's score (in [`for_each_assignment`]'s order) and the first best one.
fn scores_and_map(inst: &Instance, phi: &[f64], mut keep: impl FnMut(f64)) -> (Vec<u32>, f64) {
    let mut map = vec![0; inst.n_vars()];
    let mut map_score = f64::NEG_INFINITY;
    for_each_assignment(&inst.card, |y| {
        let s = inst.score(phi, y);
        if s > map_score {
            map_score = s;
            map.copy_from_slice(y);
        }
        keep(s);
    });
    (map, map_score)
}

/// A most probable assignment and its score, by enumeration: [`enumerate`]'s `map` without
/// its marginals (exact decoding needs no more).
pub fn enumerate_map(inst: &Instance, phi: &[f64]) -> Result<(Vec<u32>, f64)> {
    check_size(inst)?;
    Ok(scores_and_map(inst, phi, |_| {}))
}

pub fn enumerate(inst: &Instance, phi: &[f64]) -> Result<Enumeration> {
    let states = check_size(inst)?;
    let mut scores = Vec::with_capacity(states as usize);
    let (map, map_score) = scores_and_map(inst, phi, |s| scores.push(s));
    let log_z = log_sum_exp(&scores);
    let mut table_marginals = vec![0.0; inst.table_len];
    let mut node_marginals: Vec<Vec<f64>> =
        inst.card.iter().map(|&c| vec![0.0; c as usize]).collect();
    let mut i = 0;
    for_each_assignment(&inst.card, |y| {
        let p = (scores[i] - log_z).exp();
        i += 1;
        inst.add_indicator(y, p, &mut table_marginals);
        for (v, &yv) in y.iter().enumerate() {
            node_marginals[v][yv as usize] += p;
        }
    });
    Ok(Enumeration {
        log_z,
        table_marginals,
        node_marginals,
        map,
        map_score,
    })
}
