#!/usr/bin/env python3
"""Train CRFsuite (python-crfsuite) on a CoNLL file with the CRF++ chunking template's features,
the same feature strings piecewise-lab builds, and write its test predictions.

Prints one JSON line: iterations, train_seconds (trainer.train only), and the prediction file.
Features: CRFsuite attributes are the expanded CRF++ unigram strings (U00:…); the CRF++ `B`
template is CRFsuite's label-bigram transition feature. `--features observed` is CRFsuite's
default (feature–label pairs seen in training); `all` turns on possible_states/transitions.
"""
import argparse, json, re, sys, time

import pycrfsuite

MACRO = re.compile(r"%x\[(-?\d+),(\d+)\]")


def read_conll(path):
    """The file's sequences one at a time (streamed, so the process's memory is CRFsuite's)."""
    cur = []
    for line in open(path, encoding="utf-8"):
        f = line.split()
        if not f or f[0] == "-DOCSTART-":
            if cur:
                yield cur
            cur = []
            continue
        cur.append(f)
    if cur:
        yield cur


def read_template(path):
    uni = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip()
        if not line or line[0] in " #":
            continue
        if line[0] == "U":
            uni.append(line)
        elif line[0] != "B" or line != "B":
            sys.exit(f"{path}: only U lines and a plain B line are supported by this race")
    return uni


def expand(tpl, seq, t):
    def rep(m):
        i = t + int(m.group(1))
        if i < 0:
            return f"_B{i}"
        if i >= len(seq):
            return f"_B+{i - len(seq) + 1}"
        return seq[i][int(m.group(2))]
    return MACRO.sub(rep, tpl)


def features(seq, uni):
    return [{expand(u, seq, t): 1.0 for u in uni} for t in range(len(seq))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--c2", type=float, default=1.0)
    ap.add_argument("--features", choices=["observed", "all"], default="observed")
    ap.add_argument("--model", required=True)
    ap.add_argument("--pred", required=True)
    ap.add_argument("--max-iter", type=int, default=None)
    a = ap.parse_args()
    uni = read_template(a.template)
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in read_conll(a.train):
        trainer.append(features(s, uni), [tok[-1] for tok in s])
    trainer.select("lbfgs")
    trainer.set_params({
        "c1": 0.0, "c2": a.c2, "feature.minfreq": 0,
        "feature.possible_states": a.features == "all",
        "feature.possible_transitions": a.features == "all",
    })
    if a.max_iter is not None:
        trainer.set_params({"max_iterations": a.max_iter})
    t0 = time.perf_counter()
    trainer.train(a.model)
    secs = time.perf_counter() - t0
    iters = trainer.logparser.last_iteration["num"] if trainer.logparser.last_iteration else None
    tagger = pycrfsuite.Tagger()
    tagger.open(a.model)
    with open(a.pred, "w", encoding="utf-8") as out:
        for s in read_conll(a.test):
            pred = tagger.tag(features(s, uni))
            for tok, p in zip(s, pred):
                out.write(" ".join(tok + [p]) + "\n")
            out.write("\n")
    n_feat = trainer.logparser.featgen_num_features if hasattr(trainer.logparser, "featgen_num_features") else None
    print(json.dumps({"iterations": iters, "train_seconds": secs, "pred": a.pred, "features": n_feat}))


if __name__ == "__main__":
    main()
