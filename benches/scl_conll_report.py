#!/usr/bin/env python3
"""Summarises benches/scl_conll.sh: per sweep the Pareto frontier of (paper FLOPs, test
perplexity), the β heuristic against the sweep's best β per λ (best = lowest train perplexity,
004 Fig. 14), and the win–win check of 004 §8.4 against full likelihood alone."""
import json
import math
import os
import sys

out = sys.argv[1]


def load(d):
    try:
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        return s if s.get("status") == "finished" else None
    except OSError:
        return None


def ppl(m):
    if not m or m.get("log_likelihood") is None or not m.get("log_likelihood_tokens"):
        return None
    return math.exp(-m["log_likelihood"] / m["log_likelihood_tokens"])


def fmt(x, p=2):
    return "–" if x is None else f"{x:.{p}f}"


print("# 004 §8.3 on CoNLL-2000 (100 training sentences, full test set)\n")
for model in ["boltzmann-chain", "chain"]:
    fl = load(os.path.join(out, "runs", f"{model}-fl"))
    for high in ["fl", "pl2"]:
        name = f"{model}-pl1-{high}"
        sd = os.path.join(out, "sweeps", name)
        try:
            with open(os.path.join(sd, "sweep.json")) as f:
                idx = json.load(f)
        except OSError:
            continue
        pts = []
        for p in idx["points"]:
            s = load(os.path.join(sd, p["dir"]))
            if s:
                pts.append((p["lambda"], p["beta"], s))
        print(f"## {name}: {len(pts)} of {len(idx['points'])} points\n")
        # Pareto frontiers over (complexity, test perplexity): paper FLOPs and counted ops.
        for label, cost in [("paper FLOPs per evaluation", lambda s: s.get("paper_flops")),
                            ("counted operations of the run", lambda s: float(s["ops"]))]:
            rows = sorted(
                (cost(s), ppl(s["test"]), l, b, s)
                for l, b, s in pts
                if cost(s) and ppl(s["test"])
            )
            front, best = [], float("inf")
            for r in rows:
                if r[1] < best:
                    front.append(r)
                    best = r[1]
            print(f"Pareto frontier ({label} → test perplexity):\n")
            print("| λ | β | paper FLOPs | counted ops | test ppl | train ppl | test acc % |")
            print("|---|---|---|---|---|---|---|")
            for _, tp, l, b, s in front:
                print(
                    f"| {l} | {b} | {s['paper_flops']:.3g} | {s['ops']:.3g} | {tp:.2f} "
                    f"| {fmt(ppl(s.get('train')))} | {s['test']['token_accuracy']:.2f} |"
                )
            print()
        # β heuristic vs best β per λ.
        print("β heuristic (--beta auto) against the sweep's best β (lowest train perplexity):\n")
        print("| λ | best β | heuristic β | J(β) rounds | train ppl best / heur | test ppl best / heur |")
        print("|---|---|---|---|---|---|")
        for l in sorted({l for l, _, _ in pts}):
            row = [(b, s) for ll, b, s in pts if ll == l and ppl(s.get("train"))]
            if not row:
                continue
            bb, bs = min(row, key=lambda r: ppl(r[1]["train"]))
            h = load(os.path.join(out, "runs", f"{name}-heuristic-l{l:g}"))
            if h and h.get("beta_rounds"):
                hb = h["beta_rounds"][-1]["beta"][-1]
                total = sum(h["beta_rounds"][-1]["beta"])
                hb = hb / total if total else hb
                nr = len(h["beta_rounds"])
            else:
                hb, nr = None, 0
            print(
                f"| {l} | {bb} | {fmt(hb, 3)} | {nr} | {fmt(ppl(bs['train']))} / {fmt(ppl(h['train']) if h else None)} "
                f"| {fmt(ppl(bs['test']))} / {fmt(ppl(h['test']) if h else None)} |"
            )
        print()
        # Win–win (§8.4): lower test NLL and lower complexity than full likelihood alone.
        if fl and ppl(fl["test"]):
            ft, ff, fo = ppl(fl["test"]), fl.get("paper_flops"), fl["ops"]
            print(
                f"Win–win against FL alone (test ppl {ft:.2f}, {ff:.3g} paper FLOPs, {fo:.3g} ops):"
            )
            for label, key, ref in [("paper FLOPs", "paper_flops", ff), ("counted ops", "ops", fo)]:
                wins = [
                    (l, b, s)
                    for l, b, s in pts
                    if l < 1 and ppl(s["test"]) and ppl(s["test"]) < ft and s[key] < ref
                ]
                print(f"- by {label}: {len(wins)} points with λ < 1 are better on both")
                for l, b, s in sorted(wins, key=lambda r: ppl(r[2]["test"]))[:3]:
                    print(
                        f"  - λ = {l}, β = {b}: test ppl {ppl(s['test']):.2f}, "
                        f"{s[key] / ref:.2f}× FL's {label}"
                    )
            print()
