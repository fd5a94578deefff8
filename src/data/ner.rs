//! The built-in feature sets of the piecewise paper's experiments, computed from the first
//! column (the word) and name lists: `ner` (000 Table 1), `np` (Table 2, the factorial CRF's
//! chunking features) and `seminar` (Table 3, the skip-chain CRF's).
//!
//! Per token, the binary features q_k(x, t) of `ner` are
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
//!
//! `np` (Table 2) has `W=`, `SHAPE=Xx+`, `SHAPE=X`, `SHAPE=X+`, `MIXED`, `DIGIT`,
//! `LEX=first`/`last`/`day`/`month` (days and months are built in) and, given a tagged corpus
//! for it, `LEXPOS=T` for every tag T the word has in that POS lexicon (in place of Table 2's
//! Brill-tagger lexicon), in a window of ±3. Table 2's company and geographic lists are not
//! available, and its `T_t = T` features are left out because the factorial CRF predicts the
//! POS tags.
//!
//! `seminar` (Table 3) has `W=`, the five shapes, `MIXED`, `LEX=first`/`last`/`honorific`, and
//! three multi-token patterns: `TIME-DASH` (part of a time followed by a dash), `DASH-TIME` (part
//! of a time preceded by a dash) and `DATE` (part of a date), in a window of ±4. A time is a run
//! of tokens like `3:30`, `4pm`, `3 p.m.`; a date a month or weekday name, a `d/d(/d)` token, or a
//! number next to a month name.

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

/// Which of the paper's feature tables a [`NerFeatures`] computes.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureTable {
    /// 000 Table 1 (named entities), window ±2.
    #[default]
    Ner,
    /// 000 Table 2 (noun-phrase chunking with a factorial CRF), window ±3.
    Np,
    /// 000 Table 3 (seminar announcements), window ±4.
    Seminar,
}

impl FeatureTable {
    /// δ ∈ [−window, window] of the features q_k(x, t + δ).
    pub fn window(self) -> i64 {
        match self {
            FeatureTable::Ner => WINDOW,
            FeatureTable::Np => 3,
            FeatureTable::Seminar => 4,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            FeatureTable::Ner => "ner",
            FeatureTable::Np => "np",
            FeatureTable::Seminar => "seminar",
        }
    }
}

const DAYS: &[&str] = &[
    "MONDAY",
    "TUESDAY",
    "WEDNESDAY",
    "THURSDAY",
    "FRIDAY",
    "SATURDAY",
    "SUNDAY",
    "MON",
    "TUE",
    "TUES",
    "WED",
    "THU",
    "THUR",
    "THURS",
    "FRI",
    "SAT",
    "SUN",
];
const MONTHS: &[&str] = &[
    "JANUARY",
    "FEBRUARY",
    "MARCH",
    "APRIL",
    "MAY",
    "JUNE",
    "JULY",
    "AUGUST",
    "SEPTEMBER",
    "OCTOBER",
    "NOVEMBER",
    "DECEMBER",
    "JAN",
    "FEB",
    "MAR",
    "APR",
    "JUN",
    "JUL",
    "AUG",
    "SEP",
    "SEPT",
    "OCT",
    "NOV",
    "DEC",
];

