//! 003 Fig. 1: parameter independence diagrams — each estimator's pieces drawn on a short
//! linear chain. The pieces are not drawn from a description: they are the terms the
//! estimator itself builds on the instance (`Estimator::terms`), each a dashed region around
//! the variables it normalises over and the factors it contains, so the figure shows what the
//! code trains. (003's Table 1 is 001's Table 1: `001-table1-ner`, `001-table1-pos`.)

use super::*;
use crate::error::Result;
use crate::estimators::terms::{Nota, TermList};
use crate::estimators::EstimatorSpec;
use crate::experiments::charts::{esc, svg_open, PALETTE};
use crate::graph::chain::{ChainOptions, Factorisation};
use crate::graph::Instance;
use crate::run::ModelSpec;
use std::fmt::Write;

/// The diagrams: estimator name, 003's title, what each piece normalises. `bicmm` is 003's
/// bi-directional CMM: two MEMMs with their own weights, one over the chain and one over the
/// reversed chain (Kudo & Matsumoto's two classifiers, p̃(y_t | y_{t−1}, x) and
/// p̃(y_t | y_{t+1}, x)).
const DIAGRAMS: [(&str, &str, &str); 6] = [
    (
        "memm",
        "MEMM",
        "one piece per position: p̃(y_t | y_{t−1}, x_t), the next-state classifier of each source state",
    ),
    (
        "bicmm",
        "Bi-directional CMM",
        "two per position: p̃(y_t | y_{t−1}, x_t), and p̃(y_t | y_{t+1}, x_t) with its own weights (primed)",
    ),
    (
        "pl",
        "Pseudo-likelihood",
        "one piece per position: p̃(y_t | y_{t−1}, y_{t+1}, x), both neighbours clamped",
    ),
    (
        "ml",
        "Linear-chain CRF",
        "one piece: the whole chain, normalised by forward–backward",
    ),
    (
        "pw",
        "Piecewise (000)",
        "one piece per factor: p̃(y_{t−1}, y_t | x), no variable clamped",
    ),
    (
        "nota",
        "CRF-PT (001 eq. 6)",
        "the MEMM's pieces, plus a NOTA term for every wrong source state (same pieces, not drawn again)",
    ),
];

/// The drawn sentence, one CoNLL-2000 line per token.
const SENTENCE: [&str; 4] = [
    "He PRP B-NP",
    "reckons VBZ B-VP",
    "the DT B-NP",
    "deficit NN I-NP",
];

/// A 4-token chain with 000's edge factor Ψ_t(y_t, y_{t−1}, x): the instance the diagrams
/// are drawn on — or, `reversed`, the same sentence right to left (the bi-directional CMM's
/// backward model).
fn chain(
    o: &Options,
    reversed: bool,
) -> Result<(std::sync::Arc<dyn crate::graph::family::Family>, Instance)> {
    let name = if reversed {
        "003-diagram-reversed.conll"
    } else {
        "003-diagram.conll"
    };
    let path = o.out.join("data").join(name);
    let mut lines = SENTENCE.to_vec();
    if reversed {
        lines.reverse();
    }
    crate::util::write_atomic(&path, format!("{}\n\n", lines.join("\n")).as_bytes())?;
    let spec = ModelSpec::LinearChain(ChainOptions {
        factorisation: Factorisation::EdgePair,
        ..ChainOptions::default()
    });
    let corpus = spec.read(&path)?;
    let (family, mut insts) = spec.fit(&corpus, None)?;
    Ok((family, insts.remove(0)))
}

