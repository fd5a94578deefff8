//! Readers, feature templates, the feature dictionary and synthetic generators.

pub mod conll;
pub mod crfsuite;
pub mod features;
pub mod grid;
pub mod ner;
pub mod samples;
pub mod seminars;
pub mod synth;
pub mod synth_label_bias;
pub mod synth_loopy;
pub mod synth_treebank;
pub mod template;
pub mod treebank;
pub mod uai;

pub use conll::{read_conll, Corpus, Sequence};

/// What `info` reports of a data set, gathered item by item (see [`Stats::add`]) so that a
/// streamed file is never held whole.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub path: String,
    pub sequences: usize,
    pub tokens: usize,
    /// Columns per token line, label included.
    pub n_columns: usize,
    /// Observation columns of the first token, and label layers beside the primary one (a
    /// factorial CRF's POS tags), of the first item.
    pub obs_columns: usize,
    pub layers: usize,
    pub labels: std::collections::BTreeMap<String, usize>,
}

impl Stats {
    pub fn add(&mut self, s: &Sequence) {
        if self.sequences == 0 {
            self.layers = s.layers.len();
            self.obs_columns = s.columns.first().map_or(0, |c| c.len());
        }
        self.sequences += 1;
        self.tokens += s.len();
        for l in &s.labels {
            match self.labels.get_mut(l.as_str()) {
                Some(n) => *n += 1,
                None => {
                    self.labels.insert(l.clone(), 1);
                }
            }
        }
    }
    pub fn of(c: &Corpus) -> Stats {
        let mut st = Stats {
            path: c.path.clone(),
            n_columns: c.n_columns,
            ..Default::default()
        };
        for s in &c.sequences {
            st.add(s);
        }
        st
    }
}

/// Reads labelled data: a directory of seminar announcements, a CRFsuite file (`.crfsuite`),
/// or a CoNLL column file.
pub fn read_corpus(path: &std::path::Path) -> crate::error::Result<Corpus> {
    if path.is_dir() {
        seminars::read_dir(path)
    } else if crfsuite::is_crfsuite(path) {
        crfsuite::read_crfsuite(path)
    } else {
        read_conll(path)
    }
}
/// Writes sequences in the format they were read in: CRFsuite's when they carry attributes,
/// CoNLL columns otherwise.
pub fn format_corpus(seqs: &[Sequence]) -> String {
    if seqs.iter().any(|s| !s.attrs.is_empty()) {
        crfsuite::format_crfsuite(seqs)
    } else {
        conll::format_conll(seqs, &[])
    }
}

pub use features::FeatureDict;
pub use template::FeatureTemplate;

/// A seeded random permutation of `0..n` (Fisher–Yates), for reproducible splits.
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.random_range(0..=i);
        v.swap(i, j);
    }
    v
}

/// Derived columns of a word for word/affix/shape templates: lowercase, shape, prefixes and
/// suffixes of length 1–3 (`_` where the word is shorter).
pub fn word_columns(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let pre = |n: usize| {
        if chars.len() >= n {
            chars[..n].iter().collect()
        } else {
            "_".to_string()
        }
    };
    let suf = |n: usize| {
        if chars.len() >= n {
            chars[chars.len() - n..].iter().collect()
        } else {
            "_".to_string()
        }
    };
    vec![
        word.to_lowercase(),
        seminars::shape(word),
        pre(1),
        pre(2),
        pre(3),
        suf(1),
        suf(2),
        suf(3),
    ]
}
