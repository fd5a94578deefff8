//! CRFsuite's data format, the ecosystem's way to hand a CRF arbitrary (and real-valued)
//! features: one token a line, `LABEL<TAB>attr[:value]<TAB>attr[:value]…`, a blank line
//! between sequences. An attribute without `:value` has value 1; in names, `\:` is a colon and
//! `\\` a backslash (CRFsuite's escapes). Files are recognised wherever a data file is taken:
//! by name (`.crfsuite` or `.crfs` as the extension or before it, as the usual
//! `train.crfsuite.txt`), or by content (every line tab-separated with every attribute a
//! `name=value` or `name:value`), so a CRFsuite file is never read as columns. The attributes become the chain's state
//! features (each attribute × label, weighted by its value); a template adds transitions
//! (default: the always-on `B`).

use super::conll::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

/// Whether `path` is a CRFsuite data file: by its name, else by its first lines.
pub fn is_crfsuite(path: &Path) -> bool {
    named_crfsuite(path) || (path.is_file() && head(path).is_some_and(|h| looks_like_crfsuite(&h)))
}

/// `x.crfsuite`, `x.crfs`, `x.crfsuite.txt`, `x.crfs.gz`: a dot-separated part of the name
/// after the first is `crfsuite` or `crfs`.
fn named_crfsuite(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.split('.').skip(1).any(|p| p == "crfsuite" || p == "crfs"))
}

/// The file's first 64 KiB (decompressed); none of standard input, which is read once.
fn head(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    if crate::util::is_stdin(path) {
        return None;
    }
    let mut buf = Vec::new();
    crate::util::open_input(path)
        .ok()?
        .take(1 << 16)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// CRFsuite by content: the first (up to 200) non-blank lines, the last possibly cut short
/// left out, each `LABEL<TAB>attr<TAB>…` with every attribute holding `=` or `:` (as
/// `w[0]=He`, `U00:1.5`). Column files (CoNLL) have no such line.
pub fn looks_like_crfsuite(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if head.len() >= 1 << 16 {
        lines.pop();
    }
    lines.truncate(200);
    !lines.is_empty()
        && lines.iter().all(|l| {
            let mut fields = l.split('\t');
            let label = fields.next().unwrap_or("");
            let attrs: Vec<&str> = fields.filter(|f| !f.is_empty()).collect();
            !label.trim().is_empty()
                && !attrs.is_empty()
                && attrs.iter().all(|a| a.contains('=') || a.contains(':'))
        })
}

/// Reads a CRFsuite data file (the first field of every line is the label, as in CRFsuite's
/// own tagging input).
pub fn read_crfsuite(path: &Path) -> Result<Corpus> {
    let bytes = crate::util::read_bytes(path)?;
    parse_crfsuite(&bytes, &path.display().to_string())
}

/// Splits one field into its unescaped name and value.
fn attribute(field: &str) -> std::result::Result<(String, f64), String> {
    let mut name = String::with_capacity(field.len());
    let mut chars = field.chars();
    let mut value: Option<String> = None;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ (':' | '\\')) => name.push(e),
                Some(e) => {
                    name.push('\\');
                    name.push(e);
                }
                None => name.push('\\'),
            },
            ':' => {
                value = Some(chars.collect());
                break;
            }
            c => name.push(c),
        }
    }
    if name.is_empty() {
        return Err(format!("attribute {field:?} has an empty name"));
    }
    let v = match value {
        None => 1.0,
        Some(v) => match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => x,
            _ => {
                return Err(format!(
                    "attribute {name:?} has value {v:?}, which is not a finite number \
                     (write `name:value`, and `\\:` for a colon inside a name)"
                ))
            }
        },
    };
    Ok((name, v))
}

pub fn parse_crfsuite(bytes: &[u8], name: &str) -> Result<Corpus> {
    if bytes.is_empty() {
        return Err(Error::parse(name, 1, "the file is empty"));
    }
    let mut corpus = Corpus {
        path: name.to_string(),
        n_columns: 1,
        ..Default::default()
    };
    let mut cur = Sequence::default();
    let mut n_lines = 0;
    // The sequences as read (their attributes' strings), beside the file's bytes.
    let mut meter = crate::memory::Meter::new();
    meter.add(
        bytes.len() as u64,
        |b| format!("reading {name} ({} of text)", crate::memory::shown(b)),
        "train on a smaller file",
    )?;
    for line in super::conll::text_lines(bytes, name) {
        let (line_no, text) = line?;
        n_lines = line_no;
        meter.add(
            text.len() as u64 + 64 * (1 + text.matches('\t').count() as u64),
            |b| {
                format!(
                    "reading {name} (at line {line_no}: {} in memory)",
                    crate::memory::shown(b)
                )
            },
            "train on a smaller file",
        )?;
        if text.trim().is_empty() {
            if !cur.is_empty() {
                corpus.sequences.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let mut fields = text.split('\t');
        let label = fields.next().unwrap_or("");
        if label.trim().is_empty() {
            return Err(Error::parse(
                name,
                line_no,
                "empty label: a CRFsuite line is LABEL<TAB>attr[:value]<TAB>…",
            ));
        }
        let mut attrs = Vec::new();
        for f in fields.filter(|f| !f.is_empty()) {
            attrs.push(attribute(f).map_err(|m| Error::parse(name, line_no, m))?);
        }
        if cur.is_empty() {
            cur.line = line_no;
        }
        cur.columns.push(Vec::new());
        cur.labels.push(label.to_string());
        cur.attrs.push(attrs);
    }
    if !cur.is_empty() {
        corpus.sequences.push(cur);
    }
    if corpus.sequences.is_empty() {
        return Err(Error::parse(name, n_lines, "no sequences in the file"));
    }
    Ok(corpus)
}

/// Writes sequences in CRFsuite's format (attributes escaped), the label first.
pub fn format_crfsuite(seqs: &[Sequence]) -> String {
    use std::fmt::Write;
    let esc = |s: &str| s.replace('\\', "\\\\").replace(':', "\\:");
    let mut o = String::new();
    for s in seqs {
        for t in 0..s.len() {
            o.push_str(s.labels.get(t).map_or("", |l| l.as_str()));
            for (a, v) in s.attrs.get(t).map_or(&[][..], |a| a.as_slice()) {
                if *v == 1.0 {
                    let _ = write!(o, "\t{}", esc(a));
                } else {
                    let _ = write!(o, "\t{}:{v}", esc(a));
                }
            }
            o.push('\n');
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_values_and_escapes() {
        let c = parse_crfsuite(
            b"B-PER\tw=John\tlen:4\turl=a\\:b:0.5\n\nO\tw=.\n",
            "x.crfsuite",
        )
        .unwrap();
        assert_eq!(c.sequences.len(), 2);
        let a = &c.sequences[0].attrs[0];
        assert_eq!(a[0], ("w=John".into(), 1.0));
        assert_eq!(a[1], ("len".into(), 4.0));
        assert_eq!(a[2], ("url=a:b".into(), 0.5));
        let back = parse_crfsuite(format_crfsuite(&c.sequences).as_bytes(), "y").unwrap();
        assert_eq!(back.sequences[0].attrs, c.sequences[0].attrs);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let e = parse_crfsuite(b"O\tw=a\n\nO\tlen:four\n", "d.crfsuite")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d.crfsuite") && e.contains(":3") && e.contains("four"),
            "{e}"
        );
        let e = parse_crfsuite(b"O\tw=a\n\tw=b\n", "d.crfsuite")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2") && e.contains("empty label"), "{e}");
    }
}
