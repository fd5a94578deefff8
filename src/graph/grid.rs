//! The grid CRF: an H×W lattice of label variables (4-connected, or 8-connected as an option),
//! a unary factor per pixel log-linear in the pixel's observations (plus a bias), and one
//! pairwise template shared by every edge whose entry map is chosen by name:
//! `potts` (one weight on the diagonal, rewarding equal neighbours), `symmetric`
//! (one weight per unordered label pair) or `full` (one per ordered pair).

use super::family::Family;
use super::{Expected, Instance, InstanceBuilder, LabelSet, Layout, Model, NO_COLUMN};
use crate::data::grid::{format_grid, read_grid};
use crate::data::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

/// How a pairwise table maps to weights.
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
pub enum Pairwise {
    /// One tied weight on the diagonal: `θ·1[y_i = y_j]`.
    #[default]
    Potts,
    /// One weight per unordered label pair.
    Symmetric,
    /// One weight per ordered label pair.
    Full,
}

/// Which neighbours share an edge.
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
pub enum Neighbourhood {
    /// Left, right, up, down.
    #[default]
    #[value(name = "4")]
    Four,
    /// And the four diagonals.
    #[value(name = "8")]
    Eight,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GridOptions {
    pub pairwise: Pairwise,
    pub neighbourhood: Neighbourhood,
}

/// Template ids inside [`GridCrf::model`].
pub const UNARY: usize = 0;
pub const PAIRWISE: usize = 1;

pub const MODEL_FORMAT: &str = "piecewise-lab/grid/1";

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct GridCrf {
    pub labels: LabelSet,
    pub options: GridOptions,
    /// Observations per pixel.
    pub n_obs: usize,
    pub model: Model,
}

impl GridCrf {
    /// Labels (in order of first appearance) and the model from training images.
    pub fn fit(corpus: &Corpus, options: GridOptions) -> Result<(GridCrf, Vec<Instance>)> {
        let mut names: Vec<String> = vec![];
        for s in &corpus.sequences {
            if !s.has_labels() {
                return Err(Error::parse(
                    &corpus.path,
                    s.line,
                    "training images need labels",
                ));
            }
            for l in &s.labels {
                if !names.contains(l) {
                    names.push(l.clone());
                }
            }
        }
        let k = names.len();
        let n_obs = corpus.n_columns.saturating_sub(1);
        let mut model = Model::default();
        model.add_full_template("unary", vec![k], n_obs + 1, Layout::Dense)?;
        let map = pairwise_map(options.pairwise, k);
        model.add_template("pairwise", vec![k, k], map, 1, Layout::Dense)?;
        let crf = GridCrf {
            labels: LabelSet::new(names),
            options,
            n_obs,
            model,
        };
        let insts = crf.instances(corpus)?;
        Ok((crf, insts))
    }

    pub fn from_json(value: serde_json::Value) -> serde_json::Result<GridCrf> {
        #[derive(serde::Deserialize)]
        struct File {
            crf: GridCrf,
        }
        let mut f: File = serde_json::from_value(value)?;
        f.crf.labels.rebuild_index();
        Ok(f.crf)
    }
}

/// Column of each entry `(a, b)` of a K×K pairwise table.
fn pairwise_map(kind: Pairwise, k: usize) -> Vec<u32> {
    let tri = |a: usize, b: usize| {
        let (a, b) = (a.min(b), a.max(b));
        // Row a of the upper triangle starts after rows of lengths k, k−1, …, k−a+1.
        a * k - a * a.saturating_sub(1) / 2 + (b - a)
    };
    (0..k * k)
        .map(|e| {
            let (a, b) = (e / k, e % k);
            match kind {
                Pairwise::Potts if a == b => 0,
                Pairwise::Potts => NO_COLUMN,
                Pairwise::Symmetric => tri(a, b) as u32,
                Pairwise::Full => e as u32,
            }
        })
        .collect()
}

/// The (row, column) of every pixel's neighbours that come after it, each edge once.
fn edges(h: usize, w: usize, eight: bool) -> impl Iterator<Item = (usize, usize)> {
    let offsets: &'static [(isize, isize)] = if eight {
        &[(0, 1), (1, 0), (1, 1), (1, -1)]
    } else {
        &[(0, 1), (1, 0)]
    };
    (0..h * w).flat_map(move |v| {
        let (r, c) = ((v / w) as isize, (v % w) as isize);
        offsets.iter().filter_map(move |&(dr, dc)| {
            let (r2, c2) = (r + dr, c + dc);
            (r2 < h as isize && c2 >= 0 && c2 < w as isize)
                .then(|| (v, r2 as usize * w + c2 as usize))
        })
    })
}

