#!/usr/bin/env python3
"""Writes lut/testdata/numpy-signs.json: the golden vectors of lut.NumpySigns.

Each vector is np.random.default_rng(seed).choice([-1, 1], width), the
reference pipeline's Hadamard signs (docs/ane.md §3.3), for every seed and
width below, drawn by a fresh generator per vector. Also recorded per seed,
to pin down the steps lut.NumpySigns documents: the four words of
SeedSequence(seed).generate_state(4, np.uint64) and the first outputs of
PCG64(seed).random_raw().

Encoding of a vector: hex of ceil(width/8) bytes, sign j in byte j//8 at bit
j%8 (least significant first), a set bit meaning +1 (numpy's
packbits(..., bitorder="little") of sign == 1).

Usage, from the repository root (needs numpy; Debian's /usr/bin/python3 has it):

    /usr/bin/python3 scripts/numpy-signs-golden.py
"""
import json
import os

import numpy as np

SEEDS = [0, 1, 1000, 1007, 2000, 2023, 123456789, 2**40 + 5]
WIDTHS = [1, 7, 64, 256, 768, 1024, 2048, 5120, 17408]
RAW = 4


def main():
    seeds = []
    for seed in SEEDS:
        state = np.random.SeedSequence(seed).generate_state(4, np.uint64)
        raw = np.random.PCG64(seed).random_raw(RAW)
        signs = {}
        for w in WIDTHS:
            v = np.random.default_rng(seed).choice([-1, 1], w)
            assert set(np.unique(v)) <= {-1, 1}
            signs[str(w)] = np.packbits(v == 1, bitorder="little").tobytes().hex()
        seeds.append({
            "seed": seed,
            "state": ["%016x" % int(x) for x in state],
            "raw": ["%016x" % int(x) for x in raw],
            "signs": signs,
        })
    doc = {
        "about": "np.random.default_rng(seed).choice([-1, 1], width); made by scripts/numpy-signs-golden.py",
        "numpy": np.__version__,
        "encoding": "hex bytes, sign j at byte j//8 bit j%8 (LSB first), set = +1",
        "seeds": seeds,
    }
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "lut", "testdata", "numpy-signs.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
