//! Checking a picture question: the Graph pane's clicked variables against the current term.

use super::*;

/// What a wrong answer to a click question is told: how to find the variables, not which
/// they are (their colours stay hidden until the answer is right).
pub(super) fn hint(check: Check) -> &'static str {
    match check {
        Check::Clamped => {
            "A term clamps at gold the variables its factors (the bright squares) touch \
             besides the orange free one."
        }
        Check::Free => "A term's free variables are those its normaliser sums over.",
        Check::Summed => {
            "A term sums out the variables its factors (the bright squares) touch that it \
             neither clamps at gold nor asks the probability of."
        }
        _ => "Look at which variables the term's factors (the bright squares) touch.",
    }
}

/// What the wrong picks of a click question are by the rule: the free variable where the
/// clamped ones were asked, a variable outside the term, … — so the feedback names the rule
/// the pick broke, without naming the variables to pick.
fn wrong_picks(g: &crate::app::GraphPane, check: Check, extra: &[u32]) -> String {
    let role = |c: Check| g.term_vars(c).unwrap_or_default();
    let (free, clamped, summed) = (role(Check::Free), role(Check::Clamped), role(Check::Summed));
    let count = |set: &[u32]| extra.iter().filter(|v| set.contains(v)).count();
    let mut out = vec![];
    let (nf, nc, ns) = (count(&free), count(&clamped), count(&summed));
    if check != Check::Free && nf > 0 {
        out.push(format!(
            "{nf} of your picks the term normalises over (free, orange): not clamped"
        ));
    }
    if check != Check::Clamped && nc > 0 {
        out.push(format!(
            "{nc} of your picks the term holds at gold (clamped): it does not sum over them"
        ));
    }
    if check != Check::Summed && ns > 0 {
        out.push(format!("{ns} of your picks the term sums out"));
    }
    let outside = extra.len().saturating_sub(nf + nc + ns);
    if outside > 0 {
        out.push(format!(
            "{outside} of your picks no factor of the term touches: not in the term at all"
        ));
    }
    if out.is_empty() {
        String::new()
    } else {
        format!(" {}.", out.join("; "))
    }
}

/// Serves [`AppCommand::LessonCheck`]: the variables picked on the Graph pane against the
/// current term's; a right answer shows the term's colours and formula again.
pub(crate) fn check_picture(wb: &mut Workbench, check: Check) {
    let mut verdict = (
        false,
        "Open the Graph pane and pick variables on it.".to_string(),
    );
    let why = wb
        .tree
        .tiles
        .tiles()
        .find_map(|t| match t {
            egui_tiles::Tile::Pane(Pane::Lessons(l)) => l.lesson.as_ref().and_then(|f| {
                let lesson = wb.state.lessons.find(f)?;
                lesson
                    .steps
                    .get(l.step)?
                    .question
                    .as_ref()
                    .map(|q| q.why.clone())
            }),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(g) = wb.tree.tiles.tiles().find_map(|t| match t {
        egui_tiles::Tile::Pane(Pane::Graph(g)) => Some(g),
        _ => None,
    }) {
        if let Some(want) = g.term_vars(check) {
            let got: Vec<u32> = g.picked_vars.iter().copied().collect();
            verdict = if got == want {
                (true, why)
            } else {
                let missing = want.iter().filter(|v| !got.contains(v)).count();
                let extra: Vec<u32> = got.iter().copied().filter(|v| !want.contains(v)).collect();
                (
                    false,
                    format!(
                        "Not quite: {missing} missing, {} too many.{} {}",
                        extra.len(),
                        wrong_picks(g, check, &extra),
                        hint(check)
                    ),
                )
            };
        }
    }
    for (_, tile) in wb.tree.tiles.iter_mut() {
        match tile {
            egui_tiles::Tile::Pane(Pane::Lessons(l)) => l.verdict = Some(verdict.clone()),
            egui_tiles::Tile::Pane(Pane::Graph(g)) if verdict.0 => g.quiz = None,
            _ => {}
        }
    }
}
