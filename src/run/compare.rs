//! Runs side by side: every pair's paired tests ([`crate::eval::significance`]) and, before
//! them, what would make a pair meaningless — runs scored on different test files or data, a
//! run scored on its own training file. `compare` and the Compare pane both read this.

use super::spec::RunSpec;
use crate::eval::significance::{compare_metrics, holm, PairComparison};
use crate::eval::Metrics;

/// One run as the comparison needs it.
pub struct Scored<'a> {
    pub name: String,
    pub spec: &'a RunSpec,
    /// Final test metrics; `None` for a run still training or without a test file.
    pub test: Option<&'a Metrics>,
}

/// Above this many pairs (four runs or more) every pair's p is also given Holm-adjusted over
/// the pairs: with 6 or 28 tests at 0.05 some "significant" pair is likely by chance alone.
pub const HOLM_ABOVE_PAIRS: usize = 3;

/// The tested pairs and the warnings about the set.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub pairs: Vec<PairComparison>,
    pub warnings: Vec<String>,
}

/// A path as a warning names it: its last two components (enough to tell test from train).
fn file_name(p: &std::path::Path) -> String {
    let parts: Vec<_> = p.components().rev().take(2).collect();
    parts
        .iter()
        .rev()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every pair of `rows` scored on the same test file, tested; the rest named in warnings.
pub fn compare_runs(rows: &[Scored]) -> Comparison {
    use crate::util::same_file;
    let mut c = Comparison::default();
    for r in rows {
        match (&r.spec.test, r.test) {
            (_, None) => c.warnings.push(format!(
                "{} has no final test scores: it is left out of the tests",
                r.name
            )),
            (Some(t), Some(_)) if same_file(t, &r.spec.train) => c.warnings.push(format!(
                "{} was scored on its own training file {}: its scores measure fit, not \
                 generalisation",
                r.name,
                file_name(t)
            )),
            _ => {}
        }
    }
    // One file named two ways is one file.
    let trains: Vec<std::path::PathBuf> = rows
        .iter()
        .map(|r| std::fs::canonicalize(&r.spec.train).unwrap_or_else(|_| r.spec.train.clone()))
        .collect();
    c.warnings.extend(mixed_data(&trains));
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            let (a, b) = (&rows[i], &rows[j]);
            let (Some(ma), Some(mb)) = (a.test, b.test) else {
                continue;
            };
            match (&a.spec.test, &b.spec.test) {
                (Some(ta), Some(tb)) if !same_file(ta, tb) => {
                    c.warnings.push(format!(
                        "{} was scored on {} and {} on {}: not paired, not tested",
                        a.name,
                        file_name(ta),
                        b.name,
                        file_name(tb)
                    ));
                    continue;
                }
                _ => {}
            }
            match compare_metrics(&a.name, ma, &b.name, mb) {
                Ok(p) => c.pairs.push(p),
                Err(e) => c.warnings.push(e),
            }
        }
    }
    if c.pairs.len() > HOLM_ABOVE_PAIRS {
        let ps: Vec<Option<f64>> = c.pairs.iter().map(PairComparison::p).collect();
        for (pair, h) in c.pairs.iter_mut().zip(holm(&ps)) {
            pair.holm_p = h;
        }
    }
    c
}

impl Comparison {
    /// The one-line note beside a Holm column, naming the family's size; `None` without one.
    pub fn holm_note(&self) -> Option<String> {
        let n = self.pairs.iter().filter(|p| p.holm_p.is_some()).count();
        (n > 0).then(|| {
            format!(
                "Holm p: each pair's p (McNemar, or paired t without per-token scores) adjusted \
                 for the {n} pairs tested together (Holm–Bonferroni); below 0.05 the \
                 difference holds even counting every pair"
            )
        })
    }
}

/// How [`mixed_data`]'s warning begins (a pane that says it above its tables leaves it out of
/// the tests' warnings).
pub const MIXED_DATA: &str = "the runs were trained on different data";

/// The warning when runs drawn or tested together were trained on different data: `trains`
/// are their training paths, resolved where each run was started (the Curves and Compare panes
/// give them lexically resolved; [`compare_runs`] canonical). `None` when they are one data
/// set: one file, or copies of it ([`crate::util::same_file`], as pairing and the Graph's
/// model list decide).
pub fn mixed_data(trains: &[std::path::PathBuf]) -> Option<String> {
    let mut distinct: Vec<std::path::PathBuf> = vec![];
    for p in trains.iter().map(|p| lexical(p)) {
        if !distinct.iter().any(|d| crate::util::same_file(d, &p)) {
            distinct.push(p);
        }
    }
    (distinct.len() > 1).then(|| {
        format!(
            "{MIXED_DATA} ({}): a difference may be the data's, not the estimator's",
            distinct
                .iter()
                .map(|p| file_name(p))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// `p` with its `.` and `dir/..` steps removed, without asking the file system.
fn lexical(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}
