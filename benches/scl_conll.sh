#!/usr/bin/env bash
# 004 §8.3 on CoNLL-2000: SCL frontiers for the Boltzmann chain and the CRF (Figs. 13, 19),
# the β heuristic against the sweep's best β (Figs. 14, 20), and the win–win check of §8.4.
#
#   bash benches/scl_conll.sh [--quick]        # results in target/scl-conll (or $OUT)
#   PIECEWISE_WORKSPACE=target/scl-conll piecewise-lab gui   # the Frontier pane shows them
#
# Protocol (004 §8.3): 100 training sentences drawn without replacement (seed 0) from the
# CoNLL-2000 training set, the full test set; policies 1:(1−β)*PL1 + λ:β*HIGH with HIGH = FL or
# PL2, a 5 × 5 grid over λ and β; Z drawn once per sentence (independent selection).
# The prior is the paper's, not tuned on test data: σ² = 2500 for the Boltzmann chain (the
# middle column of Fig. 9) and σ² = 1000 for the CRF (the middle column of Fig. 15).
# The best β per λ is the one with the lowest *train* perplexity, as in Fig. 14's caption.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=../shared/data/conll2000
if [ ! -f "$DATA/train.txt" ]; then
  echo "scl_conll: $DATA not found; skipping (needs ../shared/data/conll2000)"
  exit 0
fi
OUT=${OUT:-target/scl-conll}
LAMBDAS=0.1,0.25,0.5,0.75,1
BETAS=0.1,0.3,0.5,0.7,0.9
N=100
if [ "${1:-}" = "--quick" ]; then
  OUT=${OUT}-quick; LAMBDAS=0.25,1; BETAS=0.3,0.7; N=20
fi
cargo build --release --quiet
BIN=target/release/piecewise-lab
mkdir -p "$OUT/sweeps" "$OUT/runs"
common=(--train "$DATA/train.txt" --test "$DATA/test.txt" --train-sample "$N" --seed 0)
declare -A SIGMA=([boltzmann-chain]=2500 [chain]=1000)
for model in boltzmann-chain chain; do
  s2=${SIGMA[$model]}
  for high in fl pl2; do
    name="$model-pl1-$high"
    echo "== sweep $name (σ² = $s2)"
    $BIN sweep --model "$model" "${common[@]}" --sigma2 "$s2" --families "pl1/$high" \
      --lambdas "$LAMBDAS" --betas "$BETAS" --jobs 2 --out "$OUT/sweeps/$name" | tail -1
    # The β heuristic (--beta auto, Algorithm 1) at every λ of the grid.
    for l in ${LAMBDAS//,/ }; do
      d="$OUT/runs/$name-heuristic-l$l"
      [ -f "$d/summary.json" ] && grep -q '"finished"' "$d/summary.json" && continue
      $BIN train --model "$model" "${common[@]}" --sigma2 "$s2" --estimator scl \
        --policy "1:0.5*pl1 + $l:0.5*$high" --beta auto --eval-train --force --out "$d" >"$d.log" 2>&1 ||
        { echo "failed: $d"; tail -3 "$d.log"; }
    done
  done
  # Full likelihood alone, the reference of the win–win check.
  d="$OUT/runs/$model-fl"
  [ -f "$d/summary.json" ] && grep -q '"finished"' "$d/summary.json" ||
    $BIN train --model "$model" "${common[@]}" --sigma2 "$s2" --estimator scl \
      --policy "1:1*fl" --eval-train --force --out "$d" >"$d.log" 2>&1 ||
      { echo "failed: $d"; tail -3 "$d.log"; }
done
python3 benches/scl_conll_report.py "$OUT" | tee "$OUT/report.md"
