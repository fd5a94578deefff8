# Template for the first-order HMM data of `generate hmm-mixture --alpha 0` (the lessons'
# hmm-peaked sample): the observation in a window of ±1 and the always-on transition feature.
# The α-mixture's observation pair (hmm.tpl's U03) is left out: this data has no such
# dependence, and its 3,380 extra weights would only let the model overfit.
U00:%x[-1,0]
U01:%x[0,0]
U02:%x[1,0]
B
