//! Pieces: how factors are grouped for piecewise training, and the node-split graph (000 §3.2)
//! in which piecewise training is exact maximum likelihood.

use super::{Instance, InstanceBuilder, Model};
use crate::error::{Error, Result};

/// How factors are grouped into pieces. Each group lists template names; for every variable v
/// it forms one piece from the factors of those templates whose last scope variable is v (for a
/// chain: one piece per position). A template may sit in several groups (pieces overlap);
/// factors of templates in no group are pieces of their own (factor-as-piece, the default).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Pieces {
    pub groups: Vec<Vec<String>>,
}

impl std::fmt::Display for Pieces {
    /// The form [`Pieces::parse`] reads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let groups: Vec<String> = self.groups.iter().map(|g| g.join("+")).collect();
        f.write_str(&groups.join(";"))
    }
}

impl Pieces {
    /// Parses `state+transition;state` (groups separated by `;`, templates by `+`).
    pub fn parse(s: &str) -> Result<Pieces> {
        let groups: Vec<Vec<String>> = s
            .split(';')
            .map(|g| {
                g.split('+')
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
            })
            .filter(|g| !g.is_empty())
            .collect();
        Ok(Pieces { groups })
    }

    pub fn resolve(&self, model: &Model) -> Result<ResolvedPieces> {
        let mut groups = vec![];
        let mut covered = vec![false; model.templates.len()];
        for g in &self.groups {
            let mut ids = vec![];
            for name in g {
                let id = model
                    .templates
                    .iter()
                    .position(|t| &t.name == name)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "piece group names template {name:?}; the model has: {}",
                            model
                                .templates
                                .iter()
                                .map(|t| t.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                ids.push(id as u32);
                covered[id] = true;
            }
            groups.push(ids);
        }
        Ok(ResolvedPieces { groups, covered })
    }
}

/// [`Pieces`] with template ids.
#[derive(Clone, Debug, Default)]
pub struct ResolvedPieces {
    groups: Vec<Vec<u32>>,
    covered: Vec<bool>,
}

impl ResolvedPieces {
    /// Whether factor `f` belongs to the piece of group `g` anchored at variable `v` (its
    /// template is in the group and `v` is its last scope variable).
    fn in_piece(inst: &Instance, g: &[u32], f: u32, v: u32) -> bool {
        let fac = &inst.factors[f as usize];
        g.contains(&fac.template) && *inst.scope(fac).last().unwrap() == v
    }

    /// Whether factor `f` is a piece of its own (its template is in no group).
    fn alone(&self, inst: &Instance, f: usize) -> bool {
        let t = inst.factors[f].template as usize;
        !self.covered.get(t).copied().unwrap_or(false)
    }

    /// Calls `piece(factors)` for every piece of `inst` (factor lists in `buf`).
    pub fn for_each(&self, inst: &Instance, buf: &mut Vec<u32>, mut piece: impl FnMut(&[u32])) {
        for g in &self.groups {
            for v in 0..inst.n_vars() as u32 {
                buf.clear();
                for &f in inst.var_factors(v) {
                    if Self::in_piece(inst, g, f, v) {
                        buf.push(f);
                    }
                }
                if !buf.is_empty() {
                    piece(buf);
                }
            }
        }
        for i in 0..inst.factors.len() {
            if self.alone(inst, i) {
                buf.clear();
                buf.push(i as u32);
                piece(buf);
            }
        }
    }

    /// Number of pieces of `inst`, without building them (it runs per instance and evaluation
    /// for the default μ of reweighted piecewise).
    pub fn count(&self, inst: &Instance) -> usize {
        let grouped: usize = self
            .groups
            .iter()
            .map(|g| {
                (0..inst.n_vars() as u32)
                    .filter(|&v| {
                        inst.var_factors(v)
                            .iter()
                            .any(|&f| Self::in_piece(inst, g, f, v))
                    })
                    .count()
            })
            .sum();
        grouped
            + (0..inst.factors.len())
                .filter(|&i| self.alone(inst, i))
                .count()
    }
}

/// The node-split graph (000 §3.2, eq. 10): every piece gets its own copy of each variable it
/// touches, and its factors (same templates, same observations) are re-scoped onto the copies;
/// gold labels are copied. Piecewise training on `inst` is exact ML on the result.
pub fn node_split(
    model: &Model,
    inst: &Instance,
    pieces: &ResolvedPieces,
) -> Result<NodeSplitGraph> {
    let mut b = InstanceBuilder::new(model);
    let mut gold = vec![];
    let mut origin = vec![];
    let mut piece_of = vec![];
    let mut piece = 0u32;
    let mut buf = vec![];
    let mut err = None;
    let mut obs_parts: Vec<(usize, Vec<(u32, f64)>)> = vec![];
    pieces.for_each(inst, &mut buf, |fs| {
        let mut copies: Vec<(u32, u32)> = vec![]; // original → copy
        for &f in fs {
            let fac = &inst.factors[f as usize];
            let scope: Vec<u32> = inst
                .scope(fac)
                .iter()
                .map(|&v| match copies.iter().find(|c| c.0 == v) {
                    Some(c) => c.1,
                    None => {
                        let c = b.add_var(inst.card[v as usize] as usize);
                        origin.push(v);
                        piece_of.push(piece);
                        if let Some(g) = &inst.gold {
                            gold.push(g[v as usize]);
                        }
                        copies.push((v, c));
                        c
                    }
                })
                .collect();
            obs_parts.clear();
            for part in inst.parts(&inst.slots[fac.slot as usize]) {
                let (feat, val) = inst.obs(part);
                obs_parts.push((
                    part.template as usize,
                    feat.iter().copied().zip(val.iter().copied()).collect(),
                ));
            }
            let parts: Vec<(usize, &[(u32, f64)])> =
                obs_parts.iter().map(|(t, o)| (*t, o.as_slice())).collect();
            if let Err(e) = b.add_factor_parts(&scope, &parts) {
                err.get_or_insert(e);
            }
        }
        piece += 1;
    });
    if let Some(e) = err {
        return Err(e);
    }
    if inst.gold.is_some() {
        b.set_gold(gold)?;
    }
    Ok(NodeSplitGraph {
        instance: b.finish(),
        origin,
        piece_of,
    })
}

/// The node-split graph of an instance: the new instance and, per copied variable, the original
/// variable it copies and the piece that owns it (for drawing 000 Fig. 1).
pub struct NodeSplitGraph {
    pub instance: Instance,
    pub origin: Vec<u32>,
    pub piece_of: Vec<u32>,
}
