//! EVALB itself: gold and test aligned sentence by sentence (one tree a line), each sentence
//! read as `evalb.c` reads a line (bracket by bracket, no single root needed), scored or counted
//! as an error or a skip, and the summary for all sentences and for those of at most 40 words,
//! as `evalb.c` prints them. The files are streamed: one sentence of each file is held at a
//! time ([`evalb_stream`]), so memory is bounded by the longest sentence, not the files.

use super::evalb::*;
use crate::data::treebank::{MAX_TREE_DEPTH, MAX_TREE_WORDS};
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use std::io::{BufRead, Read};
use std::path::Path;

/// A sentence's status in EVALB's table (evalb.c's `Status`: 0 OK, 1 error, 2 skip).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(into = "u8")]
pub enum Status {
    Ok,
    /// Unbalanced brackets, text outside a bracket, or words that differ in number or form.
    Error,
    /// No test words: an empty test line (a failed parse), or only deleted words.
    Skip,
}

impl From<Status> for u8 {
    fn from(s: Status) -> u8 {
        match s {
            Status::Ok => 0,
            Status::Error => 1,
            Status::Skip => 2,
        }
    }
}

/// One row of EVALB's per-sentence table.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SentenceResult {
    /// The gold line's number (EVALB's ID); in a multi-line `.mrg` gold file, the tree's
    /// number.
    pub id: usize,
    /// The gold words but `-NONE-` (EVALB's `Len.`, which decides the cut-off section).
    pub length: usize,
    pub status: Status,
    /// Why an error or a skip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub matched: usize,
    pub gold_brackets: usize,
    pub test_brackets: usize,
    /// Test brackets that cross a gold bracket.
    pub crossing: usize,
    /// Gold words left after the deleted labels (EVALB's `Words`).
    pub words: usize,
    pub correct_tags: usize,
}

impl SentenceResult {
    pub fn recall(&self) -> f64 {
        pct(self.matched, self.gold_brackets)
    }
    pub fn precision(&self) -> f64 {
        pct(self.matched, self.test_brackets)
    }
    pub fn tagging(&self) -> f64 {
        pct(self.correct_tags, self.words)
    }

    /// The row as evalb.c's `individual_result` prints it.
    pub fn row(&self) -> String {
        format!(
            "{:4}  {:3}    {}  {:6.2} {:6.2}   {:3}    {:3}  {:3}    {:3}   {:4}  {:4}   {:6.2}\n",
            self.id,
            self.length,
            u8::from(self.status),
            self.recall(),
            self.precision(),
            self.matched,
            self.gold_brackets,
            self.test_brackets,
            self.crossing,
            self.words,
            self.correct_tags,
            self.tagging()
        )
    }
}

/// One section of EVALB's summary (`-- All --` or `-- len<=40 --`): sentence counts, and
/// bracket, crossing and tag totals over the valid sentences.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EvalbSummary {
    pub sentences: usize,
    pub errors: usize,
    pub skipped: usize,
    pub gold_brackets: usize,
    pub test_brackets: usize,
    pub matched: usize,
    /// Valid sentences whose brackets all match (EVALB's complete match).
    pub complete: usize,
    pub crossing: usize,
    pub no_crossing: usize,
    pub two_or_less_crossing: usize,
    pub words: usize,
    pub correct_tags: usize,
}

