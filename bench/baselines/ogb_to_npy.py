#!/usr/bin/env python3
"""Convert an OGB raw-layout node dataset (e.g. /work/shared/data/cora) to the baseline .npy format.

Reads raw/edge.csv.gz (src,dst rows, each undirected edge once), raw/node-feat.csv.gz,
raw/node-label.csv.gz and split/<split>/{train,valid,test}.csv.gz. Writes a symmetric in-edge CSR
without self loops. Only needs numpy.

  python3 ogb_to_npy.py /work/shared/data/cora /tmp/cora --normalize_features 1 \
      [--init_weights 16 2]   # also write random initial weights (hidden, layers)
"""
import argparse
import gzip
import json
import os

import numpy as np

from make_toy_workload import csr_from_edges, write_weights


def read_csv(path, dtype):
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--split", default=None, help="folder under split/ (default: the only one)")
    p.add_argument("--name", default=None)
    p.add_argument("--normalize_features", type=int, default=1)
    p.add_argument("--init_weights", type=int, nargs=2, metavar=("HIDDEN", "LAYERS"))
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    raw = os.path.join(a.src, "raw")
    feat = read_csv(os.path.join(raw, "node-feat.csv.gz"), np.float32)
    label = read_csv(os.path.join(raw, "node-label.csv.gz"), np.int64)[:, 0]
    n = feat.shape[0]
    edges = read_csv(os.path.join(raw, "edge.csv.gz"), np.int64)
    indptr, indices = csr_from_edges(n, edges[:, 0], edges[:, 1])

    split = a.split or sorted(os.listdir(os.path.join(a.src, "split")))[0]
    os.makedirs(a.out, exist_ok=True)
    for part in ("train", "valid", "test"):
        idx = read_csv(os.path.join(a.src, "split", split, f"{part}.csv.gz"), np.int64)[:, 0]
        np.save(os.path.join(a.out, f"{part}_idx.npy"), idx)
    np.save(os.path.join(a.out, "indptr.npy"), indptr)
    np.save(os.path.join(a.out, "indices.npy"), indices)
    np.save(os.path.join(a.out, "feat.npy"), np.ascontiguousarray(feat))
    np.save(os.path.join(a.out, "label.npy"), label)
    num_classes = int(label.max()) + 1
    name = a.name or os.path.basename(os.path.normpath(a.src))
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump({"name": name, "num_classes": num_classes,
                   "normalize_features": bool(a.normalize_features)}, f, indent=1)
    if a.init_weights:
        write_weights(a.out, feat.shape[1], a.init_weights[0], num_classes, a.init_weights[1],
                      seed=a.seed, bias_scale=0.0)
    print(f"wrote {a.out}: n={n} nnz={indices.size} feat={feat.shape[1]} classes={num_classes}")


if __name__ == "__main__":
    main()
