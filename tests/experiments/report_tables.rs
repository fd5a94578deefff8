//! Every report's Markdown against its JSON, and every JSON cell against the runs it summarises:
//! a hand edit of either, or a table left stale by a rerun, fails here. The committed reports in
//! docs/reproductions are checked as they are; `reproduce.rs` checks each `--quick` report against
//! its run directories too. The parsing and formatting below are this test's own, not the
//! report writer's.

use piecewise_lab::experiments::reproduce::Metric;
use piecewise_lab::run::RunSummary;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn reports_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reproductions")
}

/// The pipe tables of a Markdown text: rows of trimmed cells, the header first, rules left out.
fn tables(md: &str) -> Vec<Vec<Vec<String>>> {
    let mut out: Vec<Vec<Vec<String>>> = vec![];
    let mut inside = false;
    for line in md.lines().map(str::trim) {
        if !line.starts_with('|') {
            inside = false;
            continue;
        }
        let row = cells(line);
        let rule = row
            .iter()
            .all(|c| !c.is_empty() && c.trim_matches(|ch| ch == '-' || ch == ':').is_empty());
        if rule {
            continue;
        }
        if !inside {
            out.push(vec![]);
            inside = true;
        }
        out.last_mut().unwrap().push(row);
    }
    out
}

fn cells(line: &str) -> Vec<String> {
    let body = line.strip_prefix('|').unwrap_or(line);
    let body = body.strip_suffix('|').unwrap_or(body);
    let mut row = vec![String::new()];
    let mut prev = ' ';
    for ch in body.chars() {
        if ch == '|' && prev != '\\' {
            row.push(String::new());
        } else {
            row.last_mut().unwrap().push(ch);
        }
        prev = ch;
    }
    row.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The text of the section headed `## title` (up to the next `## ` heading or the figure).
fn section<'a>(md: &'a str, title: &str) -> Option<&'a str> {
    let head = format!("\n## {title}\n");
    let start = md.find(&head)? + head.len();
    let rest = &md[start..];
    let end = [rest.find("\n## "), rest.find("\n![")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn ours(cell: &Value) -> String {
    let o = &cell["ours"];
    let Some(mean) = o["mean"].as_f64() else {
        return "—".into();
    };
    let p = match cell["metric"].as_str() {
        Some("seconds" | "phase2-seconds") => 1,
        Some("phase2-iterations") => 0,
        _ => 2,
    };
    if o["values"].as_array().map_or(0, Vec::len) > 1 {
        format!("{mean:.p$} ± {:.p$}", o["sd"].as_f64().unwrap())
    } else {
        format!("{mean:.p$}")
    }
}

/// A paper cell as the report prints it: to the paper's own last digit since 2026-12-08 (the
/// day the papers' numbers were cited); a report written before printed one decimal.
fn paper(cell: &Value, date: &str) -> String {
    let p = &cell["paper"];
    let old = date < "2026-12-08T02:45";
    match (p["mean"].as_f64(), p["sd"].as_f64()) {
        (None, _) => "—".into(),
        (Some(m), Some(sd)) if old => format!("{m:.1} ± {sd}"),
        (Some(m), None) if old => format!("{m:.1}"),
        (Some(m), Some(sd)) => format!("{m} ± {sd}"),
        (Some(m), None) => format!("{m}"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// A run's value of `metric` as the report's `runs` section records it: the run's `metrics`
/// (reports written since they carry them), else its named fields; `None` when neither has it.
fn recorded(run: &Value, metric: &Value) -> Option<Option<f64>> {
    if let Some(ms) = run["metrics"].as_array() {
        return ms
            .iter()
            .find(|m| &m["metric"] == metric)
            .map(|m| m["value"].as_f64());
    }
    let test = &run["test"];
    match metric {
        Value::String(s) if s == "seconds" => Some(run["train_seconds"].as_f64()),
        Value::String(s) if s == "token-accuracy" => Some(test["token_accuracy"].as_f64()),
        Value::String(s) if s == "segment-f1" => Some(test["segment_f1"].as_f64()),
        Value::Object(o) => match o.iter().next() {
            Some((k, Value::String(l))) if k == "label-f1" && !test.is_null() => {
                Some(Some(test["labels"][l].as_f64().unwrap_or(0.0)))
            }
            Some((k, Value::String(l))) if k == "layer-accuracy" => {
                Some(test["layers"][l].as_f64())
            }
            _ => None,
        },
        _ => None,
    }
}

/// What is wrong with a report of runs (`tables`, `claims`, `runs`); `run_root`, when given,
/// holds the run directories, whose summaries the `runs` section must match.
pub fn faults(md: &str, json: &Value, run_root: Option<&Path>) -> Vec<String> {
    let mut f = vec![];
    let date = json["date"].as_str().unwrap_or_default();
    let title = json["title"].as_str().unwrap_or_default();
    if !md.starts_with(&format!("# {title}\n")) {
        f.push(format!("the title is not `{title}`"));
    }
    let protocol = section(md, "Protocol").unwrap_or_default();
    for line in json["protocol"].as_array().into_iter().flatten() {
        let line = format!("- {}", line.as_str().unwrap_or_default());
        if !protocol.lines().any(|l| l == line) {
            f.push(format!("protocol line missing from the Markdown: {line}"));
        }
    }
    let empty = vec![];
    let runs = json["runs"].as_object();
    for t in json["tables"].as_array().unwrap_or(&empty) {
        let tt = t["title"].as_str().unwrap_or_default();
        let Some(sec) = section(md, tt) else {
            f.push(format!("no section `## {tt}`"));
            continue;
        };
        let Some(table) = tables(sec).into_iter().next() else {
            f.push(format!("`{tt}`: no table"));
            continue;
        };
        let rows = t["rows"].as_array().unwrap_or(&empty);
        if table.len() != rows.len() + 1 {
            f.push(format!(
                "`{tt}`: {} rows in the Markdown, {} in the JSON",
                table.len() - 1,
                rows.len()
            ));
            continue;
        }
        let has_paper = rows.iter().any(|r| {
            r["cells"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| !c.is_null() && !c["paper"].is_null()))
        });
        for (r, md_row) in rows.iter().zip(&table[1..]) {
            let label = r["label"].as_str().unwrap_or_default();
            let mut want = vec![label.to_string()];
            for c in r["cells"].as_array().unwrap_or(&empty) {
                want.push(if c.is_null() { "—".into() } else { ours(c) });
                if has_paper {
                    want.push(if c.is_null() {
                        "—".into()
                    } else {
                        paper(c, date)
                    });
                }
                if c.is_null() || c["ours"].is_null() {
                    continue;
                }
                // The statistic is the mean and sample sd of its values.
                let vs: Vec<f64> = c["ours"]["values"]
                    .as_array()
                    .unwrap_or(&empty)
                    .iter()
                    .filter_map(Value::as_f64)
                    .collect();
                let n = vs.len() as f64;
                let mean = vs.iter().sum::<f64>() / n;
                let sd = if vs.len() > 1 {
                    (vs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
                } else {
                    0.0
                };
                if !close(mean, c["ours"]["mean"].as_f64().unwrap_or(f64::NAN))
                    || !close(sd, c["ours"]["sd"].as_f64().unwrap_or(f64::NAN))
                {
                    f.push(format!("`{tt}` / {label}: mean or sd is not its values'"));
                }
                // Its values are the group's runs' values of its metric, in order.
                let group = c["group"].as_str().unwrap_or_default();
                let Some(rs) = runs.and_then(|m| m.get(group)).and_then(Value::as_array) else {
                    f.push(format!("`{tt}` / {label}: no runs of `{group}`"));
                    continue;
                };
                let got: Option<Vec<f64>> = rs
                    .iter()
                    .map(|run| recorded(run, &c["metric"]))
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.into_iter().flatten().collect());
                match got {
                    Some(got) if got.len() != vs.len() || !got.iter().zip(&vs).all(|(a, b)| close(*a, *b)) => {
                        f.push(format!(
                            "`{tt}` / {label} ({}): the cell's values {vs:?} are not its runs' {got:?}",
                            c["metric"]
                        ))
                    }
                    _ => {}
                }
            }
            if md_row != &want {
                f.push(format!(
                    "`{tt}`: the Markdown row {md_row:?} is not the JSON's {want:?}"
                ));
            }
        }
    }
    // The analysis: its heading, and its tables cell for cell where the JSON records them.
    if let Some(at) = json["analysis"]["title"].as_str() {
        match section(md, at) {
            None => f.push(format!("no analysis section `## {at}`")),
            Some(_) if json["analysis"]["tables"].is_null() => {}
            Some(_) => {
                // The section runs to the Claims (its own `###` headings stay inside).
                let start = md.find(&format!("\n## {at}\n")).unwrap();
                let rest = &md[start..];
                let end = rest
                    .find("\n## Claims")
                    .or(rest.find("\n!["))
                    .unwrap_or(rest.len());
                let got = serde_json::to_value(tables(&rest[..end])).unwrap();
                if got != json["analysis"]["tables"] {
                    f.push(format!(
                        "the analysis `{at}`: its Markdown tables are not the JSON's"
                    ));
                }
            }
        }
    }
    // The claims, word for word and in order.
    let want: Vec<String> = json["claims"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|c| {
            format!(
                "- **{}** — {}: {}",
                c["verdict"].as_str().unwrap_or_default(),
                c["says"].as_str().unwrap_or_default(),
                c["evidence"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let got: Vec<String> = section(md, "Claims")
        .map(|s| {
            s.lines()
                .filter(|l| l.starts_with("- "))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if got != want {
        f.push(format!(
            "the claims differ: Markdown {got:?}, JSON {want:?}"
        ));
    }
    // The runs section against the run directories.
    if let (Some(root), Some(runs)) = (run_root, runs) {
        for (g, rs) in runs {
            for run in rs.as_array().unwrap_or(&empty) {
                let dir = root.join(run["dir"].as_str().unwrap_or_default());
                let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else {
                    f.push(format!("{g}: no summary in {}", dir.display()));
                    continue;
                };
                let s: RunSummary = serde_json::from_str(&text).unwrap();
                if !close(
                    s.train_seconds,
                    run["train_seconds"].as_f64().unwrap_or(f64::NAN),
                ) || Some(s.iterations as u64) != run["iterations"].as_u64()
                {
                    f.push(format!(
                        "{g}: seconds or iterations are not {}'s",
                        dir.display()
                    ));
                }
                for m in run["metrics"].as_array().unwrap_or(&empty) {
                    let metric: Metric = serde_json::from_value(m["metric"].clone()).unwrap();
                    let have = metric.of(&s);
                    let same = match (have, m["value"].as_f64()) {
                        (Some(a), Some(b)) => close(a, b),
                        (None, None) => true,
                        _ => false,
                    };
                    if !same {
                        f.push(format!("{g}: {} is not {}'s", m["metric"], dir.display()));
                    }
                }
            }
        }
    }
    f
}

/// 001 Table 2's reports (a parser's own runs): each row's P, R, F1 and tagging accuracy are its
/// bracket and tag counts', and the Markdown's rows are the JSON's.
fn parsing_faults(md: &str, json: &Value) -> Vec<String> {
    let mut f = vec![];
    let t = tables(md);
    let Some(main) = t.first() else {
        return vec!["no table".into()];
    };
    let head = &main[0];
    let col = |name: &str| head.iter().position(|h| h == name);
    let empty = vec![];
    for r in json["rows"].as_array().unwrap_or(&empty) {
        let name = r["name"].as_str().unwrap_or_default();
        let s = &r["score"];
        let n = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
        let p = 100.0 * n("matched") / n("test_brackets");
        let rc = 100.0 * n("matched") / n("gold_brackets");
        let checks = [
            ("P", p, r["precision"].as_f64()),
            ("R", rc, r["recall"].as_f64()),
            ("F1", 2.0 * p * rc / (p + rc), r["f1"].as_f64()),
            (
                "tags",
                100.0 * n("correct_tags") / n("words"),
                r["tagging"].as_f64(),
            ),
        ];
        let Some(row) = main.iter().find(|row| row[0] == name) else {
            f.push(format!("{name}: no Markdown row"));
            continue;
        };
        for (c, from_counts, recorded) in checks {
            if !recorded.is_some_and(|v| close(v, from_counts)) {
                f.push(format!(
                    "{name}: {c} {recorded:?} is not its counts' {from_counts}"
                ));
            }
            match col(c) {
                Some(i) if row[i] == format!("{from_counts:.2}") => {}
                _ => f.push(format!(
                    "{name}: the Markdown's {c} is not {from_counts:.2}"
                )),
            }
        }
        // Reports since per-sentence counts were kept: they add up to the row's counts.
        if let Some(ps) = r["per_sentence"].as_array() {
            for (i, k) in ["matched", "gold_brackets", "test_brackets"]
                .iter()
                .enumerate()
            {
                let sum: u64 = ps.iter().filter_map(|x| x[i].as_u64()).sum();
                if Some(sum) != s[*k].as_u64() {
                    f.push(format!("{name}: its sentences' {k} add up to {sum}"));
                }
            }
        }
        let its = r["train"]["iterations"].as_u64().map(|i| i.to_string());
        if col("iterations").map(|i| &row[i]) != its.as_ref() {
            f.push(format!("{name}: iterations differ"));
        }
    }
    f
}

#[test]
fn committed_reports_agree_with_their_json_and_runs() {
    let mut checked = 0;
    let mut all = vec![];
    for entry in std::fs::read_dir(reports_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let md = std::fs::read_to_string(path.with_extension("md"))
            .unwrap_or_else(|_| panic!("{} has no Markdown", path.display()));
        let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let f = if json["rows"].is_array() && json["tables"].is_null() {
            parsing_faults(&md, &json)
        } else {
            faults(&md, &json, None)
        };
        all.extend(f.into_iter().map(|x| format!("{name}: {x}")));
        checked += 1;
    }
    assert!(checked >= 22, "only {checked} reports found");
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// The checks can fail: a hand-edited cell, a stale run, a dropped claim.
#[test]
fn an_edited_report_fails_the_check() {
    let path = reports_dir().join("001-table1-pos.json");
    let md = std::fs::read_to_string(path.with_extension("md")).unwrap();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(faults(&md, &json, None).is_empty());
    // A number edited in the Markdown.
    let cell = ours(&json["tables"][0]["rows"][1]["cells"][0]);
    let edited = md.replacen(&format!("| {cell} |"), "| 99.99 |", 1);
    assert_ne!(edited, md);
    assert!(!faults(&edited, &json, None).is_empty());
    // A cell that no longer summarises its run.
    let mut stale = json.clone();
    let run = &mut stale["runs"]["nota-pos/crf"][0];
    let v = run["train_seconds"].as_f64().unwrap() + 1.0;
    run["train_seconds"] = v.into();
    for m in run["metrics"].as_array_mut().into_iter().flatten() {
        if m["metric"] == "seconds" {
            m["value"] = v.into();
        }
    }
    assert!(!faults(&md, &stale, None).is_empty());
    // A claim left out of the Markdown.
    let first = md.lines().find(|l| l.starts_with("- **")).unwrap();
    assert!(!faults(&md.replacen(first, "", 1), &json, None).is_empty());
}
