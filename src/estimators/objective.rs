//! The dataset objective: Σ over instances of an estimator's value, evaluated in parallel with
//! one gradient buffer per worker thread (reused across evaluations), plus a Gaussian prior.

use crate::error::{Error, Result};
use crate::estimators::terms::{table_reads, Term, FOREST_MIN_STATES};
use crate::estimators::{evaluate_terms, Estimator, TermList, Workspace};
use crate::graph::{Instance, Model, RowMaps, TableReads, TableScratch};
use crate::inference::BpMessages;
use crate::optim::{Evaluation, Objective, Prior};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::sync::Mutex;

struct Local {
    grad: Vec<f64>,
    phi: Vec<f64>,
    /// Zero between instances: each instance zeroes the entries it wrote.
    dphi: Vec<f64>,
    scratch: TableScratch,
    ws: Workspace,
    /// BP messages of each instance in this worker's range, kept to warm-start the next
    /// evaluation (002 §4).
    msgs: Vec<BpMessages>,
    value: f64,
    ops: u64,
    unconverged: u64,
}

impl Objective for DatasetObjective<'_> {
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        Some(&self.pool)
    }
    fn n_params(&self) -> usize {
        self.model.n_params
    }
    fn evaluate(&self, x: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        DatasetObjective::evaluate(self, x, grad)
    }
    fn paper_flops(&self) -> Option<f64> {
        self.paper_flops
    }
}

pub struct DatasetObjective<'a> {
    pub model: &'a Model,
    pub instances: &'a [Instance],
    pub estimator: &'a dyn Estimator,
    pub prior: Prior,
    pool: rayon::ThreadPool,
    /// One contiguous range of instances per worker, balanced by table size, so the sums are
    /// taken in a fixed order and a run is bit-for-bit reproducible for a given thread count.
    ranges: Vec<std::ops::Range<usize>>,
    locals: Vec<Mutex<Local>>,
    /// Per instance, its terms and the table entries they read. Both depend on the gold labels
    /// and the graph only, not on θ, so they are built once.
    plans: Vec<Plan>,
    maps: RowMaps,
    /// The paper's FLOPs of one evaluation (004 §3.1), for estimators that count them.
    pub paper_flops: Option<f64>,
    /// Terms pooled into an identical term of an earlier instance (and not evaluated).
    pub pooled_terms: usize,
}

struct Plan {
    terms: TermList,
    reads: TableReads,
}

impl<'a> DatasetObjective<'a> {
    /// `threads = 0` uses every core. Identical one-table terms are pooled across instances
    /// ([`pool_table_terms`]).
    /// The memory a [`new`](Self::new) objective over `instances` takes while training on
    /// `threads` threads: each thread's gradient and its table buffers (values, derivatives,
    /// inference workspace) for the largest instance, and each instance's term plan.
    pub fn memory_estimate(model: &Model, instances: &[Instance], threads: usize) -> u64 {
        let biggest = instances.iter().map(|i| i.table_len).max().unwrap_or(0) as u64;
        let all: u64 = instances.iter().map(|i| i.table_len as u64).sum();
        let per_thread = crate::memory::product(&[model.n_params as u64, 8])
            .saturating_add(crate::memory::product(&[biggest, 8, 6]));
        crate::memory::product(&[per_thread, threads.max(1) as u64])
            .saturating_add(crate::memory::product(&[all, 8]))
    }

    pub fn new(
        model: &'a Model,
        instances: &'a [Instance],
        estimator: &'a dyn Estimator,
        prior: Prior,
        threads: usize,
    ) -> Result<Self> {
        for (i, inst) in instances.iter().enumerate() {
            estimator
                .check(inst)
                .map_err(|e| Error::invalid(format!("sequence {}: {e}", i + 1)))?;
        }
        let pool = crate::util::thread_pool(threads)?;
        let mut lists: Vec<TermList> = pool.install(|| {
            instances
                .par_iter()
                .map(|inst| {
                    let mut terms = TermList::default();
                    estimator.terms(inst, &mut terms);
                    terms.compact();
                    terms
                })
                .collect()
        });
        let pooled_terms = pool_table_terms(instances, &mut lists);
        let plans = pool.install(|| {
            instances
                .par_iter()
                .zip(lists)
                .map(|(inst, terms)| {
                    let gold = inst.gold.as_deref().expect("checked: gold labels");
                    let reads = table_reads(inst, gold, &terms);
                    Plan { terms, reads }
                })
                .collect()
        });
        // Balanced by the entries each instance builds: after pooling, the first instances
        // hold most of the distinct pieces.
        let built: Vec<usize> = instances
            .iter()
            .zip(&plans)
            .map(|(inst, p): (&Instance, &Plan)| p.reads.built(inst))
            .collect();
        let ranges = balanced_ranges_by(&built, pool.current_num_threads());
        let locals = ranges
            .iter()
            .map(|r| {
                Mutex::new(Local {
                    grad: Vec::new(),
                    phi: Vec::new(),
                    dphi: Vec::new(),
                    scratch: TableScratch::default(),
                    ws: Workspace::default(),
                    msgs: vec![BpMessages::default(); r.len()],
                    value: 0.0,
                    ops: 0,
                    unconverged: 0,
                })
            })
            .collect();
        let paper_flops = instances
            .iter()
            .map(|i| estimator.paper_flops(i, model.n_params))
            .sum::<Option<f64>>();
        Ok(DatasetObjective {
            paper_flops,
            pooled_terms,
            model,
            instances,
            estimator,
            prior,
            pool,
            ranges,
            locals,
            plans,
            maps: RowMaps::new(model),
        })
    }

