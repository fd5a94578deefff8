//! Stochastic composite likelihood against 004's definitions: every component's value
//! log p(y_A | y_B) and its gradient against brute force over the joint distribution (B not the
//! complement of A, so the rest is summed out), policies against the estimators they reduce to,
//! and the selection models' frequencies.

use crate::common;

use common::{complete_scopes, factor_graph};
use piecewise_lab::estimators::objective::DatasetObjective;
use piecewise_lab::estimators::scl::{component_term, ComponentFamily, Selection, SelectionPolicy};
use piecewise_lab::estimators::{evaluate_terms, EstimatorSpec, TermList, TermWork};
use piecewise_lab::graph::Instance;
use piecewise_lab::inference::enumerate::for_each_assignment;
use piecewise_lab::inference::InferWork;
use piecewise_lab::optim::Prior;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// log p(y_A | y_B) by summing the joint over every assignment.
fn brute(inst: &Instance, phi: &[f64], y: &[u32], a: &[u32], b: &[u32]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for_each_assignment(&inst.card, |x| {
        if b.iter().all(|&v| x[v as usize] == y[v as usize]) {
            let p = inst.score(phi, x).exp();
            den += p;
            if a.iter().all(|&v| x[v as usize] == y[v as usize]) {
                num += p;
            }
        }
    });
    (num / den).ln()
}

fn eval_one(
    inst: &Instance,
    phi: &[f64],
    y: &[u32],
    a: &[u32],
    b: &[u32],
    dphi: Option<&mut [f64]>,
) -> f64 {
    let mut list = TermList::default();
    component_term(inst, a, b, 1.0, &mut list);
    for t in list.iter() {
        t.check(inst).unwrap();
    }
    evaluate_terms(
        inst,
        phi,
        y,
        &list,
        dphi,
        &mut TermWork::default(),
        &mut InferWork::default(),
    )
}

/// Random m-pairs (A, B): A non-empty, A ∩ B = ∅, B any subset of the rest (so variables are
/// summed out whenever B is not the complement).
#[test]
fn components_equal_brute_force_with_summed_out_variables() {
    let mut rng = StdRng::seed_from_u64(41);
    let chain = (vec![3u32; 5], {
        let mut s: Vec<Vec<u32>> = (0..5).map(|v| vec![v]).collect();
        s.extend((1..5).map(|t| vec![t - 1, t]));
        s
    });
    let mut summed_seen = 0;
    for (name, (card, scopes)) in [("chain", chain), ("boltzmann", complete_scopes(5))] {
        let (_m, inst) = factor_graph(&card, &scopes);
        for _ in 0..40 {
            let phi: Vec<f64> = (0..inst.table_len)
                .map(|_| rng.random_range(-1.5..1.5))
                .collect();
            let y: Vec<u32> = card.iter().map(|&c| rng.random_range(0..c)).collect();
            let n = card.len() as u32;
            let mut a: Vec<u32> = (0..n).filter(|_| rng.random::<f64>() < 0.35).collect();
            if a.is_empty() {
                a.push(rng.random_range(0..n));
            }
            let b: Vec<u32> = (0..n)
                .filter(|v| !a.contains(v) && rng.random::<bool>())
                .collect();
            summed_seen += (a.len() + b.len() < n as usize) as usize;
            let mut dphi = vec![0.0; inst.table_len];
            let v = eval_one(&inst, &phi, &y, &a, &b, Some(&mut dphi));
            let want = brute(&inst, &phi, &y, &a, &b);
            assert!(
                (v - want).abs() < 1e-10,
                "{name} A={a:?} B={b:?}: {v} vs {want}"
            );
            let h = 1e-6;
            for e in 0..inst.table_len {
                let (mut p, mut m) = (phi.clone(), phi.clone());
                p[e] += h;
                m[e] -= h;
                let fd = (brute(&inst, &p, &y, &a, &b) - brute(&inst, &m, &y, &a, &b)) / (2.0 * h);
                assert!(
                    (fd - dphi[e]).abs() < 1e-6,
                    "{name} A={a:?} B={b:?} entry {e}: FD {fd} vs {}",
                    dphi[e]
                );
            }
        }
    }
    assert!(
        summed_seen > 20,
        "too few components with summed-out variables: {summed_seen}"
    );
}

fn instances(
    card: &[u32],
    scopes: &[Vec<u32>],
    n: usize,
    rng: &mut StdRng,
) -> (piecewise_lab::graph::Model, Vec<Instance>) {
    let (model, inst) = factor_graph(card, scopes);
    let insts = (0..n)
        .map(|i| {
            let mut x = inst.clone();
            x.gold = Some(card.iter().map(|&c| rng.random_range(0..c)).collect());
            x.id = i as u64;
            x
        })
        .collect();
    (model, insts)
}