impl EvalbSummary {
    /// evalb.c's `individual_result`: every sentence counts; only valid ones add counts.
    fn add(&mut self, r: &SentenceResult) {
        self.sentences += 1;
        match r.status {
            Status::Error => self.errors += 1,
            Status::Skip => self.skipped += 1,
            Status::Ok => {
                self.gold_brackets += r.gold_brackets;
                self.test_brackets += r.test_brackets;
                self.matched += r.matched;
                self.complete +=
                    usize::from(r.gold_brackets == r.test_brackets && r.test_brackets == r.matched);
                self.words += r.words;
                self.crossing += r.crossing;
                self.no_crossing += usize::from(r.crossing == 0);
                self.two_or_less_crossing += usize::from(r.crossing <= 2);
                self.correct_tags += r.correct_tags;
            }
        }
    }
    pub fn valid(&self) -> usize {
        self.sentences - self.errors - self.skipped
    }
    pub fn recall(&self) -> f64 {
        pct(self.matched, self.gold_brackets)
    }
    pub fn precision(&self) -> f64 {
        pct(self.matched, self.test_brackets)
    }
    /// 0 where evalb.c prints `nan` (no bracket matched).
    pub fn fmeasure(&self) -> f64 {
        f_measure(self.precision(), self.recall())
    }
    pub fn complete_match(&self) -> f64 {
        pct(self.complete, self.valid())
    }
    pub fn average_crossing(&self) -> f64 {
        pct(self.crossing, self.valid()) / 100.0
    }
    pub fn no_crossing_pct(&self) -> f64 {
        pct(self.no_crossing, self.valid())
    }
    pub fn two_or_less_crossing_pct(&self) -> f64 {
        pct(self.two_or_less_crossing, self.valid())
    }
    pub fn tagging(&self) -> f64 {
        pct(self.correct_tags, self.words)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "sentences": self.sentences,
            "errors": self.errors,
            "skipped": self.skipped,
            "valid": self.valid(),
            "gold_brackets": self.gold_brackets,
            "test_brackets": self.test_brackets,
            "matched": self.matched,
            "recall": self.recall(),
            "precision": self.precision(),
            "fmeasure": self.fmeasure(),
            "complete_match": self.complete_match(),
            "average_crossing": self.average_crossing(),
            "no_crossing": self.no_crossing_pct(),
            "two_or_less_crossing": self.two_or_less_crossing_pct(),
            "words": self.words,
            "correct_tags": self.correct_tags,
            "tagging_accuracy": self.tagging(),
        })
    }

    /// The section as evalb.c's `print_total` prints it.
    fn write(&self, title: &str, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(out, "\n-- {title} --");
        let rows: [(&str, String); 12] = [
            ("Number of sentence", format!("{:6}", self.sentences)),
            ("Number of Error sentence", format!("{:6}", self.errors)),
            ("Number of Skip  sentence", format!("{:6}", self.skipped)),
            ("Number of Valid sentence", format!("{:6}", self.valid())),
            ("Bracketing Recall", format!("{:6.2}", self.recall())),
            ("Bracketing Precision", format!("{:6.2}", self.precision())),
            ("Bracketing FMeasure", format!("{:6.2}", self.fmeasure())),
            ("Complete match", format!("{:6.2}", self.complete_match())),
            (
                "Average crossing",
                format!("{:6.2}", self.average_crossing()),
            ),
            ("No crossing", format!("{:6.2}", self.no_crossing_pct())),
            (
                "2 or less crossing",
                format!("{:6.2}", self.two_or_less_crossing_pct()),
            ),
            ("Tagging accuracy", format!("{:6.2}", self.tagging())),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "{k:<26}= {v}");
        }
    }
}

/// EVALB's summary of a whole comparison: both sections, and the warning when the files differ
/// in length.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalbTotals {
    pub all: EvalbSummary,
    /// Sentences of at most `cut_len` words (EVALB's `-- len<=40 --`).
    pub short: EvalbSummary,
    pub cut_len: usize,
    /// evalb.c's "Number of lines unmatch" warning when the files differ in length.
    pub line_mismatch: Option<String>,
}

impl EvalbTotals {
    /// EVALB's table head, printed before the first row.
    pub fn header() -> &'static str {
        concat!(
            "  Sent.                        Matched  Bracket   Cross        Correct Tag\n",
            " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n",
            "============================================================================\n"
        )
    }

    /// What follows the last row: the table's totals and the summary.
    pub fn footer(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        o.push_str(
            "============================================================================\n",
        );
        let a = &self.all;
        if a.gold_brackets > 0 && a.test_brackets > 0 {
            let _ = write!(
                o,
                "                {:6.2} {:6.2} {:6} {:5} {:5}  {:5}",
                a.recall(),
                a.precision(),
                a.matched,
                a.gold_brackets,
                a.test_brackets,
                a.crossing
            );
        }
        let _ = writeln!(
            o,
            "  {:5} {:5}   {:6.2}",
            a.words,
            a.correct_tags,
            a.tagging()
        );
        o.push_str("=== Summary ===\n");
        self.all.write("All", &mut o);
        self.short.write(&format!("len<={}", self.cut_len), &mut o);
        o
    }

    /// The summary's fields in JSON (the sentences are not here: a stream writes them first).
    pub fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("all".into(), self.all.to_json());
        m.insert("short".into(), self.short.to_json());
        m.insert("cut_len".into(), self.cut_len.into());
        m.insert(
            "line_mismatch".into(),
            self.line_mismatch
                .clone()
                .map_or(serde_json::Value::Null, Into::into),
        );
        m
    }
}

