//! Runs side by side: every pair's paired tests ([`crate::eval::significance`]) and, before
//! them, what would make a pair meaningless — runs scored on different test files or data, a
//! run scored on its own training file. `compare` and the Compare pane both read this.

use super::spec::RunSpec;
use crate::eval::significance::{compare_metrics, PairComparison};
use crate::eval::Metrics;

/// One run as the comparison needs it.
pub struct Scored<'a> {
    pub name: String,
    pub spec: &'a RunSpec,
    /// Final test metrics; `None` for a run still training or without a test file.
    pub test: Option<&'a Metrics>,
}

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
    let trains: std::collections::BTreeSet<_> = rows
        .iter()
        .map(|r| std::fs::canonicalize(&r.spec.train).unwrap_or_else(|_| r.spec.train.clone()))
        .collect();
    if trains.len() > 1 {
        c.warnings.push(format!(
            "the runs were trained on different data ({}): a difference may be the data's, not \
             the estimator's",
            trains
                .iter()
                .map(|p| file_name(p))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
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
    c
}

/// Two paths naming one file (relative and absolute forms of the same path agree).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}
