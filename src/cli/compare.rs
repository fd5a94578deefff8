//! `compare`: several estimators trained with the same features and prior, or finished runs,
//! in one table with 001's significance tests between every pair.

use super::knobs::{merged, run_spec, EstimatorOptionKnobs, RunKnobs};
use super::train::{existing, run_with_progress, summary_json, Report};
use crate::error::{Error, Result};
use crate::run::compare::{compare_runs, Scored};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub run: RunKnobs,
    /// Comma-separated estimators, trained in turn with the same features and prior.
    #[arg(long, default_value = "ml,pl,pl-edge,pw,pwpl")]
    pub estimators: String,
    /// Every estimator's knobs, each applied where it belongs.
    #[command(flatten)]
    pub options: EstimatorOptionKnobs,
    /// Directory for the runs (one subdirectory per estimator).
    #[arg(long, required_unless_present = "runs")]
    pub out: Option<PathBuf>,
    /// Replace the runs already in --out (without it a finished run there is refused).
    #[arg(long)]
    pub force: bool,
    /// Compare these finished run directories instead of training (`--runs A B C`, a shell
    /// glob such as `runs/*`, or `A,B`): each must have been scored on the same test file.
    #[arg(long, conflicts_with = "out", num_args = 1.., value_delimiter = ',',
          value_parser = clap::builder::OsStringValueParser::new())]
    pub runs: Vec<std::ffi::OsString>,
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Trains each estimator in turn with the same data, features and prior; prints one table.
pub fn compare(a: CompareArgs) -> Result<()> {
    let mut rows = vec![];
    if !a.runs.is_empty() {
        // `A,,B` (an empty name between commas) names two runs, as a shell glob would.
        let dirs: Vec<PathBuf> = a
            .runs
            .iter()
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect();
        if dirs.is_empty() {
            return Err(Error::invalid("--runs names no run directory"));
        }
        if dirs.len() > 20 {
            eprintln!(
                "comparing {} runs: {} pairs, each with a paired bootstrap (this takes a while)",
                dirs.len(),
                dirs.len() * (dirs.len() - 1) / 2
            );
        }
        for dir in &dirs {
            let d = dir.display().to_string();
            let s = crate::run::RunFiles::at(dir).summary()?;
            if s.test.is_none() {
                return Err(Error::file(d, "the run has no test scores to compare"));
            }
            // The directory's name: two runs of one estimator (say with and without
            // per-state scales) stay apart.
            let name = dir
                .file_name()
                .map_or(d, |f| f.to_string_lossy().into_owned());
            rows.push((name, s, dir.clone()));
        }
        return compare_table(&rows, a.json);
    }
    if !a.run.0.given(crate::run::spec::TEST.name) {
        return Err(Error::invalid(
            "compare needs --test FILE to score the estimators",
        ));
    }
    let out = a.out.clone().expect("clap: --out or --runs");
    for name in a
        .estimators
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let mut s = merged(&[&a.run.0, &a.options.0]);
        s.set(crate::settings::ESTIMATOR, name);
        let spec = run_spec(&s)?;
        let dir = out.join(name);
        let summary = run_with_progress(
            &spec,
            &dir,
            existing(a.force),
            Default::default(),
            Report::for_stderr(false),
        )?;
        rows.push((name.to_string(), summary, dir));
    }
    compare_table(&rows, a.json)
}

/// The paired tests of every pair of rows (the engine's [`compare_runs`]), each row's spec
/// read from its directory.
fn significance(
    rows: &[(String, crate::run::RunSummary, PathBuf)],
) -> Result<crate::run::compare::Comparison> {
    // Data paths resolved where each run was started, not where `compare` is.
    let specs: Vec<crate::run::spec::RunSpec> = rows
        .iter()
        .map(|(_, s, dir)| {
            let cwd = s.provenance.as_ref().map_or("", |p| p.cwd.as_str());
            crate::run::RunFiles::at(dir)
                .spec()
                .map(|spec| spec.with_paths_from(Path::new(cwd)))
        })
        .collect::<Result<_>>()?;
    let scored: Vec<Scored> = rows
        .iter()
        .zip(&specs)
        .map(|((name, s, _), spec)| Scored {
            name: name.clone(),
            spec,
            test: s.test.as_ref(),
        })
        .collect();
    Ok(compare_runs(&scored))
}

