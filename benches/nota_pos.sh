#!/usr/bin/env bash
# 001 Table 1 (POS) in spirit on the Penn Treebank sample: 1,154 random sentences for training
# (001's count; seeded), the other 2,760 for test; 45 tags; word, affix and shape features
# (`augment` + assets/templates/pos.tpl); σ² = 10 for every estimator. Rows: MEMM (local
# decoding), CRF (ml, Viterbi) and CRF-PT with 003's error-driven NOTA terms (after 20
# iterations, wrong states with marginal > 0.2; local decoding, as 001 did for POS). Token
# accuracy, seconds, and the paired t-test on wrong tags per sentence (001's test for POS).
#   bash benches/nota_pos.sh [--quick]      (--quick: 300 training sentences, 500 test)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/ptb-wsj-sample/treebank.tsv}
if [ ! -f "$DATA" ]; then
  echo "nota_pos: $DATA not found; skipping (the shared corpora are not here)"
  exit 0
fi
cargo build --release --quiet
B=target/release/piecewise-lab
OUT=${OUT:-target/nota-pos}
N=1154
SEED=${SEED:-1}
if [ "${1:-}" = "--quick" ]; then OUT=$OUT-quick; N=300; fi
mkdir -p "$OUT"
$B augment --data "$DATA" --out "$OUT/all.conll"
total=$(awk 'BEGIN{n=0} /^[[:space:]]*$/{if(p)n++; p=0; next} {p=1} END{if(p)n++; print n}' "$OUT/all.conll")
frac=$(python3 -c "print($N / $total)")
$B split --data "$OUT/all.conll" --seed "$SEED" --fraction "$frac" --train-out "$OUT/train.conll" --test-out "$OUT/test.conll"
if [ "${1:-}" = "--quick" ]; then
  $B split --data "$OUT/test.conll" --head 500 --train-out "$OUT/test-500.conll" --test-out "$OUT/rest.conll"
  mv "$OUT/test-500.conll" "$OUT/test.conll"
fi
common=(--train "$OUT/train.conll" --test "$OUT/test.conll" --template assets/templates/pos.tpl --factorisation edge --sigma2 10 --eval-train --summary-json)
run() {
  local name=$1; shift
  rm -rf "${OUT:?}/$name"
  $B train "${common[@]}" "$@" --force --out "$OUT/$name" 2>/dev/null | tail -1 > "$OUT/$name.json"
  python3 - "$OUT/$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
print(f"{sys.argv[1].split('/')[-1]:<8} train acc {s['train']['token_accuracy']:6.2f}  test acc {s['test']['token_accuracy']:6.2f}"
      f"  {s['train_seconds']:7.1f} s  {s['iterations']:4d} iterations  NOTA choices {s.get('nota_choices')}"
      f"  decoded by {list(s['test']['decoders'])}")
PY
}
run memm --estimator memm
run crf --estimator ml
run crf-pt --estimator nota --nota error-driven --nota-after 20 --nota-threshold 0.2
$B compare --runs "$OUT/memm,$OUT/crf,$OUT/crf-pt" | sed -n '/significance/,$p'
