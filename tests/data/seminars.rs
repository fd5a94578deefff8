//! The seminar-announcement reader: tags that close mid-token, ignored paragraph/sentence tags,
//! tokenization, time patterns, errors with file and line, and the corpus's published counts.

use piecewise_lab::data::seminars::{parse, read_dir, shape, time_class};
use std::path::PathBuf;

fn tokens_labels(text: &str) -> Vec<(String, String)> {
    let s = parse(text, "t.txt").unwrap();
    s.columns
        .iter()
        .map(|c| c[0].clone())
        .zip(s.labels.iter().cloned())
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn tags_closing_mid_token_and_crossing_tags() {
    let got = tokens_labels(
        "<paragraph><sentence>Lectures are at <stime>5:00 p.m</stime>. in <location>DH 2315</sentence></location>.</paragraph>",
    );
    let want = pairs(&[
        ("Lectures", "O"),
        ("are", "O"),
        ("at", "O"),
        ("5:00", "stime"),
        ("p.m", "stime"),
        (".", "O"),
        ("in", "O"),
        ("DH", "location"),
        ("2315", "location"),
        (".", "O"),
    ]);
    assert_eq!(got, want);
}

#[test]
fn a_tag_boundary_splits_a_token() {
    let got = tokens_labels(
        "Time: <stime>3:30</stime>-<etime>4:30</etime>pm, <speaker>Dr. Smith</speaker>'s talk",
    );
    let want = pairs(&[
        ("Time", "O"),
        (":", "O"),
        ("3:30", "stime"),
        ("-", "O"),
        ("4:30", "etime"),
        ("pm", "O"),
        (",", "O"),
        ("Dr", "speaker"),
        (".", "speaker"),
        ("Smith", "speaker"),
        ("'", "O"),
        ("s", "O"),
        ("talk", "O"),
    ]);
    assert_eq!(got, want);
}

#[test]
fn other_angle_brackets_are_text_and_columns_are_filled() {
    let s = parse("<0.1@andrew.cmu.edu> At <stime>5pm</stime>", "t.txt").unwrap();
    assert_eq!(s.columns[0][0], "<");
    let last = s.columns.last().unwrap();
    assert_eq!(
        last,
        &vec!["5pm".to_string(), "5pm".into(), "dx".into(), "TIME".into()]
    );
    assert_eq!(s.labels.last().unwrap(), "stime");
}

#[test]
fn shapes_and_time_patterns() {
    assert_eq!(shape("Cunningham"), "Xx");
    assert_eq!(shape("5:00"), "d:d");
    assert_eq!(shape("DH"), "X");
    for (w, c) in [
        ("5:00", "TIME"),
        ("12:30p.m", "TIME"),
        ("5pm", "TIME"),
        ("p.m.", "AMPM"),
        ("PM", "AMPM"),
        ("1994", "NUM"),
        ("25:00", "-"),
        ("Smith", "-"),
    ] {
        assert_eq!(time_class(w), c, "{w}");
    }
}

#[test]
fn unbalanced_field_tags_name_file_and_line() {
    let e = parse("a\n<stime>5:00\nb\n", "x.txt")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("x.txt:2:") && e.contains("never closed"),
        "{e}"
    );
    let e = parse("a <stime>5 <etime>6</etime></stime>", "x.txt")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("x.txt:1:") && e.contains("opens inside"),
        "{e}"
    );
    let e = parse("a\n\nb</speaker>", "x.txt").unwrap_err().to_string();
    assert!(e.starts_with("x.txt:3:"), "{e}");
}

/// Field mentions per split as published in ../shared/data/seminars/SOURCE.md, counted here as
/// runs of tokens with the same field. In train, two pairs of speaker mentions stand side by
/// side with nothing between them and read as one run each (419 mentions, 417 runs).
#[test]
fn seminar_corpus_matches_its_published_counts() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/seminars");
    if !root.exists() {
        eprintln!(
            "skipping: {} not found (../shared/data is absent)",
            root.display()
        );
        return;
    }
    for (split, files, want) in [
        ("train", 301, [600, 248, 356, 417]),
        ("test", 184, [382, 183, 286, 337]),
    ] {
        let c = read_dir(&root.join(split)).unwrap();
        assert_eq!(c.sequences.len(), files);
        let mut runs = [0usize; 4];
        for s in &c.sequences {
            let mut prev = "O";
            for l in &s.labels {
                if l != "O" && l != prev {
                    let i = ["stime", "etime", "location", "speaker"]
                        .iter()
                        .position(|f| f == l)
                        .unwrap();
                    runs[i] += 1;
                }
                prev = l;
            }
        }
        assert_eq!(runs, want, "{split}: stime, etime, location, speaker");
    }
}
