#!/usr/bin/env python3
"""Mini-batch GraphSAGE-mean baseline in DGL (NeighborSampler + DataLoader) or PyG (NeighborLoader)
on a FlexGraph .npy workload: sampling throughput (an epoch of the loader alone, counting the
sampled edges of every block) and the training epoch time (sampling, feature gathering, forward,
backward and the Adam step per batch).

  bench/.venv/bin/python bench/baselines/run_minibatch.py --framework dgl --data DIR \
      --fanouts 25,10 --batch_size 1024 --hidden 256 --epochs 3 --threads 2 --out result.json

Fanouts are listed from the seeds outward (PyG's num_neighbors; DGL's NeighborSampler takes them
reversed). Input format and the SAGE model: README.md next to this file.
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--framework", choices=["dgl", "pyg"], required=True)
    p.add_argument("--data", required=True, help="workload directory")
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--batch_size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight_decay", type=float, default=5e-4)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up epoch)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu or cuda[:i]: the model, features and each batch's graph "
                   "train there; sampling stays on the host")
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


def dgl_loader(w, fanouts, batch_size):
    import dgl
    g = dgl.graph((torch.from_numpy(w.src), torch.from_numpy(w.dst)), num_nodes=w.n)
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
    train = torch.from_numpy(w.train_idx)

    def epoch():
        loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=batch_size, shuffle=True,
                                            drop_last=False, num_workers=0)
        for input_nodes, output_nodes, blocks in loader:
            yield input_nodes, output_nodes, blocks, sum(b.num_edges() for b in blocks)
    return epoch


def pyg_loader(w, fanouts, batch_size):
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    edge_index = torch.from_numpy(np.stack([w.src, w.dst]))
    data = Data(edge_index=edge_index, num_nodes=w.n)
    data.n_id = torch.arange(w.n)
    train = torch.from_numpy(w.train_idx)

    def epoch():
        loader = NeighborLoader(data, num_neighbors=fanouts, batch_size=batch_size, input_nodes=train,
                                shuffle=True)
        for batch in loader:
            yield batch, None, None, int(batch.edge_index.size(1))
    return epoch


class DglSage(torch.nn.Module):
    def __init__(self, f, h, c, dropout):
        super().__init__()
        from dgl.nn import SAGEConv
        self.layers = torch.nn.ModuleList([SAGEConv(f, h, "mean"), SAGEConv(h, c, "mean")])
        self.dropout = dropout

    def forward(self, blocks, x):
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(block, F.dropout(x, self.dropout, self.training))
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


class PygSage(torch.nn.Module):
    def __init__(self, f, h, c, dropout):
        super().__init__()
        from torch_geometric.nn import SAGEConv
        self.layers = torch.nn.ModuleList([SAGEConv(f, h, aggr="mean"), SAGEConv(h, c, aggr="mean")])
        self.dropout = dropout

    def forward(self, x, edge_index):
        for i, layer in enumerate(self.layers):
            x = layer(F.dropout(x, self.dropout, self.training), edge_index)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


def main():
    a = ARGS
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    w = Workload(a.data)
    fanouts = [int(x) for x in a.fanouts.split(",")]
    make = dgl_loader if a.framework == "dgl" else pyg_loader
    epoch = make(w, fanouts, a.batch_size)
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    feat = torch.from_numpy(w.feat).to(dev)
    label = torch.from_numpy(w.label).to(dev)

    # Sampling alone: one warm-up epoch, then the timed ones.
    sample_seconds, sampled_edges = [], 0
    for e in range(a.epochs + 1):
        t0 = time.perf_counter()
        edges = sum(item[3] for item in epoch())
        if e > 0:
            sample_seconds.append(time.perf_counter() - t0)
            sampled_edges = edges

    model = (DglSage if a.framework == "dgl" else PygSage)(w.feat.shape[1], a.hidden, w.num_classes, a.dropout).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    model.train()
    train_seconds, losses = [], []
    for e in range(a.epochs + 1):
        sync()
        t0 = time.perf_counter()
        total, batches = 0.0, 0
        for first, second, blocks, _ in epoch():
            if a.framework == "dgl":
                input_nodes, output_nodes = first.to(dev), second.to(dev)
                out = model([b.to(dev) for b in blocks], feat[input_nodes])
                y = label[output_nodes]
            else:
                batch = first
                n_id = batch.n_id.to(dev)
                out = model(feat[n_id], batch.edge_index.to(dev))[: batch.batch_size]
                y = label[n_id[: batch.batch_size]]
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
            batches += 1
        sync()
        if e > 0:
            train_seconds.append(time.perf_counter() - t0)
        losses.append(total / batches)

    result = {
        "framework": a.framework,
        "batches_per_epoch": int((w.train_idx.size + a.batch_size - 1) // a.batch_size),
        "sampled_edges_per_epoch": int(sampled_edges),
        "sampling_seconds": statistics.median(sample_seconds),
        "sampled_edges_per_second": sampled_edges / statistics.median(sample_seconds),
        "epoch_seconds": statistics.median(train_seconds),
        "losses": losses,
        "threads": a.threads,
        "device": a.device,
    }
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