/// EVALB's scores held in memory: the per-sentence table and the two summary sections (for
/// small inputs and tests; the `evalb` command streams with [`evalb_stream`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EvalbReport {
    pub sentences: Vec<SentenceResult>,
    pub all: EvalbSummary,
    /// Sentences of at most `cut_len` words (EVALB's `-- len<=40 --`).
    pub short: EvalbSummary,
    pub cut_len: usize,
    /// evalb.c's "Number of lines unmatch" warning when the files differ in length.
    pub line_mismatch: Option<String>,
}

impl EvalbReport {
    fn totals(&self) -> EvalbTotals {
        EvalbTotals {
            all: self.all,
            short: self.short,
            cut_len: self.cut_len,
            line_mismatch: self.line_mismatch.clone(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut m = self.totals().json_fields();
        m.insert(
            "sentences".into(),
            serde_json::to_value(&self.sentences).unwrap_or_default(),
        );
        m.into()
    }

    /// EVALB's output: the per-sentence table, its totals and the summary.
    pub fn text(&self) -> String {
        let mut o = String::from(EvalbTotals::header());
        for r in &self.sentences {
            o.push_str(&r.row());
        }
        o + &self.totals().footer()
    }
}

/// One sentence's text as a file holds it: its ID (the line number, or in a multi-line `.mrg`
/// gold file the tree's number), the file and line it starts at (for messages), and its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct SentenceText {
    pub id: usize,
    pub file: std::sync::Arc<str>,
    pub line: usize,
    pub text: Vec<u8>,
    pub layout: Layout,
}

/// How a file holds its sentences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One sentence a line, EVALB's format: every line is a sentence, an empty one too.
    Lines,
    /// Trees over several lines (a `.mrg` file): a sentence ends where its brackets close.
    /// An unlabelled root (`( (S …))`) reads as `TOP`, as the treebank reader has it.
    Trees,
}

/// The sentences of a file, one at a time: only the sentence being read is held.
pub struct SentenceReader<R> {
    r: R,
    file: std::sync::Arc<str>,
    layout: Layout,
    /// Lines read so far.
    line: usize,
    sentences: usize,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> SentenceReader<R> {
    pub fn new(r: R, file: &str, layout: Layout) -> Self {
        SentenceReader {
            r,
            file: file.into(),
            layout,
            line: 0,
            sentences: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    /// The next line without its `\n`, or `None` at the end.
    fn next_line(&mut self) -> Result<Option<()>> {
        self.buf.clear();
        let n = self
            .r
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::file(self.file.to_string(), e.to_string()))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        Ok(Some(()))
    }

    fn read(&mut self) -> Result<Option<SentenceText>> {
        match self.layout {
            Layout::Lines => {
                if self.next_line()?.is_none() {
                    return Ok(None);
                }
                self.sentences += 1;
                Ok(Some(SentenceText {
                    id: self.line,
                    file: self.file.clone(),
                    line: self.line,
                    text: std::mem::take(&mut self.buf),
                    layout: Layout::Lines,
                }))
            }
            Layout::Trees => {
                let mut text = Vec::new();
                let mut depth = 0usize;
                let mut start = 0;
                while self.next_line()?.is_some() {
                    if text.is_empty() && self.buf.iter().all(|&b| is_space(b)) {
                        continue;
                    }
                    if text.is_empty() {
                        start = self.line;
                    } else {
                        text.push(b'\n');
                    }
                    text.extend_from_slice(&self.buf);
                    for &b in &self.buf {
                        match b {
                            b'(' => depth += 1,
                            // An extra ')' is the reader's error to report, not a boundary.
                            b')' => depth = depth.saturating_sub(1),
                            _ => {}
                        }
                    }
                    if depth == 0 {
                        break;
                    }
                }
                if text.is_empty() {
                    return Ok(None);
                }
                self.sentences += 1;
                Ok(Some(SentenceText {
                    id: self.sentences,
                    file: self.file.clone(),
                    line: start,
                    text,
                    layout: Layout::Trees,
                }))
            }
        }
    }
}

impl<R: BufRead> Iterator for SentenceReader<R> {
    type Item = Result<SentenceText>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.read().transpose();
        self.done = !matches!(r, Some(Ok(_)));
        r
    }
}

/// How a gold file holds its sentences, from its lines (read once, nothing kept): one tree a
/// line (EVALB's format) when every line's brackets balance; trees over several lines (a `.mrg`
/// file) when they do not but the whole file's do; otherwise one a line, the unbalanced lines
/// being error sentences.
pub fn gold_layout<R: BufRead>(mut r: R, file: &str) -> Result<Layout> {
    let (mut lines_balance, mut file_balances, mut depth) = (true, true, 0i64);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::file(file.to_string(), e.to_string()))?;
        if n == 0 {
            break;
        }
        let (mut d, mut low) = (0i64, 0i64);
        for &b in &buf {
            match b {
                b'(' => d += 1,
                b')' => d -= 1,
                _ => continue,
            }
            low = low.min(d);
        }
        lines_balance &= d == 0 && low == 0;
        file_balances &= depth + low >= 0;
        depth += d;
    }
    file_balances &= depth == 0;
    Ok(if !lines_balance && file_balances {
        Layout::Trees
    } else {
        Layout::Lines
    })
}

