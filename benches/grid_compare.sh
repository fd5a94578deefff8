#!/usr/bin/env bash
# Grid segmentation (generated: K = 5 classes, Potts label fields, noisy one-hot pixels), three
# seeds, every estimator with the same features and prior (σ² = 10, the piecewise papers'
# setting): test pixel accuracy and training seconds from `compare`.
#   - 16×16 images (40 train / 40 test): bp, pl, pw, pwpl (exact ML cannot enumerate 5^256 states);
#   - 2×4 images (200 train / 200 test): the same and exact ml (5^8 states, enumerated).
#   bash benches/grid_compare.sh [SEEDS]      (default "1 2 3")
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
B=target/release/piecewise-lab
OUT=${OUT:-target/grid-compare}
mkdir -p "$OUT"
for seed in ${1:-1 2 3}; do
  for shape in "16 16 40 bp,pl,pw,pwpl" "2 4 200 ml,bp,pl,pw,pwpl"; do
    set -- $shape
    d="$OUT/h$1w$2-s$seed"
    $B generate grid --classes 5 --height "$1" --width "$2" --images "$3" --test-images "$3" \
      --field potts --beta 1.3 --noise 1.0 --seed "$seed" \
      --out "$d-train.grid" --test-out "$d-test.grid" 2>/dev/null
    echo "== $1×$2 images, seed $seed"
    $B compare --model grid --train "$d-train.grid" --test "$d-test.grid" --estimators "$4" \
      --sigma2 10 --force --out "$d-runs" 2>/dev/null
  done
done
