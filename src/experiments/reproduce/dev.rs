//! Hyperparameters chosen on development data, never on test scores (issue 25): the σ² grid,
//! its groups, scoring a group's runs on development data, and the choice — the best mean
//! development score, the piecewise papers' σ² = 10 on a tie.

use super::*;
use crate::data::Corpus;
use crate::run::TrainedRun;

/// The σ² grid the development split chooses from (a decade either side of the papers' 10).
pub(super) const PRIORS: [f64; 3] = [1.0, 10.0, 100.0];

/// The index of the papers' σ² = 10 in [`PRIORS`].
const PAPERS: usize = 1;

/// The group of row `key` at σ² (the σ² = 10 run is the row's own group).
pub(super) fn prior_group(prefix: &str, key: &str, sigma2: f64) -> String {
    if sigma2 == 10.0 {
        format!("{prefix}{key}")
    } else {
        format!("{prefix}prior/{key}/s{sigma2}")
    }
}

/// `base` (a group at σ² = 10, named `prefix` + `key`) at every other σ² of the grid: one
/// change, the prior; run `k` is named after its group.
pub(super) fn prior_variants(base: &Group, prefix: &str, key: &str) -> Vec<Group> {
    PRIORS
        .into_iter()
        .filter(|&v| v != 10.0)
        .map(|sigma2| {
            let name = prior_group(prefix, key, sigma2);
            Group {
                runs: base
                    .runs
                    .iter()
                    .enumerate()
                    .map(|(k, s)| {
                        let mut s = s.clone();
                        s.prior = crate::optim::Prior {
                            sigma2: Some(sigma2),
                        };
                        s.name = Some(format!("{name}-{k}"));
                        s
                    })
                    .collect(),
                name,
            }
        })
        .collect()
}

/// The index into [`PRIORS`] of the best development score; σ² = 10 unless another beats it.
pub(super) fn choose(dev: &[f64]) -> usize {
    (0..dev.len()).fold(PAPERS.min(dev.len().saturating_sub(1)), |b, i| {
        if dev[i] > dev[b] {
            i
        } else {
            b
        }
    })
}

/// The head of a report table of the choice: a `first` column, the development score at each
/// σ², the chosen σ², and `test` at the chosen σ² and at the papers' 10.
pub(super) fn table_head(first: &str, test: &str) -> String {
    format!(
        "| {first} | {} | chosen σ² | {test} at the chosen σ² | {test} at σ² = 10 |\n|---|{}---:|---:|---:|\n",
        PRIORS.map(|v| format!("dev, σ² = {v}")).join(" | "),
        "---:|".repeat(PRIORS.len()),
    )
}

/// The report section of a choice: its table (`markdown`), data and the claims decided again.
pub(super) fn section(
    markdown: String,
    json: serde_json::Map<String, serde_json::Value>,
    claims: Vec<(String, Verdict, String)>,
) -> Section {
    Section {
        title: "The prior chosen on a development split".into(),
        markdown,
        json: serde_json::Value::Object(json),
        svg: None,
        claims,
    }
}

/// `score` of each finished run of `group` on its development data, `dev(k, run)` being run
/// `k`'s; `None` when the group has not finished every run.
pub(super) fn dev_scores(
    results: &Results,
    group: &Group,
    score: &Metric,
    dev: &dyn Fn(usize, &TrainedRun) -> Result<Corpus>,
) -> Result<Option<Vec<f64>>> {
    let Some(runs) = results.get(&group.name) else {
        return Ok(None);
    };
    if runs.len() != group.runs.len() {
        return Ok(None);
    }
    let mut out = vec![];
    for (k, (dir, _)) in runs.iter().enumerate() {
        let run = TrainedRun::open(dir)?;
        let corpus = dev(k, &run)?;
        let m = crate::eval::evaluate(run.family.as_ref(), &run.theta, &corpus, &run.inference)?;
        match score.of(&RunSummary {
            test: Some(m),
            ..RunSummary::default()
        }) {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_prior_wins_ties() {
        assert_eq!(choose(&[80.0, 80.0, 80.0]), 1);
        assert_eq!(choose(&[80.1, 80.0, 80.0]), 0);
        assert_eq!(choose(&[79.0, 80.0, 80.5]), 2);
        // The first of equal bests away from 10.
        assert_eq!(choose(&[81.0, 80.0, 81.0]), 0);
    }
}