/// evalb.c's `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// evalb.c's `is_terminator`: what ends a label or a word.
fn is_terminator(b: u8) -> bool {
    is_space(b) || b == b'(' || b == b')'
}

/// A bracket as evalb.c's `read_line` records it: its label, first word and end (`None` while
/// unclosed: evalb.c leaves such an end at -1, where it crosses nothing and matches only
/// another unclosed bracket of the same start and label).
struct RawBracket<'a> {
    label: &'a [u8],
    start: usize,
    end: Option<usize>,
}

/// A sentence's text as evalb.c's `read_line` reads it: the words left after the deleted
/// labels with their tags, the brackets over them, the length for the cut-off, and the reading
/// errors (which make the sentence an error but, as in evalb.c, do not stop its scoring).
struct LineRead<'a> {
    terminals: Vec<(&'a [u8], &'a [u8])>,
    brackets: Vec<RawBracket<'a>>,
    length: usize,
    errors: Vec<String>,
    /// Text evalb.c cannot step over (a word outside a word's bracket): evalb.c repeats the
    /// error until it gives up on the whole file; the sentence is an error without counts.
    stuck: bool,
}

/// evalb.c's `read_line` on one sentence's bytes: a `(` opens a word's bracket when a word
/// and `)` follow its label, otherwise a bracket over the words read until its `)`; no root is
/// needed, so a line is whatever brackets it holds. In a `.mrg` gold file (`Layout::Trees`)
/// an unlabelled root reads as `TOP`.
fn read_line<'a>(s: &'a [u8], p: &EvalbParams, layout: Layout) -> LineRead<'a> {
    let mut r = LineRead {
        terminals: Vec::new(),
        brackets: Vec::new(),
        length: 0,
        errors: Vec::new(),
        stuck: false,
    };
    let mut open: Vec<usize> = Vec::new();
    let (mut i, mut words) = (0, 0usize);
    while i < s.len() {
        let c = s[i];
        if is_space(c) {
            i += 1;
        } else if c == b'(' {
            // The bounds every tree reader keeps (evalb.c's own are 200 words and brackets).
            if open.len() >= MAX_TREE_DEPTH {
                r.errors.push(format!(
                    "deeper than {MAX_TREE_DEPTH} brackets (MAX_TREE_DEPTH)"
                ));
                r.stuck = true;
                break;
            }
            i += 1;
            let from = i;
            while i < s.len() && !is_terminator(s[i]) {
                i += 1;
            }
            let label = &s[from..i];
            if i < s.len() && is_space(s[i]) {
                let mut q = i;
                while q < s.len() && is_space(s[q]) {
                    q += 1;
                }
                let from = q;
                while q < s.len() && !is_terminator(s[q]) {
                    q += 1;
                }
                let word = &s[from..q];
                match s.get(q) {
                    Some(b')') => {
                        words += 1;
                        if words > MAX_TREE_WORDS {
                            r.errors
                                .push(format!("more than {MAX_TREE_WORDS} words (MAX_TREE_WORDS)"));
                            r.stuck = true;
                            break;
                        }
                        if !is_listed(&p.delete_for_length, label) {
                            r.length += 1;
                        }
                        if !is_listed(&p.delete_labels, label) {
                            r.terminals.push((word, label));
                        }
                        i = q + 1;
                        continue;
                    }
                    Some(b'(') => {}
                    // evalb.c reports it and reads on from after the label: a word there
                    // is text it cannot step over (below).
                    _ => r.errors.push("More than two elements in a bracket".into()),
                }
            }
            let label = if label.is_empty() && open.is_empty() && layout == Layout::Trees {
                b"TOP".as_slice()
            } else {
                label
            };
            open.push(r.brackets.len());
            r.brackets.push(RawBracket {
                label,
                start: r.terminals.len(),
                end: None,
            });
        } else if c == b')' {
            match open.pop() {
                Some(b) => r.brackets[b].end = Some(r.terminals.len()),
                None => {
                    if !r.errors.iter().any(|e| e == CLOSE) {
                        r.errors.push(CLOSE.into());
                    }
                }
            }
            i += 1;
        } else {
            r.errors
                .push("Reading sentence (text outside a word's bracket)".into());
            r.stuck = true;
            break;
        }
    }
    if !open.is_empty() && !r.stuck {
        r.errors
            .push("Bracketing is unbalanced (too many open bracket)".into());
    }
    r
}