pub(super) fn fig1(_o: &Options) -> Result<Experiment> {
    Ok(Experiment {
        name: "003-fig1",
        title: "003 Fig. 1: parameter independence diagrams, from the estimators' own terms".into(),
        protocol: vec![
            "A 4-token chain (\"He reckons the deficit\", CoNLL-2000 style) with the edge factor Ψ_t(y_t, y_{t−1}, x) of 000 and 001 — one factor per label pair, observation features inside it.".into(),
            "For each estimator, `Estimator::terms` on that instance — the code the training runs — gives its terms; each distinct (factors, free variables) pair is one piece, drawn as a dashed region around its free variables (grey) and factors (squares). Clamped (conditioned) variables stay outside the region; observations x_t are black, as in 003.".into(),
            "003's bi-directional CMM (\"separate functions for both p̃(y_t | y_{t−1}, x) and p̃(y_t | y_{t+1}, x)\", after Kudo & Matsumoto) is drawn as what it is: the `memm` estimator's terms on the chain, and the `memm` estimator's terms on the same sentence reversed, a second model with its own weights (its factors primed), mapped back to the sentence's positions. Only its diagram is made here: 003 combines the two with \"a modified forward-backward procedure\" at test time, which is not built. Piecewise (000) is added beside 003's four.".into(),
        ],
        groups: vec![],
        tables: vec![],
        figure: Figure::Analysis,
        analysis: Some(draw),
        claims: vec![],
    })
}

/// An estimator's pieces on the drawn chain: (factors, free variables) each.
type Pieces = Vec<(Vec<u32>, Vec<u32>)>;

/// A factor as drawn: its variables (the sentence's positions; the observation x_t belongs to
/// the last), its label (the template digit, primed for the backward model's) and its row.
struct Drawn {
    scope: Vec<u32>,
    label: String,
    row: usize,
}

/// Where variable `v` (y_v) is drawn in a panel whose top is `top`.
fn var_xy(v: u32, top: f64) -> (f64, f64) {
    (90.0 + 130.0 * v as f64, top + 60.0)
}

/// Estimator `name`'s pieces and NOTA terms on `inst`, from its own terms.
fn pieces_of(
    name: &str,
    family: &std::sync::Arc<dyn crate::graph::family::Family>,
    inst: &Instance,
) -> Result<(Pieces, usize)> {
    let mut list = TermList::default();
    EstimatorSpec::from_name(name)?
        .build(family.model())?
        .terms(inst, &mut list);
    let mut pieces: Pieces = vec![];
    let mut nota = 0;
    for t in list.iter() {
        if t.nota == Nota::Outcome {
            nota += 1;
            continue;
        }
        let p = (t.factors.to_vec(), t.free.to_vec());
        if !pieces.contains(&p) {
            pieces.push(p);
        }
    }
    Ok((pieces, nota))
}

/// The drawn factors of `inst`, in its own order.
fn drawn(inst: &Instance) -> Vec<Drawn> {
    inst.factors
        .iter()
        .map(|f| Drawn {
            scope: inst.scope(f).to_vec(),
            label: (f.template + 1).to_string(),
            row: 0,
        })
        .collect()
}

/// The bi-directional CMM on the chain: the MEMM's pieces on `fwd`, then the MEMM's pieces on
/// the reversed sentence `bwd` with its variables mapped back (v ↦ n − 1 − v) and its factors
/// numbered after `fwd`'s and primed — the backward model's own weights.
fn bicmm(
    fwd: (&std::sync::Arc<dyn crate::graph::family::Family>, &Instance),
    bwd: (&std::sync::Arc<dyn crate::graph::family::Family>, &Instance),
) -> Result<(Pieces, Vec<Drawn>)> {
    let (mut pieces, _) = pieces_of("memm", fwd.0, fwd.1)?;
    let (back, _) = pieces_of("memm", bwd.0, bwd.1)?;
    let n = fwd.1.n_vars() as u32;
    let first = fwd.1.factors.len() as u32;
    let flip = |v: u32| n - 1 - v;
    pieces.extend(back.into_iter().map(|(fs, free)| {
        (
            fs.iter().map(|f| first + f).collect(),
            free.into_iter().map(flip).collect(),
        )
    }));
    let mut factors = drawn(fwd.1);
    factors.extend(bwd.1.factors.iter().map(|f| Drawn {
        scope: bwd.1.scope(f).iter().map(|&v| flip(v)).collect(),
        label: format!("{}′", f.template + 1),
        row: 1,
    }));
    Ok((pieces, factors))
}

