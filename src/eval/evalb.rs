//! Labelled-bracket scoring as EVALB does it with `COLLINS.prm` (Sekine & Collins 1997):
//!
//! - terminals whose tag is deleted (`, : `` '' .` and `-NONE-`) are removed before spans are
//!   counted, so brackets are spans over the remaining words;
//! - brackets of deleted labels (`TOP`, `-NONE-` and the punctuation tags) and brackets left
//!   empty are dropped; labels are cut at their first `-` or `=`; `ADVP` ≡ `PRT`;
//! - a test bracket matches a gold one of the same span and label, each used once (a multiset);
//! - tagging accuracy compares the tags of the remaining words;
//! - a sentence's length for the cut-off counts every word but `-NONE-`.

use crate::data::treebank::Tree;
use crate::error::{Error, Result};

/// EVALB's parameter file, as data.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalbParams {
    pub delete_labels: Vec<String>,
    pub delete_for_length: Vec<String>,
    /// Pairs of labels counted as equal.
    pub equal_labels: Vec<(String, String)>,
    /// Sentences longer than this are left out (`None`: every sentence).
    pub cutoff: Option<usize>,
}

impl EvalbParams {
    /// `COLLINS.prm` with a length cut-off.
    pub fn collins(cutoff: Option<usize>) -> EvalbParams {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        EvalbParams {
            delete_labels: s(&["TOP", "-NONE-", ",", ":", "``", "''", "."]),
            delete_for_length: s(&["-NONE-"]),
            equal_labels: vec![("ADVP".into(), "PRT".into())],
            cutoff,
        }
    }

    fn canonical<'a>(&'a self, label: &'a str) -> &'a str {
        for (a, b) in &self.equal_labels {
            if label == b {
                return a;
            }
        }
        label
    }
}

/// Totals over a test set, as EVALB's summary has them.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct EvalbScore {
    pub sentences: usize,
    /// Sentences whose words differ between gold and test (EVALB's error sentences).
    pub errors: usize,
    pub gold_brackets: usize,
    pub test_brackets: usize,
    pub matched: usize,
    pub words: usize,
    pub correct_tags: usize,
    pub exact: usize,
}