    pub fn n_params(&self) -> usize {
        self.model.n_params
    }

    pub fn threads(&self) -> usize {
        self.locals.len()
    }

    /// Table entries built per evaluation and the size of the full tables: local estimators
    /// build only the entries their terms read.
    pub fn table_entries(&self) -> (usize, usize) {
        self.instances
            .iter()
            .zip(&self.plans)
            .fold((0, 0), |(b, t), (inst, p)| {
                (b + p.reads.built(inst), t + inst.table_len)
            })
    }

    /// Evaluates the objective at θ; when `grad` is given, writes ∂objective/∂θ into it.
    pub fn evaluate(&self, theta: &[f64], grad: Option<&mut [f64]>) -> Evaluation {
        let want_grad = grad.is_some();
        let n = self.model.n_params;
        let mut grad = grad;
        // The first worker adds straight into the caller's gradient; the others into their
        // own buffers, added to it afterwards in worker order. Each worker zeroes its own.
        for l in &self.locals {
            let mut l = l.lock().unwrap();
            l.value = 0.0;
            l.ops = 0;
            l.unconverged = 0;
        }
        let first = Mutex::new(grad.as_deref_mut());
        let model = self.model;
        self.pool.install(|| {
            self.locals
                .par_iter()
                .zip(&self.ranges)
                .enumerate()
                .for_each(|(wi, (local, range))| {
                    let mut guard = local.lock().unwrap();
                    let l = &mut *guard;
                    let first = if wi == 0 {
                        first.lock().unwrap().take()
                    } else {
                        None
                    };
                    let mut own = std::mem::take(&mut l.grad);
                    let g_out: &mut [f64] = match first {
                        Some(g) => {
                            g.fill(0.0);
                            g
                        }
                        None => {
                            if want_grad {
                                own.clear();
                                own.resize(n, 0.0);
                            }
                            &mut own
                        }
                    };
                    for (i, (inst, plan)) in self.instances[range.clone()]
                        .iter()
                        .zip(&self.plans[range.clone()])
                        .enumerate()
                    {
                        std::mem::swap(&mut l.ws.infer.msgs, &mut l.msgs[i]);
                        let gold = inst.gold.as_deref().expect("checked: gold labels");
                        let n = inst.table_len;
                        if l.phi.len() < n {
                            l.phi.resize(n, 0.0);
                            l.dphi.resize(n, 0.0);
                        }
                        model.build_tables_subset(
                            theta,
                            inst,
                            &plan.reads,
                            &self.maps,
                            &mut l.phi,
                            &mut l.scratch,
                        );
                        let (ws, phi) = (&mut l.ws, &l.phi[..n]);
                        let v = if want_grad {
                            let d = &mut l.dphi[..n];
                            let v = evaluate_terms(
                                inst,
                                phi,
                                gold,
                                &plan.terms,
                                Some(&mut *d),
                                &mut ws.term_work,
                                &mut ws.infer,
                            );
                            model.scatter_subset(
                                inst,
                                &plan.reads,
                                &self.maps,
                                d,
                                g_out,
                                &mut l.scratch,
                            );
                            plan.reads.zero(inst, d);
                            debug_assert!(
                                d.iter().all(|&x| x == 0.0),
                                "a term wrote a table entry it does not read"
                            );
                            v
                        } else {
                            evaluate_terms(
                                inst,
                                phi,
                                gold,
                                &plan.terms,
                                None,
                                &mut ws.term_work,
                                &mut ws.infer,
                            )
                        };
                        std::mem::swap(&mut l.ws.infer.msgs, &mut l.msgs[i]);
                        l.value += v;
                        let (ops, unconverged) = l.ws.take_counts();
                        l.ops += ops;
                        l.unconverged += unconverged;
                    }
                    l.grad = own;
                });
        });
        let guards: Vec<_> = self.locals.iter().map(|l| l.lock().unwrap()).collect();
        let value: f64 = guards.iter().map(|g| g.value).sum();
        let ops: u64 = guards.iter().map(|g| g.ops).sum();
        let unconverged: u64 = guards.iter().map(|g| g.unconverged).sum();
        if let Some(grad) = grad {
            let inv_s2 = self.prior.sigma2.map(|s| 1.0 / s).unwrap_or(0.0);
            const CHUNK: usize = 1 << 14;
            self.pool.install(|| {
                grad.par_chunks_mut(CHUNK)
                    .zip(theta.par_chunks(CHUNK))
                    .enumerate()
                    .for_each(|(ci, (g, th))| {
                        let start = ci * CHUNK;
                        for (j, (gj, &tj)) in g.iter_mut().zip(th).enumerate() {
                            let mut s = *gj;
                            for l in &guards[1..] {
                                s += l.grad[start + j];
                            }
                            *gj = -s + tj * inv_s2;
                        }
                    });
            });
        }
        let penalty = self.pool.install(|| self.prior.penalty(theta));
        Evaluation {
            objective: -value + penalty,
            value,
            ops,
            unconverged,
        }
    }
}

