//! CoNLL column files: whitespace-separated columns, label in the last column,
//! a blank line between sequences, `-DOCSTART-` lines skipped.

use crate::error::{Error, Result};
use std::path::Path;

/// One sequence: observation columns per token and (when present) the gold labels.
#[derive(Clone, Debug, Default)]
pub struct Sequence {
    /// `columns[t]` holds the observation columns of token `t` (the label column excluded).
    pub columns: Vec<Vec<String>>,
    /// Gold labels, one per token; empty when the file has no label column.
    pub labels: Vec<String>,
    /// Gold labels of further label layers, `[layer][token]`, read from the columns before the
    /// last (a factorial CRF's POS tags beside its chunk labels); empty for one-layer data.
    pub layers: Vec<Vec<String>>,
    /// Line of the first token in its file (1-based), for messages.
    pub line: usize,
    /// For images: (rows, columns), tokens row-major.
    pub shape: Option<(usize, usize)>,
    /// CRFsuite data: each token's attributes with their values (empty for column files).
    pub attrs: Vec<Vec<(String, f64)>>,
}

impl Sequence {
    pub fn len(&self) -> usize {
        self.columns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }
    pub fn has_labels(&self) -> bool {
        !self.labels.is_empty()
    }
    /// The first column of every token (the word; "" for tokens without columns).
    pub fn words(&self) -> Vec<&str> {
        self.columns
            .iter()
            .map(|c| c.first().map_or("", |w| w.as_str()))
            .collect()
    }
}

/// A column file read into memory.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub path: String,
    pub sequences: Vec<Sequence>,
    /// Columns per token line as written in the file (label column included).
    pub n_columns: usize,
}

/// How to read the last column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelColumn {
    /// The last column is the gold label (training and evaluation files).
    Last,
    /// Every column is an observation (unlabelled data).
    None,
}

impl Corpus {
    /// `n` items drawn without replacement (seeded), kept in file order; all when `n` ≥ the size.
    pub fn sample(&self, n: usize, seed: u64) -> Corpus {
        self.sample_split(n, seed).0
    }

    /// [`Corpus::sample`] and the items it left out (in file order): a development split
    /// disjoint from a run's `train_sample`.
    pub fn sample_split(&self, n: usize, seed: u64) -> (Corpus, Corpus) {
        use rand::SeedableRng;
        let part = |keep: &dyn Fn(usize) -> bool| Corpus {
            path: self.path.clone(),
            sequences: (0..self.sequences.len())
                .filter(|&i| keep(i))
                .map(|i| self.sequences[i].clone())
                .collect(),
            n_columns: self.n_columns,
        };
        if n >= self.sequences.len() {
            return (self.clone(), part(&|_| false));
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5A3D_1E5B_0C1A_7F21);
        let mut chosen = vec![false; self.sequences.len()];
        for i in rand::seq::index::sample(&mut rng, self.sequences.len(), n) {
            chosen[i] = true;
        }
        (part(&|i| chosen[i]), part(&|i| !chosen[i]))
    }

    /// Makes the last `n` observation columns labels (multi-layer models, read with
    /// [`LabelColumn::None`]): the last becomes [`Sequence::labels`], the others
    /// [`Sequence::layers`] in file order. Every token has the same columns (the reader checks).
    pub fn take_label_columns(&mut self, n: usize) -> Result<()> {
        if n == 0 || self.n_obs_columns() < n {
            return Err(Error::file(
                &self.path,
                format!(
                    "{} columns per token, {n} label columns expected",
                    self.n_obs_columns()
                ),
            ));
        }
        for s in &mut self.sequences {
            let mut layers = vec![Vec::with_capacity(s.len()); n - 1];
            s.labels.clear();
            for cols in &mut s.columns {
                let mut labs = cols.split_off(cols.len() - n);
                s.labels.push(labs.pop().expect("n ≥ 1 label columns"));
                for (layer, l) in layers.iter_mut().zip(labs) {
                    layer.push(l);
                }
            }
            s.layers = layers;
        }
        Ok(())
    }

    pub fn tokens(&self) -> usize {
        self.sequences.iter().map(|s| s.len()).sum()
    }
    /// Observation columns per token.
    pub fn n_obs_columns(&self) -> usize {
        self.sequences
            .first()
            .and_then(|s| s.columns.first())
            .map(|c| c.len())
            .unwrap_or(0)
    }
}

