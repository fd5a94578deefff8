"""Table of benches/camel_segmentation.sh: per estimator, test pixel accuracy (mean and per
fold; max-product and max-marginal decoding), training seconds, L-BFGS iterations, CAMEL's fits
(relinearisations of g), the final sepset violation, and the distance ‖w − w_bp‖ of the weights
to LBP training's, plus the weak per-pixel classifier alone."""
import json
import math
import statistics
import sys


def weights(path):
    try:
        return [float(l.split()[-1]) for l in open(path) if l.strip()]
    except FileNotFoundError:
        return None


def classifier(path):
    """Accuracy of each pixel's highest score (the node features alone)."""
    ok = n = 0
    for line in open(path):
        for cell in line.split("|"):
            t = cell.split()
            if len(t) < 2:
                continue
            scores = [float(x) for x in t[1:]]
            ok += max(range(len(scores)), key=scores.__getitem__) == int(t[0])
            n += 1
    return 100.0 * ok / max(n, 1)

out = sys.argv[1]
sep = sys.argv.index("--")
seeds, ests = sys.argv[2:sep], sys.argv[sep + 1 :]
cls = [classifier(f"{out}/s{s}-test.grid") for s in seeds]
print(f"Weak per-pixel classifier alone: {statistics.mean(cls):.1f} % ({' / '.join(f'{a:.1f}' for a in cls)}).\n")
print("| estimator | accuracy % max-product (mean) | per fold | accuracy % max-marginal (mean) | per fold | train s (median) | iterations | CAMEL fits after pw | final sepset violation | ‖w − w_bp‖ |")
print("|---|---|---|---|---|---|---|---|---|---|")
for e in ests:
    acc, mpm, secs, its, fits, viol, dist = [], [], [], [], [], [], []
    for s in seeds:
        try:
            m = json.load(open(f"{out}/s{s}-{e}/summary.json"))
        except FileNotFoundError:
            continue
        acc.append(m["test"]["token_accuracy"])
        try:
            mpm.append(json.load(open(f"{out}/s{s}-{e}/eval-marginal.json"))["token_accuracy"])
        except (FileNotFoundError, ValueError):
            pass
        secs.append(m["train_seconds"])
        its.append(m["iterations"])
        w, wb = weights(f"{out}/s{s}-{e}/weights.tsv"), weights(f"{out}/s{s}-bp/weights.tsv")
        if w and wb:
            dist.append(math.dist(w, wb))
        f = m.get("camel_fits") or []
        if f:
            fits.append(len(f) - 1)
            viol.append(f[-1]["violation"])
    if not acc:
        continue
    print(
        f"| {e} | {statistics.mean(acc):.1f} | {' / '.join(f'{a:.1f}' for a in acc)} "
        f"| {statistics.mean(mpm) if mpm else float('nan'):.1f} | {' / '.join(f'{a:.1f}' for a in mpm)} "
        f"| {statistics.median(secs):.0f} | {' / '.join(map(str, its))} "
        f"| {' / '.join(map(str, fits)) or '–'} | {' / '.join(f'{v:.1e}' for v in viol) or '–'} "
        f"| {' / '.join(f'{d:.1f}' for d in dist) or '–'} |"
    )
