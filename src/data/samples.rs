//! Binary samples, one a line (`0 1 1 0 1`), for generative models over binary variables
//! (the Boltzmann machine). Blank lines and lines starting with `#` are skipped; every sample has
//! the same number of values. A sample is read as a [`Sequence`] with one token per variable,
//! no observation columns and the values as labels.

use super::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

pub fn read_samples(path: &Path) -> Result<Corpus> {
    collect(crate::util::open_input(path)?, &path.display().to_string())
}

pub fn parse_samples(text: &str, name: &str) -> Result<Corpus> {
    collect(text.as_bytes(), name)
}

fn collect(reader: impl std::io::BufRead, name: &str) -> Result<Corpus> {
    let mut items = vec![];
    for_each_sample(reader, name, |s| {
        items.push(s);
        Ok(())
    })?;
    Ok(Corpus {
        path: name.to_string(),
        sequences: items,
        n_columns: 1,
    })
}

/// Reads samples line by line, handing each to `f`, so a caller that only counts holds one at
/// a time; errors name the file and line.
pub fn for_each_sample(
    reader: impl std::io::BufRead,
    name: &str,
    mut f: impl FnMut(Sequence) -> Result<()>,
) -> Result<()> {
    let mut m = None;
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(|e| Error::io(Path::new(name), e))?;
        let line =
            std::str::from_utf8(&line).map_err(|_| Error::parse(name, i + 1, "invalid UTF-8"))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let vals: Vec<&str> = t.split_whitespace().collect();
        if let Some(bad) = vals.iter().find(|v| !matches!(**v, "0" | "1")) {
            return Err(Error::parse(
                name,
                i + 1,
                format!("value {bad:?}: a sample is a line of 0s and 1s"),
            ));
        }
        match m {
            None => m = Some(vals.len()),
            Some(k) if k != vals.len() => {
                return Err(Error::parse(
                    name,
                    i + 1,
                    format!("{} values, earlier samples have {k}", vals.len()),
                ))
            }
            _ => {}
        }
        f(Sequence {
            columns: vec![vec![]; vals.len()],
            labels: vals.iter().map(|v| v.to_string()).collect(),
            line: i + 1,
            shape: None,
            attrs: Vec::new(),
            layers: vec![],
        })?;
    }
    if m.is_none() {
        return Err(Error::parse(name, 1, "no samples in the file"));
    }
    Ok(())
}

pub fn format_samples(items: &[Sequence]) -> String {
    let mut o = String::new();
    for s in items {
        o.push_str(&s.labels.join(" "));
        o.push('\n');
    }
    o
}