/// The longest field (a token, a tag, a feature) read: a longer one is refused with its line, so
/// no single token makes features and model files of gigabytes.
pub const MAX_FIELD: usize = 1 << 20;
/// The longest line read (a line is read whole before it is split).
pub const MAX_LINE: usize = 16 << 20;

/// The memory a token line of `fields` takes once read: its strings (with the allocator's
/// overhead) and the vectors holding them.
pub fn token_bytes(fields: &[&str]) -> u64 {
    let strings: usize = fields
        .iter()
        .map(|f| f.len().max(1).next_multiple_of(8) + 40)
        .sum();
    (strings + 48) as u64
}

/// Refuses a field longer than [`MAX_FIELD`], naming its line and column.
fn check_field_lengths(fields: &[&str], name: &str, line_no: usize) -> Result<()> {
    match fields.iter().enumerate().find(|(_, w)| w.len() > MAX_FIELD) {
        Some((k, long)) => Err(Error::parse(
            name,
            line_no,
            format!(
                "column {} is {} long (at most {}: a token, a tag or a feature, not a document)",
                k + 1,
                crate::memory::shown(long.len() as u64),
                crate::memory::shown(MAX_FIELD as u64)
            ),
        )),
        None => Ok(()),
    }
}

/// What the reading meter says it holds at line `line_no` (`kept`: every sequence so far).
fn reading_message(
    name: &str,
    first_line: usize,
    line_no: usize,
    bytes: u64,
    kept: bool,
) -> String {
    let held = crate::memory::shown(bytes);
    if kept && first_line > 1 {
        format!(
            "reading {name} (at line {line_no}, in the sequence from line {first_line}: {held} \
             in memory, before its features)"
        )
    } else {
        format!(
            "the sequence starting at line {first_line} of {name} (at line {line_no}: {held} in \
             memory, before its features)"
        )
    }
}

/// Reads a labelled CoNLL file.
pub fn read_conll(path: &Path) -> Result<Corpus> {
    read_conll_with(path, LabelColumn::Last)
}

pub fn read_conll_with(path: &Path, label: LabelColumn) -> Result<Corpus> {
    collect(
        crate::util::open_input(path)?,
        &path.display().to_string(),
        label,
    )
}

fn is_docstart(first: &str) -> bool {
    first == "-DOCSTART-"
}

