//! The `grammar` model family (001 §5): a binarised treebank grammar with log-linear scores on
//! its chart edges, trained as a generative PCFG, as the locally normalised MECFG, piecewise
//! with NOTA chart edges (PT-CFG), or globally as a CRF-CFG.
//!
//! A binary edge `A → B C` over words `i..j` (split `k`) scores
//! `s = θ_rule + θ[first word of i..j, rule] + θ[last word, rule]`, the words conjoined with
//! the span length when it is below 3 (001 §5); with [`GrammarOptions::split`], also
//! `θ[left child's last word, rule] + θ[right child's first word, rule] + θ[child lengths, rule]`.
//! A part-of-speech edge `T` over word `i` scores `θ[T] + θ[word form, T]` (the global model
//! and the generative PCFG; the MECFG's expansion of a one-word edge is its word, probability 1).
//! Weights exist for the (feature, rule) pairs the gold training trees show, as in CRFsuite.
//!
//! Rare training words (seen once) and unknown test words are read as signatures
//! (`UNK-C-num-ing`), so the lexicon has forms for words it never saw.

pub mod chart;
pub mod fit;
pub mod parse;
pub mod train;

use crate::data::treebank::{binarise, normalise, Binarisation, Tree, ROOT};
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;

/// How the grammar is read off the trees and which features score an expansion.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GrammarOptions {
    pub binarisation: Binarisation,
    /// Score the split point too (the children's boundary words and lengths): the expansion
    /// is then `(B C, k)` and the MECFG normalises over rules and split points. 001 leaves it
    /// out; Table 2 here uses the paper's form unless a row says otherwise.
    pub split: bool,
    /// Words seen at most this often in training are read as their signature.
    pub rare: u32,
}

impl Default for GrammarOptions {
    fn default() -> Self {
        GrammarOptions {
            binarisation: Binarisation::default(),
            split: false,
            rare: 1,
        }
    }
}

/// A binary rule `a → b c` (label ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub a: u32,
    pub b: u32,
    pub c: u32,
}

/// Feature rows: for each feature, the (rule or label, weight index) pairs it has weights for,
/// sorted by the first, so that the entries of one parent's rules are one slice.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub start: Vec<u32>,
    pub entries: Vec<(u32, u32)>,
}

impl Rows {
    pub fn row(&self, f: u32) -> &[(u32, u32)] {
        let f = f as usize;
        &self.entries[self.start[f] as usize..self.start[f + 1] as usize]
    }
    /// The entries of row `f` whose target lies in `lo..hi`.
    pub fn row_in(&self, f: u32, lo: u32, hi: u32) -> &[(u32, u32)] {
        let r = self.row(f);
        let a = r.partition_point(|e| e.0 < lo);
        let b = r.partition_point(|e| e.0 < hi);
        &r[a..b]
    }
    pub fn n_rows(&self) -> usize {
        self.start.len().saturating_sub(1)
    }
}

/// Feature kinds (the top bits of a feature key).
const SPAN_FIRST: u64 = 0;
const SPAN_LAST: u64 = 1;
const SPLIT_LEFT: u64 = 2;
const SPLIT_RIGHT: u64 = 3;
const SPLIT_LENGTHS: u64 = 4;
const LEAF_FORM: u64 = 5;

fn key(kind: u64, a: u64, b: u64) -> u64 {
    (kind << 56) | (a << 8) | b
}

