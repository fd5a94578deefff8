//! Segment scores against counts worked out by hand from conlleval's chunk rules.

use piecewise_lab::eval::score;

fn v(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn iob2_counts() {
    // Gold chunks: NP[0,1] VP[3] NP[4,5]. Predicted: NP[0,1] VP[3,4] NP[5] (I-NP after I-VP
    // starts a new chunk by the type change). Only NP[0,1] matches.
    let m = score(
        &[v("B-NP I-NP O B-VP B-NP I-NP")],
        &[v("B-NP I-NP O B-VP I-VP I-NP")],
    );
    assert_eq!(
        (m.segments.correct, m.segments.gold, m.segments.predicted),
        (1, 3, 3)
    );
    assert!((m.segments.f1 - 100.0 / 3.0).abs() < 1e-9);
    assert!((m.token_accuracy - 500.0 / 6.0).abs() < 1e-9);
    assert_eq!(m.segment_types["NP"].gold, 2);
    assert_eq!(m.segment_types["VP"].correct, 0);
    // Per-label token scores: I-NP gold at 1 and 5, predicted at 1 and 5 → P = R = 100.
    assert_eq!(m.labels["I-NP"].f1, 100.0);
    assert_eq!((m.labels["B-NP"].gold, m.labels["B-NP"].predicted), (2, 1));
}

#[test]
fn iob1_counts() {
    // IOB1: chunks start with I; B only separates two adjacent chunks of one type.
    // Gold: NP[0,1] NP[2] (B-NP) VP[3]. Predicted: NP[0,2] VP[3].
    let m = score(&[v("I-NP I-NP B-NP I-VP")], &[v("I-NP I-NP I-NP I-VP")]);
    assert_eq!(
        (m.segments.correct, m.segments.gold, m.segments.predicted),
        (1, 3, 2)
    );
}

#[test]
fn chunk_must_end_together_and_sequences_are_separate() {
    // A correct start but a longer prediction is not correct.
    let m = score(
        &[v("B-NP O"), v("B-NP I-NP")],
        &[v("B-NP I-NP"), v("B-NP I-NP")],
    );
    // Sequence 1: gold NP[0], predicted NP[0,1] → wrong; sequence 2 correct.
    assert_eq!(
        (m.segments.correct, m.segments.gold, m.segments.predicted),
        (1, 2, 2)
    );
    assert_eq!(m.sequences, 2);
    assert_eq!(m.tokens, 4);
}

#[test]
fn bioes_counts() {
    // Gold: PER[0] (S) LOC[1,3] (B I E) PER[4,5]. Predicted: PER[0] LOC[1,2] (B E) O then PER[4,5].
    let m = score(
        &[v("S-PER B-LOC I-LOC E-LOC B-PER E-PER")],
        &[v("S-PER B-LOC E-LOC O B-PER E-PER")],
    );
    assert_eq!(
        (m.segments.correct, m.segments.gold, m.segments.predicted),
        (2, 3, 3)
    );
    // Two adjacent singletons are two chunks.
    let m = score(&[v("S-PER S-PER")], &[v("S-PER S-PER")]);
    assert_eq!((m.segments.correct, m.segments.gold), (2, 2));
}

#[test]
fn no_chunks_gives_zero_not_nan() {
    let m = score(&[v("O O")], &[v("O O")]);
    assert_eq!(m.segments.f1, 0.0);
    assert_eq!(m.token_accuracy, 100.0);
}

/// CRFsuite's `tag -qt` figures, worked out by hand: A is right 3 of the 4 times it is
/// predicted and found all 3 times (75 / 100 / 85.71); B is never predicted (0 / 0 / 0).
/// The macro average is 37.5 / 50 / 42.86. One of the two sequences is right throughout.
#[test]
fn macro_averages_and_instance_accuracy_are_crfsuites() {
    let m = score(&[v("A B"), v("A A")], &[v("A A"), v("A A")]);
    let (p, r, f) = m.macro_prf().unwrap();
    assert!(
        (p - 37.5).abs() < 1e-9 && (r - 50.0).abs() < 1e-9,
        "{p} {r}"
    );
    assert!((f - 300.0 / 7.0).abs() < 1e-9, "{f}");
    assert_eq!(m.instance_accuracy(), Some((1, 2)));
    assert!(m
        .report()
        .contains("macro-average over 2 labels: precision:  37.50%; recall:  50.00%; F1:  42.86; instance accuracy: 1 / 2 (50.00%)"));
}