/// Pools identical one-table terms across instances; returns how many were pooled away. A term
/// that is one factor's whole table with its scope free (a piece of piecewise training, PWPL's
/// softmax of a unary factor) depends on θ only through the factor's parts and on the data only
/// through its scope's gold labels, so k copies of it are one term of k times the weight, with
/// the same value and gradient. 003 Fig. 2's per-feature pieces repeat each (feature, label)
/// thousands of times: pooled, an evaluation costs the distinct pieces, not the occurrences.
/// Deterministic: the first occurrence, in instance order, keeps the pooled term.
fn pool_table_terms(instances: &[Instance], lists: &mut [TermList]) -> usize {
    // Key → (instance, term, weight added by its copies).
    let mut first: FxHashMap<Box<[u64]>, (u32, u32, f64)> = FxHashMap::default();
    let mut dropped: Vec<Vec<u32>> = vec![Vec::new(); instances.len()];
    let mut key: Vec<u64> = Vec::new();
    for (i, (inst, list)) in instances.iter().zip(lists.iter()).enumerate() {
        let gold = inst.gold.as_deref().expect("checked: gold labels");
        for k in 0..list.len() {
            let t = list.get(k);
            if !table_term_key(inst, gold, &t, &mut key) {
                continue;
            }
            match first.get_mut(&key[..]) {
                Some(entry) => {
                    entry.2 += t.weight;
                    dropped[i].push(k as u32);
                }
                None => {
                    first.insert(key.as_slice().into(), (i as u32, k as u32, 0.0));
                }
            }
        }
    }
    for &(i, k, dw) in first.values() {
        if dw != 0.0 {
            lists[i as usize].add_weight(k as usize, dw);
        }
    }
    let mut pooled = 0;
    for (list, d) in lists.iter_mut().zip(&dropped) {
        if !d.is_empty() {
            pooled += d.len();
            *list = list.retained(|k| d.binary_search(&(k as u32)).is_err());
        }
    }
    pooled
}

/// Writes into `key` what decides a one-table term's value and gradient — its temperature and
/// NOTA mode, its factor's template, scope cardinalities and gold labels, and the slot's parts
/// with their observations — and returns true; false (key unspecified) for any other term.
fn table_term_key(inst: &Instance, gold: &[u32], t: &Term<'_>, key: &mut Vec<u64>) -> bool {
    let &[f] = t.factors else {
        return false;
    };
    let fac = &inst.factors[f as usize];
    let scope = inst.scope(fac);
    if !t.clamped.is_empty()
        || !t.summed.is_empty()
        || t.off_gold.is_some()
        || t.free.len() != scope.len()
        || !scope.iter().all(|v| t.free.contains(v))
        || t.is_whole_graph(inst)
        || t.states(inst) > FOREST_MIN_STATES
    {
        return false;
    }
    key.clear();
    key.extend([t.temperature.to_bits(), t.nota as u64, fac.template as u64]);
    key.push(scope.len() as u64);
    for &v in scope {
        key.extend([inst.card[v as usize] as u64, gold[v as usize] as u64]);
    }
    for p in inst.parts(&inst.slots[fac.slot as usize]) {
        let (feats, vals) = inst.obs(p);
        key.extend([p.template as u64, feats.len() as u64]);
        key.extend(feats.iter().map(|&x| x as u64));
        key.extend(vals.iter().map(|x| x.to_bits()));
    }
    true
}

/// Splits instances into at most `k` contiguous ranges of about equal total table size.
pub(crate) fn balanced_ranges(instances: &[Instance], k: usize) -> Vec<std::ops::Range<usize>> {
    let sizes: Vec<usize> = instances.iter().map(|i| i.table_len).collect();
    balanced_ranges_by(&sizes, k)
}

/// Splits `sizes.len()` items into at most `k` contiguous ranges of about equal total size.
fn balanced_ranges_by(sizes: &[usize], k: usize) -> Vec<std::ops::Range<usize>> {
    let k = k.max(1);
    let total: usize = sizes.iter().map(|&x| x.max(1)).sum();
    let mut ranges = Vec::with_capacity(k);
    let mut start = 0;
    let mut acc = 0;
    for (i, &size) in sizes.iter().enumerate() {
        acc += size.max(1);
        if acc * k >= total * (ranges.len() + 1) && ranges.len() + 1 < k {
            ranges.push(start..i + 1);
            start = i + 1;
        }
    }
    ranges.push(start..sizes.len());
    ranges
}
