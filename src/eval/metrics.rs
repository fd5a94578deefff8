//! Token accuracy, segment precision/recall/F1 exactly as `conlleval` computes them, and
//! per-label token precision/recall/F1.
//!
//! Segment boundaries follow conlleval's `startOfChunk`/`endOfChunk` with the `E`/`S` cases of
//! its later ports, so IOB1, IOB2 and BIOES are scored alike. A tag splits at its first `-` into
//! a chunk tag and a type (`B-NP` → `B`, `NP`); `O` has no type. Sequence ends act as `O`.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prf {
    pub correct: u64,
    pub predicted: u64,
    pub gold: u64,
    /// Percent, as conlleval prints them.
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl Prf {
    /// Scores from counts (EVALB's brackets use it).
    pub fn from_counts(correct: u64, predicted: u64, gold: u64) -> Prf {
        Prf {
            correct,
            predicted,
            gold,
            ..Default::default()
        }
        .finish()
    }

    fn finish(mut self) -> Self {
        self.precision = pct(self.correct, self.predicted);
        self.recall = pct(self.correct, self.gold);
        self.f1 = if self.precision + self.recall > 0.0 {
            2.0 * self.precision * self.recall / (self.precision + self.recall)
        } else {
            0.0
        };
        self
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Metrics {
    pub sequences: usize,
    pub tokens: u64,
    /// Percent of tokens whose predicted label equals the gold label.
    pub token_accuracy: f64,
    /// Overall segment (chunk) scores.
    pub segments: Prf,
    /// Segment scores per segment type.
    pub segment_types: BTreeMap<String, Prf>,
    /// Token scores per label.
    pub labels: BTreeMap<String, Prf>,
    /// Σ log p(y* | x) over sequences whose gold labels the model knows.
    pub log_likelihood: Option<f64>,
    /// The model `log_likelihood` is under ([`crate::eval::likelihood_under`]); empty in
    /// summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log_likelihood_under: String,
    /// Sequences that entered `log_likelihood`.
    pub log_likelihood_sequences: usize,
    /// Their tokens (positions).
    #[serde(default)]
    pub log_likelihood_tokens: u64,
    /// Of those, how many had the Bethe approximation in place of the exact log Z (loopy
    /// graphs too large to enumerate).
    #[serde(default)]
    pub log_likelihood_bethe: usize,
    /// How the predictions were decoded: decoder name → items.
    #[serde(default)]
    pub decoders: BTreeMap<String, usize>,
    /// Wrong tokens per sequence, in file order: what `compare`'s significance tests pair up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequence_errors: Vec<u32>,
    /// Per-item scores the paired tests of [`crate::eval::significance`] need.
    #[serde(default, skip_serializing_if = "Paired::is_empty")]
    pub paired: Paired,
    /// The scores of further label layers by name (a factorial CRF's `pos` accuracy).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub layers: BTreeMap<String, Metrics>,
    /// Items left out of these scores for their length, as EVALB's cut-off leaves sentences
    /// out: a grammar run's test sentences of more than its `max-length` words.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: usize,
}

/// What two runs scored on the same items are compared by (McNemar on tokens and on segments,
/// the paired bootstrap over sequences), and a fingerprint of the gold labels that says
/// whether they were the same items.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Paired {
    /// FNV-1a of the gold labels, sequence by sequence (hex).
    pub gold_digest: String,
    /// Tokens per sequence.
    pub tokens: Vec<u32>,
    /// Per sequence: segments (correct, predicted, gold).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<[u32; 3]>,
    /// Per token in file order: labelled right.
    pub token_right: Bits,
    /// Per gold segment in file order: found with its exact extent and type.
    #[serde(default, skip_serializing_if = "Bits::is_empty")]
    pub segment_found: Bits,
}

impl Paired {
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl Metrics {
    /// Whether the per-item scores agree with the totals they were taken with: a summary edited
    /// or damaged by hand (per-sequence token counts all zero once gave a bootstrap of +36.97
    /// points) is not tested.
    pub fn check_paired(&self) -> std::result::Result<(), String> {
        let p = &self.paired;
        if p.is_empty() {
            return Ok(());
        }
        let tokens: u64 = p.tokens.iter().map(|&t| t as u64).sum();
        let wrong: u64 = self.sequence_errors.iter().map(|&e| e as u64).sum();
        let right = (0..p.token_right.len())
            .filter(|&i| p.token_right.get(i))
            .count() as u64;
        let bad = if p.tokens.len() != self.sequences {
            Some(format!(
                "{} items, {} token counts",
                self.sequences,
                p.tokens.len()
            ))
        } else if tokens != self.tokens || p.token_right.len() as u64 != self.tokens {
            Some(format!(
                "{} tokens, but its items count {tokens} and its token marks {}",
                self.tokens,
                p.token_right.len()
            ))
        } else if !self.sequence_errors.is_empty()
            && (self.sequence_errors.len() != p.tokens.len()
                || right + wrong != tokens
                || self
                    .sequence_errors
                    .iter()
                    .zip(&p.tokens)
                    .any(|(e, t)| e > t))
        {
            Some(format!(
                "{right} tokens marked right and {wrong} counted wrong of {tokens}"
            ))
        } else if !p.segments.is_empty() {
            let sum = |k: usize| p.segments.iter().map(|s| s[k] as u64).sum::<u64>();
            let found = (0..p.segment_found.len())
                .filter(|&i| p.segment_found.get(i))
                .count() as u64;
            let s = &self.segments;
            (p.segments.len() != self.sequences
                || (sum(0), sum(1), sum(2)) != (s.correct, s.predicted, s.gold)
                || p.segment_found.len() as u64 != s.gold
                || found != s.correct)
                .then(|| {
                    format!(
                        "segments {}/{}/{} (correct/predicted/gold), its items say {}/{}/{}",
                        s.correct,
                        s.predicted,
                        s.gold,
                        sum(0),
                        sum(1),
                        sum(2)
                    )
                })
        } else {
            None
        };
        match bad {
            Some(why) => Err(format!(
                "its per-item scores do not add up to its totals ({why}): the summary is damaged"
            )),
            None => Ok(()),
        }
    }
}

/// A bit vector stored as `"len:hex"` (four bits a digit, first bit highest), so a summary of
/// 200,000 tokens stays 50 KB.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bits {
    len: usize,
    words: Vec<u64>,
}

impl Bits {
    pub fn push(&mut self, b: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if b {
            self.words[self.len / 64] |= 1 << (63 - self.len % 64);
        }
        self.len += 1;
    }
    pub fn set(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] |= 1 << (63 - i % 64);
        }
    }
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (63 - i % 64) & 1 == 1
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl serde::Serialize for Bits {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = format!("{}:", self.len);
        for i in 0..self.len.div_ceil(4) {
            let nibble = (self.words[i / 16] >> (60 - 4 * (i % 16))) & 0xf;
            out.push(char::from_digit(nibble as u32, 16).unwrap_or('0'));
        }
        s.serialize_str(&out)
    }
}