impl EvalbScore {
    pub fn recall(&self) -> f64 {
        pct(self.matched, self.gold_brackets)
    }
    pub fn precision(&self) -> f64 {
        pct(self.matched, self.test_brackets)
    }
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        }
    }
    pub fn tagging(&self) -> f64 {
        pct(self.correct_tags, self.words)
    }
    fn add(&mut self, o: &EvalbScore) {
        self.sentences += o.sentences;
        self.errors += o.errors;
        self.gold_brackets += o.gold_brackets;
        self.test_brackets += o.test_brackets;
        self.matched += o.matched;
        self.words += o.words;
        self.correct_tags += o.correct_tags;
        self.exact += o.exact;
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// A tree read as EVALB reads it: remaining (word, tag) terminals, brackets over them, and the
/// length for the cut-off.
struct Read {
    terminals: Vec<(String, String)>,
    brackets: Vec<(String, usize, usize)>,
    length: usize,
}

fn read(t: &Tree, p: &EvalbParams) -> Read {
    let mut r = Read {
        terminals: vec![],
        brackets: vec![],
        length: 0,
    };
    fn walk(t: &Tree, p: &EvalbParams, r: &mut Read) {
        if t.is_preterminal() {
            let tag = &t.label;
            if !p.delete_for_length.contains(tag) {
                r.length += 1;
            }
            if !p.delete_labels.contains(tag) {
                r.terminals.push((t.children[0].label.clone(), tag.clone()));
            }
            return;
        }
        let start = r.terminals.len();
        for c in &t.children {
            walk(c, p, r);
        }
        let end = r.terminals.len();
        let mut label = t.label.as_str();
        if let Some(cut) = label.find(['-', '=']) {
            label = &label[..cut];
        }
        if end > start && !p.delete_labels.iter().any(|d| d == label) {
            r.brackets
                .push((p.canonical(label).to_string(), start, end));
        }
    }
    walk(t, p, &mut r);
    r
}

/// One sentence's counts; `errors` = 1 when the words differ.
pub fn score_one(gold: &Tree, test: &Tree, p: &EvalbParams) -> EvalbScore {
    let (g, t) = (read(gold, p), read(test, p));
    let mut s = EvalbScore {
        sentences: 1,
        ..Default::default()
    };
    if g.terminals.len() != t.terminals.len()
        || g.terminals
            .iter()
            .zip(&t.terminals)
            .any(|(a, b)| a.0 != b.0)
    {
        s.errors = 1;
        return s;
    }
    let mut used = vec![false; t.brackets.len()];
    for gb in &g.brackets {
        if let Some(j) = (0..t.brackets.len()).find(|&j| !used[j] && t.brackets[j] == *gb) {
            used[j] = true;
            s.matched += 1;
        }
    }
    s.gold_brackets = g.brackets.len();
    s.test_brackets = t.brackets.len();
    s.words = g.terminals.len();
    s.correct_tags = g
        .terminals
        .iter()
        .zip(&t.terminals)
        .filter(|(a, b)| p.canonical(&a.1) == p.canonical(&b.1))
        .count();
    s.exact = usize::from(s.matched == s.gold_brackets && s.matched == s.test_brackets);
    s
}

/// EVALB's length of a tree: every word but `-NONE-`.
pub fn length(t: &Tree, p: &EvalbParams) -> usize {
    read(t, p).length
}

/// Totals over paired gold and test trees (normalised: the root labelled `TOP`).
pub fn evalb(gold: &[Tree], test: &[Tree], p: &EvalbParams) -> Result<EvalbScore> {
    if gold.len() != test.len() {
        return Err(Error::invalid(format!(
            "{} gold trees against {} test trees",
            gold.len(),
            test.len()
        )));
    }
    let mut total = EvalbScore::default();
    for (g, t) in gold.iter().zip(test) {
        if p.cutoff.is_some_and(|c| length(g, p) > c) {
            continue;
        }
        total.add(&score_one(g, t, p));
    }
    Ok(total)
}

/// Labelled bracket F1 per label (gold count, test count, matched), sorted by gold count.
pub fn per_label(
    gold: &[Tree],
    test: &[Tree],
    p: &EvalbParams,
) -> Vec<(String, usize, usize, usize)> {
    use std::collections::BTreeMap;
    let mut m: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for (g, t) in gold.iter().zip(test) {
        let (g, t) = (read(g, p), read(t, p));
        let mut used = vec![false; t.brackets.len()];
        for gb in &g.brackets {
            let e = m.entry(gb.0.clone()).or_default();
            e.0 += 1;
            if let Some(j) = (0..t.brackets.len()).find(|&j| !used[j] && t.brackets[j] == *gb) {
                used[j] = true;
                e.2 += 1;
            }
        }
        for tb in &t.brackets {
            m.entry(tb.0.clone()).or_default().1 += 1;
        }
    }
    let mut v: Vec<_> = m.into_iter().map(|(l, (g, t, x))| (l, g, t, x)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// The tree EVALB scores, as a tree: deleted terminals and the constituents they empty
/// removed, labels cut at `-`/`=` and made canonical (`PRT` → `ADVP`), and a deleted root
/// with one child replaced by that child. Scorers without a parameter file (PYEVALB) give
/// EVALB's numbers on such trees, up to their handling of repeated brackets.
pub fn strip(t: &Tree, p: &EvalbParams) -> Option<Tree> {
    fn walk(t: &Tree, p: &EvalbParams) -> Option<Tree> {
        if t.is_preterminal() {
            if p.delete_labels.contains(&t.label) {
                return None;
            }
            return Some(Tree {
                label: p.canonical(&t.label).to_string(),
                children: t.children.clone(),
            });
        }
        let children: Vec<Tree> = t.children.iter().filter_map(|c| walk(c, p)).collect();
        if children.is_empty() {
            return None;
        }
        let mut label = t.label.as_str();
        if let Some(cut) = label.find(['-', '=']) {
            label = &label[..cut];
        }
        Some(Tree {
            label: p.canonical(label).to_string(),
            children,
        })
    }
    let mut s = walk(t, p)?;
    while p.delete_labels.contains(&s.label) && s.children.len() == 1 && !s.is_preterminal() {
        s = s.children.pop().expect("one child");
    }
    Some(s)
}
