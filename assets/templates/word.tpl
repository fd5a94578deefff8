# The current word alone and the always-on transition feature (001-table1-ner's word-only
# rows): observations weak enough that the next state leans on the previous one, where label
# bias has room to cost the MEMM and 001's CRF-PT is meant to win it back. Lesson 5's rib/rob
# data uses it too: with no look-ahead, the MEMM cannot see a word's middle letter at its first.
U00:%x[0,0]
B
