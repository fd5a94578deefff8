#!/usr/bin/env bash
# Race: exact-ML training of piecewise-lab against CRFsuite (python-crfsuite) on CoNLL-2000 with
# the CRF++ chunking template and c2 = 1.0 (Gaussian prior σ² = 0.5), in the same run, on the same
# machine. Prints both tools' iterations, training seconds, token accuracy and chunk F1 (both
# scored by `piecewise-lab score`, i.e. conlleval's rules) and the time ratio ours/CRFsuite.
#
#   bash benches/race_crfsuite.sh [observed|all]    # feature set; default observed (CRFsuite's default)
#
# Environment: DATA (default ../shared/data/conll2000), THREADS (default 0 = all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
FEATURES=${1:-observed}
DATA=${DATA:-../shared/data/conll2000}
THREADS=${THREADS:-0}
if [ ! -f "$DATA/train.txt" ]; then
  echo "race_crfsuite: $DATA/train.txt not found; skipping (the shared corpora are not here)"
  exit 0
fi
python3 -c "import pycrfsuite" 2>/dev/null || python3 -m pip install -q python-crfsuite
cargo build --release --quiet
BIN=target/release/piecewise-lab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "== piecewise-lab (ml, features=$FEATURES, threads=$THREADS)"
ours=$($BIN train --train "$DATA/train.txt" --test "$DATA/test.txt" --template assets/templates/chunking.tpl \
  --c2 1.0 --features "$FEATURES" --threads "$THREADS" --force --out "$TMP/ours" --summary-json 2>/dev/null | tail -1)
echo "$ours"
echo "== CRFsuite (python-crfsuite, lbfgs, features=$FEATURES, 1 thread)"
theirs=$(python3 benches/crfsuite_race.py --train "$DATA/train.txt" --test "$DATA/test.txt" \
  --template assets/templates/chunking.tpl --c2 1.0 --features "$FEATURES" --model "$TMP/crfsuite.model" --pred "$TMP/crfsuite.pred")
echo "$theirs"
# The scores go through a file: with their per-token record for paired tests they outgrow
# an environment variable (128 KB).
$BIN score --data "$TMP/crfsuite.pred" --json > "$TMP/scored.json"

OURS="$ours" THEIRS="$theirs" SCORED="$TMP/scored.json" python3 - <<'PY'
import json, os
o = json.loads(os.environ["OURS"]); t = json.loads(os.environ["THEIRS"]); s = json.load(open(os.environ["SCORED"]))
rows = [("piecewise-lab", o["iterations"], o["train_seconds"], o["token_accuracy"], o["segment_f1"]),
        ("CRFsuite", t["iterations"], t["train_seconds"], s["token_accuracy"], s["segments"]["f1"])]
print()
print(f"{'tool':<14} {'iterations':>10} {'train s':>9} {'accuracy %':>11} {'chunk F1':>9}")
for r in rows:
    print(f"{r[0]:<14} {r[1]:>10} {r[2]:>9.2f} {r[3]:>11.2f} {r[4]:>9.2f}")
print(f"time ratio piecewise-lab / CRFsuite: {o['train_seconds'] / t['train_seconds']:.3f}")
PY
