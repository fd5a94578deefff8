//! `reproduce NAME --quick` for every experiment on the shared corpora (skipped with a notice
//! when ../shared/data is absent): each writes its Markdown, JSON and SVG report with a number
//! of ours in every cell the experiment fills and the paper's beside it; started again in the
//! same folder it reuses every finished run; experiments sharing runs (Tables 6, 7 and 9 on the
//! seminars) share them. The summary statistics against hand computation.

use piecewise_lab::experiments::reproduce::{self, Build, Event, Options, Stat, EXPERIMENTS};
use piecewise_lab::run::spec::RunSpec;
use std::path::PathBuf;

fn data() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if d.join("conll2000").exists() && d.join("seminars").exists() {
        Some(d)
    } else {
        eprintln!("skipping: ../shared/data is absent");
        None
    }
}

#[test]
fn stat_is_mean_and_sample_sd() {
    let s = Stat::of(vec![1.0, 2.0, 4.0]).unwrap();
    assert!((s.mean - 7.0 / 3.0).abs() < 1e-12);
    // Σ(x − m)² = 16/9 + 1/9 + 25/9 = 42/9; / (n − 1) = 7/3.
    assert!((s.sd - (7.0f64 / 3.0).sqrt()).abs() < 1e-12);
    assert_eq!(Stat::of(vec![5.0]).unwrap().sd, 0.0);
    assert!(Stat::of(vec![]).is_none());
}

/// Options writing into `dir`, two threads.
fn options(data: PathBuf, dir: &tempfile::TempDir, quick: bool) -> Options {
    Options {
        quick,
        data,
        out: dir.path().to_path_buf(),
        threads: 2,
        settings: Default::default(),
    }
}