const CLOSE: &str = "Bracketing is unbalanced (too many close bracket)";

/// evalb.c's `is_deletelabel` and `is_deletelabel_for_length`: an exact match.
fn is_listed(list: &[String], label: &[u8]) -> bool {
    list.iter().any(|d| d.as_bytes() == label)
}

/// evalb.c's `label_comp`: equal, or an equivalent pair (either way round).
fn same_label(p: &EvalbParams, a: &[u8], b: &[u8]) -> bool {
    a == b
        || p.equal_labels.iter().any(|(x, y)| {
            (x.as_bytes() == a && y.as_bytes() == b) || (x.as_bytes() == b && y.as_bytes() == a)
        })
}

/// evalb.c's `massage_data` for one side: the brackets that count (not empty, label cut at
/// its first `-` or `=` and not deleted), as (label, start, end).
fn counted<'a>(bs: &[RawBracket<'a>], p: &EvalbParams) -> Vec<(&'a [u8], usize, Option<usize>)> {
    bs.iter()
        .filter(|b| b.end != Some(b.start))
        .filter_map(|b| {
            let cut = b.label.iter().position(|&c| c == b'-' || c == b'=');
            let label = &b.label[..cut.unwrap_or(b.label.len())];
            let deleted = p
                .delete_labels
                .iter()
                .any(|d| same_label(p, label, d.as_bytes()));
            (!deleted).then_some((label, b.start, b.end))
        })
        .collect()
}

/// Scores sentences one pair at a time, keeping only the two summary sections.
pub struct EvalbScorer {
    params: EvalbParams,
    all: EvalbSummary,
    short: EvalbSummary,
    cut_len: usize,
}

impl EvalbScorer {
    pub fn new(params: EvalbParams, cut_len: usize) -> Self {
        EvalbScorer {
            params,
            all: EvalbSummary::default(),
            short: EvalbSummary::default(),
            cut_len,
        }
    }

    /// Scores one gold sentence against its test line (evalb.c's `calc_result`) and adds it
    /// to the summary; the row is EVALB's, its ID the gold sentence's.
    pub fn score(&mut self, gold: &SentenceText, test: &SentenceText) -> SentenceResult {
        let r = sentence(gold, test, &self.params);
        self.all.add(&r);
        if r.length <= self.cut_len {
            self.short.add(&r);
        }
        r
    }

    pub fn totals(&self, line_mismatch: Option<String>) -> EvalbTotals {
        EvalbTotals {
            all: self.all,
            short: self.short,
            cut_len: self.cut_len,
            line_mismatch,
        }
    }
}

