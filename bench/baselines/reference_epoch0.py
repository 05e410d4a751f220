#!/usr/bin/env python3
"""Framework-free float64 reference for the epoch-0 loss (numpy only), straight from the README's
model definitions; used to check run_baseline.py (and FlexGraph) against the spec.

  python reference_epoch0.py --data DIR --model gcn|sage --hidden 16 --layers 2
Requires DIR/weights/ (the initial weights).
"""
import argparse
import json
import os

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--model", choices=["gcn", "sage"], required=True)
    p.add_argument("--layers", type=int, default=2)
    a = p.parse_args()
    d = a.data
    meta = json.load(open(os.path.join(d, "meta.json")))
    indptr = np.load(os.path.join(d, "indptr.npy")).astype(np.int64)
    indices = np.load(os.path.join(d, "indices.npy")).astype(np.int64)
    n = indptr.size - 1
    deg = np.diff(indptr)
    dst = np.repeat(np.arange(n), deg)
    x = np.load(os.path.join(d, "feat.npy")).astype(np.float64)
    if meta.get("normalize_features"):
        s = x.sum(1, keepdims=True)
        x = np.divide(x, s, out=np.zeros_like(x), where=s != 0)
    C = meta["num_classes"]
    lp = os.path.join(d, "label.npy")
    y = np.load(lp) if os.path.exists(lp) else np.arange(n) % C
    tr = np.load(os.path.join(d, "train_idx.npy"))
    W = lambda nm: np.load(os.path.join(d, "weights", nm)).astype(np.float64)

    def spmm_sum(h):  # out[v] = sum_{u in N(v)} h[u]
        out = np.zeros_like(h)
        np.add.at(out, dst, h[indices])
        return out

    h = x
    for l in range(a.layers):
        if a.model == "gcn":
            dinv = 1.0 / np.sqrt(deg + 1.0)  # degree with the self loop
            hw = h @ W(f"gcn_l{l}_weight.npy")
            h = dinv[:, None] * (spmm_sum(dinv[:, None] * hw) + dinv[:, None] * hw) + W(f"gcn_l{l}_bias.npy")
        else:
            mean = spmm_sum(h) / np.maximum(deg, 1)[:, None]
            h = h @ W(f"sage_l{l}_self.npy") + mean @ W(f"sage_l{l}_neigh.npy") + W(f"sage_l{l}_bias.npy")
        if l < a.layers - 1:
            h = np.maximum(h, 0)
    z = h[tr] - h[tr].max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    print(repr(float(-logp[np.arange(tr.size), y[tr]].mean())))


if __name__ == "__main__":
    main()
