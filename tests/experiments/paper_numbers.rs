//! The papers' numbers: `docs/reproductions/paper-numbers.tsv` cites, for every paper cell of
//! every report, the table and the line of the paper that prints it. The experiments' own
//! paper cells (what every report will print) must be those numbers, the committed reports'
//! must not contradict them, and — where `../shared/papers` is beside the project — each
//! number must be printed on the line it cites.

use piecewise_lab::experiments::reproduce::{self, Options};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One line of the file: the cell it is (report, table, row, column), the paper's value and
/// sd (as printed, e.g. ".9"), the paper, the source and the line.
struct Number {
    report: String,
    table: usize,
    row: String,
    column: String,
    value: f64,
    sd: Option<f64>,
    printed_sd: String,
    paper: String,
    source: String,
    line: usize,
    at: usize,
}

fn numbers() -> Vec<Number> {
    let path = root().join("docs/reproductions/paper-numbers.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().unwrap();
    assert_eq!(
        header,
        "report\ttable\trow\tcolumn\tvalue\tsd\tpaper\tsource\tline"
    );
    lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(k, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 9, "paper-numbers.tsv line {}: {l}", k + 1);
            let num = |s: &str| -> f64 {
                s.parse()
                    .unwrap_or_else(|_| panic!("paper-numbers.tsv line {}: `{s}`", k + 1))
            };
            Number {
                report: f[0].into(),
                table: f[1].parse().unwrap(),
                row: f[2].into(),
                column: f[3].into(),
                value: num(f[4]),
                sd: (!f[5].is_empty()).then(|| num(f[5])),
                printed_sd: f[5].into(),
                paper: f[6].into(),
                source: f[7].into(),
                line: f[8].parse().unwrap(),
                at: k + 1,
            }
        })
        .collect()
}

type Key = (String, usize, String, String);

