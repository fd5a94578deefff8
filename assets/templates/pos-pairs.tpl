# Part-of-speech tagging (columns after `piecewise-lab augment`: 0 word, 1 lowercase, 2 shape,
# 3–5 prefixes of length 1–3, 6–8 suffixes of length 1–3): word identity in a ±2 window, affixes
# and shape of the current word, neighbouring shapes.
U00:%x[0,1]
U01:%x[-1,1]
U02:%x[1,1]
U03:%x[-2,1]
U04:%x[2,1]
U05:%x[0,0]
U10:%x[0,2]
U11:%x[-1,2]
U12:%x[1,2]
U20:%x[0,4]
U21:%x[0,5]
U22:%x[0,7]
U23:%x[0,8]
U24:%x[0,6]
# Transition features conditioned on observations (feature × label pair).
B
B01:%x[0,8]
B02:%x[-1,8]
B03:%x[0,1]
