//! Labelled-bracket scoring as EVALB does it with `COLLINS.prm` (Sekine & Collins 1997):
//!
//! - terminals whose tag is deleted (`, : `` '' .` and `-NONE-`) are removed before spans are
//!   counted, so brackets are spans over the remaining words;
//! - brackets of deleted labels (`TOP`, `-NONE-` and the punctuation tags) and brackets left
//!   empty are dropped; labels are cut at their first `-` or `=`; `ADVP` ≡ `PRT`;
//! - a test bracket matches a gold one of the same span and label, each used once (a multiset);
//! - tagging accuracy compares the tags of the remaining words;
//! - a sentence's length for the cut-off counts every word but `-NONE-`.
//!
//! `eval::evalb_lines` is EVALB itself: gold and test aligned sentence by sentence (one tree a
//! line), each line read as `evalb.c` reads it, each sentence scored or counted as an error or
//! a skip, and the summary for all sentences and for those of at most 40 words. The rules cite
//! `evalb.c` (the 2006 release, `read_line`, `calc_result`, `individual_result`,
//! `print_total`) and its README.

use crate::data::treebank::Tree;
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;

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

    pub(super) fn canonical<'a>(&'a self, label: &'a str) -> &'a str {
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
        f_measure(self.precision(), self.recall())
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

/// The harmonic mean of precision and recall (in %), 0 when both are 0 (evalb.c prints `nan`).
pub(super) fn f_measure(p: f64, r: f64) -> f64 {
    if p + r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    }
}

pub(super) fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// A tree read as EVALB reads it: remaining (word, tag) terminals, brackets over them, and the
/// length for the cut-off.
pub(super) struct Read {
    pub(super) terminals: Vec<(String, String)>,
    pub(super) brackets: Vec<Bracket>,
    pub(super) length: usize,
}

pub(super) fn read(t: &Tree, p: &EvalbParams) -> Read {
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

pub(super) type Bracket = (String, usize, usize);

/// Brackets of `g` matched in `t`, each used once: per (label, start, end), the smaller of the
/// two counts (evalb.c's pairwise search, which takes the first unused equal test bracket for
/// each gold one, matches exactly that many; README [7] 5).
pub(super) fn matched(g: &[Bracket], t: &[Bracket]) -> usize {
    let mut left = multiset(t);
    g.iter().filter(|b| take(&mut left, b)).count()
}

fn multiset(bs: &[Bracket]) -> FxHashMap<(&str, usize, usize), usize> {
    let mut m = FxHashMap::default();
    for (l, i, j) in bs {
        *m.entry((l.as_str(), *i, *j)).or_default() += 1;
    }
    m
}

/// Uses one bracket equal to `b` from the multiset, if any is left.
fn take<'a>(m: &mut FxHashMap<(&'a str, usize, usize), usize>, b: &'a Bracket) -> bool {
    match m.get_mut(&(b.0.as_str(), b.1, b.2)) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
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
    s.matched = matched(&g.brackets, &t.brackets);
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
        let mut left = multiset(&t.brackets);
        for gb in &g.brackets {
            let hit = take(&mut left, gb);
            let e = m.entry(gb.0.clone()).or_default();
            e.0 += 1;
            e.2 += usize::from(hit);
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

/// EVALB's cut-off for its second summary (`DEFAULT_CUT_LEN` in evalb.c).
pub const EVALB_CUT_LEN: usize = 40;

/// Test brackets that cross a gold bracket (evalb.c, "crossing is counted based on the
/// brackets in test rather than gold file"): (s, e) crosses (a, b) when a < s < b < e or
/// s < a < e < b. Linear after sorting: per position s, the nearest end b of a gold bracket
/// open across s (a < s < b), and per position e, the latest start a of one open across e.
pub(super) fn crossing(gold: &[(usize, usize)], test: &[(usize, usize)], n: usize) -> usize {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut spans = gold.to_vec();
    spans.sort_unstable();
    spans.dedup();
    // first_end[s] = min b over gold (a, b) with a < s < b.
    let mut first_end = vec![usize::MAX; n + 1];
    // last_start[e] = max a over gold (a, b) with a < e < b.
    let mut last_start: Vec<Option<usize>> = vec![None; n + 1];
    let mut ends: BinaryHeap<Reverse<usize>> = BinaryHeap::new();
    let mut starts: BinaryHeap<(usize, usize)> = BinaryHeap::new();
    let mut k = 0;
    for pos in 0..=n {
        while k < spans.len() && spans[k].0 < pos {
            ends.push(Reverse(spans[k].1));
            starts.push(spans[k]);
            k += 1;
        }
        // A bracket ending at or before pos never covers a later position either.
        while ends.peek().is_some_and(|Reverse(b)| *b <= pos) {
            ends.pop();
        }
        while starts.peek().is_some_and(|(_, b)| *b <= pos) {
            starts.pop();
        }
        first_end[pos] = ends.peek().map_or(usize::MAX, |Reverse(b)| *b);
        last_start[pos] = starts.peek().map(|(a, _)| *a);
    }
    test.iter()
        .filter(|(s, e)| {
            first_end.get(*s).is_some_and(|b| b < e)
                || last_start
                    .get(*e)
                    .copied()
                    .flatten()
                    .is_some_and(|a| a > *s)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random nested bracketings over n words (a tree's spans, some with repeats).
    fn random_brackets(rng: &mut rand::rngs::StdRng, i: usize, j: usize, out: &mut Vec<Bracket>) {
        let label = ["NP", "VP", "S"][rng.random_range(0..3)].to_string();
        out.push((label, i, j));
        if j - i < 2 {
            return;
        }
        let k = rng.random_range(i + 1..j);
        if rng.random_bool(0.8) {
            random_brackets(rng, i, k, out);
        }
        if rng.random_bool(0.8) {
            random_brackets(rng, k, j, out);
        }
    }

    /// evalb.c's double loop, as written.
    fn crossing_pairwise(gold: &[Bracket], test: &[Bracket]) -> usize {
        test.iter()
            .filter(|(_, s, e)| {
                gold.iter()
                    .any(|(_, a, b)| (a < s && b > s && b < e) || (a > s && a < e && b > e))
            })
            .count()
    }

    fn matched_pairwise(gold: &[Bracket], test: &[Bracket]) -> usize {
        let mut used = vec![false; test.len()];
        let mut m = 0;
        for g in gold {
            if let Some(j) = (0..test.len()).find(|&j| !used[j] && test[j] == *g) {
                used[j] = true;
                m += 1;
            }
        }
        m
    }

    #[test]
    fn crossing_and_matching_equal_evalb_s_pairwise_loops() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(42);
        for _ in 0..500 {
            let n = rng.random_range(1..30);
            let (mut g, mut t) = (Vec::new(), Vec::new());
            random_brackets(&mut rng, 0, n, &mut g);
            random_brackets(&mut rng, 0, n, &mut t);
            let spans = |b: &[Bracket]| b.iter().map(|b| (b.1, b.2)).collect::<Vec<_>>();
            assert_eq!(
                crossing(&spans(&g), &spans(&t), n),
                crossing_pairwise(&g, &t),
                "{g:?} {t:?}"
            );
            assert_eq!(matched(&g, &t), matched_pairwise(&g, &t));
        }
    }
}
