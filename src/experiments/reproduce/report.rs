//! The report: Markdown with our numbers beside the paper's, JSON, and the SVG figure.

use super::*;
use crate::error::Result;
use crate::experiments::charts::{
    esc, svg_open, svg_whisker_lines, y_grid, WhiskerSeries, PALETTE,
};
use crate::util::{write_atomic, write_json_atomic};

pub(super) fn stat(results: &Results, c: &Cell) -> Option<Stat> {
    let runs = results.get(&c.group)?;
    Stat::of(runs.iter().filter_map(|(_, s)| c.metric.of(s)).collect())
}

pub(super) fn fmt_stat(s: &Option<Stat>, seconds: bool) -> String {
    fmt_stat_to(s, if seconds { 1 } else { 2 })
}

/// `s` to `p` decimals (its sd too).
fn fmt_stat_to(s: &Option<Stat>, p: usize) -> String {
    match s {
        None => "—".into(),
        Some(s) if s.values.len() > 1 => format!("{:.p$} ± {:.p$}", s.mean, s.sd),
        Some(s) => format!("{:.p$}", s.mean),
    }
}

/// Decimals of a metric's table cells: seconds to a tenth, phase 2's iteration count whole,
/// the rest to a hundredth.
pub(super) fn decimals(m: &Metric) -> usize {
    match m {
        Metric::Seconds | Metric::Phase2Seconds => 1,
        Metric::Phase2Iterations => 0,
        _ => 2,
    }
}

/// A paper's number as it prints it, to its own last digit (the shortest decimal that is the
/// value: 99.95, 87.7, 911): one decimal printed 001's training F1 of 99.95 as "100.0".
/// `docs/reproductions/paper-numbers.tsv` cites each.
pub(super) fn fmt_paper(p: &Option<(f64, Option<f64>)>) -> String {
    match p {
        None => "—".into(),
        Some((m, Some(sd))) => format!("{m} ± {sd}"),
        Some((m, None)) => format!("{m}"),
    }
}

/// The machine, for the report: CPU model and cores.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{}, {cores} cores, {}",
        crate::provenance::cpu(),
        std::env::consts::OS
    )
}

/// Writes `NAME.md`, `NAME.json` and `NAME.svg` into `o.out`; returns the Markdown.
pub fn report(e: &Experiment, o: &Options, results: &Results, date: &str) -> Result<String> {
    use std::fmt::Write;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", e.title);
    let _ = writeln!(
        md,
        "`piecewise-lab reproduce {}{}` — {date}, commit {}, {}.\n",
        e.name,
        if o.quick { " --quick" } else { "" },
        crate::provenance::COMMIT,
        machine()
    );
    if o.quick {
        let _ = writeln!(
            md,
            "**Quick form**: shrunk data and iterations; it checks the machinery, the numbers mean nothing.\n"
        );
    }
    let _ = writeln!(md, "## Protocol\n");
    for l in &e.protocol {
        let _ = writeln!(md, "- {l}");
    }
    let tables_json: Vec<serde_json::Value> = e
        .tables
        .iter()
        .map(|t| table_markdown(t, results, &mut md))
        .collect();
    let mut analysis_json = serde_json::Value::Null;
    let mut analysis_svg = None;
    let mut decided: Vec<(String, Option<(Verdict, String)>)> = e
        .claims
        .iter()
        .map(|c| (c.says.clone(), (c.check)(results)))
        .collect();
    holm_family(e, results, &mut decided);
    if let Some(a) = e.analysis {
        let s = a(e, o, results)?;
        let _ = writeln!(md, "\n## {}\n\n{}", s.title, s.markdown);
        // Its Markdown tables as cells too, so a hand edit of either shows (the report test).
        analysis_json = serde_json::json!({
            "title": s.title, "data": s.json, "tables": markdown_tables(&s.markdown),
        });
        analysis_svg = s.svg;
        decided.extend(s.claims.into_iter().map(|(c, ok, ev)| (c, Some((ok, ev)))));
    }
    let mut claims_json = vec![];
    if !decided.is_empty() {
        let _ = writeln!(md, "\n## Claims\n");
        for (says, d) in decided {
            let (verdict, evidence) = match d {
                Some((v, ev)) => (v.words(), ev),
                None => ("not decided", "the results lack what it needs".to_string()),
            };
            let _ = writeln!(md, "- **{verdict}** — {says}: {evidence}");
            claims_json.push(serde_json::json!({
                "says": says, "verdict": verdict, "evidence": evidence,
            }));
        }
    }
    let _ = writeln!(
        md,
        "\n![{}]({}.svg)\n\nRuns: `runs/TASK/ESTIMATOR/REP/` (each a run directory with {}).",
        e.title,
        e.name,
        crate::run::store::listed_files()
    );
    let runs_json = runs_json(e, results, o);
    let json = serde_json::json!({
        "name": e.name, "title": e.title, "quick": o.quick, "date": date,
        "commit": crate::provenance::COMMIT, "machine": machine(), "protocol": e.protocol,
        "tables": tables_json, "analysis": analysis_json, "claims": claims_json,
        "runs": runs_json,
    });
    write_json_atomic(&o.out.join(format!("{}.json", e.name)), &json)?;
    write_atomic(
        &o.out.join(format!("{}.svg", e.name)),
        analysis_svg
            .unwrap_or_else(|| figure(e, results))
            .as_bytes(),
    )?;
    write_atomic(&o.out.join(format!("{}.md", e.name)), md.as_bytes())?;
    Ok(md)
}

