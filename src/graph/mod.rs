//! Templated log-linear factor graphs.
//!
//! A [`FactorTemplate`] has a table shape over its variables' label sets, an entry map from table
//! entries to parameter columns, and a weight matrix `W[feature, column]` stored in the flat
//! parameter vector θ. An [`Instance`] unrolls templates into factors with sparse observations.
//! For parameters θ, a factor's log-potential table is `φ_a(y_a) = Σ_k value_k · W[k, col(y_a)]`
//! ([`Model::build_tables`]); estimators see only tables, and [`Model::scatter`] is the one routine
//! that turns table gradients back into parameter gradients.

pub mod boltzmann;
pub mod boltzmann_chain;
pub mod chain;
pub mod factorial;
pub mod family;
pub mod grid;
pub mod instance;
pub mod pieces;
pub mod subset;
pub mod uai;

pub use family::{ClampedChain, Family};
pub use instance::{
    ChainLayout, Factor, Instance, InstanceBuilder, Part, ProductLayout, Slot, MAX_PRODUCT_STATES,
};
pub use subset::{RowMaps, TableReads, TableScratch};

use crate::error::{Error, Result};
use rustc_hash::FxHashMap;

/// Sentinel for "this table entry has no parameter" (its log-potential is 0).
pub const NO_COLUMN: u32 = u32::MAX;

/// A named set of labels (one variable kind).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LabelSet {
    pub names: Vec<String>,
    #[serde(skip)]
    index: FxHashMap<String, u32>,
}

impl LabelSet {
    pub fn new(names: Vec<String>) -> Self {
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        LabelSet { names, index }
    }
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    pub fn get(&self, name: &str) -> Option<u32> {
        if self.index.len() != self.names.len() {
            // Deserialised without its index.
            return self.names.iter().position(|n| n == name).map(|i| i as u32);
        }
        self.index.get(name).copied()
    }
    pub fn rebuild_index(&mut self) {
        *self = LabelSet::new(std::mem::take(&mut self.names));
    }
    /// Checks a label set read from a model file: at least one label, each non-empty and
    /// without tabs or line breaks (no data format we read can hold them, and the weights TSV
    /// separates on them), none twice. `what` names the field in the message.
    pub fn validate(&self, what: &str) -> std::result::Result<(), String> {
        if self.names.is_empty() {
            return Err(format!("{what}: the label set is empty"));
        }
        if let Some(l) = self
            .names
            .iter()
            .find(|l| l.is_empty() || l.contains(['\t', '\n', '\r']))
        {
            return Err(format!("{what}: {l:?} is not a label"));
        }
        let mut seen = FxHashMap::default();
        for (i, l) in self.names.iter().enumerate() {
            if let Some(j) = seen.insert(l.as_str(), i) {
                return Err(format!("{what}: {l:?} is label {j} and label {i}"));
            }
        }
        Ok(())
    }
    /// The indices of an item's gold labels, when it has labels and every one is known.
    pub fn gold(&self, labels: &[String]) -> Option<Vec<u32>> {
        if labels.is_empty() {
            return None;
        }
        labels.iter().map(|l| self.get(l)).collect()
    }
}

/// How the weights of one template are laid out in θ.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Layout {
    /// Every feature has a weight for every column: `W[k, c]` at `offset + k·n_cols + c`.
    Dense,
    /// Feature `k` has weights only for the columns `cols[row_ptr[k]..row_ptr[k+1]]`
    /// (e.g. the feature–label pairs seen in training, as CRFsuite does by default);
    /// weight `j` of that range is at `offset + j`.
    Sparse { row_ptr: Vec<u32>, cols: Vec<u32> },
}

/// A factor template: shape, entry map and weight layout.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FactorTemplate {
    pub name: String,
    /// Cardinality of each variable in the scope; entries are row-major (last variable fastest).
    pub shape: Vec<usize>,
    /// Parameter column of each table entry, or [`NO_COLUMN`].
    pub entry_col: Vec<u32>,
    pub n_cols: usize,
    pub n_features: usize,
    pub layout: Layout,
    /// Start of this template's weights in θ.
    pub offset: usize,
    /// True when `entry_col[e] == e` for all entries (tables are the columns themselves).
    pub identity: bool,
    /// Set when this template reads another template's weights (same features and columns,
    /// its own shape and entry map), e.g. `edge-state` reading the `state` weights.
    #[serde(default)]
    pub tied_to: Option<usize>,
}

