# Template for one observation column (the synthetic hmm-mixture data of `generate`):
# the observation in a window of ±1, the observation pair (x[t-1], x[t]) that the
# α = 1 emission model depends on, and the always-on transition feature.
U00:%x[-1,0]
U01:%x[0,0]
U02:%x[1,0]
U03:%x[-1,0]/%x[0,0]
B