fn compare_table(rows: &[(String, crate::run::RunSummary, PathBuf)], json: bool) -> Result<()> {
    let comparison = significance(rows)?;
    if json {
        return compare_json(rows, &comparison);
    }
    let names: Vec<String> = rows
        .first()
        .map(|r| {
            fields(r.1.test.as_ref().unwrap())
                .into_iter()
                .map(|f| f.0)
                .collect()
        })
        .unwrap_or_default();
    out!(
        "{:<14} {:>6} {:>9} {:>9} {:>8} {:>12} {:<18}",
        "estimator",
        "iter",
        "seconds",
        "accuracy",
        "seg F1",
        "held-out LL",
        "LL under"
    )?;
    for n in &names {
        out!(" {:>9}", truncate(n, 9))?;
    }
    outln!()?;
    for (n, s, _) in rows {
        let m = s.test.as_ref().unwrap();
        out!(
            "{:<14} {:>6} {:>9.2} {:>9.2} {:>8} {:>12.1} {:<18}",
            n,
            s.iterations,
            s.train_seconds,
            m.token_accuracy,
            m.segment_f1()
                .map_or_else(|| "–".to_string(), |f| format!("{f:.2}")),
            m.log_likelihood.unwrap_or(f64::NAN),
            if m.log_likelihood_under.is_empty() {
                "–"
            } else {
                m.log_likelihood_under.as_str()
            }
        )?;
        let f: std::collections::BTreeMap<_, _> = fields(m).into_iter().collect();
        for n in &names {
            out!(" {:>9.2}", f.get(n).copied().unwrap_or(f64::NAN))?;
        }
        outln!()?;
    }
    if !names.is_empty() {
        outln!(
            "(per-field columns: {} F1)",
            if rows[0].1.test.as_ref().unwrap().segments.gold > 0 {
                "segment"
            } else {
                "token"
            }
        )?;
    }
    for w in &comparison.warnings {
        outln!("warning: {w}")?;
    }
    print_tests(&comparison)?;
    Ok(())
}

/// Per-field F1: segment types when the labels carry chunk prefixes, else each non-O label's
/// token F1.
fn fields(m: &crate::eval::Metrics) -> Vec<(String, f64)> {
    if m.segments.gold > 0 {
        m.segment_types
            .iter()
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.clone(), v.f1))
            .collect()
    } else {
        m.labels
            .iter()
            .filter(|(k, _)| k.as_str() != "O")
            .map(|(k, v)| (k.clone(), v.f1))
            .collect()
    }
}

/// `compare --json`: every run's summary with its per-field F1 and its tests against the others.
fn compare_json(
    rows: &[(String, crate::run::RunSummary, PathBuf)],
    comparison: &crate::run::compare::Comparison,
) -> Result<()> {
    let tests = &comparison.pairs;
    let j: Vec<_> = rows
        .iter()
        .map(|(n, s, dir)| {
            let m = s.test.as_ref().unwrap();
            let mut v = summary_json(s, dir);
            v["estimator"] = serde_json::json!(n);
            v["field_f1"] = serde_json::json!(fields(m)
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>());
            // Each test against the other rows, keyed by the other row's name.
            let sig: serde_json::Map<String, serde_json::Value> = tests
                .iter()
                .filter_map(|t| {
                    let other = if &t.a == n {
                        &t.b
                    } else if &t.b == n {
                        &t.a
                    } else {
                        return None;
                    };
                    Some((other.clone(), serde_json::to_value(t).unwrap()))
                })
                .collect();
            v["significance"] = serde_json::Value::Object(sig);
            v
        })
        .collect();
    let j = serde_json::json!({ "runs": j, "warnings": comparison.warnings });
    outln!("{}", serde_json::to_string_pretty(&j).unwrap())?;
    Ok(())
}