/// A fitted grammar: labels, rules, lexicon, features and the weight layout.
#[derive(Clone, Debug)]
pub struct Grammar {
    pub options: GrammarOptions,
    pub labels: Vec<String>,
    label_index: FxHashMap<String, u32>,
    /// Binary rules sorted by (a, b, c).
    pub rules: Vec<Rule>,
    /// Per label, its rules as a range of `rules`.
    pub by_parent: Vec<std::ops::Range<u32>>,
    /// Per label, the rules with it as left child.
    pub by_left: Vec<Vec<u32>>,
    /// Labels seen over one word (part-of-speech nodes, collapsed chains ending in one).
    pub is_tag: Vec<bool>,
    /// Labels seen under the root `TOP` (the root's unary rule `TOP → X`, kept apart so that
    /// `X` shares its rules with `X` elsewhere).
    pub is_root: Vec<bool>,
    /// The root labels, in label order.
    pub roots: Vec<u32>,
    pub root_count: Vec<f64>,
    pub forms: Vec<String>,
    form_index: FxHashMap<String, u32>,
    /// Per form, the tags seen over it (the tag dictionary).
    pub tags_of: Vec<Vec<u32>>,
    /// The form every unknown signature falls back to.
    pub unk: u32,
    word_counts: FxHashMap<String, u32>,
    /// Feature key → row of `span` (span and split features) or `leaf`.
    feature_index: FxHashMap<u64, u32>,
    feature_keys: Vec<u64>,
    pub span_rows: Rows,
    leaf_index: FxHashMap<u64, u32>,
    pub leaf_rows: Rows,
    /// Weight of rule r is `r`; of tag label t is `n_rules + t`; of root rule `TOP → a` is
    /// `n_rules + n_labels + a`; then the rows' entries.
    pub n_params: usize,
    /// Relative-frequency counts for the generative PCFG: rule, tag over form, label totals.
    pub rule_count: Vec<f64>,
    pub leaf_count: FxHashMap<(u32, u32), f64>,
    pub label_count: Vec<f64>,
}

/// A sentence read for the grammar: its words' forms and the feature rows of every span.
#[derive(Clone, Debug, Default)]
pub struct Sentence {
    pub words: Vec<String>,
    pub forms: Vec<u32>,
    /// Per position i and length class (0: length 2, 1: longer), the rows of the span's first
    /// word (spans starting at i) and last word (spans ending at i).
    pub first: Vec<[Option<u32>; 2]>,
    pub last: Vec<[Option<u32>; 2]>,
    /// Split features: left child's last word at i, right child's first word at i.
    pub split_left: Vec<Option<u32>>,
    pub split_right: Vec<Option<u32>>,
    /// Per position, the leaf row of its form.
    pub leaf: Vec<Option<u32>>,
    /// Gold tree in chart form, when known.
    pub gold: Option<Gold>,
}

/// A gold tree as chart edges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gold {
    /// (rule, i, k, j): `a` over i..j splits at k into b over i..k and c over k..j.
    pub binary: Vec<(u32, u32, u32, u32)>,
    /// Tag label per word.
    pub tags: Vec<u32>,
    pub root: u32,
}

/// Takes the root rule off a binarised tree: `TOP+X` → `X` (a root `TOP` with two children
/// stays).
fn unroot(mut t: Tree) -> Tree {
    if let Some(rest) = t.label.strip_prefix(ROOT).and_then(|r| r.strip_prefix('+')) {
        t.label = rest.to_string();
    }
    t
}

/// The length class of a span of `len` ≥ 2 words (001 §5: conjoined when below 3).
pub fn len_class(len: usize) -> usize {
    usize::from(len >= 3)
}

/// The child-length class of the split features: 1, 2 or more words.
fn child_class(len: usize) -> u64 {
    len.min(3) as u64
}

/// An unknown word's signature: capitalisation, digits, dashes and an English suffix.
pub fn signature(word: &str, first_in_sentence: bool) -> String {
    let mut s = String::from("UNK");
    let mut chars = word.chars();
    let first = chars.next().unwrap_or(' ');
    let has_lower = word.chars().any(char::is_lowercase);
    if first.is_uppercase() {
        if !has_lower {
            s.push_str("-AC");
        } else if first_in_sentence {
            s.push_str("-SC");
        } else {
            s.push_str("-C");
        }
    } else if has_lower {
        s.push_str("-c");
    }
    if word.chars().any(|c| c.is_ascii_digit()) {
        s.push_str("-num");
    }
    if word.contains('-') {
        s.push_str("-dash");
    }
    let lower = word.to_lowercase();
    if lower.chars().count() >= 3 {
        for suf in ["ing", "ion", "ity", "est", "ed", "ly", "er", "al", "s", "y"] {
            if lower.ends_with(suf) {
                s.push('-');
                s.push_str(suf);
                break;
            }
        }
    }
    s
}

