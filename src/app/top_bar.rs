//! The window's top bar: the panes, the layout, the appearance switches and what is loaded.

use super::{appearance, default_tree, AppCommand, Workbench, PANES};

impl Workbench {
    pub(super) fn top_bar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal_wrapped(|ui| {
            ui.strong("Piecewise Lab");
            if ui
                .selectable_label(self.state.welcome, "Welcome")
                .on_hover_text("The start screen: lessons, the sample data, your own data")
                .clicked()
            {
                self.state.welcome = !self.state.welcome;
            }
            ui.separator();
            // Presenting, the pane buttons fold into one menu: their two rows took the height
            // a projector's graph needed (its last row of variables fell below the fold).
            if self.state.settings.presenter {
                ui.menu_button("Panes", |ui| {
                    for e in &PANES {
                        if ui.button(format!("{} view", e.title)).clicked() {
                            self.state.command(AppCommand::Focus(e.kind));
                            ui.close();
                        }
                    }
                    ui.separator();
                    self.layout_buttons(ui);
                });
            } else {
                for e in &PANES {
                    if ui
                        .button(format!("{} view", e.title))
                        .on_hover_text(format!("Bring the {} pane to the front", e.title))
                        .clicked()
                    {
                        self.state.command(AppCommand::Focus(e.kind));
                    }
                }
                ui.separator();
                self.layout_buttons(ui);
            }
            ui.separator();
            appearance::top_bar(&mut self.state, ui);
            ui.separator();
            if let Some(j) = &self.state.loading {
                crate::app::appearance::busy(ui);
                ui.label(format!(
                    "{} ({:.1} s)",
                    j.what,
                    j.started.elapsed().as_secs_f32()
                ));
            } else if let Some(d) = &self.state.data {
                // One piece, not wrapped: "data:" was left at the end of a line and its name
                // at the start of the next.
                ui.add(
                    egui::Label::new(format!(
                        "data: {} · {} sequences",
                        d.source.title(),
                        d.train_stats.sequences
                    ))
                    .wrap_mode(egui::TextWrapMode::Extend),
                );
            } else if self.state.form.family() == crate::run::FamilyKind::Grammar {
                ui.add(
                    egui::Label::new(format!(
                        "data: {} · a treebank (the Parse pane)",
                        self.state.form.title()
                    ))
                    .wrap_mode(egui::TextWrapMode::Extend),
                );
            }
            let live = self.state.runs.live_count();
            if live > 0 {
                ui.label(format!("· {live} run(s) training"));
            }
        });
    }

    /// *Add pane* and *Reset layout*.
    fn layout_buttons(&mut self, ui: &mut egui::Ui) {
        ui.menu_button("Add pane", |ui| {
            for e in PANES.iter().filter(|e| e.addable) {
                if ui.button(e.title).clicked() {
                    self.state.command(AppCommand::Add(e.kind));
                    ui.close();
                }
            }
        });
        if ui.button("Reset layout").clicked() {
            self.tree = default_tree();
        }
    }
}
