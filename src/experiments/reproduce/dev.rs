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

/// One task whose factorisation a development split chooses (issue 47: the `edge-pair` factor
/// had been adopted after test results): the task's name in the report, the candidates as
/// (label, group prefix) — the papers' own first, kept on a tie — the estimators whose runs are
/// averaged, the score, and run k's development data.
pub(super) struct FactorisationTask<'a> {
    pub task: &'a str,
    pub candidates: [(&'a str, &'a str); 2],
    pub estimators: &'a [&'a str],
    pub score: Metric,
    pub dev: Vec<Corpus>,
}

impl FactorisationTask<'_> {
    /// The mean development score of every candidate's runs (all estimators, all runs), or
    /// `None` while a run is missing.
    pub(super) fn dev_means(&self, e: &Experiment, r: &Results) -> Result<Option<Vec<f64>>> {
        let mut means = vec![];
        for (_, prefix) in self.candidates {
            let mut all = vec![];
            for est in self.estimators {
                let name = format!("{prefix}{est}");
                let Some(g) = e.groups.iter().find(|g| g.name == name) else {
                    return Ok(None);
                };
                let dev = |k: usize, _: &TrainedRun| {
                    self.dev
                        .get(k)
                        .or(self.dev.last())
                        .cloned()
                        .ok_or_else(|| crate::error::Error::invalid("no development data"))
                };
                let Some(d) = dev_scores(r, g, &self.score, &dev)? else {
                    return Ok(None);
                };
                all.extend(d);
            }
            means.push(all.iter().sum::<f64>() / all.len().max(1) as f64);
        }
        Ok(Some(means))
    }
}

/// The papers' candidate (the first) unless the other's development mean is higher.
pub(super) fn choose_candidate(means: &[f64]) -> usize {
    usize::from(means.len() > 1 && means[1] > means[0])
}

/// The report section of a factorisation choice: per task the development means, the choice,
/// and `claims(task, prefix)` — the experiment's claims on the chosen candidate — decided again.
pub(super) fn factorisation_section(
    e: &Experiment,
    r: &Results,
    tasks: &[FactorisationTask<'_>],
    about: &str,
    claims: &dyn Fn(&str, &str) -> Vec<Claim>,
) -> Result<Section> {
    use std::fmt::Write;
    let mut md = format!(
        "{about} Per task, the mean development score of every estimator's runs under each factorisation; the higher is kept (the papers' `edge-pair` on a tie), and the task's claims are decided again on it below. Test scores played no part in the choice.\n\n| task | estimators | development data | dev, first | dev, second | chosen |\n|---|---|---|---:|---:|---|\n"
    );
    let mut json = serde_json::Map::new();
    let mut decided = vec![];
    for t in tasks {
        let Some(means) = t.dev_means(e, r)? else {
            continue;
        };
        let best = choose_candidate(&means);
        let (label, prefix) = t.candidates[best];
        let sentences: usize = t.dev.first().map_or(0, |c| c.sequences.len());
        let _ = writeln!(
            md,
            "| {} | {} | {sentences} sentences{} | {} {:.2} | {} {:.2} | {label} |",
            t.task,
            t.estimators.join(", "),
            if t.dev.len() > 1 { " per run" } else { "" },
            t.candidates[0].0,
            means[0],
            t.candidates[1].0,
            means[1],
        );
        json.insert(
            t.task.into(),
            serde_json::json!({
                "dev": t.candidates.iter().zip(&means).map(|((l, _), m)| (l.to_string(), *m)).collect::<Vec<_>>(),
                "chosen": label,
            }),
        );
        let task = format!("{} with {label}, chosen on development data", t.task);
        decided.extend(
            claims(&task, prefix)
                .into_iter()
                .filter_map(|c| (c.check)(r).map(|(v, ev)| (c.says, v, ev))),
        );
    }
    Ok(Section {
        title: "The factorisation chosen on a development split".into(),
        markdown: md,
        json: serde_json::Value::Object(json),
        svg: None,
        claims: decided,
    })
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

    #[test]
    fn the_papers_factorisation_wins_ties() {
        assert_eq!(choose_candidate(&[80.0, 80.0]), 0);
        assert_eq!(choose_candidate(&[80.0, 80.1]), 1);
        assert_eq!(choose_candidate(&[80.1, 80.0]), 0);
    }
}
