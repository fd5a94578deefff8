//! Table subsets: the entries of each slot that an estimator reads.
//!
//! A local term over a pair table with one variable clamped reads one row or column of it:
//! PWPL's terms on a chain edge read the gold row and the gold column, 2L of the L² entries
//! (000 §4.2: PWPL's cost is linear in the cardinality). Building and scattering only those
//! entries is what makes that true in practice; slots read in full take the ordinary path.

use super::{prefetch, FactorTemplate, Instance, Layout, Model, AHEAD, NO_COLUMN};
use rustc_hash::FxHashMap;

/// A slot is built in full once more than this fraction of it is read.
const SUBSET_FRACTION: f64 = 0.25;

/// Per slot of one instance: the entries read (slot-relative, ascending), or the whole table.
#[derive(Clone, Debug, Default)]
pub struct TableReads {
    ranges: Vec<Option<(u32, u32)>>,
    entries: Vec<u32>,
}

impl TableReads {
    /// Every slot read in full.
    pub fn whole(inst: &Instance) -> TableReads {
        TableReads {
            ranges: vec![None; inst.slots.len()],
            entries: Vec::new(),
        }
    }

    /// From one mark per table-buffer entry (`marks.len() == inst.table_len`).
    pub fn from_marks(inst: &Instance, marks: &[bool]) -> TableReads {
        let mut ranges = Vec::with_capacity(inst.slots.len());
        let mut entries = Vec::new();
        for s in &inst.slots {
            let m = &marks[s.offset as usize..(s.offset + s.len) as usize];
            let n = m.iter().filter(|&&x| x).count();
            if n as f64 > SUBSET_FRACTION * s.len as f64 {
                ranges.push(None);
            } else {
                let a = entries.len() as u32;
                entries.extend((0..s.len).filter(|&e| m[e as usize]));
                ranges.push(Some((a, entries.len() as u32)));
            }
        }
        entries.shrink_to_fit();
        TableReads { ranges, entries }
    }

    /// The entries of slot `s` that are read, or `None` when all of them are.
    pub fn slot(&self, s: usize) -> Option<&[u32]> {
        self.ranges[s].map(|(a, b)| &self.entries[a as usize..b as usize])
    }

    /// Number of table entries built per evaluation (to report against `table_len`).
    pub fn built(&self, inst: &Instance) -> usize {
        inst.slots
            .iter()
            .enumerate()
            .map(|(i, s)| self.slot(i).map_or(s.len as usize, <[u32]>::len))
            .sum()
    }

    /// Sets the read entries of `buf` (a table buffer) back to zero.
    pub fn zero(&self, inst: &Instance, buf: &mut [f64]) {
        for (i, s) in inst.slots.iter().enumerate() {
            let t = &mut buf[s.offset as usize..(s.offset + s.len) as usize];
            match self.slot(i) {
                None => t.fill(0.0),
                Some(es) => es.iter().for_each(|&e| t[e as usize] = 0.0),
            }
        }
    }
}

/// Dense column → position maps for the long rows of sparse weight layouts (e.g. the always-on
/// transition feature, which has a weight for every label pair seen), so each wanted column is
/// found in O(1) rather than by searching the row.
#[derive(Clone, Debug, Default)]
pub struct RowMaps {
    /// (template, start of the row in the template's block) → start of its map in `maps`.
    index: FxHashMap<(u32, u32), u32>,
    maps: Vec<u32>,
}

/// Rows with at least this many weights get a map.
const MAP_MIN_NNZ: usize = 64;

impl RowMaps {
    pub fn new(model: &Model) -> RowMaps {
        let mut rm = RowMaps::default();
        for (ti, tp) in model.templates.iter().enumerate() {
            let Layout::Sparse { row_ptr, cols } = &tp.layout else {
                continue;
            };
            if tp.tied_to.is_some() {
                continue;
            }
            for r in row_ptr.windows(2) {
                let (a, b) = (r[0] as usize, r[1] as usize);
                if b - a < MAP_MIN_NNZ {
                    continue;
                }
                let start = rm.maps.len();
                rm.index.insert((ti as u32, a as u32), start as u32);
                rm.maps.resize(start + tp.n_cols, u32::MAX);
                for (j, &c) in cols[a..b].iter().enumerate() {
                    rm.maps[start + c as usize] = j as u32;
                }
            }
        }
        rm
    }

