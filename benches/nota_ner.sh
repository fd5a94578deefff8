#!/usr/bin/env bash
# 001 Table 1 (named entities) on Dutch CoNLL-2002: train on ned.train, test on ned.testb, the
# built-in `ner` features (000 Table 1 with the US Census name lists), σ² = 10 for every
# estimator (the piecewise papers' setting). Rows: MEMM (local decoding), CRF (ml, Viterbi),
# CRF-PT (nota, exhaustive NOTA terms, local decoding) and CRF-PT with per-state scales and
# global decoding (001's NER setting). Training F1 is scored too (Table 1 reports it). Ends
# with `compare --runs`: test F1, seconds, and McNemar / paired-t p-values for every pair.
# FACT=edge-pair FEATURES=observed gives every source state its own observation weights (the
# papers' edge factor Ψ_t(y_t, y_{t−1}, x)); the default is the edge factorisation, all features.
#   [FACT=edge-pair FEATURES=observed] bash benches/nota_ner.sh [--quick]     (--quick: 500 training, 300 test sentences)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/conll2002-ned}
if [ ! -f "$DATA/ned.train" ]; then
  echo "nota_ner: $DATA not found; skipping (the shared corpora are not here)"
  exit 0
fi
cargo build --release --quiet
B=target/release/piecewise-lab
FACT=${FACT:-edge}
FEATURES=${FEATURES:-all}
OUT=${OUT:-target/nota-ner-$FACT-$FEATURES}
TRAIN=$DATA/ned.train
TEST=$DATA/ned.testb
if [ "${1:-}" = "--quick" ]; then
  OUT=$OUT-quick
  mkdir -p "$OUT"
  $B split --data "$DATA/ned.train" --head 500 --train-out "$OUT/train.conll" --test-out "$OUT/rest-train.conll"
  $B split --data "$DATA/ned.testb" --head 300 --train-out "$OUT/test.conll" --test-out "$OUT/rest-test.conll"
  TRAIN=$OUT/train.conll
  TEST=$OUT/test.conll
fi
mkdir -p "$OUT"
common=(--train "$TRAIN" --test "$TEST" --extractor ner --factorisation "$FACT" --features "$FEATURES" --sigma2 10 --eval-train --summary-json)
run() {  # name, then options
  local name=$1; shift
  rm -rf "$OUT/$name"
  $B train "${common[@]}" "$@" --force --out "$OUT/$name" 2>/dev/null | tail -1 > "$OUT/$name.json"
  python3 - "$OUT/$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
f1 = lambda m: m["segments"]["f1"] if m else float("nan")
print(f"{sys.argv[1].split('/')[-1]:<14} train F1 {f1(s.get('train')):6.2f}  test F1 {f1(s['test']):6.2f}"
      f"  {s['train_seconds']:8.1f} s  {s['iterations']:4d} iterations  NOTA terms {s.get('nota_terms')}"
      f"  decoded by {list(s['test']['decoders'])}")
PY
}
run memm --estimator memm
run crf --estimator ml
run crf-pt --estimator nota --nota exhaustive
run crf-pt-scaled --estimator nota --nota exhaustive --per-state-scaling --decode global
$B compare --runs "$OUT/memm,$OUT/crf,$OUT/crf-pt,$OUT/crf-pt-scaled" | sed -n '/significance/,$p'
