#!/usr/bin/env bash
# Memory: the peak resident memory of setting up and running one iteration of exact-ML training,
# piecewise-lab against CRFsuite (python-crfsuite, reading its data streamed so the process's
# memory is CRFsuite's own), on CoNLL-2000's training set repeated K times, with the CRF++
# chunking template and the same feature set. Prints each peak, the bytes per token and the ratio.
#
#   bash benches/memory_crfsuite.sh [K] [observed|all]    # default K = 10, observed
#
# Environment: DATA (default ../shared/data/conll2000), THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
K=${1:-10}
FEATURES=${2:-observed}
DATA=${DATA:-../shared/data/conll2000}
THREADS=${THREADS:-2}
if [ ! -f "$DATA/train.txt" ]; then
  echo "memory_crfsuite: $DATA/train.txt not found; skipping (the shared corpora are not here)"
  exit 0
fi
[ -x /usr/bin/time ] || { echo "memory_crfsuite: needs /usr/bin/time (GNU time)"; exit 1; }
python3 -c "import pycrfsuite" 2>/dev/null || python3 -m pip install -q python-crfsuite
cargo build --release --quiet
BIN=target/release/piecewise-lab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for _ in $(seq "$K"); do cat "$DATA/train.txt"; done > "$TMP/train.txt"
TOKENS=$(grep -c . "$TMP/train.txt")

peak() { grep "Maximum resident" "$1" | awk '{print $NF}'; }
echo "== piecewise-lab (ml, features=$FEATURES, threads=$THREADS), CoNLL-2000 x$K: $TOKENS tokens"
/usr/bin/time -v -o "$TMP/ours.time" $BIN train --train "$TMP/train.txt" \
  --template assets/templates/chunking.tpl --c2 1.0 --features "$FEATURES" --threads "$THREADS" \
  --max-iter 1 --force --out "$TMP/ours" > /dev/null 2>&1
echo "== CRFsuite (python-crfsuite, lbfgs, features=$FEATURES, one iteration)"
/usr/bin/time -v -o "$TMP/theirs.time" python3 benches/crfsuite_race.py --train "$TMP/train.txt" \
  --test "$DATA/test.txt" --template assets/templates/chunking.tpl --c2 1.0 --features "$FEATURES" \
  --max-iter 1 --model "$TMP/crfsuite.model" --pred "$TMP/crfsuite.pred" > /dev/null

OURS=$(peak "$TMP/ours.time") THEIRS=$(peak "$TMP/theirs.time") TOKENS=$TOKENS python3 - <<'PY'
import os
o, t, n = int(os.environ["OURS"]) * 1024, int(os.environ["THEIRS"]) * 1024, int(os.environ["TOKENS"])
print()
print(f"{'tool':<14} {'peak MB':>9} {'bytes / token':>14}")
for name, b in (("piecewise-lab", o), ("CRFsuite", t)):
    print(f"{name:<14} {b / 1e6:>9.0f} {b / n:>14.0f}")
print(f"memory ratio piecewise-lab / CRFsuite: {o / t:.2f}")
PY