/// The paired tests of every pair of runs, a table each, then their readings in words. Every
/// difference is A − B, positive when A is better; with more than three pairs a Holm column.
fn print_tests(comparison: &crate::run::compare::Comparison) -> Result<()> {
    let tests = &comparison.pairs;
    if tests.is_empty() {
        return Ok(());
    }
    let mut metrics: Vec<&str> = tests
        .iter()
        .filter_map(|t| t.bootstrap.as_ref().map(|b| b.metric.as_str()))
        .collect();
    metrics.dedup();
    let boot_metric = match metrics.as_slice() {
        [m] => m.to_string(),
        _ => "the score named per row".to_string(),
    };
    let holm = tests.iter().any(|t| t.holm_p.is_some());
    outln!(
        "\npaired tests on the test items; every difference is A − B (positive: A better): \
         McNemar on tokens (exact, two-sided; only A = tokens A labels right and B wrong), \
         paired t on right tokens per sequence, bootstrap 95 % interval of {boot_metric} in points"
    )?;
    out!(
        "{:<14} {:<14} {:>7} {:>7} {:>10} {:>10} {:>8} {:>10} {:>26}",
        "A",
        "B",
        "only A",
        "only B",
        "McNemar p",
        "right/seq",
        "t",
        "t-test p",
        "bootstrap A−B [95 %]"
    )?;
    if holm {
        out!(" {:>10}", "Holm p")?;
    }
    outln!()?;
    for t in tests {
        let (oa, ob, mp) = t
            .tokens
            .map_or((String::from("–"), String::from("–"), f64::NAN), |m| {
                (m.only_a.to_string(), m.only_b.to_string(), m.p)
            });
        let boot = t.bootstrap.as_ref().map_or("–".to_string(), |b| {
            let cell = format!("{:+.2} [{:+.2}, {:+.2}]", b.difference, b.low, b.high);
            if metrics.len() > 1 {
                format!("{cell} {}", b.metric)
            } else {
                cell
            }
        });
        out!(
            "{:<14} {:<14} {:>7} {:>7} {:>10.3e} {:>+10.4} {:>+8.2} {:>10.3e} {:>26}",
            truncate(&t.a, 14),
            truncate(&t.b, 14),
            oa,
            ob,
            mp,
            t.paired_t.mean_difference,
            t.paired_t.t,
            t.paired_t.p,
            boot
        )?;
        if holm {
            match t.holm_p {
                Some(h) => out!(" {h:>10.3e}")?,
                None => out!(" {:>10}", "–")?,
            }
        }
        outln!()?;
    }
    outln!(
        "(right/seq: mean right tokens per sequence, A − B; bootstrap: {boot_metric} A − B in \
         points, {} resamples of the sequences)",
        tests
            .iter()
            .find_map(|t| t.bootstrap.as_ref())
            .map_or(0, |b| b.resamples)
    )?;
    if let Some(note) = comparison.holm_note() {
        outln!("({note})")?;
    }
    if tests.iter().any(|t| t.segments.is_some()) {
        outln!("\nMcNemar on gold segments found exactly by one run only")?;
        for t in tests {
            if let Some(m) = t.segments {
                outln!(
                    "{:<14} {:<14} {:>7} {:>7} {:>10.3e}",
                    truncate(&t.a, 14),
                    truncate(&t.b, 14),
                    m.only_a,
                    m.only_b,
                    m.p
                )?;
            }
        }
    }
    outln!()?;
    for t in tests {
        outln!("{}", t.reading)?;
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}