fn value(
    model: &piecewise_lab::graph::Model,
    insts: &[Instance],
    spec: &EstimatorSpec,
    theta: &[f64],
) -> f64 {
    let est = spec.build(model).unwrap();
    let obj = DatasetObjective::new(model, insts, est.as_ref(), Prior { sigma2: None }, 1).unwrap();
    obj.evaluate(theta, None).value
}

fn scl(text: &str, selection: Selection, seed: u64) -> EstimatorSpec {
    EstimatorSpec::from_name("scl")
        .unwrap()
        .with_policy(SelectionPolicy::parse(text, selection, seed).unwrap())
}

/// With λ = 1 a policy is a composite likelihood: pl1 is pseudolikelihood, fl is the
/// likelihood, and weights multiply; pl2's components are the pairs' conditionals.
#[test]
fn deterministic_policies_reduce_to_the_estimators_they_name() {
    let mut rng = StdRng::seed_from_u64(5);
    let (card, scopes) = complete_scopes(5);
    let (model, insts) = instances(&card, &scopes, 6, &mut rng);
    let theta: Vec<f64> = (0..model.n_params)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let pl = value(&model, &insts, &EstimatorSpec::Pl, &theta);
    let ml = value(&model, &insts, &EstimatorSpec::Ml, &theta);
    let s = |t: &str| value(&model, &insts, &scl(t, Selection::Independent, 0), &theta);
    assert!((s("1:1*pl1") - pl).abs() < 1e-10);
    assert!((s("1:1*fl") - ml).abs() < 1e-10);
    // pl2 by brute force: every pair's conditional given the other three.
    let mut pl2 = 0.0;
    for inst in &insts {
        let mut phi = vec![0.0; inst.table_len];
        model.build_tables(&theta, inst, &mut phi, &mut vec![]);
        let y = inst.gold.as_ref().unwrap();
        for i in 0..5u32 {
            for j in i + 1..5 {
                let b: Vec<u32> = (0..5).filter(|&v| v != i && v != j).collect();
                pl2 += brute(inst, &phi, y, &[i, j], &b);
            }
        }
    }
    let mixed = s("1:2*pl1 + 1:0.5*pl2");
    assert!(
        (mixed - (2.0 * pl + 0.5 * pl2)).abs() < 1e-9,
        "{mixed} vs {}",
        2.0 * pl + 0.5 * pl2
    );
    // On a chain, pl2 is k = 2 consecutive positions: n − 1 windows.
    let chain_card = vec![2u32; 6];
    let mut chain_scopes: Vec<Vec<u32>> = (0..6).map(|v| vec![v]).collect();
    chain_scopes.extend((1..6).map(|t| vec![t - 1, t]));
    let (_m, chain) = factor_graph(&chain_card, &chain_scopes);
    assert!(chain.chain.is_some());
    assert_eq!(ComponentFamily::Pseudo(2).count(&chain), 5);
    assert_eq!(ComponentFamily::Pseudo(2).count(&insts[0]), 10);
}

/// Independent selection picks each component with probability λ, the same way for the same seed
/// and item; multinomial picks exactly one family per item and group.
#[test]
fn selection_models_draw_what_they_say() {
    let mut rng = StdRng::seed_from_u64(9);
    let (card, scopes) = complete_scopes(5);
    let (model, insts) = instances(&card, &scopes, 600, &mut rng);
    let est = scl("0.3:1*pl1", Selection::Independent, 17)
        .build(&model)
        .unwrap();
    let mut list = TermList::default();
    let mut selected = 0usize;
    for inst in &insts {
        list.clear();
        est.terms(inst, &mut list);
        selected += list.len();
    }
    let trials = (insts.len() * 5) as f64;
    let sd = (trials * 0.3 * 0.7).sqrt();
    assert!(
        (selected as f64 - 0.3 * trials).abs() < 4.0 * sd,
        "{selected} of {trials}"
    );
    // Deterministic per (seed, item); another seed draws otherwise.
    let again = scl("0.3:1*pl1", Selection::Independent, 17)
        .build(&model)
        .unwrap();
    let other = scl("0.3:1*pl1", Selection::Independent, 18)
        .build(&model)
        .unwrap();
    let (mut a, mut b, mut c) = (
        TermList::default(),
        TermList::default(),
        TermList::default(),
    );
    let mut differs = false;
    for inst in insts.iter().take(50) {
        a.clear();
        b.clear();
        c.clear();
        est.terms(inst, &mut a);
        again.terms(inst, &mut b);
        other.terms(inst, &mut c);
        assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        differs |= a.iter().collect::<Vec<_>>() != c.iter().collect::<Vec<_>>();
    }
    assert!(differs);
    // Multinomial: either the 5 pl1 components or the 10 pl2 ones, never both, never none.
    let est = scl("0.7:1*pl1 + 0.3:1*pl2", Selection::Multinomial, 3)
        .build(&model)
        .unwrap();
    let mut n_pl1 = 0usize;
    for inst in &insts {
        list.clear();
        est.terms(inst, &mut list);
        let free: Vec<usize> = list.iter().map(|t| t.free.len()).collect();
        match free.as_slice() {
            f if f.len() == 5 && f.iter().all(|&k| k == 1) => n_pl1 += 1,
            f if f.len() == 10 && f.iter().all(|&k| k == 2) => {}
            f => panic!("a mixed or empty draw: {f:?}"),
        }
    }
    let sd = (600.0f64 * 0.7 * 0.3).sqrt();
    assert!(
        (n_pl1 as f64 - 420.0).abs() < 4.0 * sd,
        "{n_pl1} of 600 chose pl1"
    );
    let _ = model;
}

