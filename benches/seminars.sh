#!/usr/bin/env bash
# Seminar announcements, linear-chain CRF: per-field token F1 for ml, pl, pl-edge, pw and pwpl on
# the given split (files 0–300 train, 301–484 test) and as mean ± sd over five random 50/50
# splits of all 485 announcements (seeds 1–5), as in 000 Tables 6 and 9.
#
#   bash benches/seminars.sh [extra train options, e.g. --factorisation edge]
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data/seminars}
if [ ! -d "$DATA/train" ]; then
  echo "seminars: $DATA not found; skipping (the shared corpora are not here)"
  exit 0
fi
cargo build --release --quiet
BIN=target/release/piecewise-lab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EST=${ESTIMATORS:-ml,pl,pl-edge,pw,pwpl}
common=(--template ${TEMPLATE:-assets/templates/seminars.tpl} --c2 ${C2:-1.0} --estimators "$EST" "$@")

echo "== given split (train 0–300, test 301–484)"
$BIN compare --train "$DATA/train" --test "$DATA/test" "${common[@]}" --force --out "$TMP/given" --json > "$TMP/given.json" 2>/dev/null
for seed in 1 2 3 4 5; do
  $BIN split --data "$DATA/train" --data "$DATA/test" --seed $seed --fraction 0.5 \
    --train-out "$TMP/train-$seed.conll" --test-out "$TMP/test-$seed.conll" 2>/dev/null
  $BIN compare --train "$TMP/train-$seed.conll" --test "$TMP/test-$seed.conll" "${common[@]}" \
    --out "$TMP/split-$seed" --json > "$TMP/split-$seed.json" 2>/dev/null
  echo "   split $seed done"
done

TMP="$TMP" python3 - <<'PY'
import json, os, statistics as st
tmp = os.environ["TMP"]
fields = ["stime", "etime", "location", "speaker"]
def table(rows, title):
    print(title)
    print(f"{'estimator':<14}" + "".join(f"{f:>18}" for f in fields) + f"{'accuracy':>18}{'seconds':>12}")
    for name, cols, acc, secs in rows:
        print(f"{name:<14}" + "".join(f"{c:>18}" for c in cols) + f"{acc:>18}{secs:>12}")
given = json.load(open(f"{tmp}/given.json"))["runs"]
table([(r["estimator"], [f"{r['field_f1'][f]:.2f}" for f in fields], f"{r['token_accuracy']:.2f}", f"{r['train_seconds']:.1f}") for r in given],
      "\nper-field token F1, given split")
splits = [json.load(open(f"{tmp}/split-{s}.json"))["runs"] for s in range(1, 6)]
rows = []
for i, r in enumerate(splits[0]):
    per = [[sp[i]["field_f1"][f] for sp in splits] for f in fields]
    acc = [sp[i]["token_accuracy"] for sp in splits]
    secs = [sp[i]["train_seconds"] for sp in splits]
    rows.append((r["estimator"], [f"{st.mean(v):.2f} ± {st.stdev(v):.2f}" for v in per],
                 f"{st.mean(acc):.2f} ± {st.stdev(acc):.2f}", f"{st.mean(secs):.1f}"))
table(rows, "\nper-field token F1, mean ± sd over 5 random 50/50 splits (seeds 1–5)")
PY