impl<'de> serde::Deserialize<'de> for Bits {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let text = String::deserialize(d)?;
        let (len, hex) = text
            .split_once(':')
            .ok_or_else(|| D::Error::custom("bits: expected \"LEN:HEX\""))?;
        let len: usize = len
            .parse()
            .map_err(|_| D::Error::custom("bits: the length is not a number"))?;
        if hex.len() != len.div_ceil(4) {
            return Err(D::Error::custom(format!(
                "bits: {len} bits need {} hex digits, not {}",
                len.div_ceil(4),
                hex.len()
            )));
        }
        let mut words = vec![0u64; len.div_ceil(64)];
        for (i, c) in hex.chars().enumerate() {
            let v = c
                .to_digit(16)
                .ok_or_else(|| D::Error::custom(format!("bits: {c:?} is not a hex digit")))?;
            words[i / 16] |= (v as u64) << (60 - 4 * (i % 16));
        }
        // Bits past the length stay 0 so equal vectors compare equal.
        if !len.is_multiple_of(64) {
            if let Some(w) = words.last_mut() {
                *w &= !0u64 << (64 - len % 64);
            }
        }
        Ok(Bits { len, words })
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Metrics {
    /// ` (under …)` naming the model the held-out log-likelihood is under, or nothing when
    /// the summary does not say.
    pub fn under(&self) -> String {
        if self.log_likelihood_under.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.log_likelihood_under)
        }
    }

    /// Per-token perplexity `exp(−log_likelihood / tokens)` (004 §8.3 reports "negative
    /// log-likelihood, that is, perplexity").
    pub fn perplexity(&self) -> Option<f64> {
        let ll = self.log_likelihood?;
        (self.log_likelihood_tokens > 0).then(|| (-ll / self.log_likelihood_tokens as f64).exp())
    }
}

