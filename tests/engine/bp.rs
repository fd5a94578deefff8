//! Loopy belief propagation against independent references: enumeration on trees (exact there
//! for every schedule), the consistency and Bethe identities on loopy graphs, and the closed-form
//! loopy-BP answer of a frustrated triangle.

use crate::common;

use common::{complete_scopes as complete, factor_graph, grid_scopes as grid};
use piecewise_lab::inference::bp::{self, BpMessages, BpOptions, BpWork, Schedule, Semiring};
use piecewise_lab::inference::enumerate;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SCHEDULES: [Schedule; 3] = [Schedule::Parallel, Schedule::Sequential, Schedule::Residual];

fn tight(schedule: Schedule) -> BpOptions {
    BpOptions {
        schedule,
        damping: 0.0,
        tol: 1e-13,
        max_sweeps: 5000,
    }
}

/// A random tree over `n` variables: each variable after the first hangs on an earlier one
/// (`shape`: 0 chain, 1 star, 2 random), every variable with a unary factor, and sometimes a
/// ternary factor replacing two edges (still a tree).
fn random_tree(rng: &mut StdRng, shape: u32) -> (Vec<u32>, Vec<Vec<u32>>) {
    let n = rng.random_range(1..=8usize);
    let card: Vec<u32> = (0..n).map(|_| rng.random_range(1..=4)).collect();
    let mut scopes: Vec<Vec<u32>> = (0..n as u32).map(|v| vec![v]).collect();
    let mut v = 1;
    while v < n {
        let parent = match shape {
            0 => v - 1,
            1 => 0,
            _ => rng.random_range(0..v),
        };
        if v + 1 < n && shape == 2 && rng.random::<f64>() < 0.3 {
            scopes.push(vec![parent as u32, v as u32, v as u32 + 1]);
            v += 2;
        } else if rng.random::<bool>() {
            scopes.push(vec![parent as u32, v as u32]);
            v += 1;
        } else {
            scopes.push(vec![v as u32, parent as u32]);
            v += 1;
        }
    }
    (card, scopes)
}

/// Cold BP on `inst`: its messages, scratch and report.
fn run_bp(
    inst: &piecewise_lab::graph::Instance,
    phi: &[f64],
    opts: &BpOptions,
    semiring: Semiring,
) -> (BpMessages, BpWork, bp::BpReport) {
    let (mut msgs, mut work) = (BpMessages::default(), BpWork::default());
    let r = bp::run(inst, phi, opts, semiring, &mut msgs, &mut work);
    (msgs, work, r)
}

fn random_phi(rng: &mut StdRng, len: usize, scale: f64) -> Vec<f64> {
    (0..len).map(|_| rng.random_range(-scale..scale)).collect()
}

