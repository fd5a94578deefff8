//! EVALB itself (`evalb_lines`): gold and test aligned sentence by sentence (one tree a line),
//! each sentence scored or counted as an error or a skip, and the summary for all sentences and
//! for those of at most 40 words, as `evalb.c` prints them; reading the line files. The scoring
//! rules are in [`super::evalb`].

use super::evalb::*;
use crate::data::treebank::Tree;
use crate::error::Error;

/// A sentence's status in EVALB's table (evalb.c's `Status`: 0 OK, 1 error, 2 skip).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(into = "u8")]
pub enum Status {
    Ok,
    /// A line that does not read as one tree, or words that differ in number or form.
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

/// A line of a one-tree-a-line file as read: a tree, no tree (an empty line), or why it does
/// not read as one tree.
pub type TreeLine = std::result::Result<Option<Tree>, String>;

/// EVALB's scores of test lines against gold sentences: the per-sentence table and the two
/// summary sections.
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
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "all": self.all.to_json(),
            "short": self.short.to_json(),
            "cut_len": self.cut_len,
            "line_mismatch": self.line_mismatch,
            "sentences": self.sentences,
        })
    }

    /// EVALB's output: the per-sentence table, its totals and the summary.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        o.push_str("  Sent.                        Matched  Bracket   Cross        Correct Tag\n");
        o.push_str(
            " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n",
        );
        let rule = "============================================================================\n";
        o.push_str(rule);
        for r in &self.sentences {
            let _ = writeln!(
                o,
                "{:4}  {:3}    {}  {:6.2} {:6.2}   {:3}    {:3}  {:3}    {:3}   {:4}  {:4}   {:6.2}",
                r.id,
                r.length,
                u8::from(r.status),
                r.recall(),
                r.precision(),
                r.matched,
                r.gold_brackets,
                r.test_brackets,
                r.crossing,
                r.words,
                r.correct_tags,
                r.tagging()
            );
        }
        o.push_str(rule);
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
}

/// EVALB (evalb.c with COLLINS.prm, `-c cut_len`): the n-th gold sentence against the n-th
/// test line. Gold items carry their ID (line or tree number). Per sentence, in evalb.c's
/// order (`calc_result`):
/// - a gold or test line that does not read as one tree is an error (status 1; evalb.c's
///   reading errors — it goes on scoring such a line, which we do not);
/// - no test words after the deleted labels (an empty line: a failed parse) is a skip
///   (status 2; `if(wn2==0) Status = 2`);
/// - a different number of words, or a different word, is an error ("Length unmatch",
///   "Words unmatch"; COLLINS.prm has no QUOTE_LABEL, so no quote is reinserted);
/// - otherwise the brackets are matched as a multiset, crossing brackets counted (a test
///   bracket crossing any gold one counts once), and tags compared.
///
/// Every sentence counts in `-- All --`; those whose gold length (every word but `-NONE-`) is
/// at most `cut_len` count in the second section too, errors and skips included. An
/// unreadable gold line has length 0. When the files differ in length, evalb.c warns and
/// scores the sentences both have: so do we (`line_mismatch`). evalb.c stops after MAX_ERROR
/// errors; we report them all.
pub fn evalb_lines(
    gold: &[(usize, TreeLine)],
    test: &[TreeLine],
    p: &EvalbParams,
    cut_len: usize,
) -> EvalbReport {
    let mut rep = EvalbReport {
        sentences: Vec::with_capacity(gold.len().min(test.len())),
        all: EvalbSummary::default(),
        short: EvalbSummary::default(),
        cut_len,
        line_mismatch: None,
    };
    if gold.len() != test.len() {
        rep.line_mismatch = Some(format!(
            "Number of lines unmatch ({} gold sentences, {} test lines): the first {} scored",
            gold.len(),
            test.len(),
            gold.len().min(test.len())
        ));
    }
    for ((id, g), t) in gold.iter().zip(test) {
        let r = sentence(*id, g, t, p);
        rep.all.add(&r);
        if r.length <= cut_len {
            rep.short.add(&r);
        }
        rep.sentences.push(r);
    }
    rep
}