/// A tree in chart form over a binarised tree: its binary edges, its tags and its root, with
/// labels and rules looked up by `rule` (`None`: unknown).
fn chart_edges(
    t: &Tree,
    mut label: impl FnMut(&str) -> Option<u32>,
    mut rule: impl FnMut(u32, u32, u32) -> Option<u32>,
) -> Option<Gold> {
    fn walk(
        t: &Tree,
        i: u32,
        label: &mut dyn FnMut(&str) -> Option<u32>,
        rule: &mut dyn FnMut(u32, u32, u32) -> Option<u32>,
        g: &mut Gold,
    ) -> Option<(u32, u32)> {
        let a = label(&t.label)?;
        if t.is_preterminal() {
            g.tags.push(a);
            return Some((a, i + 1));
        }
        if t.children.len() != 2 {
            return None;
        }
        let (b, k) = walk(&t.children[0], i, label, rule, g)?;
        let (c, j) = walk(&t.children[1], k, label, rule, g)?;
        g.binary.push((rule(a, b, c)?, i, k, j));
        Some((a, j))
    }
    let mut g = Gold::default();
    let (root, _) = walk(t, 0, &mut label, &mut rule, &mut g)?;
    g.root = root;
    Some(g)
}

impl Grammar {
    /// Reads the grammar, lexicon and features off normalised training trees (`lexicon_trees`
    /// train the word counts, tag dictionary and tag features too; `grammar_trees` ⊆ them give
    /// the rules and the span features).
    pub fn fit(
        grammar_trees: &[Tree],
        lexicon_trees: &[Tree],
        options: GrammarOptions,
    ) -> Result<Grammar> {
        if grammar_trees.is_empty() {
            return Err(Error::invalid("no training trees for the grammar"));
        }
        // A tree left without words by normalisation has no rule to read (the treebank
        // reader refuses one at its line; trees built otherwise are refused here).
        let bin = |(i, t): (usize, &Tree)| -> Result<Tree> {
            let mut t = t.clone();
            normalise(&mut t);
            if t.children.is_empty() {
                return Err(Error::invalid(format!(
                    "training tree {}: no words once its -NONE- elements are removed",
                    i + 1
                )));
            }
            Ok(unroot(binarise(&t, options.binarisation)))
        };
        let gtrees: Vec<Tree> = grammar_trees
            .iter()
            .enumerate()
            .map(bin)
            .collect::<Result<_>>()?;
        let ltrees: Vec<Tree> = lexicon_trees
            .iter()
            .enumerate()
            .map(bin)
            .collect::<Result<_>>()?;
        let mut g = Grammar::empty(options);
        g.read_lexicon(&ltrees);
        // Rules from the grammar trees.
        let mut rule_counts: FxHashMap<Rule, f64> = FxHashMap::default();
        for t in &gtrees {
            let root = g.intern_label(&t.label);
            g.is_root[root as usize] = true;
            g.root_count[root as usize] += 1.0;
            fn walk(t: &Tree, g: &mut Grammar, counts: &mut FxHashMap<Rule, f64>) -> u32 {
                let a = g.intern_label(&t.label);
                if t.is_preterminal() {
                    g.is_tag[a as usize] = true;
                    return a;
                }
                // Binarised: two children (a word alone only under a part of speech).
                if let [l, r] = t.children.as_slice() {
                    let b = walk(l, g, counts);
                    let c = walk(r, g, counts);
                    *counts.entry(Rule { a, b, c }).or_default() += 1.0;
                }
                a
            }
            walk(t, &mut g, &mut rule_counts);
        }
        g.roots = (0..g.labels.len() as u32)
            .filter(|&a| g.is_root[a as usize])
            .collect();
        let mut rules: Vec<(Rule, f64)> = rule_counts.into_iter().collect();
        rules.sort_by_key(|(r, _)| (r.a, r.b, r.c));
        g.rules = rules.iter().map(|(r, _)| *r).collect();
        g.rule_count = rules.iter().map(|(_, c)| *c).collect();
        let n_labels = g.labels.len();
        g.by_parent = vec![0..0; n_labels];
        g.by_left = vec![vec![]; n_labels];
        for (i, r) in g.rules.iter().enumerate() {
            let range = &mut g.by_parent[r.a as usize];
            if range.start == range.end {
                *range = i as u32..i as u32 + 1;
            } else {
                range.end = i as u32 + 1;
            }
            g.by_left[r.b as usize].push(i as u32);
            g.label_count[r.a as usize] += g.rule_count[i];
        }
        // Tag totals count every lexicon tree's tags (the generic form excluded).
        let unk = g.unk;
        let mut tag_totals = vec![0.0; n_labels];
        for (&(a, f), &c) in &g.leaf_count {
            if f != unk {
                tag_totals[a as usize] += c;
            }
        }
        for (a, t) in tag_totals.into_iter().enumerate() {
            if g.is_tag[a] {
                g.label_count[a] = t;
            }
        }
        // Features: the pairs the gold trees show.
        let mut span_pairs: Vec<(u32, u32)> = Vec::new();
        let mut leaf_pairs: Vec<(u32, u32)> = Vec::new();
        for (ti, t) in gtrees.iter().enumerate() {
            let s = g
                .encode_tree(t, true, true)
                .map_err(|e| Error::invalid(format!("training tree {}: {e}", ti + 1)))?;
            let gold = s.gold.as_ref().expect("encoded with gold");
            for &(r, i, k, j) in &gold.binary {
                for f in g.span_features_mut(&s, i as usize, k as usize, j as usize) {
                    span_pairs.push((f, r));
                }
            }
        }
        for t in &ltrees {
            for (pos, (tag, w)) in t.tagged_words().into_iter().enumerate() {
                let a = g.label(tag).expect("interned above");
                let f = g.form(w, pos == 0);
                let row = g.leaf_feature_mut(f);
                leaf_pairs.push((row, a));
                if g.is_rare(w) {
                    let row = g.leaf_feature_mut(g.unk);
                    leaf_pairs.push((row, a));
                }
            }
        }
        let mut next = g.rules.len() + 2 * n_labels;
        g.span_rows = rows_of(span_pairs, g.feature_keys.len(), &mut next);
        g.leaf_rows = rows_of(leaf_pairs, g.leaf_index.len(), &mut next);
        g.n_params = next;
        Ok(g)
    }