#[test]
fn bp_is_exact_on_trees_for_every_schedule() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut checked = 0;
    for case in 0..90 {
        let (card, scopes) = random_tree(&mut rng, case % 3);
        let (_model, inst) = factor_graph(&card, &scopes);
        assert!(inst.forest);
        // Random, and extreme (potentials up to ±30: probabilities down to e^-60).
        let scale = if case % 2 == 0 { 2.0 } else { 30.0 };
        let phi = random_phi(&mut rng, inst.table_len, scale);
        let exact = enumerate(&inst, &phi).unwrap();
        for schedule in SCHEDULES {
            let (msgs, mut work, r) = run_bp(&inst, &phi, &tight(schedule), Semiring::SumProduct);
            assert!(r.converged, "{schedule:?} case {case}: {r:?}");
            let mut b = Vec::new();
            for v in 0..inst.n_vars() {
                msgs.var_belief(v, &mut b);
                for (x, y) in b.iter().zip(&exact.node_marginals[v]) {
                    assert!(
                        (x - y).abs() < 1e-9,
                        "{schedule:?} case {case} var {v}: {x} vs {y}"
                    );
                }
            }
            for f in 0..inst.factors.len() {
                msgs.factor_belief(&inst, &phi, f, &mut work, &mut b);
                let fac = &inst.factors[f];
                let ex = inst.table(fac, &exact.table_marginals);
                for (x, y) in b.iter().zip(ex) {
                    assert!((x - y).abs() < 1e-9, "{schedule:?} case {case} factor {f}");
                }
            }
            let log_z = -msgs.bethe_free_energy(&inst, &phi, &mut work);
            assert!(
                (log_z - exact.log_z).abs() < 1e-9 * exact.log_z.abs().max(1.0),
                "{schedule:?} case {case}: log Z {log_z} vs {}",
                exact.log_z
            );
            let mut mmsgs = BpMessages::default();
            let r = bp::run(
                &inst,
                &phi,
                &tight(schedule),
                Semiring::MaxProduct,
                &mut mmsgs,
                &mut work,
            );
            assert!(r.converged);
            let map = mmsgs.decode(&inst, &phi, &mut work);
            let score = inst.score(&phi, &map);
            assert!(
                (score - exact.map_score).abs() < 1e-9 * exact.map_score.abs().max(1.0),
                "{schedule:?} case {case}: MAP score {score} vs {}",
                exact.map_score
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 270);
}

/// A warm start from converged messages converges at once; damping changes the path, not the
/// fixed point.
#[test]
fn warm_start_and_damping() {
    let mut rng = StdRng::seed_from_u64(5);
    let (card, scopes) = grid(3, 3, 3);
    let (_m, inst) = factor_graph(&card, &scopes);
    let phi = random_phi(&mut rng, inst.table_len, 0.5);
    let mut work = BpWork::default();
    let mut msgs = BpMessages::default();
    let opts = tight(Schedule::Sequential);
    let first = bp::run(
        &inst,
        &phi,
        &opts,
        Semiring::SumProduct,
        &mut msgs,
        &mut work,
    );
    assert!(first.converged && first.sweeps > 3);
    let again = bp::run(
        &inst,
        &phi,
        &opts,
        Semiring::SumProduct,
        &mut msgs,
        &mut work,
    );
    assert!(again.converged && again.sweeps <= 2, "{again:?}");
    let mut damped = BpMessages::default();
    let d = BpOptions {
        damping: 0.5,
        schedule: Schedule::Parallel,
        ..opts
    };
    let r = bp::run(
        &inst,
        &phi,
        &d,
        Semiring::SumProduct,
        &mut damped,
        &mut work,
    );
    assert!(r.converged && r.sweeps > first.sweeps, "{r:?} vs {first:?}");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for v in 0..inst.n_vars() {
        msgs.var_belief(v, &mut a);
        damped.var_belief(v, &mut b);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-9);
        }
    }
}

#[test]
fn loopy_beliefs_are_consistent_and_bethe_recomputes() {
    let mut rng = StdRng::seed_from_u64(7);
    let graphs = [
        ("3x3 grid", grid(3, 3, 3)),
        ("5-node Boltzmann machine", complete(5)),
        ("triangle", complete(3)),
    ];
    for (name, (card, scopes)) in graphs {
        let (_m, inst) = factor_graph(&card, &scopes);
        assert!(!inst.forest);
        let phi = random_phi(&mut rng, inst.table_len, 0.4);
        let exact = enumerate(&inst, &phi).unwrap();
        for schedule in SCHEDULES {
            let (msgs, mut work, r) = run_bp(&inst, &phi, &tight(schedule), Semiring::SumProduct);
            assert!(r.converged, "{name} {schedule:?}: {r:?}");
            // Factor beliefs marginalise to variable beliefs.
            let (mut fb, mut vb) = (Vec::new(), Vec::new());
            let mut bethe = 0.0;
            let mut max_err: f64 = 0.0;
            for (f, fac) in inst.factors.iter().enumerate() {
                msgs.factor_belief(&inst, &phi, f, &mut work, &mut fb);
                let scope = inst.scope(fac);
                let cards: Vec<usize> = scope.iter().map(|&v| card[v as usize] as usize).collect();
                for (i, &v) in scope.iter().enumerate() {
                    let mut marg = vec![0.0; cards[i]];
                    for (e, &p) in fb.iter().enumerate() {
                        let stride: usize = cards[i + 1..].iter().product();
                        marg[(e / stride) % cards[i]] += p;
                    }
                    msgs.var_belief(v as usize, &mut vb);
                    for (x, y) in marg.iter().zip(&vb) {
                        assert!(
                            (x - y).abs() < 1e-8,
                            "{name} {schedule:?}: factor {f} var {v}"
                        );
                    }
                }
                // Independent Bethe energy: Σ_a Σ b_a ln(b_a / ψ_a).
                for (&p, &x) in fb.iter().zip(inst.table(fac, &phi)) {
                    bethe += p * (p.ln() - x);
                }
            }
            for v in 0..inst.n_vars() {
                msgs.var_belief(v, &mut vb);
                let d = scopes.iter().filter(|s| s.contains(&(v as u32))).count() as f64;
                bethe += (d - 1.0) * vb.iter().map(|&p| -p * p.ln()).sum::<f64>();
                for (x, y) in vb.iter().zip(&exact.node_marginals[v]) {
                    max_err = max_err.max((x - y).abs());
                }
            }
            let reported = msgs.bethe_free_energy(&inst, &phi, &mut work);
            assert!(
                (bethe - reported).abs() < 1e-10,
                "{name}: {bethe} vs {reported}"
            );
            println!(
                "{name} {schedule:?}: {} sweeps, max |BP − exact| node marginal {max_err:.2e}, log Z_Bethe {:.6} vs log Z {:.6}",
                r.sweeps, -reported, exact.log_z
            );
            assert!(max_err > 0.0 && max_err < 0.1);
        }
    }
}

