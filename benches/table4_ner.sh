#!/usr/bin/env bash
# 000 Table 4 on Dutch CoNLL-2002 (the paper's is English CoNLL-2003, which is not here): the
# linear-chain CRF with the built-in `ner` features (000 Table 1), the edge factorisation (000
# Fig. 1: one factor per edge, no unary factors but the first), σ² = 10, trained on ned.train
# by exact ML, pseudolikelihood, per-edge pseudolikelihood, piecewise and piecewise
# pseudolikelihood, tested on ned.testb. Paper (English): PW 91.2, PL 84.7, per-edge PL 89.7,
# exact 90.6. Prints the compare table with test F1 per entity type, seconds, and the McNemar /
# paired-t p-values of every pair.
# FACT=edge-pair FEATURES=observed gives every source state its own observation weights (the
# papers' edge factor Ψ_t(y_t, y_{t−1}, x)); the default is the edge factorisation, all features.
#   [FACT=edge-pair FEATURES=observed] bash benches/table4_ner.sh [--quick]     (--quick: 500 training, 300 test sentences)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/conll2002-ned}
if [ ! -f "$DATA/ned.train" ]; then
  echo "table4_ner: $DATA not found; skipping (the shared corpora are not here)"
  exit 0
fi
cargo build --release --quiet
B=target/release/piecewise-lab
FACT=${FACT:-edge}
FEATURES=${FEATURES:-all}
OUT=${OUT:-target/table4-ner-$FACT-$FEATURES}
TRAIN=$DATA/ned.train
TEST=$DATA/ned.testb
mkdir -p "$OUT"
if [ "${1:-}" = "--quick" ]; then
  OUT=$OUT-quick
  mkdir -p "$OUT"
  $B split --data "$DATA/ned.train" --head 500 --train-out "$OUT/train.conll" --test-out "$OUT/rest-train.conll"
  $B split --data "$DATA/ned.testb" --head 300 --train-out "$OUT/test.conll" --test-out "$OUT/rest-test.conll"
  TRAIN=$OUT/train.conll
  TEST=$OUT/test.conll
fi
$B compare --train "$TRAIN" --test "$TEST" --extractor ner --factorisation "$FACT" --features "$FEATURES" --sigma2 10 \
  --estimators ml,pl,pl-edge,pw,pwpl --force --out "$OUT/runs" 2>/dev/null
