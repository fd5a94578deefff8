#!/usr/bin/env python3
"""A small feature extractor writing CRFsuite's data format, as anyone with a Python
pipeline would feed Piecewise Lab: `LABEL<TAB>attr[:value]<TAB>...`, a blank line between
sequences, `\\:` for a colon inside a name.

It reads a CoNLL file (`word POS label`, blank line between sentences) and writes, per token,
the expansions of this CRF++ template under the names CRF++ gives them, so that training on its
output and on the CoNLL file with the template gives the same model:

    U00:%x[-1,0]
    U01:%x[0,0]
    U02:%x[1,0]
    U03:%x[0,1]
    U04:%x[-1,1]/%x[0,1]
    B

plus, with --real, one real-valued attribute `len` (the word's length / 10), which a template
cannot express.

usage: crfsuite_features.py IN.conll OUT.crfsuite [--real]
"""
import sys


def sentences(path):
    sent = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                if sent:
                    yield sent
                sent = []
                continue
            if line.startswith("-DOCSTART-"):
                continue
            sent.append(line.split())
    if sent:
        yield sent


def col(sent, t, c):
    """CRF++'s %x[row,col] with its out-of-range names _B-1, _B+1, ..."""
    if t < 0:
        return f"_B{t}"
    if t >= len(sent):
        return f"_B+{t - len(sent) + 1}"
    return sent[t][c]


def esc(name):
    return name.replace("\\", "\\\\").replace(":", "\\:")


def main():
    src, dst = sys.argv[1], sys.argv[2]
    real = "--real" in sys.argv[3:]
    with open(dst, "w", encoding="utf-8") as out:
        for sent in sentences(src):
            for t, tok in enumerate(sent):
                attrs = [
                    f"U00:{col(sent, t - 1, 0)}",
                    f"U01:{col(sent, t, 0)}",
                    f"U02:{col(sent, t + 1, 0)}",
                    f"U03:{col(sent, t, 1)}",
                    f"U04:{col(sent, t - 1, 1)}/{col(sent, t, 1)}",
                ]
                fields = [tok[-1]] + [esc(a) for a in attrs]
                if real:
                    fields.append(f"len:{len(tok[0]) / 10}")
                out.write("\t".join(fields) + "\n")
            out.write("\n")


if __name__ == "__main__":
    main()
