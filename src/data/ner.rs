//! The built-in feature set `ner`: the named-entity features of 000 Table 1, computed from a
//! CoNLL file's first column (the word) and name lists.
//!
//! Per token, the binary features q_k(x, t) are
//!
//! - `W=word` — the word itself;
//! - shapes: `SHAPE=Xx+` (`[A-Z][a-z]+`), `SHAPE=XX+` (`[A-Z][A-Z]+`), `SHAPE=X` (`[A-Z]`),
//!   `SHAPE=X+` (`[A-Z]+`), each matching the whole word; `DASH` (contains `-`); `MIXED` (the
//!   word contains `[A-Z]+[a-z]+[A-Z]+[a-z]`, e.g. "McDonald"); and `DIGIT` (contains a digit,
//!   000 Table 2's `.*[0-9].*`, which a newswire tagger also needs);
//! - `P=…` / `S=…` — every prefix and suffix of 1 to 5 characters;
//! - `C=…` — every substring of 1 to 5 characters ("c_0 … c_n occurs in w_t", n ∈ [0, 4]);
//! - `LEX=first` / `LEX=last` / `LEX=honorific` — the upper-cased word (without a final `.`
//!   for honorifics) is in the first-name lists (`first-male.txt`, `first-female.txt`), the
//!   last-name list (`last.txt`) or the built-in honorifics (English and Dutch).
//!
//! and position t gets `q@δ` for every q of the token at t + δ, δ ∈ [−2, 2]. Table 1's lists of
//! countries and locations are not in `../shared/data/lexicons` and so are not used.

use crate::error::{Error, Result};
use rustc_hash::FxHashSet;
use std::path::Path;

/// Window of the features: q_k(x, t + δ) for δ ∈ [−WINDOW, WINDOW] (000 Table 1: 2).
pub const WINDOW: i64 = 2;
/// Longest prefix, suffix and substring (000 Table 1: n ∈ [0, 4], so 5 characters).
pub const MAX_AFFIX: usize = 5;

/// Honorifics and titles, upper-cased (English and Dutch).
const HONORIFICS: &[&str] = &[
    "MR",
    "MRS",
    "MS",
    "MISS",
    "DR",
    "PROF",
    "SIR",
    "LADY",
    "LORD",
    "REV",
    "ST",
    "GEN",
    "COL",
    "CAPT",
    "SEN",
    "REP",
    "GOV",
    "PRES",
    "DHR",
    "MEVR",
    "MEJ",
    "MENEER",
    "MEVROUW",
    "DRS",
    "IR",
    "ING",
    "MR.",
    "KONING",
    "KONINGIN",
    "PRINS",
    "PRINSES",
    "PAUS",
    "MINISTER",
    "PRESIDENT",
];

/// The name lists of the `ner` features; stored in the model so it tags new text alone.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct NerFeatures {
    first: Vec<String>,
    last: Vec<String>,
    #[serde(skip)]
    first_set: FxHashSet<String>,
    #[serde(skip)]
    last_set: FxHashSet<String>,
}

fn read_list(path: &Path) -> Result<Vec<String>> {
    let text = crate::util::read_text(path)?;
    Ok(text
        .lines()
        .map(|l| l.trim().to_uppercase())
        .filter(|l| !l.is_empty())
        .collect())
}

impl NerFeatures {
    /// Reads `first-male.txt`, `first-female.txt` and `last.txt` from `dir`.
    pub fn load(dir: &Path) -> Result<NerFeatures> {
        if !dir.is_dir() {
            return Err(Error::file(
                dir.display().to_string(),
                "the ner features need a lexicon folder with first-male.txt, first-female.txt \
                 and last.txt (e.g. ../shared/data/lexicons; --lexicons DIR)",
            ));
        }
        let mut first = read_list(&dir.join("first-male.txt"))?;
        first.extend(read_list(&dir.join("first-female.txt"))?);
        first.sort();
        first.dedup();
        let mut last = read_list(&dir.join("last.txt"))?;
        last.sort();
        last.dedup();
        let mut n = NerFeatures {
            first,
            last,
            ..Default::default()
        };
        n.rebuild_index();
        Ok(n)
    }

    /// Rebuilds the lookup sets (after deserialising).
    pub fn rebuild_index(&mut self) {
        self.first_set = self.first.iter().cloned().collect();
        self.last_set = self.last.iter().cloned().collect();
    }

    /// Names in the lists (first, last).
    pub fn sizes(&self) -> (usize, usize) {
        (self.first.len(), self.last.len())
    }

