#!/usr/bin/env python3
"""Full-batch PinSage node classification in DGL, on a FlexGraph .npy workload — the model of
FlexGraph's udf_examples/pinsage (homogeneous graph, raw features):

  NeighborSelection: dgl.sampling.RandomWalkNeighborSampler (the homogeneous form of
                     PinSAGESampler): from every vertex, num_traces walks of n_hops hops
                     (termination probability 0), the top_k most visited vertices with their visit
                     counts. Drawn once before training, like FlexGraph's default (reselect_every 0).
  Aggregation:       n_v = sum_u a_uv ReLU(Q h_u + q), a_uv = counts normalised to sum 1 per v.
  Update:            z_v = W [h_v || n_v] + w; hidden layers output L2-normalise(ReLU(z_v)).
  Dropout on each layer's input h (the same mask for h_u and h_v, as in FlexGraph).

  bench/.venv/bin/python bench/baselines/run_pinsage.py --data /tmp/rmat17 --weights DIR \
      --hidden 256 --layers 2 --epochs 20 --threads 2 --out result.json

Weights: DIR/layer{l}.pool.weight.npy [in,pool], layer{l}.pool.bias.npy, layer{l}.update.weight.npy
[in+pool,out], layer{l}.update.bias.npy — FlexGraph's parameter names, so `flexgraph train
--init_weights DIR` reads the same files. Missing files: Glorot from numpy with --seed (bias 0).
The random walks use DGL's RNG (seeded with --seed), so the selected neighbours — and therefore the
epoch-0 loss — differ from FlexGraph's statistically, not exactly. With --selection DIR (written
by `flexgraph train --export_hdg DIR`) every layer aggregates over FlexGraph's own selection
instead (DIR/layer{l}.roots.npy and layer{l}.level1.{indptr,indices,weights}.npy), so both
systems compute the same function and the epoch-0 losses agree exactly.
"""
import argparse
import os
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--weights", default=None)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight_decay", type=float, default=5e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num_traces", type=int, default=10)
    p.add_argument("--n_hops", type=int, default=3)
    p.add_argument("--top_k", type=int, default=10)
    p.add_argument("--selection", default=None,
                   help="directory of FlexGraph's exported HDGs (flexgraph train --export_hdg)")
    p.add_argument("--model_selection", choices=["final", "best_valid"], default="best_valid")
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_baseline import Workload, glorot, report, train_full_batch  # noqa: E402


def load_param(wdir, name, shape, rng):
    path = os.path.join(wdir, name + ".npy") if wdir else ""
    if path and os.path.exists(path):
        arr = np.load(path).astype(np.float32)
        if arr.shape != tuple(shape):
            sys.exit(f"{path}: shape {arr.shape}, expected {tuple(shape)} (check --hidden/--layers)")
        return arr
    return np.zeros(shape, np.float32) if len(shape) == 1 else glorot(rng, *shape)


class PinSageLayer(nn.Module):
    def __init__(self, wdir, l, d_in, pool, d_out, last, rng):
        super().__init__()
        P = lambda name, shape: nn.Parameter(torch.from_numpy(load_param(wdir, f"layer{l}.{name}", shape, rng)))
        self.Q = P("pool.weight", (d_in, pool))
        self.q = P("pool.bias", (pool,))
        self.W = P("update.weight", (d_in + pool, d_out))
        self.w = P("update.bias", (d_out,))
        self.last = last

    def forward(self, g, h):
        import dgl.function as fn
        with g.local_scope():
            g.srcdata["m"] = F.relu(h @ self.Q + self.q)
            g.update_all(fn.u_mul_e("m", "a", "x"), fn.sum("x", "n"))
            z = torch.cat([h, g.dstdata["n"]], 1) @ self.W + self.w
        return z if self.last else F.normalize(F.relu(z), p=2, dim=1)


def run(a):
    import dgl
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dgl.seed(a.seed)
    w = Workload(a.data)
    g = dgl.graph((torch.from_numpy(w.src), torch.from_numpy(w.dst)), num_nodes=w.n)

    def with_weights(ng, counts):
        den = torch.zeros(w.n).index_add_(0, ng.edges()[1], counts)
        ng.edata["a"] = (counts / den[ng.edges()[1]]).unsqueeze(1)
        return ng

    def exported(l):
        load = lambda name: np.load(os.path.join(a.selection, f"layer{l}.{name}.npy"))
        roots, indptr = load("roots"), load("level1.indptr")
        children, weights = load("level1.indices"), load("level1.weights")
        dst = np.repeat(roots, np.diff(indptr))
        ng = dgl.graph((torch.from_numpy(children.astype(np.int64)), torch.from_numpy(dst)), num_nodes=w.n)
        return with_weights(ng, torch.from_numpy(weights.astype(np.float32)))

    t0 = time.perf_counter()
    if a.selection:
        ngs = [exported(l) for l in range(a.layers)]
    else:
        sampler = dgl.sampling.RandomWalkNeighborSampler(
            g, num_traversals=a.n_hops, termination_prob=0.0, num_random_walks=a.num_traces,
            num_neighbors=a.top_k)
        ng = sampler(torch.arange(w.n))  # edges: selected neighbour -> root, edata["weights"] = visits
        ngs = [with_weights(ng, ng.edata["weights"].float())] * a.layers
    selection_seconds = time.perf_counter() - t0

    rng = np.random.default_rng(a.seed)
    dims = [w.feat.shape[1]] + [a.hidden] * (a.layers - 1) + [w.num_classes]
    layers = nn.ModuleList(PinSageLayer(a.weights, l, dims[l], a.hidden, dims[l + 1], l == a.layers - 1, rng)
                           for l in range(a.layers))
    x = torch.from_numpy(w.feat)

    def logits():
        h = x
        for layer, ng in zip(layers, ngs):
            h = F.dropout(h, a.dropout, layers.training)
            h = layer(ng, h)
        return h

    selected = ngs[0].num_edges()
    print(f"selection {selection_seconds:.3f}s ({'FlexGraph export' if a.selection else 'DGL walks'}), "
          f"{selected} selected edges", flush=True)
    t = train_full_batch(a, layers, logits, w)
    res = {
        "framework": "dgl", "model": "pinsage", "dataset": w.meta.get("name"),
        "num_nodes": int(w.n), "num_edges": int(w.indices.size), "selected_edges": int(selected),
        "selection": "flexgraph" if a.selection else "dgl",
        "epochs": a.epochs, "warmup": a.warmup, "hidden": a.hidden, "layers": a.layers,
        "dropout": a.dropout, "lr": a.lr, "weight_decay": a.weight_decay, "threads": a.threads,
        "num_traces": a.num_traces, "n_hops": a.n_hops, "top_k": a.top_k,
        "selection_seconds": selection_seconds,
        **t,
        "versions": {"torch": torch.__version__, "dgl": dgl.__version__},
    }
    return report(a, res)


if __name__ == "__main__":
    run(ARGS)