impl Family for GridCrf {
    fn kind(&self) -> &'static str {
        "grid"
    }
    fn model(&self) -> &Model {
        &self.model
    }
    fn labels(&self, _inst: &Instance, _v: u32) -> &LabelSet {
        &self.labels
    }
    fn read(&self, path: &Path) -> Result<Corpus> {
        read_grid(path)
    }
    fn check(&self, corpus: &Corpus) -> Result<()> {
        let n = corpus.n_columns.saturating_sub(1);
        if n != self.n_obs {
            return Err(Error::file(
                &corpus.path,
                format!(
                    "{n} observations per pixel, but the model was trained on {}",
                    self.n_obs
                ),
            ));
        }
        Ok(())
    }
    fn instance(&self, item: &Sequence) -> Result<Instance> {
        let (h, w) = item
            .shape
            .ok_or_else(|| Error::invalid("a grid item needs its shape (rows × columns)"))?;
        let k = self.labels.len();
        let mut b = InstanceBuilder::new(&self.model);
        for _ in 0..h * w {
            b.add_var(k);
        }
        let mut obs = Vec::with_capacity(self.n_obs + 1);
        for (v, cols) in item.columns.iter().enumerate() {
            obs.clear();
            obs.push((0, 1.0));
            for (j, x) in cols.iter().enumerate() {
                let x: f64 = x
                    .parse()
                    .map_err(|_| Error::invalid(format!("pixel {v}: {x:?} is not a number")))?;
                if x != 0.0 {
                    obs.push((j as u32 + 1, x));
                }
            }
            b.add_factor(UNARY, &[v as u32], &obs)?;
        }
        for (a, c) in edges(h, w, self.options.neighbourhood == Neighbourhood::Eight) {
            b.add_factor(PAIRWISE, &[a as u32, c as u32], &[(0, 1.0)])?;
        }
        if let Some(g) = self.labels.gold(&item.labels) {
            b.set_gold(g)?;
        }
        Ok(b.finish())
    }
    fn describe(&self) -> String {
        format!(
            "grid ({:?} pairwise, {}-connected): {} labels · {} observations per pixel · {} parameters",
            self.options.pairwise,
            if self.options.neighbourhood == Neighbourhood::Eight { 8 } else { 4 },
            self.labels.len(),
            self.n_obs,
            self.model.n_params
        )
    }
    fn feature_name(&self, t: usize, k: usize) -> String {
        match (t, k) {
            (_, 0) => "*".into(),
            _ => format!("obs{k}"),
        }
    }
    fn feature_index(&self, t: usize, name: &str) -> Option<usize> {
        match (t, name) {
            (_, "*") => Some(0),
            (UNARY, n) => n
                .strip_prefix("obs")?
                .parse::<usize>()
                .ok()
                .filter(|&k| k >= 1 && k <= self.n_obs),
            _ => None,
        }
    }
    fn column_name(&self, t: usize, c: usize) -> String {
        let names = &self.labels.names;
        if t == UNARY {
            return names[c].clone();
        }
        let tp = &self.model.templates[PAIRWISE];
        let k = names.len();
        let e = tp
            .entry_col
            .iter()
            .position(|&x| x == c as u32)
            .unwrap_or(0);
        match self.options.pairwise {
            Pairwise::Potts => "=\t=".into(),
            _ => format!("{}\t{}", names[e / k], names[e % k]),
        }
    }
    fn column_index(&self, t: usize, name: &[&str]) -> Option<usize> {
        match (t, name) {
            (UNARY, [a]) => self.labels.get(a).map(|y| y as usize),
            (PAIRWISE, ["=", "="]) if self.options.pairwise == Pairwise::Potts => Some(0),
            (PAIRWISE, [a, b]) => {
                let k = self.labels.len();
                let e = self.labels.get(a)? as usize * k + self.labels.get(b)? as usize;
                let c = self.model.templates[PAIRWISE].entry_col[e];
                (c != NO_COLUMN).then_some(c as usize)
            }
            _ => None,
        }
    }
    fn validate(&self) -> std::result::Result<(), String> {
        self.labels.validate("labels")?;
        let k = self.labels.len();
        let n_unary = self.n_obs.checked_add(1).ok_or("n_obs overflows")?;
        self.model.expect(&[
            Expected {
                name: "unary",
                shape: vec![k],
                n_features: n_unary,
                tied_to: None,
            },
            Expected {
                name: "pairwise",
                shape: vec![k, k],
                n_features: 1,
                tied_to: None,
            },
        ])?;
        if self.model.templates[PAIRWISE].entry_col != pairwise_map(self.options.pairwise, k) {
            return Err(format!(
                "template 1 (`pairwise`): the entry map is not the {:?} map",
                self.options.pairwise
            ));
        }
        Ok(())
    }
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::json!({ "format": MODEL_FORMAT, "crf": self }))
    }
    fn format(&self, items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
        format_grid(items, predicted)
    }
    fn layout(&self, inst: &Instance, item: &Sequence) -> Vec<[f32; 2]> {
        let w = item.shape.map_or(inst.n_vars().max(1), |s| s.1.max(1));
        (0..inst.n_vars())
            .map(|v| [(v % w) as f32, (v / w) as f32])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_map_numbers_the_upper_triangle() {
        for k in 1..7 {
            let m = pairwise_map(Pairwise::Symmetric, k);
            let mut seen = vec![];
            for a in 0..k {
                for b in a..k {
                    assert_eq!(m[a * k + b], m[b * k + a]);
                    seen.push(m[a * k + b]);
                }
            }
            let want: Vec<u32> = (0..(k * (k + 1) / 2) as u32).collect();
            assert_eq!(seen, want, "k = {k}");
        }
    }

    #[test]
    fn edge_counts() {
        assert_eq!(edges(3, 4, false).count(), 3 * 3 + 2 * 4);
        assert_eq!(edges(3, 4, true).count(), 3 * 3 + 2 * 4 + 2 * 2 * 3);
    }
}