#[test]
fn every_experiment_runs_quick_and_reports() {
    let Some(data) = data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let o = options(data, &dir, true);
    // 001-table2 is not a set of runs: it has its own test below.
    let names: Vec<&str> = EXPERIMENTS
        .iter()
        .filter(|e| matches!(e.build, Build::Runs(_)))
        .map(|e| e.name)
        .collect();
    assert_eq!(names.len(), 22);
    for name in &names {
        let e = reproduce::experiment(name, &o).unwrap();
        let mut reused = 0;
        let results = reproduce::run_all(&e, &o, &mut |ev| {
            if let Event::Reused(..) = ev {
                reused += 1
            }
        })
        .unwrap();
        if *name == "000-fig4" {
            // Fig. 3 ran PL and PWPL at Fig. 4's largest size on the same data sets.
            assert_eq!(reused, 2, "{name} reuses Fig. 3's runs");
        }
        if *name == "000-table9" {
            // Table 6 ran the chain, bp, pl and pw on the same splits: only pwpl is new.
            assert_eq!(reused, 4, "{name} reuses Table 6's runs");
        }
        let md = reproduce::report(&e, &o, &results, "today").unwrap();
        for ext in ["md", "json", "svg"] {
            assert!(
                dir.path().join(format!("{name}.{ext}")).exists(),
                "{name}.{ext}"
            );
        }
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(json["quick"], true);
        // The Markdown is the JSON's, and the JSON's cells are the run directories'.
        let faults = super::report_tables::faults(&md, &json, Some(dir.path()));
        assert!(faults.is_empty(), "{name}: {}", faults.join("\n"));
        // Every cell the experiment defines has a value of ours.
        for t in json["tables"].as_array().unwrap() {
            for row in t["rows"].as_array().unwrap() {
                for c in row["cells"].as_array().unwrap() {
                    if !c.is_null() {
                        assert!(
                            c["ours"]["mean"].as_f64().is_some(),
                            "{name}: {} has no value in {c}",
                            row["label"]
                        );
                    }
                }
            }
        }
        // Our numbers beside the paper's where it has some (000-fig4, 003's diagrams, 004's
        // theory figures, consistency and §8.3 grids: none in the tables, so no empty paper
        // columns).
        assert!(md.contains("--quick"), "{name}");
        let has_paper = json["tables"].as_array().unwrap().iter().any(|t| {
            t["rows"].as_array().unwrap().iter().any(|r| {
                r["cells"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| !c.is_null() && !c["paper"].is_null())
            })
        });
        assert_eq!(md.contains("(paper)"), has_paper, "{name}: paper columns");
        assert_eq!(
            has_paper,
            ![
                "000-fig3",
                "000-fig4",
                "003-fig1",
                "003-fig2",
                "004-consistency",
                "004-crf",
                "004-boltzmann-chain",
                "004-fig21",
                "004-fig1",
                "004-fig2",
                "004-fig3"
            ]
            .contains(name),
            "{name}"
        );
        // Every claim has a verdict with its evidence: holds, not significant (the claimed
        // direction without a significant test), does not hold, or not decided (and why).
        for c in json["claims"].as_array().unwrap() {
            let v = c["verdict"].as_str().unwrap();
            assert!(
                ["holds", "not significant", "does not hold", "not decided"].contains(&v),
                "{name}: {c}"
            );
            assert!(md.contains(&format!("**{v}**")), "{name}");
        }
        if name.starts_with("001-table1")
            || name.starts_with("002-")
            || name.starts_with("004-")
            || *name == "000-fig3"
        {
            assert!(!json["claims"].as_array().unwrap().is_empty(), "{name}");
        }
        if name.starts_with("001-table1") {
            // The prior chosen on the development split: every row of the grid scored, a σ² of
            // the grid chosen, and 001's claims decided again on the chosen runs.
            let a = &json["analysis"];
            let text = a.to_string();
            assert!(text.contains("chosen_sigma2"), "{name}: {text}");
            assert!(md.contains("development split"), "{name}");
            let dev_claims = json["claims"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c.to_string().contains("chosen on the development split"))
                .count();
            assert_eq!(dev_claims, 2, "{name}");
            // 001's time claim, decided on the ratio of CRF-PT's seconds to the CRF's, beside
            // 001's own ratio (NER 5 h 35 min / 9 h, POS 2 h 30 min / 14 h).
            let paper_ratio = if *name == "001-table1-ner" {
                "0.62×"
            } else {
                "0.18×"
            };
            let time = json["claims"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c.to_string().contains("trains in less time than the CRF"))
                .unwrap_or_else(|| panic!("{name}: no time claim"));
            assert!(time.to_string().contains(paper_ratio), "{name}: {time}");
            let crf_seconds = if *name == "001-table1-ner" {
                32400.0
            } else {
                50400.0
            };
            let shown = json["tables"][0]["rows"].to_string();
            assert!(
                shown.contains(&format!("{crf_seconds}")),
                "{name}: 001's seconds in the table: {shown}"
            );
            // Global against local decoding by NOTA weight: the local column re-decodes each
            // run as its own spec does, so it must equal the run's test score to the last digit.
            let ner = *name == "001-table1-ner";
            let prefix = if ner { "nota-ner" } else { "nota-pos" };
            let d = &a["data"]["decoding_by_weight"];
            for key in [
                "memm",
                "crf-pt-weight-0",
                "crf-pt-weight-1-over-l",
                "crf-pt-local",
            ] {
                let test = &json["runs"][format!("{prefix}/{key}")][0]["test"];
                let (local, global, table) = if ner {
                    (
                        &d[key]["local"]["f1"],
                        &d[key]["global"]["f1"],
                        &test["segment_f1"],
                    )
                } else {
                    (&d[key]["local"], &d[key]["global"], &test["token_accuracy"])
                };
                assert_eq!(local.as_f64(), table.as_f64(), "{name} {key}: {d}");
                assert!(global.as_f64().is_some(), "{name} {key}: {d}");
            }
            assert!(d["nota_costs_global_decoding"].is_boolean(), "{name}: {d}");
            assert!(md.contains("Global decoding against the NOTA weight"));
        }
        if *name == "001-table1-pos" {
            // Quick runs stop (5 iterations) before error-driven NOTA chooses its terms (after
            // 20): it has none, and must equal exhaustive NOTA with weight 0 to the last digit.
            let acc = |g: &str| {
                json["runs"][g][0]["test"]["token_accuracy"]
                    .as_f64()
                    .unwrap()
            };
            assert_eq!(
                acc("nota-pos/crf-pt-weight-0"),
                acc("nota-pos/crf-pt-error-driven")
            );
        }
        if *name == "003-fig1" {
            // 003 §2's definitions on a 4-token chain: the MEMM and PL predict one label per
            // piece, the CRF is one piece over every label, PW one piece per factor (the start
            // factor and three edges), CRF-PT the MEMM's pieces plus NOTA terms.
            let d = &json["analysis"]["data"];
            let by = |e: &str| {
                d.as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["estimator"] == e)
                    .unwrap()
                    .clone()
            };
            for e in ["memm", "pl", "nota"] {
                let free = by(e)["free"].as_array().unwrap().clone();
                assert_eq!(free.len(), 4, "{e}");
                assert!(free.iter().all(|f| f.as_array().unwrap().len() == 1), "{e}");
            }
            assert_eq!(by("ml")["free"], serde_json::json!([[0, 1, 2, 3]]));
            assert_eq!(by("pw")["pieces"], 4);
            assert!(by("pw")["factors"].as_array().unwrap().iter().all(|f| f
                .as_array()
                .unwrap()
                .len()
                == 1));
            assert!(by("nota")["nota_terms"].as_u64().unwrap() > 0);
            assert_eq!(by("memm")["nota_terms"], 0);
            // PL's pieces hold both neighbouring factors of an inner label, the MEMM's one.
            let nf = |e: &str, k: usize| by(e)["factors"][k].as_array().unwrap().len();
            assert_eq!((nf("pl", 1), nf("memm", 1)), (2, 1));
        }
        if *name == "003-fig2" {
            // Every claim about the drawn pieces holds (they are the code's own terms), and the
            // bagged classifier's factors each read one family: the bias, U00, and U01's two.
            for c in json["claims"].as_array().unwrap() {
                let says = c["says"].as_str().unwrap();
                if says.starts_with("Phase 1,")
                    || says.starts_with("Phase 2,")
                    || says.starts_with("Testing")
                    || says.contains("Fig. 2 right")
                {
                    assert_eq!(c["verdict"], "holds", "{says}: {}", c["evidence"]);
                }
            }
            let d = json["analysis"]["data"].as_array().unwrap();
            let bagged = d
                .iter()
                .find(|x| x["panel"] == "Trained with features bagged")
                .unwrap();
            assert_eq!(
                bagged["factor_features"],
                serde_json::json!([["*"], ["U00:He"], ["U01:PRP", "U01:He/PRP"]])
            );
        }
        let svg = std::fs::read_to_string(dir.path().join(format!("{name}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}"
        );
    }
    // Table 5 compares BP with exact inference at the trained weights.
    let t5 = std::fs::read_to_string(dir.path().join("000-table5.json")).unwrap();
    let t5: serde_json::Value = serde_json::from_str(&t5).unwrap();
    let d = t5["analysis"]["data"]["bp_vs_exact"]["fcrf/ml"]["mean_abs_diff"]
        .as_f64()
        .unwrap();
    assert!(
        d > 0.0 && d < 0.5,
        "BP beliefs differ from the exact marginals, a little: {d}"
    );
    // ... and chooses every estimator's σ² on its development split, deciding 000's claims
    // again on the chosen runs.
    for est in ["pw", "pl", "pl-edge", "bp", "ml"] {
        let c = &t5["analysis"]["data"]["dev_prior"][est];
        let s = c["chosen_sigma2"]
            .as_f64()
            .unwrap_or_else(|| panic!("{est}: {c}"));
        assert!([1.0, 10.0, 100.0].contains(&s), "{est}: {s}");
        assert_eq!(c["dev"].as_array().unwrap().len(), 3, "{est}");
    }
    let chosen = claims_saying(&t5, "chosen on the development split");
    assert_eq!(chosen, 3, "{}", t5["claims"]);
    // Table 8 splits training time into evaluations and their cost, read from the runs'
    // summaries; PWPL's inference (K values per position) counts fewer operations than ML's
    // forward–backward (K² per position).
    let t8 = std::fs::read_to_string(dir.path().join("000-table8.json")).unwrap();
    let t8: serde_json::Value = serde_json::from_str(&t8).unwrap();
    for task in ["pos", "chunk"] {
        let per_eval = |est: &str| {
            let run = &t8["runs"][format!("{task}/{est}")][0]["dir"];
            let s: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(
                    dir.path().join(run.as_str().unwrap()).join("summary.json"),
                )
                .unwrap(),
            )
            .unwrap();
            let ev = s["evaluations"].as_f64().unwrap();
            (ev, s["ops"].as_f64().unwrap() / ev)
        };
        let a = &t8["analysis"]["data"]["time"][task];
        for est in ["ml", "pwpl"] {
            let (ev, ops) = per_eval(est);
            assert_eq!(a[est]["evaluations"].as_f64(), Some(ev), "{task}/{est}");
            assert_eq!(
                a[est]["ops_per_evaluation"].as_f64(),
                Some(ops),
                "{task}/{est}"
            );
        }
        assert!(per_eval("pwpl").1 * 5.0 < per_eval("ml").1, "{task}");
    }
    // Each task's factorisation is chosen on development data, and its claims decided again
    // on the chosen one (as Table 4's).
    let d = &t8["analysis"]["data"]["dev_factorisation"];
    for task in ["POS", "chunking", "NER"] {
        let chosen = d[task]["chosen"].as_str().unwrap();
        assert!(["`edge`", "`edge-pair`"].contains(&chosen), "{task}: {d}");
        assert_eq!(d[task]["dev"].as_array().unwrap().len(), 2, "{task}: {d}");
    }
    for t in [&t8, &{
        let t4 = std::fs::read_to_string(dir.path().join("000-table4.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&t4).unwrap()
    }] {
        let again = claims_saying(t, "chosen on development data");
        assert!(again >= 3, "{}", t["claims"]);
    }
    // Table 3's coupling against evidence, recomputed from the weights as `dump` writes them.
    let t3: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("002-table3.json")).unwrap())
            .unwrap();
    for g in ["seg8/pw", "seg8/camel0"] {
        let run = dir.path().join(t3["runs"][g][0]["dir"].as_str().unwrap());
        let (fam, theta) = piecewise_lab::run::RunFiles::at(&run).model().unwrap();
        let text = piecewise_lab::graph::family::dump_weights(fam.as_ref(), &theta);
        let (mut diag, mut off) = (vec![], vec![]);
        let mut unary = std::collections::HashMap::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let w: f64 = f.last().unwrap().parse().unwrap();
            match f[0] {
                "pairwise" if f[2] == f[3] => diag.push(w),
                "pairwise" => off.push(w),
                "unary" if f[1] != "*" => {
                    let k: usize = f[1].trim_start_matches("obs").parse().unwrap();
                    unary.insert((k - 1, f[2].parse::<usize>().unwrap()), w);
                }
                _ => {}
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let k = 7;
        let evidence: Vec<f64> = (0..k)
            .map(|l| {
                let others: Vec<f64> = (0..k).filter(|&j| j != l).map(|j| unary[&(j, l)]).collect();
                unary[&(l, l)] - mean(&others)
            })
            .collect();
        let want = (mean(&diag) - mean(&off)) / mean(&evidence);
        let got = t3["analysis"]["data"][g]["coupling_over_evidence"]["mean"]
            .as_f64()
            .unwrap();
        assert!(
            (got - want).abs() < 1e-12 * want.abs().max(1.0),
            "{g}: {got} against {want}"
        );
    }
    // Started again: every run is reused.
    let e = reproduce::experiment("000-table5", &o).unwrap();
    let mut started = 0;
    reproduce::run_all(&e, &o, &mut |ev| {
        if let Event::Started(..) = ev {
            started += 1
        }
    })
    .unwrap();
    assert_eq!(started, 0);
    // Unknown names are errors that list the known ones.
    let err = reproduce::experiment("000-table99", &o)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("000-table5"), "{err}");
}

