#!/usr/bin/env python3
"""Full-batch GCN / GraphSAGE-mean training baseline in DGL, PyG or plain torch.sparse, on a FlexGraph
.npy workload.

  bench/.venv/bin/python bench/baselines/run_baseline.py --framework dgl --model gcn \
      --data /tmp/cora --epochs 200 --warmup 5 --hidden 16 --layers 2 --dropout 0.5 \
      --lr 0.01 --weight_decay 5e-4 --threads 2 --out result.json
  ... --framework pyg --adjacency sparse --device cuda   # PyG on a sparse adj_t, on the GPU
  ... --framework torch --device cuda                    # hand-written layers on torch.sparse.mm

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
    p.add_argument("--framework", choices=["dgl", "pyg", "torch"], required=True,
                   help="torch: hand-written layers on torch.sparse.mm, no graph library")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:i]; timed steps are synchronised on cuda")
    p.add_argument("--adjacency", choices=["edge_index", "sparse"], default="edge_index",
                   help="PyG's graph input: edge_index, or a sparse adj_t (torch_sparse.SparseTensor when "
                        "importable, else a torch.sparse CSR tensor; GCNConv then caches its normalisation)")
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
    p.add_argument("--memory_gib", type=float, default=0,
                   help="cap on this process's CUDA memory in GiB, as a smaller GPU (0: the whole device)")
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


def build_dgl(w, model, init, a):
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
    g = g.to(torch.device(a.device))
    return convs, (lambda conv, h: conv(g, h)), {"versions": {"dgl": dgl.__version__}, "adjacency": "dgl.graph"}


def pyg_sparse_adjacency(w, device):
    """PyG's adj_t (row = destination, as the workload's in-edge CSR, so no transpose): a
    torch_sparse.SparseTensor when torch_sparse loads, else a torch.sparse CSR tensor built straight
    from the sorted CSR (what torch_geometric.utils.to_torch_csr_tensor makes, without its sort).
    Returns (adj_t, its description)."""
    rowptr, col = torch.from_numpy(w.indptr), torch.from_numpy(w.indices)
    try:
        from torch_sparse import SparseTensor
        adj = SparseTensor(rowptr=rowptr, col=col, sparse_sizes=(w.n, w.n), is_sorted=True, trust_data=True)
        return adj.to(device), "torch_sparse.SparseTensor"
    except (ImportError, OSError):
        adj = torch.sparse_csr_tensor(rowptr, col, torch.ones(col.numel()), (w.n, w.n))
        return adj.to(device), "torch.sparse_csr"


def build_pyg(w, model, init, a):
    import torch_geometric
    from torch_geometric.nn import GCNConv, SAGEConv

    if a.adjacency == "sparse":
        graph, kind = pyg_sparse_adjacency(w, torch.device(a.device))
    else:  # row 0 = source, row 1 = target
        graph, kind = torch.from_numpy(np.stack([w.src, w.dst])).to(torch.device(a.device)), "edge_index"
    convs = []
    if model == "gcn":
        for p in init:
            i, o = p["weight"].shape
            # With adj_t the normalised adjacency is cached (transductive full-batch, as PyG advises).
            c = GCNConv(i, o, add_self_loops=True, normalize=True, bias=True, cached=a.adjacency == "sparse")
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
    info = {"versions": {"torch_geometric": torch_geometric.__version__}, "adjacency": kind}
    return convs, (lambda conv, h: conv(h, graph)), info


class SymmetricSpmm(torch.autograd.Function):
    """adj @ x for a symmetric sparse adj (no gradient to adj): the backward reuses adj as its own
    transpose, adj @ grad, instead of transposing it."""

    @staticmethod
    def forward(ctx, adj, x):
        ctx.adj = adj
        return torch.sparse.mm(adj, x)

    @staticmethod
    def backward(ctx, grad):
        return None, torch.sparse.mm(ctx.adj, grad.contiguous()) if ctx.needs_input_grad[1] else None


class SparseGcnLayer(nn.Module):
    """h' = Â (h W) + b, Â = D^-1/2 (A+I) D^-1/2 as one CSR; multiplies Â on the narrower side."""

    def __init__(self, p, adj):
        super().__init__()
        self.weight = nn.Parameter(torch.from_numpy(p["weight"]))
        self.bias = nn.Parameter(torch.from_numpy(p["bias"]))
        self.adj = adj

    def forward(self, h):
        i, o = self.weight.shape
        if o <= i:
            return SymmetricSpmm.apply(self.adj, h @ self.weight) + self.bias
        return torch.addmm(self.bias, SymmetricSpmm.apply(self.adj, h), self.weight)


