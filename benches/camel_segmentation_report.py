"""Table of benches/camel_segmentation.sh: per estimator, test pixel accuracy (mean and per
fold), training seconds, L-BFGS iterations and CAMEL's fits (relinearisations of g)."""
import json
import statistics
import sys

out = sys.argv[1]
sep = sys.argv.index("--")
seeds, ests = sys.argv[2:sep], sys.argv[sep + 1 :]
print("| estimator | accuracy % max-product (mean) | per fold | accuracy % max-marginal (mean) | per fold | train s (median) | iterations | CAMEL fits after pw | final sepset violation |")
print("|---|---|---|---|---|---|---|---|---|")
for e in ests:
    acc, mpm, secs, its, fits, viol = [], [], [], [], [], []
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
        f"| {' / '.join(map(str, fits)) or '–'} | {' / '.join(f'{v:.1e}' for v in viol) or '–'} |"
    )
