# The current word alone and the always-on transition feature (001-table1-ner's word-only
# rows): observations weak enough that the next state leans on the previous one, where label
# bias has room to cost the MEMM and 001's CRF-PT is meant to win it back.
U00:%x[0,0]
B