#[test]
fn policy_text_round_trips_and_bad_policies_say_why() {
    let p = SelectionPolicy::parse("0.7:1*pl1 + 0.3:2.5*pl2; 1:1*fl", Selection::Multinomial, 4)
        .unwrap();
    assert_eq!(p.to_string(), "0.7:1*pl1 + 0.3:2.5*pl2; 1:1*fl");
    assert_eq!(
        SelectionPolicy::parse(&p.to_string(), Selection::Multinomial, 4).unwrap(),
        p
    );
    for (text, why) in [
        ("0.5*pl1", "λ:β"),
        ("0.5:1:pl1", "λ:β*family"),
        ("1.5:1*pl1", "at most 1"),
        ("0.5:-1*pl1", "≥ 0"),
        ("0.5:1*pl0", "unknown component family"),
        ("0.5:1*xx", "unknown component family"),
        ("", "no component family"),
    ] {
        let e = SelectionPolicy::parse(text, Selection::Independent, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{text:?}: {e}");
    }
    let e = SelectionPolicy::parse("0.7:1*pl1 + 0.6:1*pl2", Selection::Multinomial, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("add up to"), "{e}");
}

/// `resample_every`: Z is drawn anew every N iterations (θ kept); the curve counts on across
/// the blocks, and the per-evaluation cost changes with the new selections.
#[test]
fn resampling_redraws_z_and_the_curve_counts_on() {
    use piecewise_lab::data::samples::format_samples;
    use piecewise_lab::data::synth_loopy::{boltzmann_samples, paper_theta};
    use piecewise_lab::optim::LbfgsSpec;
    use piecewise_lab::run::{execute, ModelSpec, RunSpec};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("bm.txt");
    std::fs::write(
        &data,
        format_samples(&boltzmann_samples(5, &paper_theta(5), &[], 400, 3).unwrap()),
    )
    .unwrap();
    let mut policy = SelectionPolicy::parse("0.5:1*pl1", Selection::Independent, 7).unwrap();
    policy.resample_every = 4;
    let spec = RunSpec {
        name: None,
        train: data,
        test: None,
        template: None,
        model: ModelSpec::Boltzmann(Default::default()),
        estimator: EstimatorSpec::from_name("scl").unwrap().with_policy(policy),
        optimiser: LbfgsSpec {
            max_iter: 16,
            ..Default::default()
        },
        prior: Prior { sigma2: Some(10.0) },
        eval_every: 0,
        seed: 0,
        threads: 1,
        decode: Default::default(),
        train_sample: None,
        eval_train: false,
        per_state_scaling: false,
        subset_scaling: false,
        init_from: None,
    };
    let out = dir.path().join("run");
    let s = execute(
        &spec,
        &out,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.iterations, 16);
    assert_eq!(s.resamples, 3);
    let curve: Vec<serde_json::Value> = std::fs::read_to_string(out.join("curve.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let its: Vec<u64> = curve
        .iter()
        .map(|p| p["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(its, (1..=16).collect::<Vec<_>>());
    let evals: Vec<u64> = curve
        .iter()
        .map(|p| p["evaluations"].as_u64().unwrap())
        .collect();
    assert!(evals.windows(2).all(|w| w[1] > w[0]), "{evals:?}");
    assert_eq!(s.evaluations as u64, *evals.last().unwrap());
    // Cost per evaluation within each block of 4 iterations, from the cumulative paper FLOPs.
    let per_eval: Vec<f64> = curve
        .windows(2)
        .map(|w| {
            (w[1]["paper_flops"].as_f64().unwrap() - w[0]["paper_flops"].as_f64().unwrap())
                / (w[1]["evaluations"].as_f64().unwrap() - w[0]["evaluations"].as_f64().unwrap())
        })
        .collect();
    let first_block = per_eval[0];
    assert!(
        per_eval.iter().any(|&c| (c - first_block).abs() > 1e-9),
        "every block selected the same components: {per_eval:?}"
    );
}

/// Terms too large to enumerate are evaluated by sum-product over their reduced forest: on
/// random trees (mixed cardinalities, unary factors, random A and B so that variables are
/// clamped, free and summed out), value and gradient equal brute force over the joint.
#[test]
fn forest_terms_equal_brute_force() {
    use piecewise_lab::estimators::forest_term::{forest_term, ForestWork};
    use piecewise_lab::estimators::terms::LineCache;
    let mut rng = StdRng::seed_from_u64(43);
    let mut fw = ForestWork::default();
    let (mut summed_seen, mut evaluated) = (0, 0);
    for round in 0..60 {
        let n = rng.random_range(2..8u32);
        let card: Vec<u32> = (0..n).map(|_| rng.random_range(2..5)).collect();
        let mut scopes: Vec<Vec<u32>> = (1..n).map(|v| vec![rng.random_range(0..v), v]).collect();
        scopes.extend((0..n).filter(|_| rng.random::<bool>()).map(|v| vec![v]));
        if round % 3 == 0 {
            // Extra edges make cycles; clamping one endpoint of each can cut them.
            scopes.push(vec![0, n - 1]);
        }
        let (_m, inst) = factor_graph(&card, &scopes);
        let phi: Vec<f64> = (0..inst.table_len)
            .map(|_| rng.random_range(-1.5..1.5))
            .collect();
        let y: Vec<u32> = card.iter().map(|&c| rng.random_range(0..c)).collect();
        let mut a: Vec<u32> = (0..n).filter(|_| rng.random::<f64>() < 0.5).collect();
        if a.is_empty() {
            a.push(rng.random_range(0..n));
        }
        let b: Vec<u32> = (0..n)
            .filter(|v| !a.contains(v) && rng.random::<bool>())
            .collect();
        let mut list = TermList::default();
        component_term(&inst, &a, &b, 1.3, &mut list);
        let t = list.get(0);
        let mut dphi = vec![0.0; inst.table_len];
        let Some(v) = forest_term(
            &inst,
            &phi,
            &y,
            &t,
            Some(&mut dphi),
            &mut fw,
            &mut LineCache::default(),
        ) else {
            continue;
        };
        summed_seen += !t.summed.is_empty() as usize;
        evaluated += 1;
        let want = 1.3 * brute(&inst, &phi, &y, &a, &b);
        assert!((v - want).abs() < 1e-10, "A={a:?} B={b:?}: {v} vs {want}");
        let h = 1e-6;
        for e in 0..inst.table_len {
            let (mut p, mut m) = (phi.clone(), phi.clone());
            p[e] += h;
            m[e] -= h;
            let fd =
                1.3 * (brute(&inst, &p, &y, &a, &b) - brute(&inst, &m, &y, &a, &b)) / (2.0 * h);
            assert!(
                (fd - dphi[e]).abs() < 1e-6,
                "A={a:?} B={b:?} entry {e}: FD {fd} vs {}",
                dphi[e]
            );
        }
    }
    assert!(
        evaluated > 40 && summed_seen > 10,
        "too few forest terms: {evaluated}, with summed-out variables: {summed_seen}"
    );
}

/// Issue 21: SCL's components are built from A's own factors (linear setup); the term is the
/// definition's — every factor not inside B = V \ A, A free, B clamped — on random graphs, for
/// random A, single variables and the whole graph.
#[test]
fn conditional_terms_are_component_terms_with_the_complement_clamped() {
    use piecewise_lab::estimators::scl::conditional_term;
    let mut rng = StdRng::seed_from_u64(21);
    let mut factors = vec![];
    for _ in 0..80 {
        let n = rng.random_range(1..9u32);
        let card: Vec<u32> = (0..n).map(|_| rng.random_range(2..4)).collect();
        let mut scopes: Vec<Vec<u32>> = (1..n).map(|v| vec![rng.random_range(0..v), v]).collect();
        scopes.extend((0..n).filter(|_| rng.random::<bool>()).map(|v| vec![v]));
        if n > 2 && rng.random::<bool>() {
            scopes.push(vec![0, 1, n - 1]);
        }
        let (_m, inst) = factor_graph(&card, &scopes);
        let mut choices: Vec<Vec<u32>> = (0..n).map(|v| vec![v]).collect();
        choices.push((0..n).collect());
        choices.push((0..n).filter(|_| rng.random::<bool>()).collect());
        for a in choices.into_iter().filter(|a| !a.is_empty()) {
            let b: Vec<u32> = (0..n).filter(|v| !a.contains(v)).collect();
            let (mut want, mut got) = (TermList::default(), TermList::default());
            component_term(&inst, &a, &b, 0.7, &mut want);
            conditional_term(&inst, &a, 0.7, &mut got, &mut factors);
            assert_eq!(want.len(), got.len());
            assert_eq!(want.get(0), got.get(0), "A = {a:?} on {scopes:?}");
        }
    }
}