fn draw(_e: &Experiment, o: &Options, _r: &Results) -> Result<Section> {
    let (model, inst) = chain(o, false)?;
    let (model_b, inst_b) = chain(o, true)?;
    let (w, panel) = (780.0, 190.0);
    let h = 40.0 + panel * DIAGRAMS.len() as f64;
    let mut svg = svg_open(
        w,
        h,
        "Parameter independence diagrams (003 Fig. 1), from each estimator's terms",
    );
    let mut md =
        String::from("| estimator | pieces | NOTA terms | each piece |\n|---|---:|---:|---|\n");
    let mut json = vec![];
    // Each estimator's pieces (factors, free variables), NOTA terms and drawn factors, for the
    // claims.
    let mut built: Vec<(&str, Pieces, usize)> = vec![];
    let mut bicmm_factors = vec![];
    for (i, (name, title, says)) in DIAGRAMS.iter().enumerate() {
        let top = 40.0 + panel * i as f64;
        let (pieces, nota, factors) = if *name == "bicmm" {
            let (p, f) = bicmm((&model, &inst), (&model_b, &inst_b))?;
            (p, 0, f)
        } else {
            let (p, nota) = pieces_of(name, &model, &inst)?;
            (p, nota, drawn(&inst))
        };
        let _ = write!(
            svg,
            r##"<text x="16" y="{:.0}" font-size="13" font-weight="bold">{}</text><text x="16" y="{:.0}" fill="#444">{}</text>"##,
            top + 4.0,
            esc(title),
            top + 20.0,
            esc(&format!(
                "{} {} — {says}",
                pieces.len(),
                if pieces.len() == 1 { "piece" } else { "pieces" }
            ))
        );
        // Factor positions: between the variables of its scope, a little below them; the
        // backward model's a row lower.
        let fpos = |f: u32| -> (f64, f64) {
            let d = &factors[f as usize];
            let xs: Vec<f64> = d.scope.iter().map(|&v| var_xy(v, top).0).collect();
            let x = xs.iter().sum::<f64>() / xs.len() as f64;
            (
                if d.scope.len() == 1 {
                    x + if d.row == 0 { -40.0 } else { 40.0 }
                } else {
                    x
                },
                top + 95.0 + 22.0 * d.row as f64,
            )
        };
        // Pieces first (under the graph), each inset a little more so overlaps stay visible.
        for (k, (fs, free)) in pieces.iter().enumerate() {
            let pts: Vec<(f64, f64)> = free
                .iter()
                .map(|&v| var_xy(v, top))
                .chain(fs.iter().map(|&f| fpos(f)))
                .collect();
            let pad = 22.0 - 3.0 * (k % 4) as f64;
            let (x0, x1) = pts
                .iter()
                .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
            let (y0, y1) = pts
                .iter()
                .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.1), a.1.max(p.1)));
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="18" fill="none" stroke="{}" stroke-width="1.6" stroke-dasharray="6 4"/>"#,
                x0 - pad,
                y0 - pad,
                x1 - x0 + 2.0 * pad,
                y1 - y0 + 2.0 * pad,
                PALETTE[k % PALETTE.len()]
            );
        }
        // Edges, factors, variables, observations.
        for (fi, d) in factors.iter().enumerate() {
            let (fx, fy) = fpos(fi as u32);
            for &v in &d.scope {
                let (vx, vy) = var_xy(v, top);
                let _ = write!(
                    svg,
                    r##"<line x1="{fx:.1}" y1="{fy:.1}" x2="{vx:.1}" y2="{vy:.1}" stroke="#888"/>"##
                );
            }
            // The observation x_t of the factor's last variable.
            let (ox, oy) = (var_xy(*d.scope.last().unwrap_or(&0), top).0, top + 150.0);
            let _ = write!(
                svg,
                r##"<line x1="{fx:.1}" y1="{fy:.1}" x2="{ox:.1}" y2="{oy:.1}" stroke="#bbb"/><rect x="{:.1}" y="{:.1}" width="16" height="14" fill="#333"/><text x="{fx:.1}" y="{:.1}" fill="white" font-size="9" text-anchor="middle">{}</text>"##,
                fx - 8.0,
                fy - 7.0,
                fy + 3.5,
                esc(&d.label)
            );
        }
        for v in 0..inst.n_vars() as u32 {
            let (x, y) = var_xy(v, top);
            let _ = write!(
                svg,
                r##"<circle cx="{x:.1}" cy="{y:.1}" r="11" fill="#bbb" stroke="#555"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="10">y{}</text><circle cx="{x:.1}" cy="{:.1}" r="8" fill="#111"/><text x="{:.1}" y="{:.1}" font-size="10">x{}</text>"##,
                y + 4.0,
                v + 1,
                top + 150.0,
                x + 12.0,
                top + 154.0,
                v + 1
            );
        }
        let _ = writeln!(
            md,
            "| {title} (`{name}`) | {} | {nota} | {} |",
            pieces.len(),
            says.replace('|', "\\|")
        );
        json.push(
            serde_json::json!({"estimator": name, "pieces": pieces.len(), "nota_terms": nota,
            "free": pieces.iter().map(|p| p.1.clone()).collect::<Vec<_>>(),
            "factors": pieces.iter().map(|p| p.0.clone()).collect::<Vec<_>>()}),
        );
        if *name == "bicmm" {
            bicmm_factors = factors;
        }
        built.push((name, pieces, nota));
    }
    let claims = fig1_claims(&built, &inst, &bicmm_factors);
    svg.push_str("</svg>\n");
    Ok(Section {
        title: "The diagrams".into(),
        markdown: format!(
            "{md}\nSquares are factors (the digit is the template whose weights they share across positions; a primed digit is the bi-directional CMM's backward model, with weights of its own), grey circles the labels y_t, black circles the observations x_t; each dashed region is one piece: the variables it normalises over and the factors it holds. Conditioned neighbours sit outside the region.\n"
        ),
        json: serde_json::Value::Array(json),
        svg: Some(svg),
        claims,
    })
}

