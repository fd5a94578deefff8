#!/usr/bin/env bash
# Sum-product loopy BP on a 100×100 grid with 5 labels and Potts pairwise potentials, parallel
# (flooding) schedule, damping 0.5, 50 sweeps: piecewise-lab against pgmax (JAX on CPU) in one
# run, on the same potentials. Prints sweeps per second for both, the ratio, and the largest
# difference between the two tools' marginals (pgmax computes in float32).
#
#   bash benches/bp_pgmax.sh [--size 100] [--labels 5] [--sweeps 50] [--repeat 5]
#
# pgmax needs jax==0.4.30, jaxlib==0.4.30, pgmax==0.6.1 (newer jax breaks it); they are installed
# into a venv under target/ on first use. If they cannot be installed, the race is against a
# vectorised NumPy flooding BP in benches/bp_pgmax.py instead, and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
VENV=${PGMAX_VENV:-target/pgmax-venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import pgmax" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet "jax==0.4.30" "jaxlib==0.4.30" "pgmax==0.6.1" numpy \
    || "$VENV/bin/pip" install --quiet numpy \
    || echo "could not install pgmax or numpy into $VENV" >&2
fi
exec "$VENV/bin/python" benches/bp_pgmax.py --bin target/release/piecewise-lab "$@"
