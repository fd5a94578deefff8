//! The papers behind the workbench, by the codes lessons and panes cite them with ("000 §3",
//! "004 Fig. 1"): one table, the hover text that decodes a code where it is shown, and the
//! References window.

/// One paper.
pub struct Paper {
    /// The three-digit code the lessons and panes use.
    pub code: &'static str,
    pub authors: &'static str,
    pub title: &'static str,
    pub year: u16,
    pub venue: &'static str,
}

/// Every paper cited by code, in code order.
pub const PAPERS: [Paper; 5] = [
    Paper {
        code: "000",
        authors: "Charles Sutton and Andrew McCallum",
        title: "Piecewise training for structured prediction",
        year: 2009,
        venue: "Machine Learning 77(2–3), 165–194",
    },
    Paper {
        code: "001",
        authors: "Charles Sutton and Andrew McCallum",
        title: "Fast, piecewise training for discriminative finite-state and parsing models",
        year: 2005,
        venue: "CIIR Technical Report IR-403, University of Massachusetts Amherst",
    },
    Paper {
        code: "002",
        authors: "Varun Ganapathi, David Vickrey, John Duchi and Daphne Koller",
        title: "Constrained approximate maximum entropy learning of Markov random fields",
        year: 2008,
        venue: "Uncertainty in Artificial Intelligence (UAI)",
    },
    Paper {
        code: "003",
        authors: "Andrew McCallum and Charles Sutton",
        title: "Piecewise training with parameter independence diagrams: comparing globally- \
                and locally-trained linear-chain CRFs",
        year: 2004,
        venue: "NIPS 2004 Workshop on Learning with Structured Outputs (CIIR Technical Report \
                IR-383)",
    },
    Paper {
        code: "004",
        authors: "Joshua V. Dillon and Guy Lebanon",
        title: "Stochastic composite likelihood",
        year: 2010,
        venue: "Journal of Machine Learning Research 11, 2597–2633",
    },
];

impl Paper {
    /// `Sutton and McCallum (2009), "Piecewise training …", Machine Learning 77 …`
    pub fn citation(&self) -> String {
        format!(
            "{} ({}). {}. {}.",
            self.authors, self.year, self.title, self.venue
        )
    }
}

/// The paper of a code ("000").
pub fn paper(code: &str) -> Option<&'static Paper> {
    PAPERS.iter().find(|p| p.code == code)
}

/// The papers a text cites, in order of first mention: every run of exactly three digits that
/// is a paper's code ("000 §3", "(004 Fig. 1)", "001 eq. 6").
pub fn cited(text: &str) -> Vec<&'static Paper> {
    let b = text.as_bytes();
    let mut out: Vec<&'static Paper> = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            // Not part of a longer word or a decimal number ("0.004", "x003", "003.5").
            let before_ok = start == 0
                || !(is_word(b[start - 1])
                    || b[start - 1] == b'.' && start >= 2 && b[start - 2].is_ascii_digit());
            let after_ok = i == b.len()
                || !(is_word(b[i])
                    || b[i] == b'.' && b.get(i + 1).is_some_and(|c| c.is_ascii_digit()));
            if i - start == 3 && before_ok && after_ok {
                if let Some(p) = paper(&text[start..i]) {
                    if !out.iter().any(|q| q.code == p.code) {
                        out.push(p);
                    }
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The hover text decoding the codes in `text`: one line per paper; `None` when it cites none.
pub fn hover(text: &str) -> Option<String> {
    let ps = cited(text);
    (!ps.is_empty()).then(|| {
        ps.iter()
            .map(|p| format!("{}: {}", p.code, p.citation()))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Adds the decoded papers of `text` as the response's hover text (nothing when it cites none).
pub fn with_hover(response: egui::Response, text: &str) -> egui::Response {
    match hover(text) {
        Some(h) => response.on_hover_text(h),
        None => response,
    }
}

/// Weak text whose paper codes are decoded on hover.
pub fn weak_cited(ui: &mut egui::Ui, text: impl Into<String>) -> egui::Response {
    let text = text.into();
    let r = ui.weak(&text);
    with_hover(r, &text)
}

/// The References list: every paper with its code.
pub fn references_ui(ui: &mut egui::Ui) {
    ui.label("Lessons and panes cite the papers by code and section: \"000 §3\" is section 3 of paper 000.");
    ui.add_space(4.0);
    egui::Grid::new("references")
        .num_columns(2)
        .spacing([12.0, 8.0])
        .striped(true)
        .show(ui, |ui| {
            for p in &PAPERS {
                ui.strong(p.code);
                ui.vertical(|ui| {
                    ui.set_max_width(560.0);
                    ui.add(egui::Label::new(egui::RichText::new(p.title).strong()).wrap());
                    ui.add(egui::Label::new(format!("{} ({})", p.authors, p.year)).wrap());
                    ui.add(egui::Label::new(egui::RichText::new(p.venue).weak()).wrap());
                });
                ui.end_row();
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_where_lessons_write_them() {
        let codes = |t: &str| cited(t).iter().map(|p| p.code).collect::<Vec<_>>();
        assert_eq!(codes("000 §3"), ["000"]);
        assert_eq!(codes("001 §2–3, 003 §3"), ["001", "003"]);
        assert_eq!(codes("(004 Figs. 5, 9, 11)"), ["004"]);
        assert_eq!(codes("001 eq. 6 and 001 §5"), ["001"]);
        // Not codes: longer numbers, decimals, numbers glued to words.
        assert!(codes("1000 sequences, 0.004, x003, 003.5, 2009").is_empty());
        assert_eq!(codes("as in 002."), ["002"]);
        assert!(hover("no paper here").is_none());
        assert!(hover("000 §3")
            .unwrap()
            .contains("Piecewise training for structured"));
    }
}
