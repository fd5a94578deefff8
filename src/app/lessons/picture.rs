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
        _ => "Look at which variables the term's factors (the bright squares) touch.",
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
                let extra = got.iter().filter(|v| !want.contains(v)).count();
                (
                    false,
                    format!(
                        "Not quite: {missing} missing, {extra} too many. {}",
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
