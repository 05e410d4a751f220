#!/usr/bin/env python3
"""Write a small random workload in the FlexGraph baseline input format (see README.md).

Random symmetric graph without self loops (a few isolated vertices included), random features,
labels, splits, and random initial weights for GCN and GraphSAGE-mean. Only needs numpy.

  python3 make_toy_workload.py --out /tmp/toy --n 1000 --hidden 16 --layers 2
"""
import argparse
import json
import os

import numpy as np


def csr_from_edges(n, src, dst):
    """Symmetrise, drop self loops and duplicates; CSR of in-edges (row = destination)."""
    s = np.concatenate([src, dst]).astype(np.int64)
    d = np.concatenate([dst, src]).astype(np.int64)
    keep = s != d
    s, d = s[keep], d[keep]
    key = np.unique(d * n + s)  # sorted by destination, then source
    d, s = key // n, key % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(d, minlength=n), out=indptr[1:])
    return indptr, s.astype(np.int32)


def glorot(rng, fan_in, fan_out):
    a = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-a, a, size=(fan_in, fan_out)).astype(np.float32)


def write_weights(out_dir, in_dim, hidden, num_classes, layers, seed=0, bias_scale=0.1):
    """Write weights/gcn_l{l}_*.npy and weights/sage_l{l}_*.npy for an L-layer model."""
    rng = np.random.default_rng(seed)
    wdir = os.path.join(out_dir, "weights")
    os.makedirs(wdir, exist_ok=True)
    dims = [in_dim] + [hidden] * (layers - 1) + [num_classes]
    for l in range(layers):
        i, o = dims[l], dims[l + 1]
        np.save(os.path.join(wdir, f"gcn_l{l}_weight.npy"), glorot(rng, i, o))
        np.save(os.path.join(wdir, f"gcn_l{l}_bias.npy"),
                (bias_scale * rng.standard_normal(o)).astype(np.float32))
        np.save(os.path.join(wdir, f"sage_l{l}_self.npy"), glorot(rng, i, o))
        np.save(os.path.join(wdir, f"sage_l{l}_neigh.npy"), glorot(rng, i, o))
        np.save(os.path.join(wdir, f"sage_l{l}_bias.npy"),
                (bias_scale * rng.standard_normal(o)).astype(np.float32))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--avg_degree", type=float, default=8.0)
    p.add_argument("--isolated", type=int, default=10, help="vertices left without edges")
    p.add_argument("--feat", type=int, default=32)
    p.add_argument("--classes", type=int, default=5)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--no_labels", action="store_true", help="omit label.npy (labels = i %% C)")
    p.add_argument("--no_weights", action="store_true")
    p.add_argument("--normalize_features", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    rng = np.random.default_rng(a.seed)
    n = a.n
    m = int(n * a.avg_degree / 2)
    connected = n - a.isolated
    src = rng.integers(0, connected, size=m)
    dst = rng.integers(0, connected, size=m)
    indptr, indices = csr_from_edges(n, src, dst)

    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "indptr.npy"), indptr)
    np.save(os.path.join(a.out, "indices.npy"), indices)
    # sparse non-negative features (some all-zero rows) so row normalisation is exercised
    feat = rng.random((n, a.feat), dtype=np.float32) * (rng.random((n, a.feat)) < 0.3)
    np.save(os.path.join(a.out, "feat.npy"), feat.astype(np.float32))
    if not a.no_labels:
        np.save(os.path.join(a.out, "label.npy"), rng.integers(0, a.classes, size=n).astype(np.int64))
    perm = rng.permutation(n).astype(np.int64)
    ntr, nva = n // 5, n // 5
    np.save(os.path.join(a.out, "train_idx.npy"), np.sort(perm[:ntr]))
    np.save(os.path.join(a.out, "valid_idx.npy"), np.sort(perm[ntr:ntr + nva]))
    np.save(os.path.join(a.out, "test_idx.npy"), np.sort(perm[ntr + nva:]))
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump({"name": "toy", "num_classes": a.classes,
                   "normalize_features": bool(a.normalize_features)}, f, indent=1)
    if not a.no_weights:
        write_weights(a.out, a.feat, a.hidden, a.classes, a.layers, seed=a.seed + 1)
    print(f"wrote {a.out}: n={n} nnz={indices.size} feat={a.feat} classes={a.classes}")


if __name__ == "__main__":
    main()