fn split_tag(label: &str) -> (&str, &str) {
    match label.split_once('-') {
        Some((t, ty)) => (t, ty),
        None => (label, ""),
    }
}

fn end_of_chunk(prev_tag: &str, tag: &str, prev_type: &str, ty: &str) -> bool {
    matches!(prev_tag, "E" | "S" | "]" | "[")
        || (prev_tag == "B" && matches!(tag, "B" | "S" | "O"))
        || (prev_tag == "I" && matches!(tag, "B" | "S" | "O"))
        || (prev_tag != "O" && prev_tag != "." && prev_type != ty)
}

fn start_of_chunk(prev_tag: &str, tag: &str, prev_type: &str, ty: &str) -> bool {
    matches!(tag, "B" | "S" | "[" | "]")
        || (prev_tag == "E" && matches!(tag, "E" | "I"))
        || (prev_tag == "S" && matches!(tag, "E" | "I"))
        || (prev_tag == "O" && matches!(tag, "E" | "I"))
        || (tag != "O" && tag != "." && prev_type != ty)
}

/// Accumulates conlleval counts over sequences.
#[derive(Default)]
pub struct Scorer {
    tokens: u64,
    correct_tags: u64,
    seg: Prf,
    seg_types: BTreeMap<String, Prf>,
    labels: BTreeMap<String, Prf>,
    sequences: usize,
    sequence_errors: Vec<u32>,
    paired: Paired,
    digest: u64,
}

/// The FNV-1a fingerprint of `bytes` in hex: [`Paired::gold_digest`] of data scored item by
/// item elsewhere (a grammar run's trees).
pub fn digest(bytes: &[u8]) -> String {
    format!("{:016x}", fnv(0xcbf2_9ce4_8422_2325, bytes))
}

/// FNV-1a, folded byte by byte.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