impl FactorTemplate {
    pub fn n_entries(&self) -> usize {
        self.entry_col.len()
    }
    /// Size of the weight block this template reads (shared with its source when tied).
    pub fn n_params(&self) -> usize {
        match &self.layout {
            Layout::Dense => self.n_features * self.n_cols,
            Layout::Sparse { cols, .. } => cols.len(),
        }
    }
    /// Range of feature `k`'s weights within this template's block of θ.
    pub fn row_range(&self, k: usize) -> (u32, u32) {
        match &self.layout {
            Layout::Dense => ((k * self.n_cols) as u32, ((k + 1) * self.n_cols) as u32),
            Layout::Sparse { row_ptr, .. } => (row_ptr[k], row_ptr[k + 1]),
        }
    }

    /// A dense template's weights `W` as a `features × columns` view into θ (no copy); `None`
    /// for a sparse template, or a θ too short for the block.
    pub fn block<'a>(&self, theta: &'a [f64]) -> Option<ndarray::ArrayView2<'a, f64>> {
        if self.layout != Layout::Dense {
            return None;
        }
        let w = theta.get(self.offset..self.offset + self.n_features * self.n_cols)?;
        ndarray::ArrayView2::from_shape((self.n_features, self.n_cols), w).ok()
    }

    /// Index in θ of `W[feature, col]`, if that weight exists.
    pub fn param_index(&self, feature: usize, col: usize) -> Option<usize> {
        if feature >= self.n_features || col >= self.n_cols {
            return None;
        }
        match &self.layout {
            Layout::Dense => Some(self.offset + feature * self.n_cols + col),
            Layout::Sparse { row_ptr, cols } => {
                let (a, b) = (row_ptr[feature] as usize, row_ptr[feature + 1] as usize);
                cols[a..b]
                    .binary_search(&(col as u32))
                    .ok()
                    .map(|j| self.offset + a + j)
            }
        }
    }
}

/// The largest table a template may have (entries): far above any model we build (a
/// factorial CRF's 135 × 135 co-temporal table), far below what would exhaust memory.
pub const MAX_TABLE_ENTRIES: usize = 1 << 26;

/// What a family expects of one of its templates; [`Model::expect`] checks a loaded model
/// against these, so a damaged `model.json` is refused on loading, not met as an index panic.
pub struct Expected<'a> {
    pub name: &'a str,
    pub shape: Vec<usize>,
    pub n_features: usize,
    pub tied_to: Option<usize>,
}

/// The parameterised model: its templates and the size of θ.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Model {
    pub templates: Vec<FactorTemplate>,
    pub n_params: usize,
}

/// The entries of a table of `shape` (label pairs counted in u64), refused when a table index
/// (u32) cannot address them or when its weights — `n_features` columns of them for a dense
/// layout — and the index map would not fit the memory limit: a million labels is refused here,
/// before its table is made.
pub fn check_table(
    name: &str,
    shape: &[usize],
    n_features: usize,
    layout: &Layout,
) -> Result<usize> {
    let n = crate::memory::product(&shape.iter().map(|&d| d as u64).collect::<Vec<_>>());
    if n > u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "template {name}: a table of shape {shape:?} has {n} entries, more than a table index \
             addresses ({}); fewer labels (or a smaller factor) are needed",
            u32::MAX
        )));
    }
    let weights = match layout {
        Layout::Dense => n.saturating_mul(n_features as u64),
        Layout::Sparse { cols, .. } => cols.len() as u64,
    };
    crate::memory::check(
        weights.saturating_mul(8).saturating_add(n * 4),
        || {
            format!(
                "template {name} (a table of shape {shape:?}: {n} entries; {weights} weights \
                 × 8 bytes, before the optimiser's copies)"
            )
        },
        "use fewer labels or features",
    )?;
    Ok(n as usize)
}

