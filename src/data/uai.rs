//! The UAI inference-competition formats, so our BP can be checked against other solvers on
//! standard instances.
//!
//! A `.uai` file is whitespace-separated numbers after a `MARKOV` or `BAYES` preamble word: the
//! number of variables, their cardinalities, the number of functions, each function's scope
//! (its size, then variable indices), then each function's table (its entry count, then the
//! entries, last scope variable fastest). Entries are potentials (not logs); a Bayes net's tables
//! are its conditional distributions, which are factors like any other. An `.evid` file is the
//! number of observed variables followed by (variable, value) pairs; the later form with a
//! leading sample count of 1 is read too. Answers are written as `MAR` (per variable its
//! cardinality and marginal) or `MAP` (the number of variables and the assignment).

use crate::error::{Error, Result};
use std::path::Path;

/// States of one variable at most (a larger count is a damaged file, not a model).
pub const MAX_CARDINALITY: usize = 1 << 24;

/// A factor graph read from a `.uai` file, tables in log space (`graph::uai` unrolls it into an
/// instance).
#[derive(Clone, Debug)]
pub struct UaiModel {
    pub kind: String,
    pub card: Vec<u32>,
    pub scopes: Vec<Vec<u32>>,
    /// Natural logs of the potentials (−∞ for zeros).
    pub log_tables: Vec<Vec<f64>>,
}

/// Tokens with the line each stands on.
struct Tokens<'a> {
    name: &'a str,
    toks: Vec<(&'a str, usize)>,
    i: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str, name: &'a str) -> Self {
        let toks = text
            .lines()
            .enumerate()
            .flat_map(|(l, line)| {
                let line = line.split('#').next().unwrap_or("");
                line.split_whitespace().map(move |t| (t, l + 1))
            })
            .collect();
        Tokens { name, toks, i: 0 }
    }
    fn line(&self) -> usize {
        self.toks
            .get(self.i)
            .or(self.toks.last())
            .map_or(1, |t| t.1)
    }
    fn next(&mut self, what: &str) -> Result<&'a str> {
        let t = self.toks.get(self.i).ok_or_else(|| {
            Error::parse(
                self.name,
                self.line(),
                format!("the file ends where {what} should be"),
            )
        })?;
        self.i += 1;
        Ok(t.0)
    }
    /// Tokens not read yet: a bound on any count read from the file, so nothing is allocated
    /// from a count the file cannot hold (a truncated file then fails where it ends).
    fn left(&self) -> usize {
        self.toks.len() - self.i
    }

    fn int(&mut self, what: &str) -> Result<usize> {
        let line = self.line();
        let t = self.next(what)?;
        t.parse().map_err(|_| {
            Error::parse(
                self.name,
                line,
                format!("{what}: {t:?} is not a whole number"),
            )
        })
    }
    fn real(&mut self, what: &str) -> Result<f64> {
        let line = self.line();
        let t = self.next(what)?;
        match t.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(Error::parse(
                self.name,
                line,
                format!("{what}: {t:?} is not a non-negative number"),
            )),
        }
    }
}

pub fn read_uai(path: &Path) -> Result<UaiModel> {
    let text = crate::util::read_text(path)?;
    parse_uai(&text, &path.display().to_string())
}

