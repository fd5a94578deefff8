//! Label-bias data: Lafferty, McCallum & Pereira's (2001, §2) rib/rob construction, generalised
//! to sentences of several such words.
//!
//! Each word belongs to a pair sharing its first and last letters (`rib`/`rob`, `cat`/`cot`, …)
//! and every letter of a word has its own label (`rib1 rib2 rib3`, `rob1 rob2 rob3`). The first
//! letter cannot tell the pair's words apart; the middle letter can, but it comes after a state
//! with a single successor (`rib1` is always followed by `rib2`), whose next-state distribution
//! a per-state normalised model (the MEMM) learns to be certain whatever it observes. One word
//! of each pair is drawn more often (`majority`), so a model that cannot use the middle letter
//! labels every word of the pair as its majority word. A globally normalised model compares the
//! two whole paths and lets the middle letter decide. With probability `noise` the middle letter
//! is a random vowel (it then says nothing, or the wrong thing); between words come 0 to
//! `max_gap` filler tokens (label `O`) whose letters no word uses.

use crate::data::Sequence;
use crate::error::{Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The word pairs, in the order `pairs` takes them: same first and last letters, a different
/// middle letter; no two pairs share a first letter.
pub const PAIRS: [(&str, &str); 6] = [
    ("rib", "rob"),
    ("cat", "cot"),
    ("pin", "pan"),
    ("bed", "bad"),
    ("dig", "dug"),
    ("fun", "fin"),
];

/// The vowels a noisy middle letter is drawn from.
const VOWELS: [char; 5] = ['a', 'e', 'i', 'o', 'u'];

/// Letters of the filler tokens between words (no word has them).
const FILLER: [char; 6] = ['k', 'l', 'm', 's', 'v', 'w'];

/// The label of filler tokens.
pub const FILLER_LABEL: &str = "O";

/// The generator's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabelBias {
    /// Word pairs used (the first `pairs` of [`PAIRS`]).
    pub pairs: usize,
    /// Probability of a pair's majority word (the first of a pair for even pairs, the second
    /// for odd ones, so the majority is not always the same letter).
    pub majority: f64,
    /// Probability that a word's middle letter is a random vowel.
    pub noise: f64,
    /// Words per sequence.
    pub words: usize,
    /// Filler tokens between two words: 0 to `max_gap`, uniformly.
    pub max_gap: usize,
}

impl LabelBias {
    /// Refuses settings outside their ranges.
    pub fn check(&self) -> Result<()> {
        if !(1..=PAIRS.len()).contains(&self.pairs) {
            return Err(Error::invalid(format!(
                "--pairs must be in 1..={}",
                PAIRS.len()
            )));
        }
        if !(0.5..=1.0).contains(&self.majority) {
            return Err(Error::invalid("--majority must be in [0.5, 1]"));
        }
        if !(0.0..=1.0).contains(&self.noise) {
            return Err(Error::invalid("--noise must be in [0, 1]"));
        }
        if !(1..=10_000).contains(&self.words) {
            return Err(Error::invalid("--words must be in 1..=10000"));
        }
        if self.max_gap > 100 {
            return Err(Error::invalid("--max-gap must be at most 100"));
        }
        Ok(())
    }

    /// The longest sequence these settings make, in tokens.
    pub fn max_len(&self) -> usize {
        self.words * 3 + self.words.saturating_sub(1) * self.max_gap
    }

    /// One sequence.
    fn sequence(&self, rng: &mut StdRng) -> Sequence {
        let (mut x, mut y) = (Vec::new(), Vec::<String>::new());
        for w in 0..self.words {
            if w > 0 {
                for _ in 0..rng.random_range(0..=self.max_gap) {
                    x.push(FILLER[rng.random_range(0..FILLER.len())]);
                    y.push(FILLER_LABEL.into());
                }
            }
            let k = rng.random_range(0..self.pairs);
            let majority = rng.random::<f64>() < self.majority;
            // Pair k's majority word is its first word for even k, its second for odd k.
            let first = majority == (k % 2 == 0);
            let word = if first { PAIRS[k].0 } else { PAIRS[k].1 };
            for (i, c) in word.chars().enumerate() {
                let c = if i == 1 && rng.random::<f64>() < self.noise {
                    VOWELS[rng.random_range(0..VOWELS.len())]
                } else {
                    c
                };
                x.push(c);
                y.push(format!("{word}{}", i + 1));
            }
        }
        Sequence {
            columns: x.iter().map(|c| vec![c.to_string()]).collect(),
            labels: y,
            line: 0,
            shape: None,
            attrs: Vec::new(),
            layers: vec![],
        }
    }
}

/// The sequences for `seed`, one at a time (the same sequences, in the same order, for the
/// same seed): `generate` writes them without holding more than one.
pub fn label_bias_stream(g: LabelBias, seed: u64) -> impl Iterator<Item = Sequence> {
    let mut rng = StdRng::seed_from_u64(seed);
    std::iter::repeat_with(move || g.sequence(&mut rng))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LabelBias {
        LabelBias {
            pairs: 4,
            majority: 0.75,
            noise: 0.1,
            words: 4,
            max_gap: 2,
        }
    }

    #[test]
    fn words_are_labelled_letter_by_letter_and_seeded() {
        let g = settings();
        let a: Vec<Sequence> = label_bias_stream(g, 3).take(200).collect();
        let b: Vec<Sequence> = label_bias_stream(g, 3).take(200).collect();
        assert_eq!(
            a.iter().map(|s| &s.labels).collect::<Vec<_>>(),
            b.iter().map(|s| &s.labels).collect::<Vec<_>>()
        );
        let (mut words, mut majority, mut noisy) = (0usize, 0usize, 0usize);
        for s in &a {
            assert!(s.labels.len() <= g.max_len());
            let mut t = 0;
            while t < s.labels.len() {
                let l = &s.labels[t];
                if l == FILLER_LABEL {
                    assert!(FILLER.contains(&s.columns[t][0].chars().next().unwrap()));
                    t += 1;
                    continue;
                }
                // A word: three tokens of one word's labels 1, 2, 3.
                let word = &l[..3];
                let k = PAIRS[..g.pairs]
                    .iter()
                    .position(|p| p.0 == word || p.1 == word)
                    .unwrap();
                for i in 0..3 {
                    assert_eq!(s.labels[t + i], format!("{word}{}", i + 1));
                }
                let w: Vec<char> = word.chars().collect();
                assert_eq!(s.columns[t][0], w[0].to_string());
                assert_eq!(s.columns[t + 2][0], w[2].to_string());
                noisy += (s.columns[t + 1][0] != w[1].to_string()) as usize;
                majority += ((word == PAIRS[k].0) == (k % 2 == 0)) as usize;
                words += 1;
                t += 3;
            }
        }
        assert_eq!(words, 200 * g.words);
        let share = majority as f64 / words as f64;
        assert!((0.7..0.8).contains(&share), "{share}");
        // A noisy middle letter is a random vowel: 4 in 5 differ from the word's own.
        let n = noisy as f64 / words as f64;
        assert!((0.05..0.12).contains(&n), "{n}");
    }

    #[test]
    fn settings_out_of_range_are_refused() {
        for g in [
            LabelBias {
                pairs: 0,
                ..settings()
            },
            LabelBias {
                pairs: 7,
                ..settings()
            },
            LabelBias {
                majority: 0.4,
                ..settings()
            },
            LabelBias {
                noise: 1.5,
                ..settings()
            },
            LabelBias {
                words: 0,
                ..settings()
            },
        ] {
            assert!(g.check().is_err(), "{g:?}");
        }
        assert!(settings().check().is_ok());
    }
}