/// One sentence, in evalb.c's order (`read_line`, then `calc_result`):
/// - a reading error (unbalanced brackets) makes the sentence an error, but it is still
///   scored, and its row shows the counts, as evalb.c prints them (the summary leaves them out);
/// - no test words after the deleted labels (an empty line: a failed parse) is a skip
///   (status 2; `if(wn2==0) Status = 2`), whatever the reading errors;
/// - a different number of words, or a different word, is an error with no counts ("Length
///   unmatch", "Words unmatch"; COLLINS.prm has no QUOTE_LABEL, so no quote is reinserted);
/// - otherwise brackets are matched as a multiset, crossing brackets counted (a test bracket
///   crossing any gold one counts once), and tags compared.
fn sentence(gold: &SentenceText, test: &SentenceText, p: &EvalbParams) -> SentenceResult {
    let g = read_line(&gold.text, p, gold.layout);
    let t = read_line(&test.text, p, test.layout);
    let mut r = SentenceResult {
        id: gold.id,
        length: g.length,
        status: Status::Ok,
        reason: None,
        matched: 0,
        gold_brackets: 0,
        test_brackets: 0,
        crossing: 0,
        words: 0,
        correct_tags: 0,
    };
    let mut why: Vec<String> = Vec::new();
    for (side, s, read) in [("gold", gold, &g), ("test", test, &t)] {
        for e in &read.errors {
            why.push(format!("{side}: {}:{}: {e}", s.file, s.line));
        }
    }
    let done = |mut r: SentenceResult, status: Status, why: Vec<String>| {
        r.status = status;
        r.reason = (!why.is_empty()).then(|| why.join("; "));
        r
    };
    if g.stuck || t.stuck {
        return done(r, Status::Error, why);
    }
    if t.terminals.is_empty() {
        why.push(if test.text.iter().all(|&b| is_space(b)) {
            "empty test line".into()
        } else {
            "no test words".into()
        });
        return done(r, Status::Skip, why);
    }
    let status = if why.is_empty() {
        Status::Ok
    } else {
        Status::Error
    };
    if g.terminals.len() != t.terminals.len() {
        why.push(format!(
            "Length unmatch ({}|{})",
            g.terminals.len(),
            t.terminals.len()
        ));
        return done(r, Status::Error, why);
    }
    if let Some((a, b)) = g
        .terminals
        .iter()
        .zip(&t.terminals)
        .find(|(a, b)| a.0 != b.0)
    {
        why.push(format!(
            "Words unmatch ({}|{})",
            String::from_utf8_lossy(a.0),
            String::from_utf8_lossy(b.0)
        ));
        return done(r, Status::Error, why);
    }
    let (gb, tb) = (counted(&g.brackets, p), counted(&t.brackets, p));
    r.matched = matched_raw(&gb, &tb, p);
    r.gold_brackets = gb.len();
    r.test_brackets = tb.len();
    let spans = |bs: &[(&[u8], usize, Option<usize>)]| -> Vec<(usize, usize)> {
        bs.iter()
            .filter_map(|&(_, s, e)| e.map(|e| (s, e)))
            .collect()
    };
    r.crossing = crossing(&spans(&gb), &spans(&tb), g.terminals.len());
    r.words = g.terminals.len();
    r.correct_tags = g
        .terminals
        .iter()
        .zip(&t.terminals)
        .filter(|(a, b)| same_label(p, a.1, b.1))
        .count();
    done(r, status, why)
}