    /// Number of rows with a map.
    pub fn rows(&self) -> usize {
        self.index.len()
    }

    /// The map of the row `a..b` in template `t`'s block (of a tied template, its source's),
    /// if that row has one.
    #[inline]
    fn get(&self, model: &Model, t: u32, a: u32, b: u32) -> Option<&[u32]> {
        if ((b - a) as usize) < MAP_MIN_NNZ {
            return None;
        }
        let tp = &model.templates[t as usize];
        let owner = tp.tied_to.map_or(t, |s| s as u32);
        self.index
            .get(&(owner, a))
            .map(|&m| &self.maps[m as usize..m as usize + tp.n_cols])
    }
}

/// Scratch for building and scattering tables; reused across instances.
#[derive(Clone, Debug, Default)]
pub struct TableScratch {
    cols: Vec<f64>,
    /// `stamp[c] == gen` marks column `c` as one of `distinct`.
    stamp: Vec<u32>,
    gen: u32,
    distinct: Vec<u32>,
    /// `lo..hi` when the distinct columns are exactly that range (one row of a pair table whose
    /// columns are its entries: MEMM's and PWPL's row terms), so a sorted sparse row is read
    /// from its first column ≥ `lo` to its last < `hi` and no further.
    range: Option<(u32, u32)>,
    /// `cols[..dirty]` may hold sums outside `distinct` (from walking short rows unmasked, or
    /// from the whole-table path); everything else outside `distinct` is zero.
    dirty: usize,
}

impl TableScratch {
    /// Collects the distinct columns of `entries` under `tp`'s entry map and zeroes their sums.
    fn select(&mut self, tp: &FactorTemplate, entries: &[u32]) {
        // Every column starts at zero: short sparse rows are walked without testing which
        // columns are selected (a branch per weight that mispredicts); the other columns' sums
        // are never read, and spread adds their zeros back.
        if self.dirty > 0 {
            let d = self.dirty.min(self.cols.len());
            self.cols[..d].fill(0.0);
            self.dirty = 0;
        } else {
            for &c in &self.distinct {
                self.cols[c as usize] = 0.0;
            }
        }
        if self.stamp.len() < tp.n_cols {
            self.stamp.resize(tp.n_cols, 0);
        }
        if self.cols.len() < tp.n_cols {
            self.cols.resize(tp.n_cols, 0.0);
        }
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.fill(0);
            self.gen = 1;
        }
        self.distinct.clear();
        let (mut lo, mut hi) = (u32::MAX, 0);
        for &e in entries {
            let c = tp.entry_col[e as usize];
            if c != NO_COLUMN && self.stamp[c as usize] != self.gen {
                self.stamp[c as usize] = self.gen;
                self.distinct.push(c);
                lo = lo.min(c);
                hi = hi.max(c + 1);
            }
        }
        self.range = (hi > lo && (hi - lo) as usize == self.distinct.len()).then_some((lo, hi));
    }

    /// The part of a sorted sparse row `cols[a..b]` whose columns may be selected. A linear
    /// scan: rows are short, and a binary search's dependent loads measured slower.
    #[inline(always)]
    fn window(&self, cols: &[u32], a: usize, b: usize) -> (usize, usize) {
        match self.range {
            Some((lo, hi)) => {
                let row = &cols[a..b];
                let i = row.iter().position(|&c| c >= lo).unwrap_or(row.len());
                let j = i + row[i..]
                    .iter()
                    .position(|&c| c >= hi)
                    .unwrap_or(row.len() - i);
                (a + i, a + j)
            }
            None => (a, b),
        }
    }
}