impl Model {
    /// Checks every size and index of the templates against every other, as [`add_template`]
    /// and [`add_tied_template`] build them: shapes against entry maps, entry maps against
    /// columns, sparse layouts against features and columns, weight blocks laid end to end and
    /// summing to `n_params`, tied templates against their source. The message names the
    /// template and the field.
    ///
    /// [`add_template`]: Model::add_template
    /// [`add_tied_template`]: Model::add_tied_template
    pub fn validate(&self) -> std::result::Result<(), String> {
        let mut next = 0usize;
        for (t, tp) in self.templates.iter().enumerate() {
            let at = |m: String| format!("template {t} (`{}`): {m}", tp.name);
            let n_entries = tp
                .shape
                .iter()
                .try_fold(1usize, |a, &c| if c == 0 { None } else { a.checked_mul(c) })
                .filter(|&n| n <= MAX_TABLE_ENTRIES)
                .ok_or_else(|| {
                    at(format!(
                        "shape {:?} is not a table of 1 to {MAX_TABLE_ENTRIES} entries",
                        tp.shape
                    ))
                })?;
            if tp.shape.is_empty() {
                return Err(at(
                    "shape is empty: a factor has at least one variable".into()
                ));
            }
            if tp.entry_col.len() != n_entries {
                return Err(at(format!(
                    "entry map has {} entries, the table has {n_entries}",
                    tp.entry_col.len()
                )));
            }
            if let Some(e) = tp
                .entry_col
                .iter()
                .position(|&c| c != NO_COLUMN && c as usize >= tp.n_cols)
            {
                return Err(at(format!(
                    "entry {e} maps to column {}, the template has {} columns",
                    tp.entry_col[e], tp.n_cols
                )));
            }
            let identity = tp
                .entry_col
                .iter()
                .enumerate()
                .all(|(e, &c)| c as usize == e);
            if identity != tp.identity {
                return Err(at(format!(
                    "identity is {}, the entry map says {identity}",
                    tp.identity
                )));
            }
            if let Some(s) = tp.tied_to {
                let src = match self.templates.get(s) {
                    Some(src) if s < t && src.tied_to.is_none() => src,
                    _ => return Err(at(format!("tied to template {s}, which it cannot read"))),
                };
                if (tp.n_cols, tp.n_features, tp.offset) != (src.n_cols, src.n_features, src.offset)
                    || tp.layout != src.layout
                {
                    return Err(at(format!(
                        "reads the weights of template {s} (`{}`) but its columns, features, \
                         layout or offset differ from them",
                        src.name
                    )));
                }
                continue;
            }
            let used = tp
                .entry_col
                .iter()
                .filter(|&&c| c != NO_COLUMN)
                .map(|&c| c as usize + 1)
                .max()
                .unwrap_or(0);
            if tp.n_cols != used {
                return Err(at(format!(
                    "n_cols is {}, the entry map uses {used} columns",
                    tp.n_cols
                )));
            }
            let n_params = match &tp.layout {
                Layout::Dense => tp.n_features.checked_mul(tp.n_cols).ok_or_else(|| {
                    at(format!(
                        "{} features × {} columns overflow",
                        tp.n_features, tp.n_cols
                    ))
                })?,
                Layout::Sparse { row_ptr, cols } => {
                    if row_ptr.len() != tp.n_features.saturating_add(1)
                        || row_ptr.first() != Some(&0)
                        || row_ptr.last().map(|&l| l as usize) != Some(cols.len())
                        || row_ptr.windows(2).any(|w| w[0] > w[1])
                    {
                        return Err(at(format!(
                            "sparse layout: {} row pointers for {} features and {} weights",
                            row_ptr.len(),
                            tp.n_features,
                            cols.len()
                        )));
                    }
                    let bad_row = row_ptr.windows(2).position(|w| {
                        let row = &cols[w[0] as usize..w[1] as usize];
                        row.iter().any(|&c| c as usize >= tp.n_cols)
                            || row.windows(2).any(|p| p[0] >= p[1])
                    });
                    if let Some(k) = bad_row {
                        return Err(at(format!(
                            "sparse layout: feature {k}'s columns are not increasing columns \
                             below {}",
                            tp.n_cols
                        )));
                    }
                    cols.len()
                }
            };
            if tp.offset != next {
                return Err(at(format!(
                    "its weights start at {}, after the templates before it at {next}",
                    tp.offset
                )));
            }
            next = next
                .checked_add(n_params)
                .ok_or_else(|| at("weight count overflows".into()))?;
        }
        if next != self.n_params {
            return Err(format!(
                "n_params is {}, the templates have {next} weights",
                self.n_params
            ));
        }
        Ok(())
    }

    /// Checks the templates against what the family expects of them (after [`validate`]).
    ///
    /// [`validate`]: Model::validate
    pub fn expect(&self, expected: &[Expected]) -> std::result::Result<(), String> {
        if self.templates.len() != expected.len() {
            return Err(format!(
                "{} templates, the model's options and dictionaries make {}",
                self.templates.len(),
                expected.len()
            ));
        }
        for (t, (tp, x)) in self.templates.iter().zip(expected).enumerate() {
            let at = |m: String| format!("template {t} (`{}`): {m}", tp.name);
            if tp.name != x.name {
                return Err(at(format!("expected template `{}` here", x.name)));
            }
            if tp.shape != x.shape {
                return Err(at(format!(
                    "shape {:?}, the label sets make {:?}",
                    tp.shape, x.shape
                )));
            }
            if tp.n_features != x.n_features {
                return Err(at(format!(
                    "{} features, the feature dictionary has {}",
                    tp.n_features, x.n_features
                )));
            }
            if tp.tied_to != x.tied_to {
                return Err(at(format!(
                    "tied to {:?}, expected {:?}",
                    tp.tied_to, x.tied_to
                )));
            }
        }
        Ok(())
    }

