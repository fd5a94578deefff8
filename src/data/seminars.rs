//! CMU seminar announcements (Freitag 1998): e-mails with inline `<stime>`, `<etime>`,
//! `<location>` and `<speaker>` tags. `<paragraph>`/`<sentence>` tags are dropped (they may cross
//! field tags). Tags may open or close inside a token (`<stime>5:00 p.m</stime>.`): labels are
//! kept per character and a token takes the field that covers most of its characters
//! (background `O`).
//!
//! Every token gets four observation columns for CRF++ templates: the word, its lowercase form,
//! its shape (`Xxxx`, `dd:dd`, … with runs collapsed) and a time class from hand-written
//! patterns (`TIME` for 5:00 / 5pm / 12:30p.m, `AMPM`, `NUM`, `-`).

use crate::data::conll::{Corpus, Sequence};
use crate::error::{Error, Result};
use std::path::Path;

pub const FIELDS: [&str; 4] = ["stime", "etime", "location", "speaker"];
const IGNORED: [&str; 2] = ["paragraph", "sentence"];

/// Reads one announcement into a labelled sequence.
pub fn read_file(path: &Path) -> Result<Sequence> {
    let name = path.display().to_string();
    let text = crate::util::read_text(path)?;
    parse(&text, &name)
}

/// Parses announcement text; `name` is used in messages.
pub fn parse(text: &str, name: &str) -> Result<Sequence> {
    // Plain text with one field index (or none) per character.
    let mut chars: Vec<char> = Vec::with_capacity(text.len());
    let mut field: Vec<Option<u8>> = Vec::with_capacity(text.len());
    let mut line_of: Vec<usize> = Vec::with_capacity(text.len());
    let mut open: Option<(u8, usize)> = None;
    let mut line = 1;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            if let Some((closing, tag, len)) = tag_at(rest) {
                if let Some(fi) = FIELDS.iter().position(|f| *f == tag) {
                    let fi = fi as u8;
                    match (closing, open) {
                        (false, None) => open = Some((fi, line)),
                        (false, Some((o, l))) => {
                            return Err(Error::parse(
                                name,
                                line,
                                format!(
                                    "<{tag}> opens inside <{}> opened on line {l}",
                                    FIELDS[o as usize]
                                ),
                            ))
                        }
                        (true, Some((o, _))) if o == fi => open = None,
                        (true, _) => {
                            return Err(Error::parse(
                                name,
                                line,
                                format!("</{tag}> closes a field that is not open"),
                            ))
                        }
                    }
                }
                rest = &rest[len..];
                continue;
            }
        }
        if c == '\n' {
            line += 1;
        }
        chars.push(c);
        field.push(open.map(|o| o.0));
        line_of.push(line);
        rest = &rest[c.len_utf8()..];
    }
    if let Some((o, l)) = open {
        return Err(Error::parse(
            name,
            l,
            format!("<{}> is never closed", FIELDS[o as usize]),
        ));
    }
    let mut seq = Sequence {
        line: 1,
        ..Default::default()
    };
    for (a, b) in tokenize(&chars, &field) {
        let word: String = chars[a..b].iter().collect();
        let mut counts = [0usize; FIELDS.len() + 1];
        for f in &field[a..b] {
            counts[f.map(|x| x as usize + 1).unwrap_or(0)] += 1;
        }
        let best = (1..counts.len())
            .max_by_key(|&i| (counts[i], usize::MAX - i))
            .filter(|&i| counts[i] * 2 >= b - a);
        let label = match best {
            Some(i) if counts[i] > 0 => FIELDS[i - 1].to_string(),
            _ => "O".to_string(),
        };
        seq.columns.push(vec![
            word.clone(),
            word.to_lowercase(),
            shape(&word),
            time_class(&word).to_string(),
        ]);
        seq.labels.push(label);
    }
    if seq.is_empty() {
        return Err(Error::file(name, "no tokens"));
    }
    Ok(seq)
}