impl Model {
    /// [`build_tables`](Model::build_tables) restricted to the entries in `reads`; entries not
    /// read are left as they were (NaN in debug builds, so a stray read shows).
    pub fn build_tables_subset(
        &self,
        theta: &[f64],
        inst: &Instance,
        reads: &TableReads,
        maps: &RowMaps,
        phi: &mut [f64],
        scratch: &mut TableScratch,
    ) {
        for (si, slot) in inst.slots.iter().enumerate() {
            let Some(entries) = reads.slot(si) else {
                self.build_slot(theta, inst, slot, phi, &mut scratch.cols);
                scratch.dirty = usize::MAX;
                continue;
            };
            let out = &mut phi[slot.offset as usize..(slot.offset + slot.len) as usize];
            if cfg!(debug_assertions) {
                out.fill(f64::NAN);
            }
            entries.iter().for_each(|&e| out[e as usize] = 0.0);
            for part in inst.parts(slot) {
                let tp = &self.templates[part.template as usize];
                let (rows, val) = inst.obs_rows(part);
                scratch.select(tp, entries);
                let row_map = RowMapOf {
                    maps,
                    model: self,
                    template: part.template,
                };
                gather_cols(tp, theta, rows, val, row_map, scratch);
                for &e in entries {
                    let c = tp.entry_col[e as usize];
                    if c != NO_COLUMN {
                        out[e as usize] += scratch.cols[c as usize];
                    }
                }
            }
        }
    }

    /// [`scatter`](Model::scatter) (scale 1) for a `dphi` that is zero outside `reads`.
    pub fn scatter_subset(
        &self,
        inst: &Instance,
        reads: &TableReads,
        maps: &RowMaps,
        dphi: &[f64],
        grad: &mut [f64],
        scratch: &mut TableScratch,
    ) {
        for (si, slot) in inst.slots.iter().enumerate() {
            let Some(entries) = reads.slot(si) else {
                self.scatter_slot(inst, slot, dphi, 1.0, grad, &mut scratch.cols);
                scratch.dirty = usize::MAX;
                continue;
            };
            let d = &dphi[slot.offset as usize..(slot.offset + slot.len) as usize];
            for part in inst.parts(slot) {
                let tp = &self.templates[part.template as usize];
                let (rows, val) = inst.obs_rows(part);
                scratch.select(tp, entries);
                for &e in entries {
                    let c = tp.entry_col[e as usize];
                    if c != NO_COLUMN {
                        scratch.cols[c as usize] += d[e as usize];
                    }
                }
                let row_map = RowMapOf {
                    maps,
                    model: self,
                    template: part.template,
                };
                spread_cols(tp, grad, rows, val, row_map, scratch);
            }
        }
    }
}

/// The row maps of one template (see [`RowMaps::get`]).
#[derive(Clone, Copy)]
struct RowMapOf<'a> {
    maps: &'a RowMaps,
    model: &'a Model,
    template: u32,
}

impl<'a> RowMapOf<'a> {
    #[inline(always)]
    fn get(&self, a: u32, b: u32) -> Option<&'a [u32]> {
        self.maps.get(self.model, self.template, a, b)
    }
}

