#!/usr/bin/env bash
# Penn Treebank sample (../shared/data/ptb-wsj-sample/treebank.tsv, 45 tags): first 3,000
# sentences train, the rest test; word/affix/shape template (assets/templates/pos.tpl on columns
# from `piecewise-lab augment`). Trains ML and PWPL with the same features and prior in one run
# and prints both and the time ratio ML/PWPL (000 Table 8: PWPL 3,911 s vs ML 33,846 s).
#
# Defaults: the paper's chain setting (edge factorisation, "no unary factors"), feature–label
# pairs seen in training, and a weak prior (c2 = 0.002, σ² = 250; the paper used σ² = 10, at which
# PWPL trails ML by about 1 point here: PWPL gains accuracy as the prior weakens, ML barely moves).
# Override with TEMPLATE=…, FACTORISATION=split|edge, FEATURES=all|observed, C2=….
#
#   bash benches/ptb_pwpl.sh [extra compare options]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/ptb-wsj-sample/treebank.tsv}
if [ ! -f "$DATA" ]; then
  echo "ptb_pwpl: $DATA not found; skipping (the shared corpora are not here)"
  exit 0
fi
cargo build --release --quiet
BIN=target/release/piecewise-lab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$BIN augment --data "$DATA" --out "$TMP/ptb.conll" 2>/dev/null
$BIN split --data "$TMP/ptb.conll" --head 3000 --train-out "$TMP/train.conll" --test-out "$TMP/test.conll" 2>/dev/null
echo "ptb_pwpl: template ${TEMPLATE:=assets/templates/pos.tpl}, factorisation ${FACTORISATION:=edge}," \
  "features ${FEATURES:=observed}, c2 ${C2:=0.002}"
$BIN compare --train "$TMP/train.conll" --test "$TMP/test.conll" --template "$TEMPLATE" \
  --factorisation "$FACTORISATION" --features "$FEATURES" --c2 "$C2" \
  --estimators ml,pwpl "$@" --force --out "$TMP/runs" --json > "$TMP/cmp.json"
python3 - "$TMP/cmp.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
print(f"{'estimator':<10} {'iterations':>10} {'train s':>9} {'accuracy %':>11}")
for r in rows:
    print(f"{r['estimator']:<10} {r['iterations']:>10} {r['train_seconds']:>9.1f} {r['token_accuracy']:>11.2f}")
ml, pw = rows[0], rows[1]
print(f"time ratio ML/PWPL: {ml['train_seconds'] / pw['train_seconds']:.2f}; accuracy ML − PWPL: {ml['token_accuracy'] - pw['token_accuracy']:.2f}")
per = [r['train_seconds'] / max(r['iterations'], 1) for r in (ml, pw)]
print(f"seconds per iteration: ML {per[0]:.3f}, PWPL {per[1]:.3f} (ratio {per[0] / per[1]:.2f})")
PY