    /// Adds a template with an explicit entry map; returns its id.
    pub fn add_template(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        entry_col: Vec<u32>,
        n_features: usize,
        layout: Layout,
    ) -> Result<usize> {
        let n_entries: usize = shape.iter().product();
        if entry_col.len() != n_entries {
            return Err(Error::invalid(format!(
                "template {name}: entry map has {} entries, shape {shape:?} needs {n_entries}",
                entry_col.len()
            )));
        }
        let n_cols = entry_col
            .iter()
            .filter(|&&c| c != NO_COLUMN)
            .map(|&c| c as usize + 1)
            .max()
            .unwrap_or(0);
        if let Layout::Sparse { row_ptr, cols } = &layout {
            if row_ptr.len() != n_features + 1 || *row_ptr.last().unwrap() as usize != cols.len() {
                return Err(Error::invalid(format!(
                    "template {name}: sparse layout does not match {n_features} features"
                )));
            }
        }
        let identity = entry_col.iter().enumerate().all(|(e, &c)| c as usize == e);
        let t = FactorTemplate {
            name: name.to_string(),
            shape,
            entry_col,
            n_cols,
            n_features,
            layout,
            offset: self.n_params,
            identity,
            tied_to: None,
        };
        self.n_params += t.n_params();
        self.templates.push(t);
        Ok(self.templates.len() - 1)
    }

    /// Adds a template that reads the weights of template `source` through its own shape and
    /// entry map (columns must be the source's columns); it adds no parameters.
    pub fn add_tied_template(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        entry_col: Vec<u32>,
        source: usize,
    ) -> Result<usize> {
        let src = self
            .templates
            .get(source)
            .ok_or_else(|| Error::invalid(format!("no template {source} to tie {name} to")))?
            .clone();
        let n_entries: usize = shape.iter().product();
        if entry_col.len() != n_entries
            || entry_col
                .iter()
                .any(|&c| c != NO_COLUMN && c as usize >= src.n_cols)
        {
            return Err(Error::invalid(format!(
                "template {name}: entry map does not fit the columns of {}",
                src.name
            )));
        }
        let identity = entry_col.iter().enumerate().all(|(e, &c)| c as usize == e);
        self.templates.push(FactorTemplate {
            name: name.to_string(),
            shape,
            entry_col,
            n_cols: src.n_cols,
            n_features: src.n_features,
            layout: src.layout,
            offset: src.offset,
            identity,
            tied_to: Some(source),
        });
        Ok(self.templates.len() - 1)
    }

    /// A template whose every table entry is its own column (a full table).
    pub fn add_full_template(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        n_features: usize,
        layout: Layout,
    ) -> Result<usize> {
        let n = check_table(name, &shape, n_features, &layout)?;
        self.add_template(name, shape, (0..n as u32).collect(), n_features, layout)
    }

    /// Fills the log-potential tables of every slot of `inst` from θ.
    /// `cols` is scratch of at least the largest `n_cols` (used only for non-identity maps).
    pub fn build_tables(
        &self,
        theta: &[f64],
        inst: &Instance,
        phi: &mut [f64],
        cols: &mut Vec<f64>,
    ) {
        for slot in &inst.slots {
            self.build_slot(theta, inst, slot, phi, cols);
        }
    }

    /// Fills one slot's whole table.
    pub(crate) fn build_slot(
        &self,
        theta: &[f64],
        inst: &Instance,
        slot: &Slot,
        phi: &mut [f64],
        cols: &mut Vec<f64>,
    ) {
        let out = &mut phi[slot.offset as usize..(slot.offset + slot.len) as usize];
        out.fill(0.0);
        for part in inst.parts(slot) {
            let tp = &self.templates[part.template as usize];
            let (rows, val) = inst.obs_rows(part);
            if tp.identity {
                gather(tp, theta, rows, val, out);
            } else {
                cols.clear();
                cols.resize(tp.n_cols, 0.0);
                gather(tp, theta, rows, val, cols);
                for (o, &c) in out.iter_mut().zip(&tp.entry_col) {
                    if c != NO_COLUMN {
                        *o += cols[c as usize];
                    }
                }
            }
        }
    }