    /// The token's own features q_k(x, t), sorted and without repeats.
    pub fn token(&self, word: &str, out: &mut Vec<String>) {
        out.clear();
        out.push(format!("W={word}"));
        let chars: Vec<char> = word.chars().collect();
        let up = |c: &char| c.is_uppercase();
        let low = |c: &char| c.is_lowercase();
        let n = chars.len();
        if n >= 2 && up(&chars[0]) && chars[1..].iter().all(low) {
            out.push("SHAPE=Xx+".into());
        }
        if n >= 2 && chars.iter().all(up) {
            out.push("SHAPE=XX+".into());
        }
        if n == 1 && up(&chars[0]) {
            out.push("SHAPE=X".into());
        }
        if n >= 1 && chars.iter().all(up) {
            out.push("SHAPE=X+".into());
        }
        if word.contains('-') {
            out.push("DASH".into());
        }
        if chars.iter().any(|c| c.is_ascii_digit()) {
            out.push("DIGIT".into());
        }
        if mixed_case(&chars) {
            out.push("MIXED".into());
        }
        for k in 1..=MAX_AFFIX.min(n) {
            out.push(format!("P={}", chars[..k].iter().collect::<String>()));
            out.push(format!("S={}", chars[n - k..].iter().collect::<String>()));
            for s in 0..=n - k {
                out.push(format!("C={}", chars[s..s + k].iter().collect::<String>()));
            }
        }
        let u = word.to_uppercase();
        if self.first_set.contains(&u) {
            out.push("LEX=first".into());
        }
        if self.last_set.contains(&u) {
            out.push("LEX=last".into());
        }
        if HONORIFICS.contains(&u.trim_end_matches('.')) {
            out.push("LEX=honorific".into());
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Every feature of every position of a sequence of words: `q@δ` for the features q of
    /// the token at t + δ, δ ∈ [−2, 2]; calls `f(t, name)`.
    pub fn expand(&self, words: &[&str], mut f: impl FnMut(usize, &str)) {
        let mut tokens = Vec::with_capacity(words.len());
        let mut buf = Vec::new();
        for w in words {
            self.token(w, &mut buf);
            tokens.push(buf.clone());
        }
        let mut name = String::new();
        let n = words.len() as i64;
        for t in 0..n {
            for d in -WINDOW..=WINDOW {
                let s = t + d;
                if s < 0 || s >= n {
                    continue;
                }
                for q in &tokens[s as usize] {
                    name.clear();
                    name.push_str(q);
                    name.push('@');
                    name.push_str(&d.to_string());
                    f(t as usize, &name);
                }
            }
        }
    }
}

/// Whether `[A-Z]+[a-z]+[A-Z]+[a-z]` occurs in the word.
fn mixed_case(c: &[char]) -> bool {
    // States: 0 start, 1 in upper run, 2 in lower run after it, 3 in second upper run.
    let mut st = 0;
    for ch in c {
        st = match (st, ch.is_uppercase(), ch.is_lowercase()) {
            (_, true, _) if st == 0 || st == 1 => 1,
            (1, _, true) | (2, _, true) => 2,
            (2, true, _) | (3, true, _) => 3,
            (3, _, true) => return true,
            _ => 0,
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_features_follow_table_1() {
        let n = NerFeatures {
            first: vec!["ANNA".into()],
            last: vec!["JANSEN".into()],
            ..Default::default()
        };
        let mut n = n;
        n.rebuild_index();
        let mut v = vec![];
        n.token("Anna", &mut v);
        for want in [
            "W=Anna",
            "SHAPE=Xx+",
            "P=A",
            "P=Anna",
            "S=nna",
            "C=nn",
            "LEX=first",
        ] {
            assert!(v.contains(&want.to_string()), "{want} in {v:?}");
        }
        assert!(!v.contains(&"SHAPE=X+".to_string()));
        n.token("KLM", &mut v);
        assert!(v.contains(&"SHAPE=XX+".into()) && v.contains(&"SHAPE=X+".into()));
        n.token("McDonald", &mut v);
        assert!(v.contains(&"MIXED".into()) && !v.contains(&"SHAPE=Xx+".into()));
        n.token("dr.", &mut v);
        assert!(v.contains(&"LEX=honorific".into()));
        n.token("Noord-Holland", &mut v);
        assert!(v.contains(&"DASH".into()));
        // "banana": substrings occur once as features however often they occur in the word.
        n.token("banana", &mut v);
        assert_eq!(v.iter().filter(|x| *x == "C=ana").count(), 1);
        // Substrings of 1..=5 characters: 6 + 5 + 4 + 3 + 2 positions, minus repeats.
        assert!(!v
            .iter()
            .any(|x| x.starts_with("C=") && x.len() > 2 + MAX_AFFIX));
        let mut seen = vec![];
        n.expand(&["De", "heer", "Jansen"], |t, q| {
            seen.push((t, q.to_string()))
        });
        assert!(seen.contains(&(0, "LEX=last@2".into())));
        assert!(seen.contains(&(2, "W=De@-2".into())));
        assert!(!seen.iter().any(|(t, q)| *t == 0 && q.ends_with("@-1")));
    }
}