/// The multiplicity policy (one for every report): the claims decided by one paired test are a
/// family; their p-values are adjusted by Holm's method and each is decided again on its
/// adjusted p, which its evidence shows. Claims decided otherwise (intervals, several parts,
/// exact counts) are outside the family.
fn holm_family(
    e: &Experiment,
    results: &Results,
    decided: &mut [(String, Option<(Verdict, String)>)],
) {
    let tests: Vec<Option<(f64, f64)>> = e
        .claims
        .iter()
        .map(|c| {
            c.test
                .as_ref()
                .and_then(|t| t(results))
                .filter(|(_, p)| !p.is_nan())
        })
        .collect();
    let m = tests.iter().flatten().count();
    if m < 2 {
        return;
    }
    let adjusted =
        crate::eval::significance::holm(&tests.iter().map(|t| t.map(|x| x.1)).collect::<Vec<_>>());
    for ((_, d), (t, adj)) in decided.iter_mut().zip(tests.iter().zip(adjusted)) {
        if let (Some((v, ev)), Some((est, _)), Some(pa)) = (d.as_mut(), t, adj) {
            *v = Verdict::paired(*est, pa, 0.05);
            ev.push_str(&format!(
                "; Holm-adjusted over the report's {m} paired claims: {}",
                super::p_value(pa)
            ));
        }
    }
}

/// One table of the report: its Markdown (ours beside the paper's, where the paper has numbers)
/// appended to `md`, and its JSON.
fn table_markdown(t: &Table, results: &Results, md: &mut String) -> serde_json::Value {
    use std::fmt::Write;
    let _ = writeln!(md, "\n## {}\n", t.title);
    // A table the paper has no numbers for shows ours alone.
    let has_paper = t
        .rows
        .iter()
        .flat_map(|(_, cells)| cells.iter().flatten())
        .any(|c| c.paper.is_some());
    let mut head = "| |".to_string();
    let mut rule = "|---|".to_string();
    for c in &t.columns {
        if has_paper {
            let _ = write!(head, " {c} (ours) | {c} (paper) |");
            rule.push_str("---:|---:|");
        } else {
            let _ = write!(head, " {c} |");
            rule.push_str("---:|");
        }
    }
    let _ = writeln!(md, "{head}\n{rule}");
    let mut rows_json = vec![];
    for (label, cells) in &t.rows {
        let mut line = format!("| {label} |");
        let mut cells_json = vec![];
        for c in cells {
            match c {
                Some(c) => {
                    let s = stat(results, c);
                    let _ = write!(line, " {} |", fmt_stat_to(&s, decimals(&c.metric)));
                    if has_paper {
                        let _ = write!(line, " {} |", fmt_paper(&c.paper));
                    }
                    cells_json.push(serde_json::json!({
                        "group": c.group, "metric": c.metric, "ours": s,
                        "paper": c.paper.map(|(m, sd)| serde_json::json!({"mean": m, "sd": sd})),
                    }));
                }
                None => {
                    line.push_str(if has_paper { " — | — |" } else { " — |" });
                    cells_json.push(serde_json::Value::Null);
                }
            }
        }
        let _ = writeln!(md, "{line}");
        rows_json.push(serde_json::json!({ "label": label, "cells": cells_json }));
    }
    serde_json::json!({
        "title": t.title, "columns": t.columns, "rows": rows_json,
    })
}

