//! Grid data: one instance is a block of H lines (rows) of W cells, blocks separated by blank
//! lines; cells are separated by `|` and each cell is `LABEL OBS1 OBS2 …` (whitespace-separated,
//! observations real numbers, the same count in every cell of the file). Lines starting with `#`
//! are comments. An unlabelled file (for `predict`) writes `_` as every label.
//!
//! ```text
//! # 2×3 image, 2 observations per pixel
//! sky 0.9 0.1 | sky 0.8 0.0 | tree 0.2 0.7
//! tree 0.1 0.9 | tree 0.3 0.8 | tree 0.0 1.1
//! ```
//!
//! An item is read as a [`Sequence`] of H·W tokens in row-major order with `shape = (H, W)`.

use super::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

/// The label written for a cell without one.
pub const NO_LABEL: &str = "_";

pub fn read_grid(path: &Path) -> Result<Corpus> {
    let text = crate::util::read_text(path)?;
    parse_grid(&text, &path.display().to_string())
}

pub fn parse_grid(text: &str, name: &str) -> Result<Corpus> {
    let mut items = vec![];
    let mut cur: Option<Sequence> = None;
    let mut width = 0usize;
    let mut n_obs: Option<usize> = None;
    let finish = |cur: &mut Option<Sequence>, items: &mut Vec<Sequence>, width: usize| {
        if let Some(mut s) = cur.take() {
            s.shape = Some((s.len() / width, width));
            if s.labels.iter().all(|l| l == NO_LABEL) {
                s.labels.clear();
            }
            items.push(s);
        }
    };
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let t = line.trim();
        if t.starts_with('#') {
            continue;
        }
        if t.is_empty() {
            finish(&mut cur, &mut items, width);
            continue;
        }
        let cells: Vec<&str> = t.split('|').map(str::trim).collect();
        let s = match &mut cur {
            Some(s) => {
                if cells.len() != width {
                    return Err(Error::parse(
                        name,
                        line_no,
                        format!(
                            "{} cells in this row, {width} in the rows above (one image has rows of equal width)",
                            cells.len()
                        ),
                    ));
                }
                s
            }
            None => {
                width = cells.len();
                cur.insert(Sequence {
                    line: line_no,
                    ..Default::default()
                })
            }
        };
        for (c, cell) in cells.iter().enumerate() {
            let mut parts = cell.split_whitespace();
            let Some(label) = parts.next() else {
                return Err(Error::parse(
                    name,
                    line_no,
                    format!("cell {} is empty (expected `LABEL OBS…`)", c + 1),
                ));
            };
            let obs: Vec<String> = parts.map(str::to_string).collect();
            if let Some(bad) = obs
                .iter()
                .find(|o| o.parse::<f64>().map_or(true, |x| !x.is_finite()))
            {
                return Err(Error::parse(
                    name,
                    line_no,
                    format!("cell {}: observation {bad:?} is not a finite number", c + 1),
                ));
            }
            match n_obs {
                None => n_obs = Some(obs.len()),
                Some(n) if n != obs.len() => {
                    return Err(Error::parse(
                        name,
                        line_no,
                        format!(
                            "cell {} has {} observations, earlier cells {n}",
                            c + 1,
                            obs.len()
                        ),
                    ))
                }
                _ => {}
            }
            s.columns.push(obs);
            s.labels.push(label.to_string());
        }
    }
    finish(&mut cur, &mut items, width);
    if items.is_empty() {
        return Err(Error::parse(name, 1, "no grid in the file"));
    }
    let labelled = items.iter().filter(|s| s.has_labels()).count();
    if labelled != 0 && labelled != items.len() {
        let s = items.iter().find(|s| !s.has_labels()).unwrap();
        return Err(Error::parse(
            name,
            s.line,
            "this grid has no labels (`_`) but others have",
        ));
    }
    Ok(Corpus {
        path: name.to_string(),
        sequences: items,
        n_columns: n_obs.unwrap_or(0) + 1,
    })
}

/// Writes items in the grid format; `predicted`, when given, is appended to each cell.
pub fn format_grid(items: &[Sequence], predicted: Option<&[Vec<String>]>) -> String {
    let mut o = String::new();
    for (i, s) in items.iter().enumerate() {
        let (h, w) = s.shape.unwrap_or((1, s.len()));
        for r in 0..h {
            let cells: Vec<String> = (0..w)
                .map(|c| {
                    let t = r * w + c;
                    let mut cell = vec![s.labels.get(t).map_or(NO_LABEL, |l| l.as_str())];
                    cell.extend(s.columns[t].iter().map(|x| x.as_str()));
                    if let Some(p) = predicted {
                        cell.push(&p[i][t]);
                    }
                    cell.join(" ")
                })
                .collect();
            o.push_str(&cells.join(" | "));
            o.push('\n');
        }
        o.push('\n');
    }
    o
}