/// `(closing, name, byte length)` when `s` starts with a markup tag `</?[a-z]+>` of a known name.
fn tag_at(s: &str) -> Option<(bool, &str, usize)> {
    let body = &s[1..];
    let (closing, body) = match body.strip_prefix('/') {
        Some(b) => (true, b),
        None => (false, body),
    };
    let end = body.find('>')?;
    let tag = &body[..end];
    if FIELDS.contains(&tag) || IGNORED.contains(&tag) {
        Some((closing, tag, 1 + closing as usize + end + 1))
    } else {
        None
    }
}

/// Token spans: runs of alphanumerics, joined across `: . ' - @ /` between alphanumerics;
/// any other non-space character is a token of its own. A change of field (a tag boundary) also
/// ends a token, so `<stime>3:30</stime>-<etime>4:30</etime>` gives `3:30`, `-`, `4:30`.
pub fn tokenize<F: PartialEq>(chars: &[char], field: &[F]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut i = 0;
    let n = chars.len();
    while i < n {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() {
            let start = i;
            let same = |j: usize| field[j] == field[start];
            while i < n && same(i) {
                if chars[i].is_alphanumeric() {
                    i += 1;
                } else if i + 1 < n
                    && ":.'-@/".contains(chars[i])
                    && chars[i + 1].is_alphanumeric()
                    && same(i + 1)
                {
                    i += 2;
                } else {
                    break;
                }
            }
            out.push((start, i));
        } else {
            out.push((i, i + 1));
            i += 1;
        }
    }
    out
}

/// Word shape with runs collapsed: `Cunningham` → `Xx`, `5:00` → `d:d`, `DH` → `X`.
pub fn shape(w: &str) -> String {
    let mut s = String::new();
    for c in w.chars() {
        let k = if c.is_uppercase() {
            'X'
        } else if c.is_lowercase() {
            'x'
        } else if c.is_ascii_digit() {
            'd'
        } else {
            c
        };
        if !s.ends_with(k) {
            s.push(k);
        }
    }
    s
}

/// Hand-written time patterns (the paper's Table 3 uses regular expressions of this kind).
pub fn time_class(w: &str) -> &'static str {
    let l = w.to_lowercase();
    let l = l.trim_end_matches('.');
    let ampm = |x: &str| matches!(x, "am" | "pm" | "a.m" | "p.m" | "a" | "p" | "noon");
    let clock = |x: &str| {
        let (h, m) = match x.split_once(':') {
            Some((h, m)) => (h, Some(m)),
            None => (x, None),
        };
        !h.is_empty()
            && h.len() <= 2
            && h.chars().all(|c| c.is_ascii_digit())
            && h.parse::<u32>().map(|v| v <= 24).unwrap_or(false)
            && m.is_none_or(|m| m.len() == 2 && m.chars().all(|c| c.is_ascii_digit()))
    };
    if ampm(l) {
        return "AMPM";
    }
    if l.contains(':') && clock(l) {
        return "TIME";
    }
    // 5pm, 12:30p.m
    if let Some(pos) = l.find(|c: char| c.is_alphabetic()) {
        let (num, suf) = l.split_at(pos);
        if clock(num) && ampm(suf) {
            return "TIME";
        }
    }
    if l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty() {
        return "NUM";
    }
    "-"
}

/// Every `N.txt` in a directory, in numeric order, as one corpus (a sequence per e-mail).
pub fn read_dir(dir: &Path) -> Result<Corpus> {
    let mut files: Vec<(u64, std::path::PathBuf)> = vec![];
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let p = e.map_err(|e| Error::io(dir, e))?.path();
        if p.extension().is_some_and(|x| x == "txt") {
            let n = p
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX);
            files.push((n, p));
        }
    }
    if files.is_empty() {
        return Err(Error::file(
            dir.display().to_string(),
            "no .txt announcement files here",
        ));
    }
    files.sort();
    let mut corpus = Corpus {
        path: dir.display().to_string(),
        n_columns: 5,
        ..Default::default()
    };
    for (_, p) in files {
        let mut s = read_file(&p)?;
        s.line = 1;
        corpus.sequences.push(s);
    }
    Ok(corpus)
}