    /// Adds `scale · ∂φ/∂θ` contracted with `dphi` into `grad`: the one route from table
    /// gradients to parameter gradients.
    pub fn scatter(
        &self,
        inst: &Instance,
        dphi: &[f64],
        scale: f64,
        grad: &mut [f64],
        cols: &mut Vec<f64>,
    ) {
        for slot in &inst.slots {
            self.scatter_slot(inst, slot, dphi, scale, grad, cols);
        }
    }

    /// [`scatter`](Self::scatter) for one slot's whole table.
    pub(crate) fn scatter_slot(
        &self,
        inst: &Instance,
        slot: &Slot,
        dphi: &[f64],
        scale: f64,
        grad: &mut [f64],
        cols: &mut Vec<f64>,
    ) {
        let d = &dphi[slot.offset as usize..(slot.offset + slot.len) as usize];
        for part in inst.parts(slot) {
            let tp = &self.templates[part.template as usize];
            let (rows, val) = inst.obs_rows(part);
            if tp.identity {
                spread(tp, grad, rows, val, d, scale);
            } else {
                cols.clear();
                cols.resize(tp.n_cols, 0.0);
                for (&x, &c) in d.iter().zip(&tp.entry_col) {
                    if c != NO_COLUMN {
                        cols[c as usize] += x;
                    }
                }
                spread(tp, grad, rows, val, cols, scale);
            }
        }
    }
}

/// Hints the cache to fetch `p` (no effect where unsupported; never faults).
#[inline(always)]
pub(crate) fn prefetch(p: *const f64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never dereferences or faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How many observations ahead to prefetch weight rows.
pub(crate) const AHEAD: usize = 4;

crate::wide_fn!(
    fn gather(tp: &FactorTemplate, theta: &[f64], rows: &[(u32, u32)], val: &[f64], out: &mut [f64]) = gather_body;
);

#[inline(always)]
fn gather_body(
    tp: &FactorTemplate,
    theta: &[f64],
    rows: &[(u32, u32)],
    val: &[f64],
    out: &mut [f64],
) {
    let w = &theta[tp.offset..tp.offset + tp.n_params()];
    for &(a, _) in rows.iter().take(AHEAD) {
        prefetch(w.as_ptr().wrapping_add(a as usize));
    }
    match &tp.layout {
        Layout::Dense => {
            for (i, (&(a, b), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(w.as_ptr().wrapping_add(na as usize));
                }
                let wr = &w[a as usize..b as usize];
                if v == 1.0 {
                    for (o, &x) in out.iter_mut().zip(wr) {
                        *o += x;
                    }
                } else {
                    for (o, &x) in out.iter_mut().zip(wr) {
                        *o += v * x;
                    }
                }
            }
        }
        Layout::Sparse { cols, .. } => {
            for (i, (&(a, b), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(w.as_ptr().wrapping_add(na as usize));
                    prefetch(cols.as_ptr().wrapping_add(na as usize) as *const f64);
                }
                let (a, b) = (a as usize, b as usize);
                for (&col, &x) in cols[a..b].iter().zip(&w[a..b]) {
                    out[col as usize] += v * x;
                }
            }
        }
    }
}

crate::wide_fn!(
    fn spread(tp: &FactorTemplate, grad: &mut [f64], rows: &[(u32, u32)], val: &[f64], d: &[f64], scale: f64) = spread_body;
);

#[inline(always)]
fn spread_body(
    tp: &FactorTemplate,
    grad: &mut [f64],
    rows: &[(u32, u32)],
    val: &[f64],
    d: &[f64],
    scale: f64,
) {
    let g = &mut grad[tp.offset..tp.offset + tp.n_params()];
    for &(a, _) in rows.iter().take(AHEAD) {
        prefetch(g.as_ptr().wrapping_add(a as usize));
    }
    match &tp.layout {
        Layout::Dense => {
            for (i, (&(a, b), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(g.as_ptr().wrapping_add(na as usize));
                }
                let s = scale * v;
                for (gi, &x) in g[a as usize..b as usize].iter_mut().zip(d) {
                    *gi += s * x;
                }
            }
        }
        Layout::Sparse { cols, .. } => {
            for (i, (&(a, b), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(g.as_ptr().wrapping_add(na as usize));
                }
                let s = scale * v;
                let (a, b) = (a as usize, b as usize);
                for (gi, &col) in g[a..b].iter_mut().zip(&cols[a..b]) {
                    *gi += s * d[col as usize];
                }
            }
        }
    }
}