/// 003 §2–3's descriptions of the objectives, checked on the pieces each estimator's terms
/// form on the drawn chain (n labels y_1 … y_n, L labels each).
fn fig1_claims(
    built: &[(&str, Pieces, usize)],
    inst: &Instance,
    bicmm_factors: &[Drawn],
) -> Vec<(String, Verdict, String)> {
    let n = inst.n_vars();
    let labels = inst.card.first().copied().unwrap_or(0) as usize;
    let get = |k: &str| built.iter().find(|b| b.0 == k);
    let one_var_each = |p: &[(Vec<u32>, Vec<u32>)]| {
        let mut free: Vec<u32> = p.iter().flat_map(|x| x.1.clone()).collect();
        free.sort_unstable();
        p.len() == n
            && p.iter().all(|x| x.1.len() == 1)
            && free == (0..n as u32).collect::<Vec<_>>()
    };
    let describe = |p: &[(Vec<u32>, Vec<u32>)]| {
        p.iter()
            .map(|(f, v)| format!("{{free {v:?}, factors {f:?}}}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = vec![];
    // The factors whose scope holds variable v, and those whose last variable it is.
    let touching = |v: u32, last_only: bool| -> Vec<u32> {
        (0..inst.factors.len() as u32)
            .filter(|&f| {
                let sc = inst.scope(&inst.factors[f as usize]);
                if last_only {
                    sc.last() == Some(&v)
                } else {
                    sc.contains(&v)
                }
            })
            .collect()
    };
    let holds = |p: &[(Vec<u32>, Vec<u32>)], last_only: bool| {
        p.iter().all(|(f, v)| {
            let mut f = f.clone();
            f.sort_unstable();
            f == touching(v[0], last_only)
        })
    };
    // One piece per label. MEMM: the factors into y_t (y_{t−1} clamped), not the edge out;
    // pseudo-likelihood, conditioned on all its neighbours: every factor the label is in.
    for (key, last_only, says) in [
        ("memm", true, "MEMM: \"t indicates a position (and also a piece)\", p̃(y_t | y_{t−1}, x_t) — one piece per label, holding the factors that end at it (003 §2)"),
        ("pl", false, "Pseudo-likelihood: \"predicting each target variable conditioned on all its neighbors\" — one piece per label, holding every factor the label is in (003 §2)"),
    ] {
        if let Some((_, p, _)) = get(key) {
            let ok = one_var_each(p) && holds(p, last_only);
            out.push((says.to_string(), ok.into(), describe(p)));
        }
    }
    if let Some((_, p, _)) = get("ml") {
        let ok = p.len() == 1 && p[0].1.len() == n && p[0].0.len() == inst.factors.len();
        out.push((
            "Linear-chain CRF: \"simply the joint probability p(y|x) of all target variables\" — one piece with every label and factor (003 §2)".to_string(),
            ok.into(),
            describe(p),
        ));
    }
    if let Some((_, p, _)) = get("bicmm") {
        // Two pieces per label: the forward MEMM's (its factors end at the label) and the
        // backward model's (its factors, primed, end at the label and reach only y_{t+1}).
        let first = inst.factors.len() as u32;
        let ok = (0..n as u32).all(|v| {
            let of = |back: bool| -> Vec<&(Vec<u32>, Vec<u32>)> {
                p.iter()
                    .filter(|(f, free)| free == &[v] && f.iter().all(|&x| (x >= first) == back))
                    .collect()
            };
            let (fw, bw) = (of(false), of(true));
            let ends_at = |f: &[u32]| {
                let mut want: Vec<u32> = (0..bicmm_factors.len() as u32)
                    .filter(|&x| {
                        (x >= first) == (f.first().is_some_and(|&y| y >= first))
                            && bicmm_factors[x as usize].scope.last() == Some(&v)
                    })
                    .collect();
                want.sort_unstable();
                let mut f = f.to_vec();
                f.sort_unstable();
                f == want
            };
            fw.len() == 1
                && bw.len() == 1
                && ends_at(&fw[0].0)
                && ends_at(&bw[0].0)
                && bw[0].0.iter().all(|&x| {
                    bicmm_factors[x as usize]
                        .scope
                        .iter()
                        .all(|&u| u == v || u == v + 1)
                })
        }) && p.len() == 2 * n;
        out.push((
            "Bi-directional CMM: \"separate functions for both p̃(y_t | y_{t−1}, x) and p̃(y_t | y_{t+1}, x)\" — two pieces per label, one holding the forward factors that end at it, one the backward model's factors that end at it and reach only y_{t+1} (003 §2)".to_string(),
            ok.into(),
            describe(p),
        ));
    }
    if let (Some((_, memm, _)), Some((_, pt, nota))) = (get("memm"), get("nota")) {
        // A NOTA term p̃(NOTA | y, x_t) for every y ≠ y_{t−1}: L − 1 at each of the n − 1
        // positions that have a source state.
        let want = (n - 1) * labels.saturating_sub(1);
        out.push((
            format!("CRF-PT: the MEMM's pieces, plus a NOTA term for every wrong source state — (n − 1)(L − 1) = {want} on this chain (003 §3's O_PT)"),
            (pt == memm && *nota == want).into(),
            format!("{} pieces (the MEMM's: {}), {nota} NOTA terms", pt.len(), pt == memm),
        ));
    }
    out
}
