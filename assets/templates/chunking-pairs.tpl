# The standard CRF++ chunking template (CRF++ example/chunking/template):
# 19 unigram templates over word (column 0) and POS (column 1) windows, and the
# always-on transition feature B.

# Unigram
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# Bigram
# Transition features conditioned on observations (feature × label pair): POS and word at t−1
# and t. Piecewise estimators need them (see README, "Estimators").
B
B10:%x[-1,1]
B11:%x[0,1]
B12:%x[-1,1]/%x[0,1]
B01:%x[-1,0]
B02:%x[0,0]