fn sentence(id: usize, gold: &TreeLine, test: &TreeLine, p: &EvalbParams) -> SentenceResult {
    let g = match gold {
        Ok(Some(t)) => Some(read(t, p)),
        Ok(None) => None,
        Err(_) => None,
    };
    let mut r = SentenceResult {
        id,
        length: g.as_ref().map_or(0, |g| g.length),
        status: Status::Ok,
        reason: None,
        matched: 0,
        gold_brackets: 0,
        test_brackets: 0,
        crossing: 0,
        words: 0,
        correct_tags: 0,
    };
    let fail = |mut r: SentenceResult, status: Status, why: String| {
        r.status = status;
        r.reason = Some(why);
        r
    };
    if let Err(e) = gold {
        return fail(r, Status::Error, format!("gold: {e}"));
    }
    let t = match test {
        Err(e) => return fail(r, Status::Error, format!("test: {e}")),
        Ok(None) => return fail(r, Status::Skip, "empty test line".into()),
        Ok(Some(t)) => read(t, p),
    };
    if t.terminals.is_empty() {
        return fail(r, Status::Skip, "no test words".into());
    }
    let empty = Read {
        terminals: vec![],
        brackets: vec![],
        length: 0,
    };
    let g = g.unwrap_or(empty);
    if g.terminals.len() != t.terminals.len() {
        let why = format!(
            "Length unmatch ({}|{})",
            g.terminals.len(),
            t.terminals.len()
        );
        return fail(r, Status::Error, why);
    }
    if let Some((a, b)) = g
        .terminals
        .iter()
        .zip(&t.terminals)
        .find(|(a, b)| a.0 != b.0)
    {
        return fail(r, Status::Error, format!("Words unmatch ({}|{})", a.0, b.0));
    }
    r.matched = matched(&g.brackets, &t.brackets);
    r.gold_brackets = g.brackets.len();
    r.test_brackets = t.brackets.len();
    r.crossing = crossing(&g.brackets, &t.brackets, g.terminals.len());
    r.words = g.terminals.len();
    r.correct_tags = g
        .terminals
        .iter()
        .zip(&t.terminals)
        .filter(|(a, b)| p.canonical(&a.1) == p.canonical(&b.1))
        .count();
    r
}

/// The lines of a one-tree-a-line file, each read and normalised (`file` names it in the
/// messages): a line with no tree is `Ok(None)`; one that is not exactly one tree, or
/// breaks the reader's bounds, is `Err` with the reason at `file:line`.
pub fn read_tree_lines(text: &str, file: &str) -> Vec<TreeLine> {
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let at = |msg: &str| format!("{file}:{}: {msg}", i + 1);
            let mut trees = match crate::data::treebank::parse_trees(line, file) {
                Ok(t) => t,
                Err(Error::Parse { msg, .. }) => return Err(at(&msg)),
                Err(e) => return Err(at(&e.to_string())),
            };
            match trees.len() {
                0 => Ok(None),
                1 => {
                    let mut t = trees.pop().expect("one tree");
                    crate::data::treebank::normalise(&mut t);
                    Ok(Some(t))
                }
                n => Err(at(&format!("{n} trees on one line"))),
            }
        })
        .collect()
}

/// The gold sentences of a file for [`evalb_lines`], with their IDs: one tree a line (EVALB's
/// format, IDs the line numbers) unless its lines do not read one by one but the whole file
/// reads as trees over several lines (a `.mrg` file; IDs the trees' numbers). A file that
/// reads neither way is taken line by line, its bad lines error sentences.
pub fn read_gold(text: &str, file: &str) -> Vec<(usize, TreeLine)> {
    let lines = read_tree_lines(text, file);
    if lines.iter().all(|l| l.is_ok()) {
        return lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .collect();
    }
    match crate::data::treebank::parse_trees(text, file) {
        Ok(trees) => trees
            .into_iter()
            .enumerate()
            .map(|(i, mut t)| {
                crate::data::treebank::normalise(&mut t);
                (i + 1, Ok(Some(t)))
            })
            .collect(),
        Err(_) => lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .collect(),
    }
}