/// Every run of the report by group: its directory, seconds, iterations, test scores, and the
/// value of every metric the report's tables read from it (`metrics`), so each table cell can be
/// checked against the runs it summarises.
fn runs_json(
    e: &Experiment,
    results: &Results,
    o: &Options,
) -> serde_json::Map<String, serde_json::Value> {
    let metrics_of = |g: &str| -> Vec<&Metric> {
        let mut ms: Vec<&Metric> = vec![];
        for c in e
            .tables
            .iter()
            .flat_map(|t| &t.rows)
            .flat_map(|(_, cs)| cs.iter().flatten())
        {
            if c.group == g && !ms.contains(&&c.metric) {
                ms.push(&c.metric);
            }
        }
        ms
    };
    results
        .iter()
        .map(|(g, rs)| {
            let ms = metrics_of(g);
            (
                g.clone(),
                serde_json::Value::Array(
                    rs.iter()
                        .map(|(d, s)| {
                            serde_json::json!({
                                "dir": d.strip_prefix(&o.out).unwrap_or(d),
                                "train_seconds": s.train_seconds,
                                "iterations": s.iterations,
                                "stop_reason": s.stop_reason,
                                "bp_unconverged": s.bp_unconverged,
                                // Why the run cannot decide a claim (verdict.rs's rule), if so.
                                "failure": s.failure(),
                                "test": s.test.as_ref().map(|t| serde_json::json!({
                                    "token_accuracy": t.token_accuracy,
                                    "segment_f1": t.segments.f1,
                                    "labels": t.labels.iter().map(|(k, v)| (k.clone(), v.f1)).collect::<std::collections::BTreeMap<_, _>>(),
                                    "layers": t.layers.iter().map(|(k, v)| (k.clone(), v.token_accuracy)).collect::<std::collections::BTreeMap<_, _>>(),
                                })),
                                "metrics": ms.iter().map(|m| serde_json::json!({
                                    "metric": m, "value": m.of(s),
                                })).collect::<Vec<_>>(),
                            })
                        })
                        .collect(),
                ),
            )
        })
        .collect()
}

/// The pipe tables of a Markdown text, each as its rows of trimmed cells (the header first, the
/// rule left out).
fn markdown_tables(md: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables: Vec<Vec<Vec<String>>> = vec![];
    let mut open = false;
    for line in md.lines().map(str::trim) {
        if !line.starts_with('|') {
            open = false;
            continue;
        }
        let cells: Vec<String> = split_row(line);
        if cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
        {
            continue;
        }
        if !open {
            tables.push(vec![]);
            open = true;
        }
        if let Some(t) = tables.last_mut() {
            t.push(cells);
        }
    }
    tables
}

/// A pipe-table row's cells, as written (`\|` is a bar inside a cell).
fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![];
    let mut cell = String::new();
    let mut escaped = false;
    for ch in inner.chars() {
        if ch == '|' && !escaped {
            cells.push(std::mem::take(&mut cell));
        } else {
            cell.push(ch);
        }
        escaped = ch == '\\' && !escaped;
    }
    cells.push(cell);
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// The experiment's figure as SVG.
pub fn figure(e: &Experiment, results: &Results) -> String {
    match &e.figure {
        Figure::Bars(n) => bars(e, results, *n),
        Figure::Scatter { x, ys, metric } => scatter(e, results, x, ys, metric),
        // Written by the analysis; without one, an empty frame.
        Figure::Analysis => svg_open(200.0, 40.0, &e.title) + "</svg>",
        Figure::Lines {
            x_label,
            xs,
            series,
            metric,
        } => {
            // Means ± one standard error (sd/√n: the spread between generating distributions
            // is much wider than the difference of the means it would hide).
            // One run per point has no spread to show.
            let repeated = series
                .iter()
                .flat_map(|(_, gs)| gs)
                .any(|g| e.groups.iter().any(|x| &x.name == g && x.runs.len() > 1));
            let ys: Vec<WhiskerSeries> = series
                .iter()
                .map(|(name, gs)| {
                    (
                        if repeated {
                            format!("{name} (mean ± s.e.)")
                        } else {
                            name.clone()
                        },
                        gs.iter()
                            .map(|g| {
                                stat(
                                    results,
                                    &Cell {
                                        group: g.clone(),
                                        metric: metric.clone(),
                                        paper: None,
                                    },
                                )
                                .map(|st| (st.mean, st.sd / (st.values.len() as f64).sqrt()))
                            })
                            .collect(),
                    )
                })
                .collect();
            svg_whisker_lines(&e.title, x_label, &metric.label(), xs, &ys)
        }
    }
}