/// Every paper cell of tables `tables` (JSON-shaped: title, columns, rows of label and cells).
fn paper_cells(report: &str, tables: &[Value]) -> BTreeMap<Key, (f64, Option<f64>)> {
    let mut out = BTreeMap::new();
    for (t, table) in tables.iter().enumerate() {
        let columns: Vec<&str> = table["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        for row in table["rows"].as_array().unwrap() {
            let label = row["label"].as_str().unwrap();
            for (c, cell) in row["cells"].as_array().unwrap().iter().enumerate() {
                if let Some(mean) = cell["paper"]["mean"].as_f64() {
                    out.insert(
                        (report.into(), t, label.into(), columns[c].into()),
                        (mean, cell["paper"]["sd"].as_f64()),
                    );
                }
            }
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// The experiments' paper cells are the cited numbers, one for one: built as `reproduce` builds
/// them (the quick form's tables carry the same paper cells).
#[test]
fn the_experiments_print_the_cited_numbers() {
    let data = root().join("../shared/data");
    if !data.join("seminars").exists() {
        eprintln!("skipping: ../shared/data is absent");
        return;
    }
    let numbers = numbers();
    let reports: std::collections::BTreeSet<&str> =
        numbers.iter().map(|n| n.report.as_str()).collect();
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        quick: true,
        data,
        out: dir.path().to_path_buf(),
        threads: 1,
        settings: Default::default(),
    };
    let mut faults = vec![];
    let mut code = BTreeMap::new();
    for name in &reports {
        let e = reproduce::experiment(name, &o).unwrap();
        let tables: Vec<Value> = e
            .tables
            .iter()
            .map(|t| {
                serde_json::json!({
                    "columns": t.columns,
                    "rows": t.rows.iter().map(|(label, cells)| serde_json::json!({
                        "label": label,
                        "cells": cells.iter().map(|c| match c.as_ref().and_then(|c| c.paper) {
                            Some((m, sd)) => serde_json::json!({"paper": {"mean": m, "sd": sd}}),
                            None => Value::Null,
                        }).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        code.extend(paper_cells(name, &tables));
    }
    for n in &numbers {
        let key = (n.report.clone(), n.table, n.row.clone(), n.column.clone());
        match code.remove(&key) {
            None => faults.push(format!(
                "line {}: {key:?} is not a paper cell of the experiment",
                n.at
            )),
            Some((m, sd)) => {
                let same_sd = match (sd, n.sd) {
                    (None, None) => true,
                    (Some(a), Some(b)) => close(a, b),
                    _ => false,
                };
                if !close(m, n.value) || !same_sd {
                    faults.push(format!(
                        "line {}: {key:?} is {m} ± {sd:?} in the experiment, {} ± {:?} in the paper ({})",
                        n.at, n.value, n.sd, n.source
                    ));
                }
            }
        }
    }
    for key in code.keys() {
        faults.push(format!(
            "{key:?}: a paper cell the numbers file does not cite"
        ));
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// The day the numbers file was written: a report written before it may lack a cell or an sd
/// the experiments have cited since (002 Table 2's sds, Table 3's times); none may contradict
/// it, and a report written since must carry every cell.
const CITED_SINCE: &str = "2026-12-08";

/// The faults of report `name`'s JSON against the numbers file.
fn report_faults(name: &str, json: &Value, numbers: &[Number]) -> Vec<String> {
    let mut faults = vec![];
    let older = json["date"].as_str().unwrap_or_default() < CITED_SINCE;
    let mut cells = paper_cells(name, json["tables"].as_array().unwrap());
    for n in numbers.iter().filter(|n| n.report == name) {
        let key = (n.report.clone(), n.table, n.row.clone(), n.column.clone());
        match cells.remove(&key) {
            None if older => {}
            None => faults.push(format!(
                "line {}: no paper cell {key:?} in the report",
                n.at
            )),
            Some((m, sd)) => {
                let sd_ok = match (sd, n.sd) {
                    (Some(a), Some(b)) => close(a, b),
                    (Some(_), None) => false,
                    (None, None) => true,
                    (None, Some(_)) => older,
                };
                if !close(m, n.value) || !sd_ok {
                    faults.push(format!(
                        "line {}: {key:?} is {m} ± {sd:?} in the report, {} ± {:?} in the paper",
                        n.at, n.value, n.sd
                    ));
                }
            }
        }
    }
    for key in cells.keys() {
        faults.push(format!(
            "{key:?}: a paper cell the numbers file does not cite"
        ));
    }
    faults
}

fn committed(name: &str) -> Value {
    let path = root().join(format!("docs/reproductions/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The committed reports' paper cells are the cited numbers.
#[test]
fn committed_reports_print_the_cited_numbers() {
    let numbers = numbers();
    let names: std::collections::BTreeSet<&str> =
        numbers.iter().map(|n| n.report.as_str()).collect();
    let faults: Vec<String> = names
        .iter()
        .flat_map(|name| report_faults(name, &committed(name), &numbers))
        .collect();
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A paper cell edited by hand (87.7 → 87.8), an sd dropped from a report written since the
/// numbers were cited, and an uncited paper cell each fail the check.
#[test]
fn an_edited_paper_cell_fails_the_check() {
    let numbers = numbers();
    let mut json = committed("000-table6");
    assert!(report_faults("000-table6", &json, &numbers).is_empty());
    let cell = &mut json["tables"][0]["rows"][0]["cells"][0]["paper"];
    assert_eq!(cell["mean"].as_f64(), Some(87.7));
    cell["mean"] = 87.8.into();
    let f = report_faults("000-table6", &json, &numbers);
    assert!(f.len() == 1 && f[0].contains("87.8"), "{f:?}");
    let mut json = committed("000-table6");
    json["date"] = "2026-12-09T00:00:00Z".into();
    json["tables"][0]["rows"][0]["cells"][0]["paper"]["sd"] = Value::Null;
    assert_eq!(report_faults("000-table6", &json, &numbers).len(), 1);
    let mut json = committed("000-table6");
    json["tables"][0]["rows"][4]["cells"][0]["paper"] =
        serde_json::json!({"mean": 1.0, "sd": null});
    let f = report_faults("000-table6", &json, &numbers);
    assert!(f.len() == 1 && f[0].contains("does not cite"), "{f:?}");
}

/// Each cited number is printed on its line of the paper's text (a converted value — hours to
/// seconds, a sum of printed counts — quotes what is printed in its source: `printed "9hr"`).
#[test]
fn cited_numbers_are_on_their_lines() {
    let papers = root().join("../shared/papers");
    if !papers.exists() {
        eprintln!("skipping: ../shared/papers is absent");
        return;
    }
    let text_of = |code: &str| -> Vec<String> {
        let file = std::fs::read_dir(&papers)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p: &PathBuf| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with(&format!("{code}_")) && f.ends_with(".txt"))
            })
            .unwrap_or_else(|| panic!("no paper {code} in {}", papers.display()));
        read_lines(&file)
    };
    let mut texts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut faults = vec![];
    for n in numbers() {
        let lines = texts
            .entry(n.paper.clone())
            .or_insert_with(|| text_of(&n.paper));
        let Some(line) = lines.get(n.line.wrapping_sub(1)) else {
            faults.push(format!(
                "line {}: paper {} has no line {}",
                n.at, n.paper, n.line
            ));
            continue;
        };
        let printed = n
            .source
            .split("printed \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(str::to_string)
            .unwrap_or_else(|| shortest(n.value));
        let mut want = vec![printed];
        if !n.printed_sd.is_empty() {
            want.push(n.printed_sd.clone());
        }
        for w in want {
            if !line.contains(&w) {
                faults.push(format!(
                    "line {}: `{w}` is not on line {} of paper {}: {line}",
                    n.at, n.line, n.paper
                ));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A number as a paper prints it: its shortest decimal form (87.7, 99.95, 911).
fn shortest(x: f64) -> String {
    format!("{x}")
}

fn read_lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}