/// Ising triangle, spins s ∈ {±1}, ψ(s_i, s_j) = exp(J s_i s_j), no fields. By symmetry BP's
/// messages are uniform, so its edge belief says P(s_i = s_j) = e^J / (e^J + e^−J), while the
/// truth is (e^{3J} + e^{−J}) / (e^{3J} + 3e^{−J}); for the frustrated J = −1: 0.1192 vs 0.3374.
#[test]
fn frustrated_triangle_has_the_known_loopy_bp_error() {
    let (card, scopes) = (vec![2, 2, 2], vec![vec![0, 1], vec![1, 2], vec![0, 2]]);
    let (_m, inst) = factor_graph(&card, &scopes);
    for j in [-1.0f64, -0.5, 0.7] {
        let phi: Vec<f64> = (0..3).flat_map(|_| [j, -j, -j, j]).collect();
        let mut work = BpWork::default();
        let mut msgs = BpMessages::default();
        for schedule in SCHEDULES {
            msgs.reset();
            let r = bp::run(
                &inst,
                &phi,
                &tight(schedule),
                Semiring::SumProduct,
                &mut msgs,
                &mut work,
            );
            assert!(r.converged);
            let mut b = Vec::new();
            msgs.factor_belief(&inst, &phi, 0, &mut work, &mut b);
            let bp_same = b[0] + b[3];
            let want_bp = j.exp() / (j.exp() + (-j).exp());
            let exact_same = ((3.0 * j).exp() + (-j).exp()) / ((3.0 * j).exp() + 3.0 * (-j).exp());
            assert!(
                (bp_same - want_bp).abs() < 1e-10,
                "J={j}: {bp_same} vs {want_bp}"
            );
            let enumerated = enumerate(&inst, &phi).unwrap();
            let ex = inst.table(&inst.factors[0], &enumerated.table_marginals);
            assert!((ex[0] + ex[3] - exact_same).abs() < 1e-12);
            // Bethe: 3 edges of Σ b ln(b/ψ) plus, per variable of degree 2, its entropy.
            let (ps, pd) = (want_bp, 1.0 - want_bp);
            let f = 3.0 * (ps * (ps / 2.0).ln() + pd * (pd / 2.0).ln() - j * (ps - pd))
                + 3.0 * 2f64.ln();
            let reported = msgs.bethe_free_energy(&inst, &phi, &mut work);
            assert!(
                (f - reported).abs() < 1e-10,
                "J={j}: Bethe {f} vs {reported}"
            );
            if j == -1.0 {
                assert!((bp_same - 0.1192).abs() < 1e-4 && (exact_same - 0.3374).abs() < 1e-4);
            }
        }
    }
}