impl Scorer {
    pub fn add(&mut self, gold: &[String], pred: &[String]) {
        assert_eq!(gold.len(), pred.len(), "one prediction per token");
        if self.sequences == 0 {
            self.digest = 0xcbf2_9ce4_8422_2325;
        }
        self.sequences += 1;
        self.sequence_errors
            .push(gold.iter().zip(pred).filter(|(g, p)| g != p).count() as u32);
        for g in gold {
            self.digest = fnv(self.digest, g.as_bytes());
            self.digest = fnv(self.digest, b"\x1f");
        }
        self.digest = fnv(self.digest, b"\x1e");
        self.paired.tokens.push(gold.len() as u32);
        for (g, p) in gold.iter().zip(pred) {
            self.paired.token_right.push(g == p);
        }
        let before = (self.seg.correct, self.seg.predicted, self.seg.gold);
        // The gold segment a correct prediction is following, to mark it found when it closes.
        let mut open_gold = 0usize;
        let (mut last_c, mut last_ct, mut last_g, mut last_gt) = ("O", "", "O", "");
        let mut in_correct = false;
        // One extra boundary item (O, O) closes the sequence, as conlleval's blank line does.
        for i in 0..=gold.len() {
            let (c, ct) = if i < gold.len() {
                split_tag(&gold[i])
            } else {
                ("O", "")
            };
            let (g, gt) = if i < pred.len() {
                split_tag(&pred[i])
            } else {
                ("O", "")
            };
            let end_c = end_of_chunk(last_c, c, last_ct, ct);
            let end_g = end_of_chunk(last_g, g, last_gt, gt);
            if in_correct {
                if end_c && end_g && last_gt == last_ct {
                    in_correct = false;
                    self.seg.correct += 1;
                    self.paired.segment_found.set(open_gold);
                    self.seg_types
                        .entry(last_ct.to_string())
                        .or_default()
                        .correct += 1;
                } else if end_c != end_g || gt != ct {
                    in_correct = false;
                }
            }
            let start_c = start_of_chunk(last_c, c, last_ct, ct);
            let start_g = start_of_chunk(last_g, g, last_gt, gt);
            if start_c && start_g && gt == ct {
                in_correct = true;
                open_gold = self.seg.gold as usize;
            }
            if start_c {
                self.paired.segment_found.push(false);
                self.seg.gold += 1;
                self.seg_types.entry(ct.to_string()).or_default().gold += 1;
            }
            if start_g {
                self.seg.predicted += 1;
                self.seg_types.entry(gt.to_string()).or_default().predicted += 1;
            }
            if i < gold.len() {
                self.tokens += 1;
                if gold[i] == pred[i] {
                    self.correct_tags += 1;
                    self.labels.entry(gold[i].clone()).or_default().correct += 1;
                }
                self.labels.entry(gold[i].clone()).or_default().gold += 1;
                self.labels.entry(pred[i].clone()).or_default().predicted += 1;
            }
            (last_c, last_ct, last_g, last_gt) = (c, ct, g, gt);
        }
        self.paired.segments.push([
            (self.seg.correct - before.0) as u32,
            (self.seg.predicted - before.1) as u32,
            (self.seg.gold - before.2) as u32,
        ]);
        // The boundary item is (O, O), which closes every chunk of IOB/IOBES tags; tags of
        // neither kind (`B.5`, `-`) can leave a chunk open past it. conlleval.pl then carries
        // it into the next sentence; here it ends with the sentence, uncounted.
    }

    pub fn finish(self) -> Metrics {
        let has_segments = self.seg.gold + self.seg.predicted > 0;
        Metrics {
            sequences: self.sequences,
            tokens: self.tokens,
            token_accuracy: pct(self.correct_tags, self.tokens),
            segments: self.seg.finish(),
            segment_types: self
                .seg_types
                .into_iter()
                .map(|(k, v)| (k, v.finish()))
                .collect(),
            labels: self
                .labels
                .into_iter()
                .map(|(k, v)| (k, v.finish()))
                .collect(),
            log_likelihood: None,
            log_likelihood_under: String::new(),
            log_likelihood_sequences: 0,
            log_likelihood_tokens: 0,
            log_likelihood_bethe: 0,
            decoders: BTreeMap::new(),
            sequence_errors: self.sequence_errors,
            paired: Paired {
                gold_digest: format!("{:016x}", self.digest),
                // Sequences without a segment need no segment counts.
                segments: if has_segments {
                    self.paired.segments
                } else {
                    vec![]
                },
                ..self.paired
            },
            layers: BTreeMap::new(),
            skipped: 0,
        }
    }
}

/// Scores predicted label sequences against gold ones.
pub fn score(gold: &[Vec<String>], pred: &[Vec<String>]) -> Metrics {
    let mut s = Scorer::default();
    for (g, p) in gold.iter().zip(pred) {
        s.add(g, p);
    }
    s.finish()
}

impl Metrics {
    /// CRFsuite's macro-averaged token precision, recall and F1 (`tag -qt`), in percent: each
    /// label's scores (0 where it was never predicted, or never gold) averaged over the labels
    /// of the gold and the predictions. (CRFsuite divides by every label its model knows, which
    /// differs when a label of the model is in neither.) `None` without labels.
    pub fn macro_prf(&self) -> Option<(f64, f64, f64)> {
        let n = self.labels.len();
        (n > 0).then(|| {
            let sum = |f: fn(&Prf) -> f64| self.labels.values().map(f).sum::<f64>() / n as f64;
            (sum(|p| p.precision), sum(|p| p.recall), sum(|p| p.f1))
        })
    }

