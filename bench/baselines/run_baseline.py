#!/usr/bin/env python3
"""Full-batch GCN / GraphSAGE-mean training baseline in DGL or PyG, on a FlexGraph .npy workload.

  bench/.venv/bin/python bench/baselines/run_baseline.py --framework dgl --model gcn \
      --data /tmp/cora --epochs 200 --warmup 5 --hidden 16 --layers 2 --dropout 0.5 \
      --lr 0.01 --weight_decay 5e-4 --threads 2 --out result.json

Input format and model definitions: see README.md next to this file.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--framework", choices=["dgl", "pyg"], required=True)
    p.add_argument("--model", choices=["gcn", "sage"], required=True)
    p.add_argument("--data", required=True, help="workload directory")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5, help="epochs excluded from the median")
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--input_dropout", action="store_true", help="also apply dropout before layer 0")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight_decay", type=float, default=5e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="dropout RNG; weights when weights/ is absent")
    p.add_argument("--out", default=None, help="result JSON path")
    p.add_argument("--weights", default=None, help="initial weights directory (default: DATA/weights)")
    p.add_argument("--model_selection", choices=["final", "best_valid"], default="final",
                   help="test accuracy of the final model, or at the epoch with the best validation "
                        "accuracy (evaluated after every epoch, outside the timed step; as FlexGraph)")
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Must be set before torch / dgl load their OpenMP runtimes.
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


# ----------------------------------------------------------------------------- data

class Workload:
    def __init__(self, d):
        with open(os.path.join(d, "meta.json")) as f:
            self.meta = json.load(f)
        self.indptr = np.load(os.path.join(d, "indptr.npy")).astype(np.int64)
        self.indices = np.load(os.path.join(d, "indices.npy")).astype(np.int64)
        self.n = self.indptr.size - 1
        # in-edge CSR: row i lists the sources of destination i
        self.src = self.indices
        self.dst = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))
        feat = np.load(os.path.join(d, "feat.npy")).astype(np.float32)
        if self.meta.get("normalize_features", False):
            s = feat.sum(axis=1, keepdims=True)
            feat = np.divide(feat, s, out=np.zeros_like(feat), where=s != 0)
        self.feat = feat
        lp = os.path.join(d, "label.npy")
        if "num_classes" in self.meta:
            self.num_classes = int(self.meta["num_classes"])
        if os.path.exists(lp):
            self.label = np.load(lp).astype(np.int64)
            if "num_classes" not in self.meta:
                self.num_classes = int(self.label.max()) + 1
        else:
            self.label = np.arange(self.n, dtype=np.int64) % self.num_classes
        self.train_idx = np.load(os.path.join(d, "train_idx.npy")).astype(np.int64)
        self.valid_idx = np.load(os.path.join(d, "valid_idx.npy")).astype(np.int64)
        self.test_idx = np.load(os.path.join(d, "test_idx.npy")).astype(np.int64)
        self.weights_dir = os.path.join(d, "weights")


def glorot(rng, i, o):
    a = np.sqrt(6.0 / (i + o))
    return rng.uniform(-a, a, size=(i, o)).astype(np.float32)


def initial_weights(w, model, dims, seed):
    """Per layer: dict of numpy arrays ([in,out] matrices used as X @ W, and the bias)."""
    names = {"gcn": ["weight", "bias"], "sage": ["self", "neigh", "bias"]}[model]
    rng = np.random.default_rng(seed)
    out = []
    for l in range(len(dims) - 1):
        i, o = dims[l], dims[l + 1]
        layer = {}
        for nm in names:
            path = os.path.join(w.weights_dir, f"{model}_l{l}_{nm}.npy")
            if os.path.exists(path):
                arr = np.load(path).astype(np.float32)
                want = (o,) if nm == "bias" else (i, o)
                if arr.shape != want:
                    sys.exit(f"{path}: shape {arr.shape}, expected {want} (check --hidden/--layers)")
            else:
                arr = np.zeros(o, np.float32) if nm == "bias" else glorot(rng, i, o)
            layer[nm] = arr
        out.append(layer)
    return out


def _copy(param, arr, transpose=False):
    t = torch.from_numpy(arr)
    with torch.no_grad():
        param.copy_(t.t() if transpose else t)


# ----------------------------------------------------------------------------- models

class Net(nn.Module):
    """Stack of conv layers; ReLU between layers, dropout on the input of layers l>0
    (and of layer 0 with input_dropout)."""

    def __init__(self, convs, dropout, input_dropout, call):
        super().__init__()
        self.convs = nn.ModuleList(convs)
        self.dropout = dropout
        self.input_dropout = input_dropout
        self.call = call  # call(conv, h) -> h'

    def forward(self, h):
        for l, conv in enumerate(self.convs):
            if l > 0 or self.input_dropout:
                h = F.dropout(h, self.dropout, self.training)
            h = self.call(conv, h)
            if l < len(self.convs) - 1:
                h = F.relu(h)
        return h


def build_dgl(w, model, init):
    import dgl
    from dgl.nn import GraphConv, SAGEConv

    g = dgl.graph((torch.from_numpy(w.src), torch.from_numpy(w.dst)), num_nodes=w.n)
    convs = []
    if model == "gcn":
        g = dgl.add_self_loop(g)
        for p in init:
            i, o = p["weight"].shape
            c = GraphConv(i, o, norm="both", weight=True, bias=True, allow_zero_in_degree=True)
            _copy(c.weight, p["weight"])  # DGL stores [in, out]
            _copy(c.bias, p["bias"])
            convs.append(c)
    else:
        for p in init:
            i, o = p["self"].shape
            c = SAGEConv(i, o, "mean", bias=True)
            _copy(c.fc_self.weight, p["self"], transpose=True)  # nn.Linear stores [out, in]
            _copy(c.fc_neigh.weight, p["neigh"], transpose=True)
            _copy(c.fc_self.bias, p["bias"])
            convs.append(c)
    return convs, (lambda conv, h: conv(g, h)), {"dgl": dgl.__version__}


def build_pyg(w, model, init):
    import torch_geometric
    from torch_geometric.nn import GCNConv, SAGEConv

    edge_index = torch.from_numpy(np.stack([w.src, w.dst]))  # row 0 = source, row 1 = target
    convs = []
    if model == "gcn":
        for p in init:
            i, o = p["weight"].shape
            c = GCNConv(i, o, add_self_loops=True, normalize=True, bias=True, cached=False)
            _copy(c.lin.weight, p["weight"], transpose=True)
            _copy(c.bias, p["bias"])
            convs.append(c)
    else:
        for p in init:
            i, o = p["self"].shape
            c = SAGEConv(i, o, aggr="mean", root_weight=True, bias=True)
            _copy(c.lin_r.weight, p["self"], transpose=True)   # root / self term, no bias
            _copy(c.lin_l.weight, p["neigh"], transpose=True)  # neighbour term, carries the bias
            _copy(c.lin_l.bias, p["bias"])
            convs.append(c)
    return convs, (lambda conv, h: conv(h, edge_index)), {"torch_geometric": torch_geometric.__version__}


# ----------------------------------------------------------------------------- run

def train_full_batch(a, net, logits_fn, w):
    """Epoch-0 loss (eval mode, initial weights), then a.epochs timed steps (forward, loss,
    backward, Adam) of net; logits_fn() runs the forward in net's current mode. Returns the
    result fields shared by the baselines."""
    y = torch.from_numpy(w.label)
    tr, va, te = (torch.from_numpy(i) for i in (w.train_idx, w.valid_idx, w.test_idx))

    def evaluate():
        net.eval()
        with torch.no_grad():
            logits = logits_fn()
            loss = F.cross_entropy(logits[tr], y[tr]).item()
            pred = logits.argmax(1)
            acc = lambda idx: float((pred[idx] == y[idx]).float().mean()) if idx.numel() else float("nan")
            return loss, acc(va), acc(te)

    epoch0_loss, _, _ = evaluate()
    print(f"epoch0_loss {epoch0_loss!r}", flush=True)

    opt = torch.optim.Adam(net.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    times, loss_v = [], float("nan")
    best = (-1.0, float("nan"), 0)  # valid accuracy, test accuracy, 1-based epoch
    for ep in range(a.epochs):
        t0 = time.perf_counter()
        net.train()
        opt.zero_grad()
        loss = F.cross_entropy(logits_fn()[tr], y[tr])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        loss_v = loss.item()
        if a.model_selection == "best_valid":
            _, va_acc, te_acc = evaluate()
            if va_acc > best[0]:
                best = (va_acc, te_acc, ep + 1)
        if ep % 20 == 0 or ep == a.epochs - 1:
            print(f"epoch {ep:4d} loss {loss_v:.6f} time {times[-1]:.4f}s", flush=True)

    final_eval_loss, valid_acc, test_acc = evaluate()
    if a.model_selection == "best_valid" and best[2] > 0:
        valid_acc, test_acc = best[0], best[1]
    timed = times[a.warmup:] if len(times) > a.warmup else times
    return {
        "model_selection": a.model_selection,
        "best_epoch": best[2] if a.model_selection == "best_valid" else a.epochs,
        "epoch0_loss": epoch0_loss,
        "epoch_seconds_median": statistics.median(timed) if timed else None,
        "epoch_seconds": times,
        "test_accuracy": test_acc,
        "valid_accuracy": valid_acc,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "final_loss": loss_v,
        "final_eval_loss": final_eval_loss,
    }


def run(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    w = Workload(a.data)
    if a.weights:
        w.weights_dir = a.weights
    dims = [w.feat.shape[1]] + [a.hidden] * (a.layers - 1) + [w.num_classes]
    init = initial_weights(w, a.model, dims, a.seed)
    build = build_dgl if a.framework == "dgl" else build_pyg
    convs, call, fw_versions = build(w, a.model, init)
    net = Net(convs, a.dropout, a.input_dropout, call)

    x = torch.from_numpy(w.feat)
    t = train_full_batch(a, net, lambda: net(x), w)
    res = {
        "framework": a.framework,
        "model": a.model,
        "dataset": w.meta.get("name"),
        "num_nodes": int(w.n),
        "num_edges": int(w.indices.size),
        "epochs": a.epochs, "warmup": a.warmup, "hidden": a.hidden, "layers": a.layers,
        "dropout": a.dropout, "input_dropout": a.input_dropout, "lr": a.lr,
        "weight_decay": a.weight_decay, "threads": a.threads,
        "initial_weights_from_files": os.path.isdir(w.weights_dir),
        **t,
        "versions": {"torch": torch.__version__, **fw_versions},
    }
    return report(a, res)


def report(a, res):
    """Prints the summary line and writes res as JSON to a.out (when given); returns res."""
    print(f"test_accuracy {res['test_accuracy']:.4f} valid_accuracy {res['valid_accuracy']:.4f} "
          f"epoch_median {res['epoch_seconds_median']} peak_rss {res['peak_rss_bytes']}", flush=True)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    run(ARGS)
