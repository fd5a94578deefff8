"""Race piecewise-lab's loopy BP against pgmax on one grid (see bp_pgmax.sh).

Both tools get the same model: an H x W 4-connected grid, K labels, unary log-potentials drawn
from N(0, 1) (seeded), and one Potts log-potential matrix beta * I on every edge. Both run
sum-product BP with the flooding schedule from uniform messages, damping 0.5 in log space, for a
fixed number of sweeps. Reading and building the graph is not timed; pgmax is timed after a
warm-up call (JIT compilation excluded); each tool reports the median of --repeat runs.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_uai(path, unary, beta):
    h, w, k = unary.shape
    pairs = []
    for r in range(h):
        for c in range(w):
            v = r * w + c
            if c + 1 < w:
                pairs.append((v, v + 1))
            if r + 1 < h:
                pairs.append((v, v + w))
    pot = np.exp(beta * np.eye(k)).ravel()
    with open(path, "w") as f:
        f.write("MARKOV\n%d\n%s\n%d\n" % (h * w, " ".join([str(k)] * (h * w)), h * w + len(pairs)))
        for v in range(h * w):
            f.write("1 %d\n" % v)
        for a, b in pairs:
            f.write("2 %d %d\n" % (a, b))
        flat = unary.reshape(h * w, k)
        for v in range(h * w):
            f.write("%d\n%s\n" % (k, " ".join("%.17g" % x for x in np.exp(flat[v]))))
        row = " ".join("%.17g" % x for x in pot)
        for _ in pairs:
            f.write("%d\n%s\n" % (k * k, row))
    return pairs


def ours(binary, uai, sweeps, repeat):
    cmd = [
        binary, "infer", "--uai", uai, "--bp-schedule", "parallel", "--bp-damping", "0.5",
        "--bp-max-sweeps", str(sweeps), "--bp-tol", "1e-300", "--repeat", str(repeat),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) sweeps, median ([0-9.e-]+) s", p.stderr)
    if not m:
        sys.exit("unexpected output from piecewise-lab: " + p.stderr)
    nums = p.stdout.split("\n")[1].split()
    n = int(nums[0])
    out, i = [], 1
    for _ in range(n):
        k = int(nums[i])
        out.append([float(x) for x in nums[i + 1 : i + 1 + k]])
        i += 1 + k
    return int(m.group(1)), float(m.group(2)), np.array(out)


def pgmax_bp(unary, beta, sweeps, repeat):
    from pgmax import fgraph, fgroup, infer, vgroup
    import jax

    h, w, k = unary.shape
    variables = vgroup.NDVarArray(num_states=k, shape=(h, w))
    fg = fgraph.FactorGraph(variable_groups=variables)
    vff = []
    for r in range(h):
        for c in range(w):
            if c + 1 < w:
                vff.append([variables[r, c], variables[r, c + 1]])
            if r + 1 < h:
                vff.append([variables[r, c], variables[r + 1, c]])
    fg.add_factors(fgroup.PairwiseFactorGroup(variables_for_factors=vff,
                                              log_potential_matrix=beta * np.eye(k)))
    bp = infer.BP(fg.bp_state, temperature=1.0)

    def once():
        arrays = bp.init(evidence_updates={variables: unary})
        arrays = bp.run_bp(arrays, num_iters=sweeps, damping=0.5)
        jax.block_until_ready(arrays.ftov_msgs)
        return arrays

    once()  # compile
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        arrays = once()
        times.append(time.perf_counter() - t)
    marg = infer.get_marginals(bp.get_beliefs(arrays))[variables]
    return "pgmax 0.6.1 (JAX %s, CPU)" % jax.__version__, statistics.median(times), \
        np.asarray(marg, dtype=np.float64).reshape(h * w, k)


def numpy_bp(unary, beta, sweeps, repeat):
    """Vectorised flooding BP in NumPy (the fallback reference): messages in log space."""
    h, w, k = unary.shape
    u = unary.reshape(h * w, k)
    a, b = [], []
    for r in range(h):
        for c in range(w):
            v = r * w + c
            if c + 1 < w:
                a.append(v); b.append(v + 1)
            if r + 1 < h:
                a.append(v); b.append(v + w)
    a, b = np.array(a), np.array(b)
    lp = beta * np.eye(k)

    def lse(x, axis):
        m = x.max(axis=axis, keepdims=True)
        return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)

    def run():
        to_b = np.full((len(a), k), -np.log(k))  # message a -> b
        to_a = np.full((len(a), k), -np.log(k))
        for _ in range(sweeps):
            tot = u.copy()
            np.add.at(tot, b, to_b)
            np.add.at(tot, a, to_a)
            na = tot[a] - to_a
            nb = tot[b] - to_b
            new_b = lse(na[:, :, None] + lp[None], 1)
            new_a = lse(nb[:, None, :] + lp[None], 2)
            new_b -= lse(new_b, 1)[:, None]
            new_a -= lse(new_a, 1)[:, None]
            to_b = 0.5 * to_b + 0.5 * new_b
            to_a = 0.5 * to_a + 0.5 * new_a
        tot = u.copy()
        np.add.at(tot, b, to_b)
        np.add.at(tot, a, to_a)
        p = np.exp(tot - tot.max(1, keepdims=True))
        return p / p.sum(1, keepdims=True)

    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        marg = run()
        times.append(time.perf_counter() - t)
    return "NumPy flooding BP (fallback: pgmax unavailable)", statistics.median(times), marg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--labels", type=int, default=5)
    ap.add_argument("--sweeps", type=int, default=50)
    ap.add_argument("--beta", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    unary = rng.normal(size=(args.size, args.size, args.labels))
    with tempfile.TemporaryDirectory() as d:
        uai = os.path.join(d, "grid.uai")
        write_uai(uai, unary, args.beta)
        sweeps, t_ours, m_ours = ours(args.bin, uai, args.sweeps, args.repeat)
    try:
        name, t_ref, m_ref = pgmax_bp(unary, args.beta, args.sweeps, args.repeat)
    except ImportError:
        name, t_ref, m_ref = numpy_bp(unary, args.beta, args.sweeps, args.repeat)
    diff = float(np.abs(m_ours - m_ref).max())
    print("grid %dx%d, %d labels, Potts beta=%g, parallel schedule, damping 0.5, %d sweeps, "
          "median of %d runs, %d cores"
          % (args.size, args.size, args.labels, args.beta, args.sweeps, args.repeat,
             os.cpu_count()))
    print("%-48s %10s %12s" % ("tool", "seconds", "sweeps/s"))
    print("%-48s %10.4f %12.1f" % ("piecewise-lab", t_ours, sweeps / t_ours))
    print("%-48s %10.4f %12.1f" % (name, t_ref, args.sweeps / t_ref))
    print("speed ratio (reference time / ours): %.2f" % (t_ref / t_ours))
    print("largest |marginal difference|: %.2e" % diff)


if __name__ == "__main__":
    main()
