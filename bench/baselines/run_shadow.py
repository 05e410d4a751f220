#!/usr/bin/env python3
"""ShaDow-GNN baseline in PyG (torch_geometric.loader.ShaDowKHopSampler, which needs torch_sparse) on a
FlexGraph .npy workload. Where torch_sparse is not installed (its source build takes most of an hour on 2
cores), --ego_library names a library built from torch_sparse's own ego_sample sources (csrc/ego_sample.cpp,
csrc/cpu/ego_sample_cpu.cpp, linked against the venv's torch): the op ShaDowKHopSampler calls,
torch_sparse::ego_k_hop_sample_adj, in a loader that collates as ShaDowKHopSampler does (the subgraph's
edge_index, the batch vector, features and root labels) with plain torch in place of SparseTensor. It reports: the sampling rate (one epoch of the loader over the training vertices, structure
only, counting the induced subgraphs' edges), the training epoch time (sampling, feature gathering, forward,
backward and the Adam step per batch) and, with --accuracy_epochs, the test accuracy at the best validation
accuracy (evaluated every 5 epochs on each vertex's own subgraph).

The model is FlexGraph's GCN on the subgraphs: GCNConv layers (self loops, symmetric normalisation over the
subgraph), ReLU and dropout between them, read out at the root.

  bench/.venv/bin/python bench/baselines/run_shadow.py --data DIR --depth 2 --fanout 10 \
      --batch_size 32 --layers 2 --hidden 16 --epochs 3 --threads 2 --out result.json
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="workload directory")
    p.add_argument("--depth", type=int, default=2, help="hops")
    p.add_argument("--fanout", type=int, default=10, help="neighbours drawn per vertex and hop (PyG: one for all)")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight_decay", type=float, default=5e-4)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up epoch)")
    p.add_argument("--accuracy_epochs", type=int, default=0, help="train this many epochs for the accuracy (0: none)")
    p.add_argument("--sampling_only", action="store_true", help="measure sampling alone (no training epochs: "
                   "epoch_seconds is null), for graphs whose PyG epochs take too long to run")
    p.add_argument("--train_batches", type=int, default=0,
                   help="time this many training batches (after up to 20 untimed ones) instead of whole epochs, and "
                   "project the epoch from their mean (0: whole epochs), for graphs whose PyG epochs take too long")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ego_library", default=None, help="torch_sparse's ego_sample op as a library, where "
                   "torch_sparse is not installed")
    p.add_argument("--out", default=None, help="result JSON path")
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_baseline import Workload  # noqa: E402


IN_CSR = None  # the workload's in-edge CSR (rowptr, col), for --ego_library


def loader(data, a, idx, shuffle):
    if a.ego_library is None:
        from torch_geometric.loader import ShaDowKHopSampler
        return ShaDowKHopSampler(data, depth=a.depth, num_neighbors=a.fanout, node_idx=torch.from_numpy(idx),
                                 batch_size=a.batch_size, shuffle=shuffle, replace=False)
    from torch_geometric.data import Batch
    rowptr, col = IN_CSR  # row i lists the sources of i (ShaDowKHopSampler's adj_t)

    def collate(n_id):  # ShaDowKHopSampler.__collate__ without SparseTensor
        out = torch.ops.torch_sparse.ego_k_hop_sample_adj(rowptr, col, torch.tensor(n_id), a.depth, a.fanout,
                                                          False)
        sub_rowptr, sub_col, n_id, e_id, ptr, root_n_id = out
        dst = torch.repeat_interleave(torch.arange(n_id.numel()), sub_rowptr.diff())
        batch = Batch(batch=torch.repeat_interleave(torch.arange(ptr.numel() - 1), ptr.diff()), ptr=ptr)
        batch.root_n_id = root_n_id
        batch.edge_index = torch.stack([sub_col, dst], dim=0)
        if getattr(data, "x", None) is not None:
            batch.x = data.x[n_id]
            batch.y = data.y[n_id][root_n_id]
        return batch
    return torch.utils.data.DataLoader(idx.tolist(), batch_size=a.batch_size, shuffle=shuffle, collate_fn=collate)


class Gcn(torch.nn.Module):
    def __init__(self, a, f, c):
        super().__init__()
        from torch_geometric.nn import GCNConv
        dims = [f] + [a.hidden] * (a.layers - 1) + [c]
        self.convs = torch.nn.ModuleList(GCNConv(dims[i], dims[i + 1]) for i in range(a.layers))
        self.dropout = a.dropout

    def forward(self, x, edge_index, root):
        for i, conv in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = conv(x, edge_index)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x[root]


def main(a):
    if a.ego_library is not None:
        torch.ops.load_library(a.ego_library)
    else:
        try:
            import torch_sparse  # noqa: F401  ShaDowKHopSampler's ego_k_hop_sample_adj
        except ImportError as e:
            sys.exit(f"run_shadow.py: PyG's ShaDowKHopSampler needs torch_sparse, which is not installed ({e}); "
                     "give --ego_library")
    from torch_geometric.data import Data
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    w = Workload(a.data)
    edge_index = torch.from_numpy(np.stack([w.src, w.dst]))
    structure = Data(edge_index=edge_index, num_nodes=w.n)
    full = Data(edge_index=edge_index, num_nodes=w.n, x=torch.from_numpy(w.feat), y=torch.from_numpy(w.label))
    global IN_CSR
    IN_CSR = (torch.from_numpy(w.indptr), torch.from_numpy(w.indices))

    # Sampling alone: structure only (no features gathered).
    rates, edges = [], 0
    for e in range(a.epochs + 1):
        t0 = time.perf_counter()
        n = 0
        for batch in loader(structure, a, w.train_idx, True):
            n += int(batch.edge_index.size(1))
        if e > 0:
            rates.append(n / (time.perf_counter() - t0))
            edges = n

    model = Gcn(a, w.feat.shape[1], w.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)

    def train_epoch(limit=0):
        """Trains on the epoch's batches (the first `limit` when positive); returns the seconds each
        took, sampling included."""
        model.train()
        took, t0 = [], time.perf_counter()
        for batch in loader(full, a, w.train_idx, True):
            opt.zero_grad()
            out = model(batch.x, batch.edge_index, batch.root_n_id)
            F.cross_entropy(out, batch.y).backward()  # y: the roots' labels
            opt.step()
            took.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            if limit and len(took) == limit:
                break
        return took

    @torch.no_grad()
    def accuracy(idx):
        model.eval()
        right = 0
        for batch in loader(full, a, idx, False):
            out = model(batch.x, batch.edge_index, batch.root_n_id)
            right += int((out.argmax(-1) == batch.y).sum())
        return right / max(1, len(idx))

    seconds, projected = [], None
    if a.train_batches > 0 and not a.sampling_only:
        batches = -(-len(w.train_idx) // a.batch_size)
        warm = min(20, batches // 4)  # untimed: first-batch costs (allocations, page faults)
        took = train_epoch(warm + a.train_batches)[warm:]
        projected = {"timed_batches": len(took), "batches_per_epoch": batches,
                     "seconds_per_batch": statistics.fmean(took)}
        seconds.append(projected["seconds_per_batch"] * batches)
    for e in range(0 if a.sampling_only or a.train_batches > 0 else a.epochs + 1):
        t0 = time.perf_counter()
        train_epoch()
        if e > 0:
            seconds.append(time.perf_counter() - t0)
    result = {
        "system": "PyG ShaDowKHopSampler" if a.ego_library is None else "PyG ShaDow (torch_sparse ego op)",
        "sampled_edges_per_epoch": edges,
        "sampled_edges_per_second": statistics.median(rates),
        "epoch_seconds": statistics.median(seconds) if seconds else None,
        "epoch_projected_from": projected,  # None: whole epochs were timed
        "threads": a.threads,
    }
    if a.accuracy_epochs > 0:
        torch.manual_seed(a.seed)
        model = Gcn(a, w.feat.shape[1], w.num_classes)
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
        best_valid, test = -1.0, 0.0
        for e in range(1, a.accuracy_epochs + 1):
            train_epoch()
            if e % 5 == 0 or e == a.accuracy_epochs:
                v = accuracy(w.valid_idx)
                if v > best_valid:
                    best_valid, test = v, accuracy(w.test_idx)
        result["valid_accuracy"] = best_valid
        result["test_accuracy"] = test
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main(ARGS)