crate::wide_fn!(
    /// `cols[c] += Σ_obs value · W[feature, c]` for the selected columns `c`.
    fn gather_cols(tp: &FactorTemplate, theta: &[f64], rows: &[(u32, u32)], val: &[f64], row_map: RowMapOf<'_>, s: &mut TableScratch) = gather_cols_body;
);

#[inline(always)]
fn gather_cols_body(
    tp: &FactorTemplate,
    theta: &[f64],
    rows: &[(u32, u32)],
    val: &[f64],
    row_map: RowMapOf<'_>,
    s: &mut TableScratch,
) {
    let w = &theta[tp.offset..tp.offset + tp.n_params()];
    match &tp.layout {
        // Every column selected (a row of an edge table whose entries map to all of the
        // columns, as the `edge` factorisation's state part does): whole rows, contiguous.
        Layout::Dense if s.distinct.len() == tp.n_cols => {
            let n = tp.n_cols;
            let out = &mut s.cols[..n];
            for (i, (&(a, _), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(w.as_ptr().wrapping_add(na as usize));
                }
                let wr = &w[a as usize..a as usize + n];
                for (o, &x) in out.iter_mut().zip(wr) {
                    *o += v * x;
                }
            }
        }
        Layout::Dense => {
            for (i, (&(a, _), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(w.as_ptr().wrapping_add(na as usize));
                }
                let wr = &w[a as usize..];
                for &c in &s.distinct {
                    s.cols[c as usize] += v * wr[c as usize];
                }
            }
        }
        Layout::Sparse { cols, .. } => {
            for (i, (&(a, b), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(w.as_ptr().wrapping_add(na as usize));
                    prefetch(cols.as_ptr().wrapping_add(na as usize) as *const f64);
                }
                if let Some(m) = row_map.get(a, b) {
                    let w = &w[a as usize..];
                    for &c in &s.distinct {
                        let j = m[c as usize];
                        if j != u32::MAX {
                            s.cols[c as usize] += v * w[j as usize];
                        }
                    }
                    continue;
                }
                // A short row: walk it (or the window of a column range), keeping the selected
                // columns.
                let (a, b) = s.window(cols, a as usize, b as usize);
                s.dirty = tp.n_cols;
                for (&c, &x) in cols[a..b].iter().zip(&w[a..b]) {
                    s.cols[c as usize] += v * x;
                }
            }
        }
    }
}

crate::wide_fn!(
    /// `grad[W[feature, c]] += value · cols[c]` for the selected columns `c`.
    fn spread_cols(tp: &FactorTemplate, grad: &mut [f64], rows: &[(u32, u32)], val: &[f64], row_map: RowMapOf<'_>, s: &TableScratch) = spread_cols_body;
);

#[inline(always)]
fn spread_cols_body(
    tp: &FactorTemplate,
    grad: &mut [f64],
    rows: &[(u32, u32)],
    val: &[f64],
    row_map: RowMapOf<'_>,
    s: &TableScratch,
) {
    let g = &mut grad[tp.offset..tp.offset + tp.n_params()];
    match &tp.layout {
        Layout::Dense if s.distinct.len() == tp.n_cols => {
            let n = tp.n_cols;
            let d = &s.cols[..n];
            for (i, (&(a, _), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(g.as_ptr().wrapping_add(na as usize));
                }
                for (gi, &x) in g[a as usize..a as usize + n].iter_mut().zip(d) {
                    *gi += v * x;
                }
            }
        }
        Layout::Dense => {
            for (i, (&(a, _), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(g.as_ptr().wrapping_add(na as usize));
                }
                let gr = &mut g[a as usize..];
                for &c in &s.distinct {
                    gr[c as usize] += v * s.cols[c as usize];
                }
            }
        }
        Layout::Sparse { cols, .. } => {
            for (i, (&(a, b), &v)) in rows.iter().zip(val).enumerate() {
                if let Some(&(na, _)) = rows.get(i + AHEAD) {
                    prefetch(g.as_ptr().wrapping_add(na as usize));
                    prefetch(cols.as_ptr().wrapping_add(na as usize) as *const f64);
                }
                if let Some(m) = row_map.get(a, b) {
                    let g = &mut g[a as usize..];
                    for &c in &s.distinct {
                        let j = m[c as usize];
                        if j != u32::MAX {
                            g[j as usize] += v * s.cols[c as usize];
                        }
                    }
                    continue;
                }
                let (a, b) = s.window(cols, a as usize, b as usize);
                for (&c, gi) in cols[a..b].iter().zip(&mut g[a..b]) {
                    *gi += v * s.cols[c as usize];
                }
            }
        }
    }
}