    /// A grammar with the options and nothing read yet.
    fn empty(options: GrammarOptions) -> Grammar {
        Grammar {
            options,
            labels: vec![],
            label_index: FxHashMap::default(),
            rules: vec![],
            by_parent: vec![],
            by_left: vec![],
            is_tag: vec![],
            is_root: vec![],
            roots: vec![],
            root_count: vec![],
            forms: vec![],
            form_index: FxHashMap::default(),
            tags_of: vec![],
            unk: 0,
            word_counts: FxHashMap::default(),
            feature_index: FxHashMap::default(),
            feature_keys: vec![],
            span_rows: Rows::default(),
            leaf_index: FxHashMap::default(),
            leaf_rows: Rows::default(),
            n_params: 0,
            rule_count: vec![],
            leaf_count: FxHashMap::default(),
            label_count: vec![],
        }
    }

    /// Words and labels from the lexicon trees: word counts (for the rare-word signatures),
    /// the tag dictionary and the leaf counts; every rare word also teaches the unknown form.
    fn read_lexicon(&mut self, ltrees: &[Tree]) {
        // Words and labels.
        for t in ltrees {
            for w in t.words() {
                *self.word_counts.entry(w.to_string()).or_default() += 1;
            }
        }
        self.unk = self.intern_form("UNK");
        // The tag dictionary and leaf counts from every lexicon tree.
        for t in ltrees {
            for (pos, (tag, w)) in t.tagged_words().into_iter().enumerate() {
                let a = self.intern_label(tag);
                self.is_tag[a as usize] = true;
                let f = self.training_form(w, pos == 0);
                // Every rare word also teaches the generic unknown form.
                let forms = if self.is_rare(w) {
                    vec![f, self.unk]
                } else {
                    vec![f]
                };
                for f in forms {
                    if !self.tags_of[f as usize].contains(&a) {
                        self.tags_of[f as usize].push(a);
                    }
                    *self.leaf_count.entry((a, f)).or_default() += 1.0;
                }
            }
        }
    }