/// `reproduce 001-table2 --quick`: every row of 001 Table 2 and the global CRF-CFG, for both
/// feature sets, with EVALB numbers and NOTA counts near the paper's 160 per sentence.
#[test]
fn parsing_table2_runs_quick() {
    use piecewise_lab::experiments::reproduce::parsing::{table2, Table2Options};
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if !d.join("ptb-wsj-sample/treebank.zip").exists() {
        eprintln!("skipping: the WSJ sample is absent");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        quick: true,
        data: d,
        out: dir.path().to_path_buf(),
        threads: 2,
        settings: Default::default(),
    };
    let t2 = Table2Options {
        grammar: Default::default(),
        split: vec![false, true],
        nota_threshold: None,
        nota_per_sentence: 160.0,
        max_iter: 300,
        grammar_on_all: true,
        dev: false,
        only: vec![],
        folds: 0,
    };
    // The registry's entry reads the same options off the settings' defaults.
    assert_eq!(
        format!("{:?}", Table2Options::from_settings(&o.settings).unwrap()),
        format!("{t2:?}")
    );
    let md = table2(&o, &t2, &mut |_| {}).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("001-table2.json")).unwrap())
            .unwrap();
    let rows = json["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "GENERATIVE",
            "MECFG",
            "PT-CFG",
            "CRF-CFG (global)",
            "MECFG + split",
            "PT-CFG + split",
            "CRF-CFG (global) + split"
        ]
    );
    for r in rows {
        let f1 = r["f1"].as_f64().unwrap();
        assert!(f1 > 20.0 && f1 <= 100.0, "{r}");
        assert_eq!(r["score"]["sentences"], 20);
        if r["estimator"] == "nota" {
            let per = r["train"]["nota_instances"].as_f64().unwrap() / 60.0;
            assert!((150.0..200.0).contains(&per), "NOTA per sentence {per}");
        }
    }
    assert!(md.contains("81.7 / 83.1") && md.contains("— quick"), "{md}");
}

fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

/// The numbers of a report (seconds left out: they are the machine's, not the method's).
fn numbers(dir: &std::path::Path, name: &str) -> Vec<(String, String, f64)> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap())
            .unwrap();
    let mut out = vec![];
    for t in json["tables"].as_array().unwrap() {
        for row in t["rows"].as_array().unwrap() {
            for c in row["cells"].as_array().unwrap() {
                if !c.is_null() && c["metric"] != "seconds" {
                    out.push((
                        row["label"].to_string(),
                        c["metric"].to_string(),
                        c["ours"]["mean"].as_f64().unwrap(),
                    ));
                }
            }
        }
    }
    out
}

/// `reproduce NAME --plan` writes the unfinished runs as command lines by stage (000-table6's
/// skip-chain BP starts from the linear chain, so it waits a stage); run by a scheduler (two at
/// a time, as `parallel -j2`) and collected by `reproduce NAME`, they give the report a
/// `reproduce NAME` alone gives, and nothing runs twice.
#[test]
fn a_planned_reproduction_gives_the_same_report() {
    let Some(data) = data() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let name = "000-table6";
    let reproduce = |out: &std::path::Path, plan: bool| {
        let mut c = bin();
        c.args(["reproduce", name, "--quick", "--threads", "1", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(out);
        if plan {
            c.arg("--plan");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o
    };
    let alone = tmp.path().join("alone");
    reproduce(&alone, false);
    let planned = tmp.path().join("planned");
    let o = reproduce(&planned, true);
    let lines = String::from_utf8(o.stdout).unwrap();
    let plan = planned.join("plan").join(name);
    let stages: Vec<String> = (1..)
        .map(|k| plan.join(format!("stage-{k}.txt")))
        .take_while(|f| f.exists())
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert_eq!(stages.len(), 2, "the skip-chain BP runs wait for the chain");
    assert!(
        stages[1].lines().all(|l| l.contains("seminars/bp")),
        "{}",
        stages[1]
    );
    assert_eq!(stages.concat(), lines, "stdout lists the stages in order");
    assert!(
        !planned.join(format!("{name}.json")).exists(),
        "--plan runs nothing"
    );
    for stage in &stages {
        let lines: Vec<&str> = stage.lines().collect();
        for pair in lines.chunks(2) {
            let kids: Vec<_> = pair
                .iter()
                .map(|l| {
                    std::process::Command::new("bash")
                        .arg("-c")
                        .arg(l)
                        .spawn()
                        .unwrap()
                })
                .collect();
            for mut k in kids {
                assert!(k.wait().unwrap().success());
            }
        }
    }
    let o = reproduce(&planned, false);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("reused").count(),
        lines.lines().count(),
        "every planned run is reused: {err}"
    );
    assert_eq!(numbers(&planned, name), numbers(&alone, name));
}

/// `--collect` trains nothing: with one planned run missing and one failed it names both and
/// fails, leaving the missing run missing; the plan's lines run again leave the finished runs
/// as they are and redo the two; then `--collect` succeeds with the report `reproduce` alone
/// gives.
#[test]
fn collect_trains_nothing_and_plan_lines_are_idempotent() {
    let Some(data) = data() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let name = "000-table6";
    let reproduce = |out: &std::path::Path, extra: &[&str]| {
        let mut c = bin();
        c.args(["reproduce", name, "--quick", "--threads", "1", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(out)
            .args(extra);
        c.output().unwrap()
    };
    let alone = tmp.path().join("alone");
    assert!(reproduce(&alone, &[]).status.success());
    let planned = tmp.path().join("planned");
    let lines = String::from_utf8(reproduce(&planned, &["--plan"]).stdout).unwrap();
    assert!(!lines.contains("--force"), "{lines}");
    let lines: Vec<&str> = lines.lines().collect();
    let sh = |l: &str| {
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(l)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{l}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    // Every line but the last (a later stage's: nothing starts from it), which stays missing.
    let n = lines.len();
    for l in &lines[..n - 1] {
        sh(l);
    }
    let out_of = |l: &str| {
        let at = l.find(" --out ").unwrap() + 7;
        std::path::PathBuf::from(l[at..].split(' ').next().unwrap().trim_matches('\''))
    };
    let (missing, failed, kept) = (out_of(lines[n - 1]), out_of(lines[0]), out_of(lines[1]));
    // The first dies: its summary says so, as a killed job's retry would find it.
    let path = failed.join("summary.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["status"] = "failed".into();
    v["error"] = "killed by the time limit".into();
    std::fs::write(&path, v.to_string()).unwrap();
    let kept_summary = std::fs::read(kept.join("summary.json")).unwrap();

    let o = reproduce(&planned, &["--collect"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}): missing", missing.display())),
        "{err}"
    );
    assert!(err.contains("failed: killed by the time limit"), "{err}");
    assert!(err.contains("2 of "), "{err}");
    assert!(
        !missing.join("summary.json").exists(),
        "collecting trained: {err}"
    );
    assert!(
        planned.join(format!("{name}.md")).exists(),
        "the report of what finished"
    );

    // Every line again: the missing and the failed run train, the others are left alone.
    for l in &lines {
        sh(l);
    }
    assert_eq!(
        std::fs::read(kept.join("summary.json")).unwrap(),
        kept_summary
    );
    let o = reproduce(&planned, &["--collect"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(numbers(&planned, name), numbers(&alone, name));
}

/// The full (not quick) experiment `name`, built without running anything (its data files
/// written into the returned folder); `None` without ../shared/data.
fn full_experiment(name: &str) -> Option<(reproduce::Experiment, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let e = reproduce::experiment(name, &options(data()?, &dir, false)).unwrap();
    Some((e, dir))
}

/// Group `n`'s run specs.
fn runs(e: &reproduce::Experiment, n: &str) -> Vec<RunSpec> {
    e.groups
        .iter()
        .find(|g| g.name == n)
        .unwrap_or_else(|| panic!("no group {n}"))
        .runs
        .clone()
}

/// A controlled experiment's runs are its base's with one change: `undo` checks the change
/// on run k of `varied` against run k of `base` and puts the base's value back; then the two
/// specs must be equal but for their names.
fn one_change(
    e: &reproduce::Experiment,
    base: &str,
    varied: &str,
    undo: impl Fn(&RunSpec, &mut RunSpec),
) {
    let (a, b) = (runs(e, base), runs(e, varied));
    assert_eq!(a.len(), b.len(), "{base} against {varied}");
    for (mut a, mut b) in a.into_iter().zip(b) {
        undo(&a, &mut b);
        (a.name, b.name) = (None, None);
        assert_eq!(
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap(),
            "{base} against {varied}"
        );
    }
}

/// 000-table7's controlled experiments change one thing each: the μ rows differ from the
/// uniform-μ runs only in μ (and their names), the cap rows only in the iteration cap, the
/// linear-chain rows only in the model (no skip edges).
#[test]
fn table7_variants_change_one_knob() {
    use piecewise_lab::estimators::EstimatorSpec;
    use piecewise_lab::graph::chain::SkipFeatures;
    use piecewise_lab::run::ModelSpec;
    let Some((e, _dir)) = full_experiment("000-table7") else {
        return;
    };
    let base = "seminars/pw-reweighted";
    assert_eq!(runs(&e, base).len(), 10);
    for (mu, n) in [(0.001, "mu0.001"), (0.01, "mu0.01"), (0.1, "mu0.1")] {
        one_change(&e, base, &format!("{base}-{n}"), |_, b| {
            assert!(b.name.as_deref().unwrap().contains(n));
            match &mut b.estimator {
                EstimatorSpec::PwReweighted { mu: m, .. } => {
                    assert_eq!(*m, Some(mu));
                    *m = None;
                }
                other => panic!("{other:?}"),
            }
        });
    }
    // Without the skip edges: the same runs on the linear chain.
    for est in ["pw", "pw-reweighted"] {
        one_change(
            &e,
            &format!("seminars/{est}"),
            &format!("seminars-chain/{est}"),
            |a, b| {
                assert_ne!(
                    serde_json::to_value(&a.model).unwrap(),
                    serde_json::to_value(&b.model).unwrap()
                );
                b.model = a.model.clone();
            },
        );
        // The skip factors with the label pair alone: the same skip-chain but for that.
        one_change(
            &e,
            &format!("seminars/{est}"),
            &format!("seminars/{est}-skip-bias"),
            |_, b| match &mut b.model {
                ModelSpec::SkipChain(c) => {
                    let k = c.skip.as_mut().unwrap();
                    assert_eq!(k.features, SkipFeatures::Bias);
                    k.features = SkipFeatures::Word;
                }
                other => panic!("{other:?}"),
            },
        );
    }
    one_change(&e, base, &format!("{base}-iter8000"), |a, b| {
        assert_eq!(b.optimiser.max_iter, 8000);
        b.optimiser.max_iter = a.optimiser.max_iter;
    });
}

/// 000-table5's prior rows differ from Table 5's own runs in σ² alone (and their names).
#[test]
fn table5_prior_variants_change_the_prior() {
    let Some((e, _dir)) = full_experiment("000-table5") else {
        return;
    };
    for est in ["pw", "pl", "pl-edge", "bp", "ml"] {
        let base = format!("fcrf/{est}");
        assert_eq!(runs(&e, &base).len(), 5);
        for sigma2 in [1.0, 100.0] {
            one_change(&e, &base, &format!("fcrf/prior/{est}/s{sigma2}"), |a, b| {
                assert_eq!(a.prior.sigma2, Some(10.0));
                assert_eq!(b.prior.sigma2, Some(sigma2));
                b.prior = a.prior;
            });
        }
    }
}

/// 002-table3's stronger classifiers observe the same label images as the table's: one change,
/// the observation noise (the same seeds; the noise is σ times the same standard normals).
#[test]
fn table3_stronger_classifiers_see_the_same_images() {
    let Some((e, _dir)) = full_experiment("002-table3") else {
        return;
    };
    let read = |p: &std::path::Path| piecewise_lab::data::grid::read_grid(p).unwrap();
    for (base, varied) in [
        ("seg8/pw", "seg8-n0.8/pw"),
        ("seg8/cccp-camel", "seg8-n0.5/cccp-camel"),
    ] {
        one_change(&e, base, varied, |a, b| {
            for (fa, fb) in [
                (&a.train, &b.train),
                (a.test.as_ref().unwrap(), b.test.as_ref().unwrap()),
            ] {
                assert_ne!(fa, fb);
                let (ca, cb) = (read(fa), read(fb));
                assert_eq!(ca.sequences.len(), cb.sequences.len());
                let mut differ = false;
                for (x, y) in ca.sequences.iter().zip(&cb.sequences) {
                    assert_eq!(x.labels, y.labels);
                    differ |= x.columns != y.columns;
                }
                assert!(differ, "the scores change with the noise");
            }
            (b.train, b.test) = (a.train.clone(), a.test.clone());
        });
    }
}

/// 000-table8's `edge-pair` rows (POS, chunking and NER) differ from the `edge` rows in the
/// edge factorisation alone.
#[test]
fn table8_pair_rows_change_the_factorisation() {
    use piecewise_lab::graph::chain::Factorisation;
    use piecewise_lab::run::ModelSpec;
    let Some((e, _dir)) = full_experiment("000-table8") else {
        return;
    };
    for (task, pair, n) in [
        ("pos", "pos-pair", 5),
        ("chunk", "chunk-pair", 5),
        ("ner-edge", "ner", 1),
    ] {
        for est in ["ml", "pl", "pw", "pwpl"] {
            let base = format!("{task}/{est}");
            assert_eq!(runs(&e, &base).len(), n);
            one_change(&e, &base, &format!("{pair}/{est}"), |a, b| {
                match (&a.model, &mut b.model) {
                    (ModelSpec::LinearChain(x), ModelSpec::LinearChain(y)) => {
                        assert_eq!(x.factorisation, Factorisation::Edge);
                        assert_eq!(y.factorisation, Factorisation::EdgePair);
                        y.factorisation = Factorisation::Edge;
                    }
                    other => panic!("{other:?}"),
                }
            });
        }
    }
}

/// How many of a report's claims say `words`.
fn claims_saying(report: &serde_json::Value, words: &str) -> usize {
    report["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["says"].as_str().unwrap().contains(words))
        .count()
}