    /// CRFsuite's instance accuracy: the sequences labelled right at every token, and how many
    /// were scored. `None` when the per-sequence errors were not kept.
    pub fn instance_accuracy(&self) -> Option<(usize, usize)> {
        (!self.sequence_errors.is_empty()).then(|| {
            (
                self.sequence_errors.iter().filter(|&&e| e == 0).count(),
                self.sequence_errors.len(),
            )
        })
    }

    /// A human-readable report in conlleval's spirit.
    /// Segment F1, or `None` when neither gold nor predicted labels form segments (labels
    /// without B-/I-/E-/S- prefixes, e.g. per-field IO labels).
    pub fn segment_f1(&self) -> Option<f64> {
        (self.segments.gold > 0 || self.segments.predicted > 0).then_some(self.segments.f1)
    }

    pub fn report(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "processed {} tokens in {} sequences with {} segments; found: {} segments; correct: {}.",
            self.tokens, self.sequences, self.segments.gold, self.segments.predicted, self.segments.correct
        );
        if self.segments.gold == 0 && self.segments.predicted == 0 {
            let _ = writeln!(
                o,
                "accuracy: {:6.2}%; no segments (the labels carry no B-/I-/E-/S- chunk prefixes)",
                self.token_accuracy
            );
        } else {
            let _ = writeln!(
                o,
                "accuracy: {:6.2}%; precision: {:6.2}%; recall: {:6.2}%; FB1: {:6.2}",
                self.token_accuracy,
                self.segments.precision,
                self.segments.recall,
                self.segments.f1
            );
        }
        if let (Some((p, r, f)), Some((right, n))) = (self.macro_prf(), self.instance_accuracy()) {
            let _ = writeln!(
                o,
                "macro-average over {} labels: precision: {p:6.2}%; recall: {r:6.2}%; F1: {f:6.2}; \
                 instance accuracy: {right} / {n} ({:.2}%)",
                self.labels.len(),
                100.0 * right as f64 / n.max(1) as f64
            );
        }
        if let Some(ll) = self.log_likelihood {
            let _ = writeln!(
                o,
                "held-out log-likelihood{}: {ll:.4} over {} sequences ({:.4} per sequence){}",
                self.under(),
                self.log_likelihood_sequences,
                ll / self.log_likelihood_sequences.max(1) as f64,
                if self.log_likelihood_bethe > 0 {
                    format!("; Bethe log Z for {}", self.log_likelihood_bethe)
                } else {
                    String::new()
                }
            );
        }
        if self.skipped > 0 {
            let _ = writeln!(o, "skipped for their length: {}", self.skipped);
        }
        if !self.decoders.is_empty() {
            let d: Vec<String> = self
                .decoders
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            let _ = writeln!(o, "decoded by: {}", d.join(", "));
        }
        for (name, m) in &self.layers {
            let _ = writeln!(
                o,
                "layer {name}: accuracy {:6.2}% over {} tokens",
                m.token_accuracy, m.tokens
            );
        }
        let _ = writeln!(o, "\nsegments by type:");
        for (k, v) in &self.segment_types {
            let name = if k.is_empty() { "(none)" } else { k };
            let _ = writeln!(
                o,
                "{name:>17}: precision: {:6.2}%; recall: {:6.2}%; FB1: {:6.2}  {}",
                v.precision, v.recall, v.f1, v.predicted
            );
        }
        let _ = writeln!(o, "\ntokens by label:");
        for (k, v) in &self.labels {
            let _ = writeln!(
                o,
                "{k:>17}: precision: {:6.2}%; recall: {:6.2}%; F1: {:6.2}  (gold {}, predicted {})",
                v.precision, v.recall, v.f1, v.gold, v.predicted
            );
        }
        o
    }
}