    fn intern_label(&mut self, l: &str) -> u32 {
        if let Some(&i) = self.label_index.get(l) {
            return i;
        }
        let i = self.labels.len() as u32;
        self.labels.push(l.to_string());
        self.label_index.insert(l.to_string(), i);
        self.is_tag.push(false);
        self.is_root.push(false);
        self.root_count.push(0.0);
        self.label_count.push(0.0);
        i
    }

    fn intern_form(&mut self, f: &str) -> u32 {
        if let Some(&i) = self.form_index.get(f) {
            return i;
        }
        let i = self.forms.len() as u32;
        self.forms.push(f.to_string());
        self.form_index.insert(f.to_string(), i);
        self.tags_of.push(vec![]);
        i
    }

    fn is_rare(&self, w: &str) -> bool {
        self.word_counts.get(w).copied().unwrap_or(0) <= self.options.rare
    }

    /// A training word's form (interning it).
    fn training_form(&mut self, w: &str, first: bool) -> u32 {
        if self.is_rare(w) {
            let s = signature(w, first);
            self.intern_form(&s)
        } else {
            self.intern_form(w)
        }
    }

    /// A word's form at test time: itself when frequent, else its signature, else `UNK`.
    pub fn form(&self, w: &str, first: bool) -> u32 {
        if !self.is_rare(w) {
            if let Some(&f) = self.form_index.get(w) {
                return f;
            }
        }
        self.form_index
            .get(&signature(w, first))
            .copied()
            .unwrap_or(self.unk)
    }

    pub fn label(&self, l: &str) -> Option<u32> {
        self.label_index.get(l).copied()
    }

    pub fn rule(&self, a: u32, b: u32, c: u32) -> Option<u32> {
        let range = self.by_parent.get(a as usize)?.clone();
        let rs = &self.rules[range.start as usize..range.end as usize];
        rs.binary_search_by_key(&(b, c), |r| (r.b, r.c))
            .ok()
            .map(|i| range.start + i as u32)
    }

    pub fn n_rules(&self) -> usize {
        self.rules.len()
    }

    /// Weight index of a tag label's bias.
    pub fn tag_param(&self, a: u32) -> usize {
        self.rules.len() + a as usize
    }

    /// Weight index of the root rule `TOP → a`.
    pub fn root_param(&self, a: u32) -> usize {
        self.rules.len() + self.labels.len() + a as usize
    }

    /// `log Σ_roots exp θ[TOP → a]` (with the NOTA outcome's 1 when `nota`), without
    /// allocating.
    pub fn root_log_z(&self, theta: &[f64], nota: bool) -> f64 {
        let w = |a: &u32| theta[self.root_param(*a)];
        let m = self
            .roots
            .iter()
            .map(w)
            .fold(if nota { 0.0 } else { f64::NEG_INFINITY }, f64::max);
        let z: f64 = self.roots.iter().map(|a| (w(a) - m).exp()).sum::<f64>()
            + if nota { (-m).exp() } else { 0.0 };
        m + z.ln()
    }

    /// A tree built over the grammar's labels, its root rule put back (`X` → `TOP+X`), ready
    /// for [`debinarise`](crate::data::treebank::debinarise).
    pub fn reroot(&self, mut t: Tree) -> Tree {
        if t.label != ROOT {
            t.label = format!("{ROOT}+{}", t.label);
        }
        t
    }

    fn feature_mut(&mut self, k: u64) -> u32 {
        if let Some(&f) = self.feature_index.get(&k) {
            return f;
        }
        let f = self.feature_keys.len() as u32;
        self.feature_keys.push(k);
        self.feature_index.insert(k, f);
        f
    }

    fn leaf_feature_mut(&mut self, form: u32) -> u32 {
        let k = key(LEAF_FORM, form as u64, 0);
        let n = self.leaf_index.len() as u32;
        *self.leaf_index.entry(k).or_insert(n)
    }

