//! A step's question checked: on the runs' results (which run has the higher held-out
//! likelihood or token accuracy, trained faster, differs likeliest by chance) and on the picture (the variables a
//! term clamps, frees or sums out).

use super::*;

/// A question over runs, answered from their recorded results.
pub(super) fn check_runs(
    state: &AppState,
    q: &Question,
    c: Check,
    picked: Option<usize>,
) -> (bool, String) {
    let Some(k) = picked else {
        return (false, "Pick an answer first.".into());
    };
    let finished = |name: &str| -> Result<&crate::app::runs::RunEntry, String> {
        run_named(state, name)
            .and_then(|id| state.runs.get(&id))
            .filter(|e| e.status == RunStatus::Finished)
            .ok_or_else(|| format!("Wait for run {name} to finish, then check again."))
    };
    let mut scores = vec![];
    for choice in &q.choices {
        let score = match c {
            Check::LikelyChance => {
                let Some((a, b)) = choice.split_once(" / ") else {
                    return (false, format!("{choice:?} is not a pair \"a / b\"."));
                };
                let (ea, eb) = match (finished(a.trim()), finished(b.trim())) {
                    (Ok(x), Ok(y)) => (x, y),
                    (Err(e), _) | (_, Err(e)) => return (false, e),
                };
                let (Some(ma), Some(mb)) = (ea.metrics.as_ref(), eb.metrics.as_ref()) else {
                    return (false, format!("{choice} has no test scores to compare."));
                };
                // McNemar on tokens alone (no bootstrap: this runs on a click).
                (ma.paired.gold_digest == mb.paired.gold_digest)
                    .then(|| {
                        crate::eval::significance::mcnemar_bits(
                            &ma.paired.token_right,
                            &mb.paired.token_right,
                        )
                    })
                    .flatten()
                    .map(|m| m.p)
            }
            _ => {
                let e = match finished(choice) {
                    Ok(e) => e,
                    Err(e) => return (false, e),
                };
                match c {
                    Check::HigherHeldOut => e.metrics.as_ref().and_then(|m| m.log_likelihood),
                    Check::HigherAccuracy => e.metrics.as_ref().map(|m| m.token_accuracy),
                    Check::FewerOperations => e.summary.as_ref().map(|s| -(s.ops as f64)),
                    _ => e.summary.as_ref().map(|s| -s.train_seconds),
                }
            }
        };
        match score {
            Some(x) => scores.push(x),
            None => return (false, format!("{choice} has no result to compare.")),
        }
    }
    let best = (0..scores.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .expect("two or more choices");
    let show = |n: &str, s: f64| match c {
        Check::HigherHeldOut => format!(
            "{n}: {s:.1} ({})",
            run_named(state, n)
                .and_then(|id| state.runs.get(&id))
                .map_or("", |e| e.likelihood_under())
        ),
        Check::HigherAccuracy => format!("{n}: {s:.2} %"),
        Check::LikelyChance => format!("{n}: p = {}", crate::eval::significance::show_p(s)),
        Check::FewerOperations => format!("{n}: {:.2} million", -s / 1e6),
        _ => format!("{n}: {:.2} s", -s),
    };
    if k == best {
        let detail = q
            .choices
            .iter()
            .zip(&scores)
            .map(|(n, s)| show(n, *s))
            .collect::<Vec<_>>()
            .join(" · ");
        (true, format!("{} {detail}.", q.why.trim_end()))
    } else {
        // Only the picked run's number and the rule the answer follows: the others' numbers
        // would give the answer away.
        let rule = match c {
            Check::HigherHeldOut => {
                "The higher held-out log-likelihood is the one nearer 0 (less negative): \
                 compare it with the other runs' in Compare's scores"
            }
            Check::HigherAccuracy => {
                "The higher token accuracy labels more test tokens right: compare the runs' \
                 token accuracy in Compare's final metrics"
            }
            Check::FewerOperations => {
                "Fewer counted operations is less inference work, whatever the machine's load: \
                 read where each curve ends on the Curves pane's x axis (operations)"
            }
            Check::LikelyChance => {
                "The pair whose difference could well be chance has the largest McNemar p (its \
                 counts would be the least surprising if the two runs were equally accurate): \
                 compare the pairs' p in Compare's paired tests"
            }
            _ => {
                "Faster is fewer training seconds: compare the runs' train seconds in Compare's \
                 final metrics"
            }
        };
        (
            false,
            format!("Not quite: {}. {rule}.", show(&q.choices[k], scores[k])),
        )
    }
}

/// What a wrong answer to a choice question without a check on runs is told: the step's
/// "What to look at" as the hint (its text points at what decides the answer), else to look
/// again.
pub(super) fn choice_hint(look: &str) -> String {
    let look = look.trim();
    if look.is_empty() {
        "Not quite: look at the picture again and try once more.".into()
    } else {
        format!(
            "Not quite. Hint: {}",
            look.trim_end_matches('.').to_string() + "."
        )
    }
}

/// A lesson run's name and spec (or why the spec cannot be built).
pub type PlannedRun = (String, Result<crate::run::spec::RunSpec, String>);
/// A lesson step's sweep spec (or why it cannot be built).
pub type PlannedSweep = Result<crate::experiments::sweep::SweepSpec, String>;