/// The lines of a text file as (1-based number, text without `\r`), invalid UTF-8 being an
/// error naming the file and line.
pub(crate) fn text_lines<'a>(
    bytes: &'a [u8],
    name: &'a str,
) -> impl Iterator<Item = Result<(usize, &'a str)>> + 'a {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(move |(i, raw)| {
            let line_no = i + 1;
            let text = std::str::from_utf8(raw).map_err(|e| {
                Error::parse(
                    name,
                    line_no,
                    format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
                )
            })?;
            Ok((line_no, text.strip_suffix('\r').unwrap_or(text)))
        })
}

/// Parses CoNLL text held in memory; `name` is used in error messages.
pub fn parse_conll(bytes: &[u8], name: &str, label: LabelColumn) -> Result<Corpus> {
    collect(bytes, name, label)
}

fn collect(reader: impl std::io::BufRead, name: &str, label: LabelColumn) -> Result<Corpus> {
    let mut sequences = vec![];
    // Every sequence is kept: the meter counts them all, not only the one being read.
    let n_columns = read_sequences(reader, name, label, true, |s| {
        sequences.push(s);
        Ok(())
    })?;
    Ok(Corpus {
        path: name.to_string(),
        sequences,
        n_columns,
    })
}

/// Reads CoNLL text line by line, handing each sequence to `f` as it ends, so a caller that
/// only counts (`info`) holds one sequence at a time, not the file; returns the columns per
/// token line. The errors of [`parse_conll`]: an empty file, lines of different widths, invalid
/// UTF-8 and a file without token lines, each naming the file and line.
pub fn for_each_sequence(
    reader: impl std::io::BufRead,
    name: &str,
    label: LabelColumn,
    f: impl FnMut(Sequence) -> Result<()>,
) -> Result<usize> {
    read_sequences(reader, name, label, false, f)
}

/// [`for_each_sequence`]; `kept`: the caller holds every sequence, so the memory meter counts
/// them all (else only the sequence being read).
fn read_sequences(
    mut reader: impl std::io::BufRead,
    name: &str,
    label: LabelColumn,
    kept: bool,
    mut f: impl FnMut(Sequence) -> Result<()>,
) -> Result<usize> {
    use std::io::{BufRead, Read};
    let mut current = Sequence::default();
    let mut any = false;
    let mut n_lines = 0;
    let mut expected: Option<(usize, usize)> = None; // (columns, line first seen)
    let mut raw = Vec::new();
    // The sequence being read, as it grows.
    let mut meter = crate::memory::Meter::new();
    loop {
        raw.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut raw)
            .map_err(|e| Error::io(Path::new(name), e))?;
        if n == 0 {
            break;
        }
        n_lines += 1;
        let line_no = n_lines;
        if raw.len() > MAX_LINE {
            return Err(Error::parse(
                name,
                line_no,
                format!(
                    "a line of more than {} bytes: not a token line (a field is at most {})",
                    crate::memory::shown(MAX_LINE as u64),
                    crate::memory::shown(MAX_FIELD as u64)
                ),
            ));
        }
        let bytes = raw.strip_suffix(b"\n").unwrap_or(&raw);
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Error::parse(
                name,
                line_no,
                format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
            )
        })?;
        let text = text.strip_suffix('\r').unwrap_or(text);
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.is_empty() || is_docstart(fields[0]) {
            // A document marker separates sequences even when no blank line surrounds it.
            if !current.is_empty() {
                any = true;
                if !kept {
                    meter.sub(meter.used());
                }
                f(std::mem::take(&mut current))?;
            }
            continue;
        }
        check_field_lengths(&fields, name, line_no)?;
        let first_line = if current.is_empty() {
            line_no
        } else {
            current.line
        };
        meter.add(
            token_bytes(&fields),
            |b| reading_message(name, first_line, line_no, b, kept),
            if kept {
                "use a smaller file, or split a long sequence into sentences (a blank line ends one)"
            } else {
                "split it into sentences (a blank line ends one)"
            },
        )?;
        match expected {
            None => expected = Some((fields.len(), line_no)),
            Some((n, first)) if n != fields.len() => {
                return Err(Error::parse(
                    name,
                    line_no,
                    format!(
                        "{} columns, but line {first} has {n}; every token line needs the same number of columns",
                        fields.len()
                    ),
                ));
            }
            _ => {}
        }
        if current.is_empty() {
            current.line = line_no;
        }
        match label {
            LabelColumn::Last => {
                let (obs, lab) = fields.split_at(fields.len() - 1);
                current
                    .columns
                    .push(obs.iter().map(|s| s.to_string()).collect());
                current.labels.push(lab[0].to_string());
            }
            LabelColumn::None => {
                current
                    .columns
                    .push(fields.iter().map(|s| s.to_string()).collect());
            }
        }
    }
    if n_lines == 0 {
        return Err(Error::parse(name, 1, "the file is empty"));
    }
    if !current.is_empty() {
        any = true;
        f(current)?;
    }
    if !any {
        return Err(Error::parse(
            name,
            n_lines,
            "no token lines: the file holds only blank lines or document markers",
        ));
    }
    Ok(expected.map(|e| e.0).unwrap_or(0))
}

/// Writes sequences back as CoNLL text, each token's columns followed by `extra` columns.
pub fn format_conll(seqs: &[Sequence], extra: &[Vec<Vec<String>>]) -> String {
    let mut out = String::new();
    for (i, s) in seqs.iter().enumerate() {
        for t in 0..s.len() {
            let mut cols: Vec<&str> = s.columns[t].iter().map(|c| c.as_str()).collect();
            cols.extend(s.layers.iter().map(|l| l[t].as_str()));
            if s.has_labels() {
                cols.push(&s.labels[t]);
            }
            for e in extra {
                cols.push(&e[i][t]);
            }
            out.push_str(&cols.join(" "));
            out.push('\n');
        }
        out.push('\n');
    }
    out
}