pub fn parse_uai(text: &str, name: &str) -> Result<UaiModel> {
    let mut t = Tokens::new(text, name);
    let line = t.line();
    let kind = t.next("the preamble (MARKOV or BAYES)")?.to_uppercase();
    if kind != "MARKOV" && kind != "BAYES" {
        return Err(Error::parse(
            name,
            line,
            format!("expected MARKOV or BAYES, got {kind:?}"),
        ));
    }
    let n = t.int("the number of variables")?;
    let mut card = Vec::with_capacity(n.min(t.left()));
    for v in 0..n {
        let line = t.line();
        let c = t.int(&format!("the cardinality of variable {v}"))?;
        if c == 0 || c > MAX_CARDINALITY {
            return Err(Error::parse(
                name,
                line,
                format!("variable {v} has {c} states; a variable has 1 to {MAX_CARDINALITY}"),
            ));
        }
        card.push(c as u32);
    }
    let m = t.int("the number of functions")?;
    let mut scopes = Vec::with_capacity(m.min(t.left()));
    for f in 0..m {
        let k = t.int(&format!("the scope size of function {f}"))?;
        let mut s = Vec::with_capacity(k.min(t.left()));
        for _ in 0..k {
            let line = t.line();
            let v = t.int(&format!("a variable of function {f}"))?;
            if v >= n {
                return Err(Error::parse(
                    name,
                    line,
                    format!("function {f} names variable {v}, but there are {n}"),
                ));
            }
            if s.contains(&(v as u32)) {
                return Err(Error::parse(
                    name,
                    line,
                    format!("function {f} names variable {v} twice"),
                ));
            }
            s.push(v as u32);
        }
        scopes.push(s);
    }
    let mut log_tables = Vec::with_capacity(scopes.len());
    for (f, s) in scopes.iter().enumerate() {
        let line = t.line();
        let len = t.int(&format!("the table size of function {f}"))?;
        let want = s
            .iter()
            .try_fold(1usize, |a, &v| a.checked_mul(card[v as usize] as usize));
        if want != Some(len) {
            let want = want.map_or("more than can be counted".to_string(), |w| w.to_string());
            return Err(Error::parse(
                name,
                line,
                format!("function {f} has {len} entries; its scope needs {want}"),
            ));
        }
        let mut tab = Vec::with_capacity(len.min(t.left()));
        for _ in 0..len {
            tab.push(t.real(&format!("an entry of function {f}"))?.ln());
        }
        // A table that is zero everywhere gives every assignment probability zero: there is no
        // distribution to infer (exact inference would answer NaN, BP a uniform guess).
        if tab.iter().all(|x| *x == f64::NEG_INFINITY) {
            return Err(Error::parse(
                name,
                line,
                format!("function {f} is zero everywhere: no assignment has positive probability"),
            ));
        }
        log_tables.push(tab);
    }
    if t.i < t.toks.len() {
        return Err(Error::parse(name, t.line(), "text after the last table"));
    }
    Ok(UaiModel {
        kind,
        card,
        scopes,
        log_tables,
    })
}

/// Evidence as (variable, value) pairs.
pub fn read_evid(path: &Path, model: &UaiModel) -> Result<Vec<(u32, u32)>> {
    let text = crate::util::read_text(path)?;
    parse_evid(&text, &path.display().to_string(), model)
}

pub fn parse_evid(text: &str, name: &str, model: &UaiModel) -> Result<Vec<(u32, u32)>> {
    let mut t = Tokens::new(text, name);
    if t.toks.is_empty() {
        return Ok(vec![]);
    }
    let total = t.toks.len();
    let first = t.int("the number of observed variables")?;
    // The later form: a sample count (1), then the number of observed variables.
    if first.checked_mul(2).and_then(|n| n.checked_add(1)) != Some(total) {
        if first != 1 {
            return Err(Error::parse(
                name,
                1,
                "expected `N var value …` or `1 N var value …` (one evidence sample)",
            ));
        }
        t.int("the number of observed variables")?;
    }
    let mut ev = vec![];
    while t.i < total {
        let line = t.line();
        let v = t.int("an observed variable")?;
        let x = t.int("its value")?;
        if v >= model.card.len() || x >= model.card[v] as usize {
            return Err(Error::parse(
                name,
                line,
                format!("variable {v} = {x} is not in the model"),
            ));
        }
        match ev.iter().find(|&&(u, _)| u as usize == v) {
            Some(&(_, y)) if y as usize != x => {
                return Err(Error::parse(
                    name,
                    line,
                    format!("variable {v} is observed twice, as {y} and as {x}"),
                ))
            }
            Some(_) => continue,
            None => ev.push((v as u32, x as u32)),
        }
    }
    Ok(ev)
}

/// The `MAR` answer: per variable its cardinality and marginal.
pub fn format_mar(marginals: &[Vec<f64>]) -> String {
    let mut o = format!("MAR\n{}", marginals.len());
    for m in marginals {
        o.push_str(&format!(" {}", m.len()));
        for p in m {
            o.push_str(&format!(" {p:.10}"));
        }
    }
    o.push('\n');
    o
}

/// The `PR` answer from the natural log of the partition function: its base-10 logarithm, as
/// the UAI competitions ask.
pub fn format_pr(log_z: f64) -> String {
    format!("PR\n{:.10}\n", log_z / std::f64::consts::LN_10)
}

/// The `MAP` answer: the number of variables and the assignment.
pub fn format_map(assignment: &[u32]) -> String {
    let mut o = format!("MAP\n{}", assignment.len());
    for x in assignment {
        o.push_str(&format!(" {x}"));
    }
    o.push('\n');
    o
}