    /// The span (and split) feature rows of edge i..j split at k, creating them (training).
    fn span_features_mut(&mut self, s: &Sentence, i: usize, k: usize, j: usize) -> Vec<u32> {
        let lc = len_class(j - i) as u64;
        let mut out = vec![
            self.feature_mut(key(SPAN_FIRST, s.forms[i] as u64, lc)),
            self.feature_mut(key(SPAN_LAST, s.forms[j - 1] as u64, lc)),
        ];
        if self.options.split {
            out.push(self.feature_mut(key(SPLIT_LEFT, s.forms[k - 1] as u64, 0)));
            out.push(self.feature_mut(key(SPLIT_RIGHT, s.forms[k] as u64, 0)));
            out.push(self.feature_mut(key(SPLIT_LENGTHS, child_class(k - i), child_class(j - k))));
        }
        out
    }

    /// The row of the child-lengths split feature for children of `left` and `right` words.
    pub fn split_lengths_row(&self, left: usize, right: usize) -> Option<u32> {
        self.feature_index
            .get(&key(SPLIT_LENGTHS, child_class(left), child_class(right)))
            .copied()
    }

    /// Reads words (and the gold tree, binarised, when given) into chart form. `strict`: every
    /// gold label and rule must be known (training); otherwise the gold is left out.
    fn encode_tree(&self, binarised: &Tree, with_gold: bool, strict: bool) -> Result<Sentence> {
        let words: Vec<String> = binarised.words().iter().map(|w| w.to_string()).collect();
        let mut s = self.encode_words(&words);
        if with_gold {
            let gold = chart_edges(binarised, |l| self.label(l), |a, b, c| self.rule(a, b, c));
            if gold.is_none() && strict {
                return Err(Error::invalid("a label or rule is not in the grammar"));
            }
            s.gold = gold;
        }
        Ok(s)
    }

    /// A normalised (not binarised) tree in chart form, gold attached when the grammar covers
    /// it.
    pub fn encode(&self, normalised: &Tree) -> Sentence {
        let b = unroot(binarise(normalised, self.options.binarisation));
        self.encode_tree(&b, true, false)
            .expect("not strict: cannot fail")
    }

    /// The gold tree of a normalised tree, binarised as the grammar reads trees (root rule
    /// `TOP → X` taken off).
    pub fn binarise(&self, normalised: &Tree) -> Tree {
        unroot(binarise(normalised, self.options.binarisation))
    }

    /// Words into chart form.
    pub fn encode_words(&self, words: &[String]) -> Sentence {
        let n = words.len();
        let forms: Vec<u32> = words
            .iter()
            .enumerate()
            .map(|(i, w)| self.form(w, i == 0))
            .collect();
        let row = |k: u64| self.feature_index.get(&k).copied();
        let mut s = Sentence {
            words: words.to_vec(),
            first: Vec::with_capacity(n),
            last: Vec::with_capacity(n),
            split_left: Vec::with_capacity(n),
            split_right: Vec::with_capacity(n),
            leaf: Vec::with_capacity(n),
            gold: None,
            forms: vec![],
        };
        for &f in &forms {
            let f64_ = f as u64;
            s.first
                .push([row(key(SPAN_FIRST, f64_, 0)), row(key(SPAN_FIRST, f64_, 1))]);
            s.last
                .push([row(key(SPAN_LAST, f64_, 0)), row(key(SPAN_LAST, f64_, 1))]);
            s.split_left.push(row(key(SPLIT_LEFT, f64_, 0)));
            s.split_right.push(row(key(SPLIT_RIGHT, f64_, 0)));
            s.leaf
                .push(self.leaf_index.get(&key(LEAF_FORM, f64_, 0)).copied());
        }
        s.forms = forms;
        s
    }

    /// The weight of (form, tag) in the leaf rows, when the training trees show the pair.
    pub fn leaf_weight(&self, form: u32, a: u32) -> Option<usize> {
        let row = *self.leaf_index.get(&key(LEAF_FORM, form as u64, 0))?;
        let r = self.leaf_rows.row(row);
        r.binary_search_by_key(&a, |e| e.0)
            .ok()
            .map(|x| r[x].1 as usize)
    }