/// Per-run pairs of a metric: x's run k against each y group's run k, and the diagonal.
fn scatter(
    e: &Experiment,
    results: &Results,
    x: &(String, String),
    ys: &[(String, String)],
    metric: &Metric,
) -> String {
    use crate::experiments::charts::{svg_lines, Series};
    let values = |g: &str| -> Vec<Option<f64>> {
        results
            .get(g)
            .map(|rs| rs.iter().map(|(_, s)| metric.of(s)).collect())
            .unwrap_or_default()
    };
    let xv = values(&x.1);
    let colors = [[70, 120, 220], [220, 120, 60], [60, 160, 90]];
    let mut series: Vec<Series> = ys
        .iter()
        .zip(colors.iter().cycle())
        .map(|((label, g), &color)| Series {
            name: label.clone(),
            color,
            points: xv
                .iter()
                .zip(values(g))
                .filter_map(|(a, b)| Some([(*a)?, b?]))
                .collect(),
            markers: true,
        })
        .collect();
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p[0], p[1]]))
        .collect();
    if let (Some(lo), Some(hi)) = (
        all.iter().cloned().reduce(f64::min),
        all.iter().cloned().reduce(f64::max),
    ) {
        series.push(Series {
            name: "x = y".into(),
            color: [150, 150, 150],
            points: vec![[lo, lo], [hi, hi]],
            markers: false,
        });
    }
    let y_label = ys
        .iter()
        .map(|y| y.0.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    svg_lines(
        &e.title,
        &x.0,
        &format!("{y_label}: {}", metric.label()),
        &series,
    )
}

