#!/usr/bin/env python3
"""Scores test trees against gold trees with PYEVALB (pip install PYEVALB), one bracketed tree
per line in each file, and prints the totals as JSON: the independent reference for
piecewise-lab's EVALB scorer (tests/eval/evalb.rs). Sentences PYEVALB cannot score are counted."""
import json
import sys

from PYEVALB import parser, scorer


def main(gold_path, test_path):
    s = scorer.Scorer()
    tot = dict(sentences=0, errors=0, matched=0, gold=0, test=0, words=0, correct_tags=0)
    with open(gold_path, encoding="utf8") as g, open(test_path, encoding="utf8") as t:
        for gl, tl in zip(g, t):
            tot["sentences"] += 1
            try:
                r = s.score_trees(parser.create_from_bracket_string(gl),
                                  parser.create_from_bracket_string(tl))
            except Exception:  # words or lengths differ
                tot["errors"] += 1
                continue
            tot["matched"] += r.matched_brackets
            tot["gold"] += r.gold_brackets
            tot["test"] += r.test_brackets
            tot["words"] += r.words
            tot["correct_tags"] += r.correct_tags
    print(json.dumps(tot))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