/// Gold brackets matched by test ones, each test bracket used once: per span, a gold bracket
/// takes the first unused test bracket of an equal label (evalb.c's loop), which matches, per
/// span and label class, the smaller of the two counts.
fn matched_raw(
    g: &[(&[u8], usize, Option<usize>)],
    t: &[(&[u8], usize, Option<usize>)],
    p: &EvalbParams,
) -> usize {
    let class = |l| match p.equal_labels.iter().find(|(_, b)| b.as_bytes() == l) {
        Some((a, _)) => a.as_bytes(),
        None => l,
    };
    let mut left: FxHashMap<(&[u8], usize, Option<usize>), usize> = FxHashMap::default();
    for &(l, s, e) in t {
        *left.entry((class(l), s, e)).or_default() += 1;
    }
    g.iter()
        .filter(|&&(l, s, e)| match left.get_mut(&(class(l), s, e)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

/// EVALB over two streams of sentences: the n-th gold sentence against the n-th test line,
/// each row given to `row` as it is scored, and the summary at the end. Only one sentence of
/// each stream is held at a time. When the streams differ in length, evalb.c warns and scores
/// the sentences both have: so do we (`line_mismatch`, after counting the rest). evalb.c stops
/// after MAX_ERROR errors, and on text it cannot step over; we go on and report every sentence.
pub fn evalb_stream<G, T>(
    gold: G,
    test: T,
    p: &EvalbParams,
    cut_len: usize,
    mut row: impl FnMut(&SentenceResult) -> Result<()>,
) -> Result<EvalbTotals>
where
    G: IntoIterator<Item = Result<SentenceText>>,
    T: IntoIterator<Item = Result<SentenceText>>,
{
    let mut scorer = EvalbScorer::new(p.clone(), cut_len);
    let (mut gold, mut test) = (gold.into_iter(), test.into_iter());
    let mut both = 0usize;
    loop {
        let g = gold.next().transpose()?;
        let t = test.next().transpose()?;
        match (g, t) {
            (Some(g), Some(t)) => {
                both += 1;
                row(&scorer.score(&g, &t))?;
            }
            (None, None) => return Ok(scorer.totals(None)),
            (g, t) => {
                let (mut n_gold, mut n_test) = (both, both);
                if g.is_some() {
                    n_gold += 1;
                    for s in gold {
                        s?;
                        n_gold += 1;
                    }
                } else if t.is_some() {
                    n_test += 1;
                    for s in test {
                        s?;
                        n_test += 1;
                    }
                }
                return Ok(scorer.totals(mismatch(n_gold, n_test)));
            }
        }
    }
}

/// evalb.c's warning when the files differ in length ("Number of lines unmatch").
fn mismatch(gold: usize, test: usize) -> Option<String> {
    (gold != test).then(|| {
        format!(
            "Number of lines unmatch ({gold} gold sentences, {test} test lines): the first {} \
             scored",
            gold.min(test)
        )
    })
}

/// EVALB in memory (for small inputs and tests): every row kept in the report.
pub fn evalb_lines(
    gold: &[SentenceText],
    test: &[SentenceText],
    p: &EvalbParams,
    cut_len: usize,
) -> EvalbReport {
    let mut scorer = EvalbScorer::new(p.clone(), cut_len);
    let sentences = gold
        .iter()
        .zip(test)
        .map(|(g, t)| scorer.score(g, t))
        .collect();
    let totals = scorer.totals(mismatch(gold.len(), test.len()));
    EvalbReport {
        sentences,
        all: totals.all,
        short: totals.short,
        cut_len,
        line_mismatch: totals.line_mismatch,
    }
}

/// The lines of a one-tree-a-line text as sentences (`file` names it in the messages).
pub fn read_tree_lines(text: &str, file: &str) -> Vec<SentenceText> {
    SentenceReader::new(text.as_bytes(), file, Layout::Lines)
        .filter_map(|s| s.ok())
        .collect()
}

/// The gold sentences of a text, its layout found by [`gold_layout`].
pub fn read_gold(text: &str, file: &str) -> Vec<SentenceText> {
    let layout = gold_layout(text.as_bytes(), file).unwrap_or(Layout::Lines);
    SentenceReader::new(text.as_bytes(), file, layout)
        .filter_map(|s| s.ok())
        .collect()
}

/// The gold file's sentences, streamed: `-` is standard input, gzip is read through. A regular
/// file's layout is found by [`gold_layout`] (a first pass that keeps nothing); standard input
/// or a pipe, which cannot be read twice, is read as trees over several lines when its first
/// line that is not blank leaves brackets open.
pub fn gold_reader(path: &Path) -> Result<SentenceReader<Box<dyn BufRead>>> {
    let file = path.display().to_string();
    let regular =
        !crate::util::is_stdin(path) && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if regular {
        let layout = gold_layout(crate::util::open_input(path)?, &file)?;
        return Ok(SentenceReader::new(
            crate::util::open_input(path)?,
            &file,
            layout,
        ));
    }
    let mut r = crate::util::open_input(path)?;
    let mut head = Vec::new();
    let layout = loop {
        let from = head.len();
        let n = r
            .read_until(b'\n', &mut head)
            .map_err(|e| Error::file(file.clone(), e.to_string()))?;
        let line = &head[from..];
        if n == 0 {
            break Layout::Lines;
        }
        if line.iter().all(|&b| is_space(b)) {
            continue;
        }
        let opens = line.iter().filter(|&&b| b == b'(').count();
        let closes = line.iter().filter(|&&b| b == b')').count();
        break if opens > closes {
            Layout::Trees
        } else {
            Layout::Lines
        };
    };
    let r: Box<dyn BufRead> = Box::new(std::io::Cursor::new(head).chain(r));
    Ok(SentenceReader::new(r, &file, layout))
}

/// The test file's lines, streamed (`-` is standard input, gzip is read through).
pub fn test_reader(path: &Path) -> Result<SentenceReader<Box<dyn BufRead>>> {
    let file = path.display().to_string();
    Ok(SentenceReader::new(
        crate::util::open_input(path)?,
        &file,
        Layout::Lines,
    ))
}