/// The name lists of the built-in features, and which table they compute; stored in the model
/// so it tags new text alone.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct NerFeatures {
    #[serde(default)]
    pub table: FeatureTable,
    first: Vec<String>,
    last: Vec<String>,
    #[serde(skip)]
    first_set: FxHashSet<String>,
    #[serde(skip)]
    last_set: FxHashSet<String>,
    /// `np`: a word → POS-tags lexicon standing in for Table 2's Brill-tagger lexicon (words
    /// sorted, each with its tags).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pos_lexicon: Vec<(String, Vec<String>)>,
    #[serde(skip)]
    pos_index: rustc_hash::FxHashMap<String, u32>,
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
    /// Reads `first-male.txt`, `first-female.txt` and `last.txt` from `dir`, for `table`.
    pub fn load_table(dir: &Path, table: FeatureTable) -> Result<NerFeatures> {
        let mut n = Self::load(dir)?;
        n.table = table;
        Ok(n)
    }

    /// Reads `first-male.txt`, `first-female.txt` and `last.txt` from `dir` (Table 1's features).
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
        self.pos_index = self
            .pos_lexicon
            .iter()
            .enumerate()
            .map(|(i, (w, _))| (w.clone(), i as u32))
            .collect();
    }

    /// Reads a POS lexicon from tagged text, `word<TAB>tag` (or `word tag …`, the tag in the
    /// last column) a line, blank lines between sentences: every tag each word was seen with.
    /// Table 2's "w_t is contained in a lexicon of words with POS T (from Brill tagger)" then
    /// gives `LEXPOS=T`. The file must not overlap the test data (the Penn Treebank sample,
    /// sections 00–01, for CoNLL-2000's sections 15–18 and 20).
    pub fn load_pos_lexicon(&mut self, path: &Path) -> Result<()> {
        let text = crate::util::read_text(path)?;
        let mut map: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.len() {
                0 => {}
                1 => {
                    return Err(Error::parse(
                        path.display().to_string(),
                        i + 1,
                        "a POS lexicon line is `word<TAB>tag`",
                    ))
                }
                n => {
                    map.entry(f[0].to_string())
                        .or_default()
                        .insert(f[n - 1].to_string());
                }
            }
        }
        self.pos_lexicon = map
            .into_iter()
            .map(|(w, t)| (w, t.into_iter().collect()))
            .collect();
        self.rebuild_index();
        Ok(())
    }

    /// Words in the POS lexicon.
    pub fn pos_lexicon_len(&self) -> usize {
        self.pos_lexicon.len()
    }

    /// Names in the lists (first, last).
    pub fn sizes(&self) -> (usize, usize) {
        (self.first.len(), self.last.len())
    }

    /// The token's own features q_k(x, t), sorted and without repeats (the multi-token
    /// patterns of `seminar` come from [`expand`](Self::expand)).
    pub fn token(&self, word: &str, out: &mut Vec<String>) {
        match self.table {
            FeatureTable::Ner => self.token_ner(word, out),
            FeatureTable::Np | FeatureTable::Seminar => self.token_np_seminar(word, out),
        }
    }

    /// Tables 2 and 3's per-token features.
    fn token_np_seminar(&self, word: &str, out: &mut Vec<String>) {
        let seminar = self.table == FeatureTable::Seminar;
        // (Table 2 has no `[A-Z][A-Z]+`.)
        let chars = word_and_shapes(word, seminar, out);
        if mixed_case(&chars) {
            out.push("MIXED".into());
        }
        if !seminar && chars.iter().any(|c| c.is_ascii_digit()) {
            out.push("DIGIT".into());
        }
        let u = word.to_uppercase();
        if self.first_set.contains(&u) {
            out.push("LEX=first".into());
        }
        if self.last_set.contains(&u) {
            out.push("LEX=last".into());
        }
        let bare = u.trim_end_matches('.');
        if seminar && HONORIFICS.contains(&bare) {
            out.push("LEX=honorific".into());
        }
        if !seminar && DAYS.contains(&bare) {
            out.push("LEX=day".into());
        }
        if !seminar && MONTHS.contains(&bare) {
            out.push("LEX=month".into());
        }
        if let Some(&i) = self.pos_index.get(word) {
            for t in &self.pos_lexicon[i as usize].1 {
                out.push(format!("LEXPOS={t}"));
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Table 1's per-token features.
    fn token_ner(&self, word: &str, out: &mut Vec<String>) {
        let chars = word_and_shapes(word, true, out);
        let n = chars.len();
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
    /// the token at t + δ, δ within the table's window; calls `f(t, name)`.
    pub fn expand(&self, words: &[&str], mut f: impl FnMut(usize, &str)) {
        let mut tokens = Vec::with_capacity(words.len());
        let mut buf = Vec::new();
        for w in words {
            self.token(w, &mut buf);
            tokens.push(buf.clone());
        }
        if self.table == FeatureTable::Seminar {
            for (t, q) in time_date_patterns(words) {
                tokens[t].push(q.to_string());
            }
        }
        let window = self.table.window();
        let mut name = String::new();
        let n = words.len() as i64;
        for t in 0..n {
            for d in -window..=window {
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

/// Starts a token's features: `W=word` and the whole-word shapes `[A-Z][a-z]+`, `[A-Z]`,
/// `[A-Z]+` and, with `two_caps`, `[A-Z][A-Z]+`; returns the word's characters.
fn word_and_shapes(word: &str, two_caps: bool, out: &mut Vec<String>) -> Vec<char> {
    out.clear();
    out.push(format!("W={word}"));
    let chars: Vec<char> = word.chars().collect();
    let up = |c: &char| c.is_uppercase();
    let n = chars.len();
    if n >= 2 && up(&chars[0]) && chars[1..].iter().all(|c| c.is_lowercase()) {
        out.push("SHAPE=Xx+".into());
    }
    if two_caps && n >= 2 && chars.iter().all(up) {
        out.push("SHAPE=XX+".into());
    }
    if n == 1 && up(&chars[0]) {
        out.push("SHAPE=X".into());
    }
    if n >= 1 && chars.iter().all(up) {
        out.push("SHAPE=X+".into());
    }
    chars
}

/// Table 3's "appears to be" patterns over a token sequence: `(t, TIME-DASH | DASH-TIME |
/// DATE)`.
pub fn time_date_patterns(words: &[&str]) -> Vec<(usize, &'static str)> {
    use crate::data::seminars::time_class;
    let n = words.len();
    let class: Vec<&str> = words.iter().map(|w| time_class(w)).collect();
    let is_dash = |w: &str| !w.is_empty() && w.chars().all(|c| matches!(c, '-' | '–' | '—'));
    // Part of a time: a clock token, an am/pm after a number, a number before an am/pm.
    let timeish: Vec<bool> = (0..n)
        .map(|t| {
            class[t] == "TIME"
                || (class[t] == "AMPM" && t > 0 && matches!(class[t - 1], "NUM" | "TIME"))
                || (class[t] == "NUM" && t + 1 < n && class[t + 1] == "AMPM")
        })
        .collect();
    let mut out = vec![];
    let mut t = 0;
    while t < n {
        if !timeish[t] {
            t += 1;
            continue;
        }
        let start = t;
        while t < n && timeish[t] {
            t += 1;
        }
        // Tokens start..t form one time; a trailing "." of "p.m." may be its own token.
        let mut end = t;
        if end < n && words[end] == "." {
            end += 1;
        }
        let before = start > 0 && is_dash(words[start - 1]);
        let after = end < n && is_dash(words[end]);
        for s in start..t {
            if after {
                out.push((s, "TIME-DASH"));
            }
            if before {
                out.push((s, "DASH-TIME"));
            }
        }
    }
    let month = |w: &str| MONTHS.contains(&w.to_uppercase().trim_end_matches('.'));
    let day =
        |w: &str| DAYS.contains(&w.to_uppercase().trim_end_matches('.').trim_end_matches(','));
    let numeric_date = |w: &str| {
        let parts: Vec<&str> = w.split('/').collect();
        (2..=3).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 4 && p.chars().all(|c| c.is_ascii_digit()))
    };
    let number = |w: &str| {
        let d = w.trim_end_matches(|c: char| c.is_alphabetic() || c == ',');
        !d.is_empty() && d.len() <= 4 && d.chars().all(|c| c.is_ascii_digit())
    };
    for t in 0..n {
        let near_month = (t.saturating_sub(2)..(t + 3).min(n)).any(|s| s != t && month(words[s]));
        if month(words[t])
            || day(words[t])
            || numeric_date(words[t])
            || (number(words[t]) && near_month)
        {
            out.push((t, "DATE"));
        }
    }
    out
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
