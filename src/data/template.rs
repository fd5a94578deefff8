//! CRF++ feature templates, read exactly as CRF++ reads them.
//!
//! `U…` lines are state (unigram) templates, `B…` lines transition (bigram) templates.
//! `%x[row,col]` is replaced by column `col` of the token `row` positions away; rows outside
//! the sequence become `_B-1`, `_B-2`, … before it and `_B+1`, `_B+2`, … after it. Lines that are
//! empty or start with a space or `#` are skipped, as in CRF++.

use crate::data::conll::Sequence;
use crate::error::{Error, Result};
use std::fmt::Write;
use std::path::Path;

/// The standard CRF++ chunking template, the default.
pub const CHUNKING_TEMPLATE: &str = include_str!("../../assets/templates/chunking.tpl");

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Macro { row: i32, col: usize },
}

/// One `U` or `B` line.
#[derive(Clone, Debug)]
pub struct TemplateLine {
    parts: Vec<Part>,
    /// Line number in the template file.
    pub line: usize,
}

impl TemplateLine {
    /// Largest column index the line reads, if any.
    fn max_col(&self) -> Option<usize> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Macro { col, .. } => Some(*col),
                Part::Text(_) => None,
            })
            .max()
    }

    /// The length of this line's feature name when each cell it reads is `field` bytes long
    /// (for memory estimates: see `ChainCrf::fit`).
    pub fn name_bytes(&self, field: usize) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(s) => s.len(),
                Part::Macro { .. } => field.max(4),
            })
            .sum()
    }

    /// Appends the expanded feature string for position `t` of `seq` to `out`.
    pub fn expand_into(&self, seq: &Sequence, t: usize, out: &mut String) {
        for p in &self.parts {
            match p {
                Part::Text(s) => out.push_str(s),
                Part::Macro { row, col } => {
                    let idx = t as i64 + *row as i64;
                    let n = seq.len() as i64;
                    if idx < 0 {
                        let _ = write!(out, "_B{idx}");
                    } else if idx >= n {
                        let _ = write!(out, "_B+{}", idx - n + 1);
                    } else {
                        out.push_str(&seq.columns[idx as usize][*col]);
                    }
                }
            }
        }
    }
}

/// A parsed template file.
#[derive(Clone, Debug)]
pub struct FeatureTemplate {
    /// Where it came from (a path, or `builtin:chunking`).
    pub source: String,
    /// The text as read, kept so a saved model can rebuild its features.
    pub text: String,
    pub unigram: Vec<TemplateLine>,
    pub bigram: Vec<TemplateLine>,
}

impl FeatureTemplate {
    pub fn chunking() -> Self {
        Self::parse(CHUNKING_TEMPLATE, "builtin:chunking").expect("built-in template parses")
    }

    /// Only the always-on transition feature `B`: the template of data whose state features
    /// come from elsewhere (CRFsuite attributes, the `ner` extractor).
    pub fn transitions_only() -> Self {
        Self::parse(
            "# the always-on transition feature\nB\n",
            "builtin:transitions",
        )
        .expect("built-in template parses")
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = crate::util::read_text(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, name: &str) -> Result<Self> {
        let mut t = FeatureTemplate {
            source: name.to_string(),
            text: text.to_string(),
            unigram: vec![],
            bigram: vec![],
        };
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim_end();
            if line.is_empty() || line.starts_with(' ') || line.starts_with('#') {
                continue;
            }
            let parts = parse_parts(line).map_err(|msg| Error::parse(name, line_no, msg))?;
            let tl = TemplateLine {
                parts,
                line: line_no,
            };
            match line.as_bytes()[0] {
                b'U' => t.unigram.push(tl),
                b'B' => t.bigram.push(tl),
                _ => {
                    return Err(Error::parse(
                        name,
                        line_no,
                        format!("unknown template type in {line:?}: lines start with U (state) or B (transition)"),
                    ))
                }
            }
        }
        if t.unigram.is_empty() && t.bigram.is_empty() {
            return Err(Error::file(name, "the template has no U or B lines"));
        }
        Ok(t)
    }

    /// Checks that every macro reads an existing observation column.
    pub fn check_columns(&self, n_obs_columns: usize, data_name: &str) -> Result<()> {
        for l in self.unigram.iter().chain(&self.bigram) {
            if let Some(c) = l.max_col() {
                if c >= n_obs_columns {
                    return Err(Error::parse(
                        &self.source,
                        l.line,
                        format!(
                            "reads column {c}, but {data_name} has {n_obs_columns} observation column(s) (columns count from 0; the last column is the label)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn parse_parts(line: &str) -> std::result::Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = line;
    while let Some(pos) = rest.find('%') {
        text.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let Some(body) = after.strip_prefix("x[") else {
            return Err(format!("'%' must start a %x[row,col] macro in {line:?}"));
        };
        let close = body
            .find(']')
            .ok_or_else(|| format!("unclosed %x[ in {line:?}"))?;
        let inner = &body[..close];
        let (r, c) = inner
            .split_once(',')
            .ok_or_else(|| format!("%x[{inner}] needs row,col"))?;
        let row: i32 = r
            .trim()
            .parse()
            .map_err(|_| format!("bad row {r:?} in %x[{inner}]"))?;
        let col: usize = c
            .trim()
            .parse()
            .map_err(|_| format!("bad column {c:?} in %x[{inner}]"))?;
        if !text.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut text)));
        }
        parts.push(Part::Macro { row, col });
        rest = &body[close + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}