class SparseSageLayer(nn.Module):
    """h' = h W_self + (D^-1 A h) W_neigh + b, A as one CSR of ones; D^-1 A on the narrower side."""

    def __init__(self, p, adj, inv_deg):
        super().__init__()
        self.self_weight = nn.Parameter(torch.from_numpy(p["self"]))
        self.neigh_weight = nn.Parameter(torch.from_numpy(p["neigh"]))
        self.bias = nn.Parameter(torch.from_numpy(p["bias"]))
        self.adj, self.inv_deg = adj, inv_deg

    def forward(self, h):
        i, o = self.neigh_weight.shape
        if o < i:
            neigh = SymmetricSpmm.apply(self.adj, h @ self.neigh_weight) * self.inv_deg
        else:
            neigh = (SymmetricSpmm.apply(self.adj, h) * self.inv_deg) @ self.neigh_weight
        return torch.addmm(self.bias, h, self.self_weight) + neigh


def build_torch(w, model, init, a):
    """Hand-written layers on torch.sparse.mm over a CSR adjacency (the graph is symmetric)."""
    dev, n = torch.device(a.device), w.n
    deg = np.diff(w.indptr)
    if model == "gcn":
        # A+I with each self loop inserted at its sorted place in the row
        left = np.bincount(w.dst, weights=w.indices < w.dst, minlength=n).astype(np.int64)
        col = np.insert(w.indices, w.indptr[:-1] + left, np.arange(n))
        rowptr = w.indptr + np.arange(n + 1)
        dinv = 1.0 / np.sqrt(deg + 1.0)
        val = (np.repeat(dinv, deg + 1) * dinv[col]).astype(np.float32)
        adj = torch.sparse_csr_tensor(torch.from_numpy(rowptr), torch.from_numpy(col), torch.from_numpy(val),
                                      (n, n)).to(dev)
        convs = [SparseGcnLayer(p, adj) for p in init]
    else:
        adj = torch.sparse_csr_tensor(torch.from_numpy(w.indptr), torch.from_numpy(w.indices),
                                      torch.ones(w.indices.size), (n, n)).to(dev)
        inv_deg = torch.from_numpy((1.0 / np.maximum(deg, 1)).astype(np.float32)).view(-1, 1).to(dev)
        convs = [SparseSageLayer(p, adj, inv_deg) for p in init]
    return convs, (lambda conv, h: conv(h)), {"versions": {}, "adjacency": "torch.sparse_csr (hand-written)"}


# ----------------------------------------------------------------------------- run

def train_full_batch(a, net, logits_fn, w):
    """Epoch-0 loss (eval mode, initial weights), then a.epochs timed steps (forward, loss,
    backward, Adam) of net; logits_fn() runs the forward in net's current mode. net and its inputs
    live on a.device (default cpu); on CUDA each timed step is bracketed by synchronisations and
    peak_device_bytes is torch.cuda.max_memory_allocated over the whole run. Returns the result
    fields shared by the baselines."""
    dev = torch.device(getattr(a, "device", "cpu"))
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    y = torch.from_numpy(w.label).to(dev)
    tr, va, te = (torch.from_numpy(i).to(dev) for i in (w.train_idx, w.valid_idx, w.test_idx))

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
        sync()
        t0 = time.perf_counter()
        net.train()
        opt.zero_grad()
        loss = F.cross_entropy(logits_fn()[tr], y[tr])
        loss.backward()
        opt.step()
        sync()
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
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if cuda else None,
        "peak_device_bytes": torch.cuda.max_memory_allocated(dev) if cuda else None,
        "final_loss": loss_v,
        "final_eval_loss": final_eval_loss,
    }


def run(a):
    if a.memory_gib > 0 and torch.device(a.device).type == "cuda":
        dev = torch.device(a.device)
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.memory_gib * 2**30 / total), index)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    w = Workload(a.data)
    if a.weights:
        w.weights_dir = a.weights
    dims = [w.feat.shape[1]] + [a.hidden] * (a.layers - 1) + [w.num_classes]
    init = initial_weights(w, a.model, dims, a.seed)
    build = {"dgl": build_dgl, "pyg": build_pyg, "torch": build_torch}[a.framework]
    convs, call, info = build(w, a.model, init, a)
    net = Net(convs, a.dropout, a.input_dropout, call).to(torch.device(a.device))

    x = torch.from_numpy(w.feat).to(torch.device(a.device))
    t = train_full_batch(a, net, lambda: net(x), w)
    res = {
        "framework": a.framework,
        "model": a.model,
        "dataset": w.meta.get("name"),
        "num_nodes": int(w.n),
        "num_edges": int(w.indices.size),
        "epochs": a.epochs, "warmup": a.warmup, "hidden": a.hidden, "layers": a.layers,
        "dropout": a.dropout, "input_dropout": a.input_dropout, "lr": a.lr,
        "weight_decay": a.weight_decay, "threads": a.threads, "adjacency": info["adjacency"],
        "initial_weights_from_files": os.path.isdir(w.weights_dir),
        **t,
        "versions": {"torch": torch.__version__, **info["versions"]},
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