    /// The tags a word may take (the tag dictionary of its form).
    pub fn tags_for(&self, form: u32) -> &[u32] {
        let t = &self.tags_of[form as usize];
        if t.is_empty() {
            &self.tags_of[self.unk as usize]
        } else {
            t
        }
    }

    /// A feature's name, for weight listings.
    pub fn feature_name(&self, f: u32) -> String {
        let k = self.feature_keys[f as usize];
        let kind = k >> 56;
        let a = (k >> 8) & ((1 << 48) - 1);
        let b = k & 0xff;
        let form = |a: u64| self.forms.get(a as usize).cloned().unwrap_or_default();
        match kind {
            SPAN_FIRST => format!(
                "first={}|{}",
                form(a),
                if b == 0 { "len2" } else { "len3+" }
            ),
            SPAN_LAST => format!("last={}|{}", form(a), if b == 0 { "len2" } else { "len3+" }),
            SPLIT_LEFT => format!("split-left={}", form(a)),
            SPLIT_RIGHT => format!("split-right={}", form(a)),
            _ => format!("split-lengths={a},{b}"),
        }
    }

    /// What weight `k` is, for messages: a rule, a tag's bias, a root rule, or a feature
    /// conjoined with a rule or tag.
    pub fn weight_name(&self, k: usize) -> String {
        let (nr, nl) = (self.rules.len(), self.labels.len());
        let label = |a: u32| self.labels.get(a as usize).cloned().unwrap_or_default();
        let entry = |rows: &Rows, e: usize| {
            let f = rows.start.partition_point(|&s| s as usize <= e) - 1;
            (f as u32, rows.entries[e].0)
        };
        let span_base = nr + 2 * nl;
        let leaf_base = span_base + self.span_rows.entries.len();
        if k < nr {
            format!("rule {}", self.rule_name(k as u32))
        } else if k < nr + nl {
            format!("tag {}", label((k - nr) as u32))
        } else if k < span_base {
            format!("root rule {ROOT} -> {}", label((k - nr - nl) as u32))
        } else if k < leaf_base {
            let (f, r) = entry(&self.span_rows, k - span_base);
            format!("{} & rule {}", self.feature_name(f), self.rule_name(r))
        } else if k < leaf_base + self.leaf_rows.entries.len() {
            let (row, a) = entry(&self.leaf_rows, k - leaf_base);
            let form = self
                .leaf_index
                .iter()
                .find(|(_, &r)| r == row)
                .map(|(&key, _)| {
                    let f = ((key >> 8) & ((1 << 48) - 1)) as usize;
                    self.forms.get(f).cloned().unwrap_or_default()
                })
                .unwrap_or_default();
            format!("word={form} & tag {}", label(a))
        } else {
            format!("weight {k} (past the grammar's {})", self.n_params)
        }
    }

    pub fn rule_name(&self, r: u32) -> String {
        let r = self.rules[r as usize];
        format!(
            "{} -> {} {}",
            self.labels[r.a as usize], self.labels[r.b as usize], self.labels[r.c as usize]
        )
    }

    pub fn describe(&self) -> String {
        format!(
            "grammar: {} labels ({} tags), {} binary rules, {} word forms, {} weights{}",
            self.labels.len(),
            self.is_tag.iter().filter(|&&t| t).count(),
            self.rules.len(),
            self.forms.len(),
            self.n_params,
            if self.options.split {
                ", split features"
            } else {
                ""
            }
        )
    }
}

/// Rows from (feature, target) pairs: distinct pairs get consecutive weight indices from
/// `next`.
fn rows_of(mut pairs: Vec<(u32, u32)>, n_rows: usize, next: &mut usize) -> Rows {
    pairs.sort_unstable();
    pairs.dedup();
    let mut start = vec![0u32; n_rows + 1];
    for &(f, _) in &pairs {
        start[f as usize + 1] += 1;
    }
    for i in 0..n_rows {
        start[i + 1] += start[i];
    }
    let entries = pairs
        .into_iter()
        .map(|(_, t)| {
            let e = (t, *next as u32);
            *next += 1;
            e
        })
        .collect();
    Rows { start, entries }
}