/// Grouped bars: one group per row of the first table, one bar per of its first `n` columns;
/// whiskers ±sd; the paper's value a black tick.
/// `label` in lines of at most about `width` characters, broken between words.
fn wrap(label: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![String::new()];
    for word in label.split_whitespace() {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

pub(super) fn bars(e: &Experiment, results: &Results, n: usize) -> String {
    use std::fmt::Write;
    let t = &e.tables[0];
    let n = n.min(t.columns.len()).max(1);
    // Scores only: rows of seconds have their own scale (they are in the table).
    let rows: Vec<&(String, Vec<Option<Cell>>)> = t
        .rows
        .iter()
        .filter(|(_, cells)| !cells.iter().flatten().all(|c| c.metric == Metric::Seconds))
        .collect();
    let vals: Vec<Vec<(Option<Stat>, Option<f64>)>> = rows
        .iter()
        .map(|(_, cells)| {
            cells[..n.min(cells.len())]
                .iter()
                .map(|c| match c {
                    Some(c) => (stat(results, c), c.paper.map(|p| p.0)),
                    None => (None, None),
                })
                .collect()
        })
        .collect();
    let all: Vec<f64> = vals
        .iter()
        .flatten()
        .flat_map(|(s, p)| s.iter().map(|s| s.mean + s.sd).chain(*p))
        .collect();
    let hi = all.iter().cloned().fold(1.0, f64::max);
    let lo = all.iter().cloned().fold(hi, f64::min);
    // Round axis ends: multiples of 10 for percentages, of a power of ten for seconds.
    let unit = if hi > 100.0 {
        10f64.powf(hi.log10().floor())
    } else {
        10.0
    };
    let top = (hi / unit).ceil() * unit;
    let bottom = if lo > 50.0 && hi <= 100.0 {
        ((lo - 5.0) / unit).floor() * unit
    } else {
        0.0
    };
    // About 100 px per row (wider with many rows), each label wrapped to its row's width
    // (about 7 px a character), the bottom margin as deep as the longest label.
    let (ml, mt) = (60.0, 40.0);
    let w = f64::max(760.0, ml + 20.0 + 100.0 * rows.len() as f64);
    let gw = (w - ml - 20.0) / rows.len().max(1) as f64;
    let wrapped: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, _)| wrap(label, ((gw / 7.0).floor() as usize).max(6)))
        .collect();
    let deepest = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    let mb = 50.0 + 14.0 * deepest as f64;
    let h = 330.0 + mb;
    let ph = h - mb - mt;
    let bw = gw * 0.8 / n as f64;
    let y = |v: f64| mt + ph * (1.0 - ((v - bottom) / (top - bottom).max(1e-9)).clamp(0.0, 1.0));
    let mut s = svg_open(w, h, &e.title);
    y_grid(&mut s, (bottom, top), w, ml, y);
    for (r, (lines, row)) in wrapped.iter().zip(&vals).enumerate() {
        let x0 = ml + gw * r as f64 + gw * 0.1;
        for (c, (st, paper)) in row.iter().enumerate() {
            let x = x0 + bw * c as f64;
            if let Some(st) = st {
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                    y(st.mean),
                    bw * 0.9,
                    (y(bottom) - y(st.mean)).max(0.0),
                    PALETTE[c % PALETTE.len()]
                );
                let xm = x + bw * 0.45;
                if st.values.len() > 1 {
                    let _ = write!(
                        s,
                        r#"<line x1="{xm:.1}" x2="{xm:.1}" y1="{:.1}" y2="{:.1}" stroke="black"/>"#,
                        y(st.mean - st.sd),
                        y(st.mean + st.sd)
                    );
                }
            }
            if let Some(pv) = paper {
                let _ = write!(
                    s,
                    r#"<line x1="{x:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="black" stroke-width="3"/>"#,
                    x + bw * 0.9,
                    y(*pv),
                    y(*pv)
                );
            }
        }
        for (i, l) in lines.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x0 + gw * 0.4,
                h - mb + 16.0 + 14.0 * i as f64,
                esc(l)
            );
        }
    }
    // Each entry as wide as its text (about 7 px a character at 12 px).
    let mut lx = ml + 10.0;
    for (c, name) in t.columns[..n].iter().enumerate() {
        let label_w = 7.0 * (name.chars().count() + 14) as f64;
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{} (ours, ±sd)</text>"#,
            h - 22.0,
            PALETTE[c % PALETTE.len()],
            lx + 16.0,
            h - 12.0,
            esc(name)
        );
        lx += 16.0 + label_w + 12.0;
    }
    let _ = write!(
        s,
        r#"<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="black" stroke-width="3"/><text x="{3}" y="{4}">paper</text></svg>"#,
        w - 120.0,
        w - 100.0,
        h - 16.0,
        w - 95.0,
        h - 12.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::super::{paired_claim, Experiment, Figure, Metric, Results, Verdict};

    /// Three paired claims, raw p about 0.004, 0.03 and 0.6 (paired t over five runs): Holm
    /// multiplies the smallest by 3 (0.012, holds), the next by 2 (0.06: not significant), the
    /// largest by 1 — each decided again on its adjusted p, the adjustment in its evidence.
    #[test]
    fn the_report_adjusts_its_paired_claims_by_holm() {
        let runs = super::timed_runs;
        let base = [10.0, 11.0, 12.0, 13.0, 14.0];
        let plus = |d: [f64; 5]| -> Vec<f64> { base.iter().zip(d).map(|(b, x)| b + x).collect() };
        let r: Results = [
            ("t/base".to_string(), runs(&base)),
            ("t/a".to_string(), runs(&plus([1.0, 1.2, 0.9, 1.1, 1.3]))),
            ("t/b".to_string(), runs(&plus([1.0, 0.2, 1.5, 0.4, 1.9]))),
            ("t/c".to_string(), runs(&plus([1.0, -1.2, 0.5, -0.8, 0.9]))),
        ]
        .into();
        let claims: Vec<_> = ["t/a", "t/b", "t/c"]
            .iter()
            .map(|g| paired_claim(format!("{g} beats base"), g, "t/base", Metric::Seconds))
            .collect();
        let raw: Vec<f64> = claims
            .iter()
            .map(|c| (c.test.as_ref().unwrap())(&r).unwrap().1)
            .collect();
        assert!(
            raw[0] < 0.05 / 3.0 && raw[1] < 0.05 && raw[1] > 0.025 && raw[2] > 0.05,
            "{raw:?}"
        );
        let e = Experiment {
            name: "t",
            title: "t".into(),
            protocol: vec![],
            groups: vec![],
            tables: vec![],
            figure: Figure::Analysis,
            analysis: None,
            claims,
        };
        let mut decided: Vec<(String, Option<(Verdict, String)>)> = e
            .claims
            .iter()
            .map(|c| (c.says.clone(), (c.check)(&r)))
            .collect();
        assert_eq!(decided[1].1.as_ref().unwrap().0, Verdict::Holds);
        super::holm_family(&e, &r, &mut decided);
        let v: Vec<Verdict> = decided.iter().map(|d| d.1.as_ref().unwrap().0).collect();
        assert_eq!(
            v,
            [
                Verdict::Holds,
                Verdict::NotSignificant,
                Verdict::NotSignificant
            ]
        );
        let ev = &decided[1].1.as_ref().unwrap().1;
        let want = format!(
            "Holm-adjusted over the report's 3 paired claims: p = {:.3}",
            2.0 * raw[1]
        );
        assert!(ev.ends_with(&want), "{ev} / {want}");
    }
}
