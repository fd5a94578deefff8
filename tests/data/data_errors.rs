//! Malformed input gives an error naming the file and the line; nothing panics.

use piecewise_lab::data::conll::{parse_conll, LabelColumn};
use piecewise_lab::data::{read_conll, FeatureTemplate};
use std::io::Write;

fn write_tmp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p
}

fn err_of(bytes: &[u8]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = write_tmp(&dir, "bad.conll", bytes);
    let e = read_conll(&p)
        .expect_err("malformed input must be an error")
        .to_string();
    (e, p.display().to_string())
}

#[test]
fn inconsistent_column_count_names_file_and_line() {
    let (e, p) = err_of(b"He PRP B-NP\nreckons VBZ B-VP\n\nthe DT\n");
    assert!(e.starts_with(&format!("{p}:4:")), "{e}");
    assert!(e.contains("2 columns") && e.contains("line 1 has 3"), "{e}");
}

#[test]
fn empty_file_names_file_and_line() {
    let (e, p) = err_of(b"");
    assert!(e.starts_with(&format!("{p}:1:")), "{e}");
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let (e, p) = err_of(b"a DT B-NP\n\nb NN I-NP\ncaf\xe9 NN I-NP\n");
    assert!(e.starts_with(&format!("{p}:4:")), "{e}");
    assert!(e.contains("UTF-8"), "{e}");
}

#[test]
fn only_blank_lines_names_file_and_line() {
    let (e, p) = err_of(b"\n  \n\t\n\n");
    assert!(e.starts_with(&format!("{p}:4:")), "{e}");
    assert!(e.contains("only blank lines"), "{e}");
    let (e, p) = err_of(b"-DOCSTART- -X- O\n\n");
    assert!(e.starts_with(&format!("{p}:2:")), "{e}");
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let e = read_conll(std::path::Path::new("/no/such/file.conll"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/no/such/file.conll:"), "{e}");
}

#[test]
fn docstart_lines_are_skipped_also_when_glued() {
    let text = b"-DOCSTART- -X- O\nEU NNP B-ORG\nrejects VBZ O\n-DOCSTART- -X- O\nPeter NNP B-PER\n\n-DOCSTART- -X- O\n\nBlackburn NNP B-PER\n";
    let c = parse_conll(text, "t", LabelColumn::Last).unwrap();
    let words: Vec<Vec<&str>> = c
        .sequences
        .iter()
        .map(|s| s.columns.iter().map(|c| c[0].as_str()).collect())
        .collect();
    assert_eq!(
        words,
        vec![vec!["EU", "rejects"], vec!["Peter"], vec!["Blackburn"]]
    );
    assert_eq!(c.sequences[2].labels, vec!["B-PER"]);
    assert_eq!(c.sequences[1].line, 5);
    assert_eq!(c.n_columns, 3);
}

#[test]
fn any_consistent_column_count_and_crlf() {
    let c = parse_conll(b"a B\r\nb I\r\n\r\nc O\r\n", "t", LabelColumn::Last).unwrap();
    assert_eq!(c.sequences.len(), 2);
    assert_eq!(c.n_obs_columns(), 1);
    let c = parse_conll(b"a x y z B\n", "t", LabelColumn::Last).unwrap();
    assert_eq!(c.sequences[0].columns[0], vec!["a", "x", "y", "z"]);
}

#[test]
fn template_errors_name_file_and_line() {
    let e = FeatureTemplate::parse("U00:%x[0,0]\n\nX01:%x[0,0]\n", "t.tpl")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.tpl:3:"), "{e}");
    let e = FeatureTemplate::parse("# c\nU00:%x[0,0\n", "t.tpl")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.tpl:2:"), "{e}");
    let e = FeatureTemplate::parse("U00:%y[0,0]\n", "t.tpl")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.tpl:1:"), "{e}");
    let e = FeatureTemplate::parse("U00:%x[a,0]\n", "t.tpl")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.tpl:1:"), "{e}");
    // A column the data does not have.
    let t = FeatureTemplate::parse("U00:%x[0,0]\nU01:%x[1,2]\n", "t.tpl").unwrap();
    let e = t.check_columns(2, "data.txt").unwrap_err().to_string();
    assert!(e.starts_with("t.tpl:2:") && e.contains("data.txt"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let p = write_tmp(&dir, "bad.tpl", b"U00:%x[0,0]\nU01:\xff\n");
    let e = FeatureTemplate::read(&p).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:2:", p.display())), "{e}");
}

/// `sample_split`: the sample is `sample`'s, and the rest is every other item, in file order.
#[test]
fn sample_split_partitions_the_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..40).map(|i| format!("w{i} X\n\n")).collect();
    let p = write_tmp(&dir, "c.conll", text.as_bytes());
    let c = read_conll(&p).unwrap();
    let (a, b) = c.sample_split(15, 7);
    let words = |c: &piecewise_lab::data::Corpus| {
        c.sequences
            .iter()
            .map(|s| s.columns[0][0].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(words(&a), words(&c.sample(15, 7)));
    assert_eq!((a.sequences.len(), b.sequences.len()), (15, 25));
    let mut all = [words(&a), words(&b)].concat();
    all.sort_by_key(|w| w[1..].parse::<usize>().unwrap());
    assert_eq!(all, words(&c));
    let order = |v: Vec<String>| {
        v.iter()
            .map(|w| w[1..].parse::<usize>().unwrap())
            .collect::<Vec<_>>()
    };
    assert!(order(words(&b)).windows(2).all(|w| w[0] < w[1]));
}