#[test]
fn unconverged_bp_says_so() {
    // A strongly frustrated Boltzmann machine with no damping and only 3 sweeps.
    let (card, scopes) = complete(5);
    let (_m, inst) = factor_graph(&card, &scopes);
    let mut rng = StdRng::seed_from_u64(3);
    let phi = random_phi(&mut rng, inst.table_len, 3.0);
    let opts = BpOptions {
        max_sweeps: 3,
        ..tight(Schedule::Parallel)
    };
    let mut work = BpWork::default();
    let mut msgs = BpMessages::default();
    let r = bp::run(
        &inst,
        &phi,
        &opts,
        Semiring::SumProduct,
        &mut msgs,
        &mut work,
    );
    assert!(
        !r.converged && r.sweeps == 3 && r.residual > opts.tol,
        "{r:?}"
    );
    assert!(msgs.bethe_free_energy(&inst, &phi, &mut work).is_finite());
}

/// A grid large enough for the threaded flooding sweep: its fixed point equals the sequential
/// schedule's, and the same call on one thread gives bit-identical messages.
#[test]
fn threaded_parallel_sweeps_reach_the_sequential_fixed_point() {
    let (card, scopes) = grid(60, 60, 3);
    let (_m, inst) = factor_graph(&card, &scopes);
    assert!(inst.n_edges() >= bp::PARALLEL_SWEEP_EDGES);
    let mut rng = StdRng::seed_from_u64(12);
    let phi = random_phi(&mut rng, inst.table_len, 0.5);
    let par = BpOptions {
        damping: 0.3,
        ..tight(Schedule::Parallel)
    };
    let beliefs = |opts: &BpOptions, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut work = BpWork::default();
            let mut msgs = BpMessages::default();
            let r = bp::run(
                &inst,
                &phi,
                opts,
                Semiring::SumProduct,
                &mut msgs,
                &mut work,
            );
            assert!(r.converged, "{r:?}");
            let mut all = vec![];
            let mut b = Vec::new();
            for v in 0..inst.n_vars() {
                msgs.var_belief(v, &mut b);
                all.extend_from_slice(&b);
            }
            all
        })
    };
    let two = beliefs(&par, 2);
    assert_eq!(two, beliefs(&par, 1), "thread count changed the result");
    let seq = beliefs(&tight(Schedule::Sequential), 1);
    let worst = two
        .iter()
        .zip(&seq)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-9,
        "parallel vs sequential fixed point: {worst:.2e}"
    );
}

/// Max-marginal decoding: on trees, each variable's argmax of its exact marginal (by
/// enumeration); on a loopy grid, the argmax of loopy sum-product's variable beliefs.
#[test]
fn marginal_decoder_takes_each_variables_most_probable_state() {
    use piecewise_lab::estimators::Workspace;
    use piecewise_lab::eval::{decode, Decoder, Inference};
    let mut rng = StdRng::seed_from_u64(41);
    let argmax = |m: &[f64]| {
        m.iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap()
            .0 as u32
    };
    let how = Inference {
        decoder: Decoder::Marginal,
        bp: tight(Schedule::Sequential),
        scaling: None,
    };
    for trial in 0..30 {
        let (card, scopes) = random_tree(&mut rng, trial % 3);
        let (_, inst) = factor_graph(&card, &scopes);
        let phi = random_phi(&mut rng, inst.table_len, 2.0);
        let exact = enumerate(&inst, &phi).unwrap();
        let (y, name) = decode(&inst, &phi, &how, &mut Workspace::default()).unwrap();
        assert!(name.starts_with("max-marginal"), "{name}");
        let want: Vec<u32> = exact.node_marginals.iter().map(|m| argmax(m)).collect();
        assert_eq!(y, want, "trial {trial}");
    }
    let (card, scopes) = grid(3, 3, 3);
    let (_, inst) = factor_graph(&card, &scopes);
    let phi = random_phi(&mut rng, inst.table_len, 1.0);
    let (msgs, _, r) = run_bp(
        &inst,
        &phi,
        &tight(Schedule::Sequential),
        Semiring::SumProduct,
    );
    assert!(r.converged);
    let (y, name) = decode(&inst, &phi, &how, &mut Workspace::default()).unwrap();
    assert_eq!(name, "max-marginal loopy BP");
    let mut b = vec![];
    for (v, &yv) in y.iter().enumerate() {
        msgs.var_belief(v, &mut b);
        assert_eq!(yv, argmax(&b), "variable {v}");
    }
}
