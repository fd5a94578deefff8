//! The welcome screen: what the app is, and three ways in — a lesson, the sample data, your
//! own data (issue 24, "the first five minutes").

use super::data::DataSource;
use super::{AppCommand, AppState, PaneKind};

pub fn ui(state: &mut AppState, ui: &mut egui::Ui) {
    egui::ScrollArea::vertical()
        .id_salt("welcome")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let w = ui.available_width().min(760.0);
            ui.vertical_centered(|ui| {
                ui.set_max_width(w);
                ui.add_space(24.0);
                ui.heading(egui::RichText::new("Piecewise Lab").size(28.0));
                ui.add_space(8.0);
                ui.label(
                    "A workbench for training conditional and Markov random fields — chains, \
                     grids, Boltzmann machines, grammars — by exact maximum likelihood and by the \
                     local estimators of the piecewise-training papers: pseudolikelihood, \
                     piecewise, piecewise pseudolikelihood, \"none of the above\", CAMEL and \
                     stochastic composite likelihood. Every estimator trains the same factors; \
                     they differ in what each term normalises over, and this app draws it.",
                );
                ui.add_space(18.0);
                let big = |text: &str| {
                    egui::Button::new(egui::RichText::new(text).size(18.0))
                        .min_size(egui::vec2(w * 0.8, 44.0))
                };
                if ui
                    .add(big("Take a lesson"))
                    .on_hover_text("Guided walks through the papers' ideas, step by step")
                    .clicked()
                {
                    state.command(AppCommand::Focus(PaneKind::Lessons));
                    state.command(AppCommand::Focus(PaneKind::Graph));
                }
                ui.weak(
                    "Start here: the first lesson shows what ML, PL, PW and PWPL normalise, on \
                     one sentence of the sample data, and then trains them side by side.",
                );
                ui.add_space(12.0);
                if ui
                    .add(big("Explore the sample data"))
                    .on_hover_text("HMM-mixture sequences (000 eq. 43–44) with their factor graph")
                    .clicked()
                {
                    let sample = DataSource::sample(&state.config.root);
                    if state.data.as_ref().map(|d| &d.source) != Some(&sample) {
                        state.form = sample;
                        state.load_pending = true;
                    }
                    state.command(AppCommand::Focus(PaneKind::Data));
                    state.command(AppCommand::Focus(PaneKind::Graph));
                }
                ui.weak(
                    "300 + 300 synthetic sequences of 25 tokens: the Data pane shows them, the \
                     Graph pane draws one as a factor graph and steps through an estimator's \
                     terms; the Runs pane trains.",
                );
                ui.add_space(12.0);
                if ui
                    .add(big("Open your own data"))
                    .on_hover_text("CoNLL, CRFsuite, grid, Boltzmann or treebank files")
                    .clicked()
                {
                    state.command(AppCommand::Focus(PaneKind::Data));
                }
                ui.weak(
                    "Type or browse to the files in the Data pane (or drop them on the window), \
                     pick the model family and Load.",
                );
                ui.add_space(24.0);
                let mut show = !state.settings.hide_welcome;
                if ui
                    .checkbox(&mut show, "Show this screen at start")
                    .changed()
                {
                    state.settings.hide_welcome = !show;
                }
                ui.weak("The Welcome button in the top bar brings it back.");
            });
        });
}
