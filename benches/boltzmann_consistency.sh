#!/usr/bin/env bash
# Consistency on the Boltzmann machine of 004 §8.1: exact samples from θ0 (`generate boltzmann`'s
# default: for m = 5 the paper's (−1 ×5, +1 ×5), otherwise ±1 alternating in pair order), fitted
# by ml, pl and bp with the papers' prior σ² = 10 (without one, small samples that never see a
# pair fire together have no MLE); prints ‖θ̂ − θ0‖ (the runs' param_error) for each estimator as
# n grows: ml and pl are consistent, bp keeps its Bethe bias.
#   bash benches/boltzmann_consistency.sh [M_VALUES] [N_VALUES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
B=target/release/piecewise-lab
OUT=${OUT:-target/boltzmann-consistency}
mkdir -p "$OUT"
printf "%3s %7s %10s %10s %10s\n" m n ml pl bp
for m in ${1:-5 9}; do
  for n in ${2:-100 300 1000 3000 10000}; do
    f="$OUT/m$m-n$n.txt"
    $B generate boltzmann --m "$m" --n "$n" --seed "${3:-1}" --out "$f" 2>/dev/null
    row=""
    for est in ml pl bp; do
      $B train --model boltzmann --train "$f" --estimator "$est" --sigma2 10 --max-iter 500 \
        --force --out "$OUT/m$m-n$n-$est" >/dev/null 2>&1
      err=$(python3 -c "import json,sys; print('%.4f' % json.load(open(sys.argv[1]))['param_error'])" \
        "$OUT/m$m-n$n-$est/summary.json")
      row="$row $(printf %10s "$err")"
    done
    printf "%3s %7s%s\n" "$m" "$n" "$row"
  done
done
