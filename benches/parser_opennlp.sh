#!/usr/bin/env bash
# The outside reference for 001-table2 (issue 23): Apache OpenNLP's maximum-entropy parser
# (Ratnaparkhi's locally normalised shift-reduce-style parser, the prior work 001 contrasts
# with) trained on the same 3,396 training trees (files wsj_0001–0159, normalised as ours:
# -NONE- dropped, function tags stripped, TOP root), run on the 142 test sentences ≤ 15 words,
# and scored by our EVALB scorer (COLLINS.prm) against the same gold trees.
#
# OpenNLP comes from Debian's libapache-opennlp-java (`apt-get download` + `dpkg -x`, cached in
# target/opennlp); Java 17 must be on the PATH. The head rules are Collins' (1999, App. A), in
# OpenNLP's format ("COUNT LABEL LEFT-TO-RIGHT TAGS…"). OpenNLP's default training: maxent,
# 100 iterations, cutoff 5.
#
#   bash benches/parser_opennlp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ZIP=${ZIP:-../shared/data/ptb-wsj-sample/treebank.zip}
if [ ! -f "$ZIP" ]; then
  echo "parser_opennlp: $ZIP not found; skipping (the shared corpora are not here)"
  exit 0
fi
if ! command -v java > /dev/null; then
  echo "parser_opennlp: java not found; skipping"
  exit 0
fi
JAR=target/opennlp/usr/share/java/opennlp-tools.jar
if [ ! -f "$JAR" ]; then
  mkdir -p target/opennlp
  (cd target/opennlp && apt-get download libapache-opennlp-java > /dev/null 2>&1 &&
    dpkg -x libapache-opennlp-java_*.deb .) || {
    echo "parser_opennlp: could not fetch libapache-opennlp-java; skipping"
    exit 0
  }
fi
cargo build --release --quiet
BIN=target/release/piecewise-lab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$BIN treebank --data "$ZIP" --out "$TMP"
python3 - "$TMP/head_rules" <<'PY'
import sys
# Collins (1999), Appendix A: label, search from the left (1) or the right (0), priority list.
rules = [
    ("ADJP", 1, "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB"),
    ("ADVP", 0, "RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN"),
    ("CONJP", 0, "CC RB IN"),
    ("FRAG", 0, ""),
    ("INTJ", 1, ""),
    ("LST", 0, "LS :"),
    ("NAC", 1, "NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW"),
    ("NP", 0, "NN NNP NNPS NNS NX POS JJR NP $ ADJP PRN CD JJ JJS RB QP"),
    ("NX", 0, "NN NNS NNP NNPS NX"),
    ("PP", 0, "IN TO VBG VBN RP FW"),
    ("PRN", 1, ""),
    ("PRT", 0, "RP"),
    ("QP", 1, "$ IN NNS NN JJ RB DT CD NCD QP JJR JJS"),
    ("RRC", 0, "VP NP ADVP ADJP PP"),
    ("S", 1, "TO IN VP S SBAR ADJP UCP NP"),
    ("SBAR", 1, "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG"),
    ("SBARQ", 1, "SQ S SINV SBARQ FRAG"),
    ("SINV", 1, "VBZ VBD VBP VB MD VP S SINV ADJP NP"),
    ("SQ", 1, "VBZ VBD VBP VB MD VP SQ"),
    ("UCP", 0, ""),
    ("VP", 1, "TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP"),
    ("WHADJP", 1, "CC WRB JJ ADJP"),
    ("WHADVP", 0, "CC WRB"),
    ("WHNP", 1, "WDT WP WP$ WHADJP WHPP WHNP"),
    ("WHPP", 0, "IN TO FW"),
    ("X", 0, ""),
    ("TOP", 1, ""),
]
with open(sys.argv[1], "w") as f:
    for label, left, tags in rules:
        t = tags.split()
        f.write(" ".join([str(len(t) + 2), label, str(left)] + t) + "\n")
PY
CLI="java -Xmx4g -cp $JAR opennlp.tools.cmdline.CLI"
start=$(date +%s.%N)
$CLI ParserTrainer -headRules "$TMP/head_rules" -lang en -model "$TMP/parser.bin" \
  -data "$TMP/train.mrg" -encoding UTF-8 > "$TMP/train.log" 2>&1 || {
  tail -20 "$TMP/train.log"
  exit 1
}
trained=$(date +%s.%N)
$CLI Parser "$TMP/parser.bin" < "$TMP/test.txt" > "$TMP/parsed.mrg" 2> "$TMP/parse.log"
parsed=$(date +%s.%N)
python3 -c "import sys; s, t, p = map(float, sys.argv[1:]); print(f'OpenNLP: trained in {t - s:.1f} s, parsed in {p - t:.2f} s')" "$start" "$trained" "$parsed"
$BIN evalb --gold "$TMP/test.mrg" --test "$TMP/parsed.mrg"
