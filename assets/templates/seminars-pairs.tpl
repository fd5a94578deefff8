# Seminar announcements (columns: 0 word, 1 lowercase, 2 shape, 3 time class; see
# src/data/seminars.rs). Word identity, capitalisation and digit shapes and the hand-written time
# patterns in windows of ±2, in the spirit of 000 Table 3.
U00:%x[0,1]
U01:%x[-1,1]
U02:%x[1,1]
U03:%x[-2,1]
U04:%x[2,1]
U05:%x[-1,1]/%x[0,1]
U06:%x[0,1]/%x[1,1]
U07:%x[0,0]
U10:%x[0,2]
U11:%x[-1,2]
U12:%x[1,2]
U13:%x[-1,2]/%x[0,2]/%x[1,2]
U20:%x[0,3]
U21:%x[-1,3]
U22:%x[1,3]
U23:%x[-2,3]
U24:%x[2,3]
U25:%x[-1,3]/%x[0,3]/%x[1,3]
# Transition features conditioned on observations (feature × label pair), as in the edge
# factors of the paper's chain experiments: each piece can then predict both of its labels.
B
B01:%x[0,1]
B02:%x[-1,1]
B03:%x[0,2]
B04:%x[0,3]
B05:%x[-1,3]
