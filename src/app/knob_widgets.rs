//! The GUI's forms generated from the settings schema: each knob's widget by its kind — a
//! checkbox, a number, a row of choices (a combo box when there are many), a text field — on
//! the line its declaration names, greyed out (never removed) where it does not apply, so
//! nothing moves under the hand when the family or the estimator changes.

use crate::settings::{Kind, Knob, KnobValues};

/// `knobs` without those on the named lines.
pub fn except(knobs: &[&'static Knob], rows: &[&str]) -> Vec<&'static Knob> {
    knobs
        .iter()
        .filter(|k| !rows.contains(&k.row))
        .copied()
        .collect()
}

/// `knobs` on the named lines.
pub fn only(knobs: &[&'static Knob], rows: &[&str]) -> Vec<&'static Knob> {
    knobs
        .iter()
        .filter(|k| rows.contains(&k.row))
        .copied()
        .collect()
}

/// The lines of `knobs` in order of first appearance, each with its knobs.
pub fn rows(knobs: &[&'static Knob]) -> Vec<(&'static str, Vec<&'static Knob>)> {
    let mut out: Vec<(&'static str, Vec<&'static Knob>)> = vec![];
    for k in knobs {
        match out.iter_mut().find(|(r, _)| *r == k.row) {
            Some((_, ks)) => ks.push(k),
            None => out.push((k.row, vec![k])),
        }
    }
    out
}

/// Grid rows for `knobs` (call inside an `egui::Grid` of two columns): the line's name, then
/// its knobs side by side. `values` holds what the user set; `context` is what applicability is
/// judged on (the data form's model knobs with the launch form's estimator, say).
pub fn grid_rows(
    ui: &mut egui::Ui,
    id: &str,
    knobs: &[&'static Knob],
    values: &mut KnobValues,
    context: &KnobValues,
) {
    for (row, ks) in rows(knobs) {
        let on = ks.iter().any(|k| k.applies(context));
        ui.add_enabled(on, egui::Label::new(row))
            .on_hover_text(ks[0].help);
        // One line, never wrapped: a wrapped line inside a grid cell grows the row unevenly.
        // The schema's lines are short enough for the narrowest pane.
        ui.horizontal(|ui| {
            for k in &ks {
                // The line's name labels its first knob; the others carry their own.
                let labelled = ks.len() > 1 && !k.label.eq_ignore_ascii_case(row);
                ui.add_enabled_ui(k.applies(context), |ui| {
                    widget(ui, id, k, values, labelled, ks.len() == 1);
                });
            }
        });
        ui.end_row();
    }
}

/// One knob's widget, with its label before it when `labelled` (a checkbox always carries
/// its own); a text field fills the line when the knob is `alone` on it. Returns whether the
/// value changed.
pub fn widget(
    ui: &mut egui::Ui,
    id: &str,
    k: &Knob,
    values: &mut KnobValues,
    labelled: bool,
    alone: bool,
) -> bool {
    let optional = k.default.is_empty();
    let many = matches!(&k.kind, Kind::Choice(v) if v().len() + optional as usize > 3);
    if labelled && !matches!(k.kind, Kind::Flag) && !many {
        ui.label(k.label);
    }
    match &k.kind {
        Kind::Flag => {
            let mut on = values.flag(k);
            let r = ui.checkbox(&mut on, k.label).on_hover_text(k.help);
            r.changed().then(|| values.set(k.name, on)).is_some()
        }
        Kind::Count { min, max } if !optional => {
            let mut v: u64 = values.parse(k).unwrap_or(*min);
            let r = ui
                .add(egui::DragValue::new(&mut v).range(*min..=*max))
                .on_hover_text(k.help);
            r.changed().then(|| values.set(k.name, v)).is_some()
        }
        Kind::Real { min, max } if !optional => {
            let mut v: f64 = values.parse(k).unwrap_or(*min);
            let speed = drag_speed(v);
            let r = ui
                .add(
                    egui::DragValue::new(&mut v)
                        .range(*min..=*max)
                        .speed(speed)
                        .custom_formatter(|v, _| {
                            if v != 0.0 && v.abs() < 1e-3 {
                                format!("{v:e}")
                            } else {
                                format!("{v}")
                            }
                        })
                        .custom_parser(|t| t.trim().parse().ok()),
                )
                .on_hover_text(k.help);
            r.changed().then(|| values.set(k.name, v)).is_some()
        }
        Kind::Choice(values_of) => {
            let names: Vec<(String, String)> = values_of()
                .iter()
                .map(|p| {
                    let help = p.get_help().map(|h| h.to_string()).unwrap_or_default();
                    (p.get_name().to_string(), help)
                })
                .collect();
            choice(ui, id, k, values, &names, optional)
        }
        // Text, paths, and numbers that may be left empty (their conversion's default).
        _ => {
            let mut text = values.get(k).to_string();
            let hint = if optional { "default" } else { k.default };
            let r = ui
                .add(
                    egui::TextEdit::singleline(&mut text)
                        .hint_text(hint)
                        .desired_width(match (&k.kind, alone) {
                            (Kind::Text | Kind::Path, true) => f32::INFINITY,
                            (Kind::Text | Kind::Path, false) => 200.0,
                            _ => 60.0,
                        }),
                )
                .on_hover_text(k.help);
            r.changed().then(|| values.set(k.name, text)).is_some()
        }
    }
}

/// A step for dragging that suits the value's size.
fn drag_speed(v: f64) -> f64 {
    (v.abs() * 0.01).clamp(1e-6, 1.0)
}

/// A choice: selectable labels when there are three or fewer (each clickable by name), a
/// combo box otherwise. An optional knob offers "default" (its conversion decides).
fn choice(
    ui: &mut egui::Ui,
    id: &str,
    k: &Knob,
    values: &mut KnobValues,
    names: &[(String, String)],
    optional: bool,
) -> bool {
    let current = values.get(k).to_string();
    let mut picked: Option<String> = None;
    let entries: Vec<(String, String, String)> = optional
        .then(|| (String::new(), "default".to_string(), k.help.to_string()))
        .into_iter()
        .chain(names.iter().map(|(n, h)| (n.clone(), n.clone(), h.clone())))
        .collect();
    if entries.len() <= 3 {
        picked = pick(ui, &entries, &current);
    } else {
        let shown = entries
            .iter()
            .find(|e| e.0 == current)
            .map_or(current.clone(), |e| e.1.clone());
        // A combo box carries its label (after the box), so it always has an accessible name.
        egui::ComboBox::new(format!("{id}-{}", k.name), k.label)
            .selected_text(shown)
            .show_ui(ui, |ui| picked = pick(ui, &entries, &current));
    }
    match picked {
        Some(v) if v != current => {
            values.set(k.name, v);
            true
        }
        _ => false,
    }
}

/// Selectable labels for `(value, text, help)` entries; the value clicked, if any.
fn pick(ui: &mut egui::Ui, entries: &[(String, String, String)], current: &str) -> Option<String> {
    let mut picked = None;
    for (value, text, help) in entries {
        let r = ui.selectable_label(current == value, text);
        let r = if help.is_empty() {
            r
        } else {
            r.on_hover_text(help)
        };
        if r.clicked() {
            picked = Some(value.clone());
        }
    }
    picked
}
