#!/usr/bin/env python3
"""The Interaction Network edge classifier of Exa.TrkX / GNN4ITk in PyTorch with PyG's utilities,
on a FlexGraph tracking dataset in the OGB graph-property layout (`flexgraph generate
trackml:... --out DIR`) — the model of FlexGraph's udf_examples/interaction:

  encoders:  h = MLP_node(x), e = MLP_edge(edge features), per directed entry
  K layers:  e = MLP_e([h_src, h_dst, e]) + e;  a = [reductions of e at each destination]
             (torch_geometric.utils.scatter: sum, mean, max, std);  h = MLP_n([h, a]) + h
  head:      logit = MLP_out([h_src, h_dst, e]) per entry
  MLP:       blocks of Linear-LayerNorm-SiLU (the head's last Linear bare)

Every original edge (inner hit -> outer hit) is stored in both directions, as FlexGraph loads the
graph, so a hit hears its inner and outer neighbours; an entry's edge features are its edge's. The
loss is binary cross-entropy per entry over the labelled entries of the batch's training events;
an edge's score is the mean of its two entries' probabilities (efficiency and purity at --cut).
Batches: --batch_size events, shuffled per epoch (the order differs from FlexGraph's; the epoch-0
loss over every training event, before any step, is the same function).

  bench/.venv/bin/python bench/baselines/run_interaction.py --data DIR --weights W \
      --hidden 128 --layers 8 --epochs 5 --batch_size 1 --threads 2 --out result.json

Weights: W/<FlexGraph parameter name>.npy (node_encoder.linear0.weight [in, out], ...), the files
`flexgraph train --init_weights W` reads; --write_weights writes Glorot weights there first.
"""
import argparse
import gzip
import json
import os
import resource
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="OGB graph-property directory of tracking events")
    p.add_argument("--split", default=None, help="split name under split/ (default: the only one)")
    p.add_argument("--weights", required=True)
    p.add_argument("--write_weights", action="store_true", help="write Glorot weights to --weights first")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--mlp_layers", type=int, default=2)
    p.add_argument("--aggregation", default="sum")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--cut", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]: where the model trains (batches are built on the host)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch_geometric.utils import scatter  # noqa: E402


def read_csv(path, dtype):
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2)


def load_events(root, split):
    raw = os.path.join(root, "raw")
    nodes = read_csv(os.path.join(raw, "num-node-list.csv.gz"), np.int64).reshape(-1)
    edges_per = read_csv(os.path.join(raw, "num-edge-list.csv.gz"), np.int64).reshape(-1)
    edge = read_csv(os.path.join(raw, "edge.csv.gz"), np.int64)
    x = read_csv(os.path.join(raw, "node-feat.csv.gz"), np.float32)
    ef = read_csv(os.path.join(raw, "edge-feat.csv.gz"), np.float32)
    label = read_csv(os.path.join(raw, "edge-label.csv.gz"), np.int64).reshape(-1)
    split_root = os.path.join(root, "split")
    names = sorted(os.listdir(split_root))
    name = split or names[0]
    splits = {}
    for s in ("train", "valid", "test"):
        path = os.path.join(split_root, name, s + ".csv.gz")
        splits[s] = read_csv(path, np.int64).reshape(-1) if os.path.exists(path) else np.zeros(0, np.int64)
    node_off = np.concatenate([[0], np.cumsum(nodes)])
    edge_off = np.concatenate([[0], np.cumsum(edges_per)])
    events = []
    for g in range(len(nodes)):
        e0, e1 = edge_off[g], edge_off[g + 1]
        src, dst = edge[e0:e1, 0], edge[e0:e1, 1]
        # Both directions: entry k is edge k, entry m + k is edge k reversed.
        index = np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])
        feats = np.concatenate([ef[e0:e1], ef[e0:e1]])
        events.append({
            "x": torch.from_numpy(x[node_off[g]:node_off[g + 1]]),
            "edge_index": torch.from_numpy(index),
            "edge_attr": torch.from_numpy(feats),
            "y": torch.from_numpy(label[e0:e1]),
            "edges": e1 - e0,
        })
    return events, splits


def batch_events(events, ids):
    """Block-diagonal union of events `ids`, as torch_geometric.data.Batch would build it."""
    xs, idx, attrs, ys, edges, offset = [], [], [], [], [], 0
    for g in ids:
        ev = events[g]
        xs.append(ev["x"])
        idx.append(ev["edge_index"] + offset)
        attrs.append(ev["edge_attr"])
        ys.append(torch.cat([ev["y"], ev["y"]]))
        edges.append(ev["edges"])
        offset += ev["x"].shape[0]
    return torch.cat(xs), torch.cat(idx, 1), torch.cat(attrs), torch.cat(ys), edges


class Mlp(torch.nn.Module):
    def __init__(self, prefix, d_in, hidden, d_out, blocks, bare_output, params):
        super().__init__()
        self.linears = torch.nn.ModuleList()
        self.norms = torch.nn.ModuleList()
        self.bare_output = bare_output
        for b in range(blocks):
            i, o = (d_in if b == 0 else hidden), (d_out if b == blocks - 1 else hidden)
            lin = torch.nn.Linear(i, o)
            lin.weight.data = torch.from_numpy(params[f"{prefix}.linear{b}.weight"]).t().contiguous()
            lin.bias.data = torch.from_numpy(params[f"{prefix}.linear{b}.bias"])
            self.linears.append(lin)
            if not (bare_output and b == blocks - 1):
                ln = torch.nn.LayerNorm(o, eps=1e-5)
                ln.weight.data = torch.from_numpy(params[f"{prefix}.norm{b}.weight"])
                ln.bias.data = torch.from_numpy(params[f"{prefix}.norm{b}.bias"])
                self.norms.append(ln)

    def forward(self, x):
        for b, lin in enumerate(self.linears):
            x = lin(x)
            if self.bare_output and b == len(self.linears) - 1:
                break
            x = torch.nn.functional.silu(self.norms[b](x))
        return x


class InteractionNetwork(torch.nn.Module):
    def __init__(self, a, d_node, d_edge, params):
        super().__init__()
        h, k = a.hidden, a.mlp_layers
        self.reductions = a.aggregation.split(",")
        self.node_encoder = Mlp("node_encoder", d_node, h, h, k, False, params)
        self.edge_encoder = Mlp("edge_encoder", d_edge, h, h, k, False, params)
        self.edge_nets = torch.nn.ModuleList(
            [Mlp(f"layer{l}.edge_mlp", 3 * h, h, h, k, False, params) for l in range(a.layers)])
        self.node_nets = torch.nn.ModuleList(
            [Mlp(f"layer{l}.node_mlp", (1 + len(self.reductions)) * h, h, h, k, False, params)
             for l in range(a.layers)])
        self.head = Mlp("head", 3 * h, h, 1, k, True, params)

    def aggregate(self, e, dst, n):
        out = []
        for r in self.reductions:
            if r == "std":  # sqrt(var + eps), biased variance; 0 messages: sqrt(eps)
                mean = scatter(e, dst, 0, dim_size=n, reduce="mean")
                sq = scatter(e * e, dst, 0, dim_size=n, reduce="mean")
                out.append(torch.sqrt(torch.clamp(sq - mean * mean, min=0) + 1e-5))
            else:
                out.append(scatter(e, dst, 0, dim_size=n, reduce=r))
        return torch.cat(out, 1)

    def forward(self, x, edge_index, edge_attr):
        src, dst = edge_index
        h = self.node_encoder(x)
        e = self.edge_encoder(edge_attr)
        for edge_net, node_net in zip(self.edge_nets, self.node_nets):
            e = edge_net(torch.cat([h[src], h[dst], e], 1)) + e
            h = node_net(torch.cat([h, self.aggregate(e, dst, x.shape[0])], 1)) + h
        return self.head(torch.cat([h[src], h[dst], e], 1)).squeeze(1)


def write_weights(a, d_node, d_edge, rng):
    os.makedirs(a.weights, exist_ok=True)
    h, k = a.hidden, a.mlp_layers
    mlps = [("node_encoder", d_node, h), ("edge_encoder", d_edge, h), ("head", 3 * h, 1)]
    r = len(a.aggregation.split(","))
    for l in range(a.layers):
        mlps += [(f"layer{l}.edge_mlp", 3 * h, h), (f"layer{l}.node_mlp", (1 + r) * h, h)]
    for prefix, d_in, d_out in mlps:
        for b in range(k):
            i, o = (d_in if b == 0 else h), (d_out if b == k - 1 else h)
            bound = np.sqrt(6.0 / (i + o))
            np.save(os.path.join(a.weights, f"{prefix}.linear{b}.weight.npy"),
                    rng.uniform(-bound, bound, (i, o)).astype(np.float32))
            np.save(os.path.join(a.weights, f"{prefix}.linear{b}.bias.npy"), np.zeros(o, np.float32))
            if not (prefix == "head" and b == k - 1):
                np.save(os.path.join(a.weights, f"{prefix}.norm{b}.weight.npy"), np.ones(o, np.float32))
                np.save(os.path.join(a.weights, f"{prefix}.norm{b}.bias.npy"), np.zeros(o, np.float32))


def load_weights(path):
    return {f[:-4]: np.load(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".npy")}


def on_device(tensors):
    return [t.to(ARGS.device, non_blocking=True) for t in tensors]


def batch_loss(model, events, ids):
    x, index, attr, y, _ = batch_events(events, ids)
    x, index, attr, y = on_device([x, index, attr, y])
    logits = model(x, index, attr)
    labelled = y >= 0
    return torch.nn.functional.binary_cross_entropy_with_logits(logits[labelled], y[labelled].float())


def edge_metrics(model, events, ids, cut):
    tp = fp = fn = 0
    with torch.no_grad():
        for g in ids:
            x, index, attr, y, edges = batch_events(events, [g])
            x, index, attr, y = on_device([x, index, attr, y])
            p = torch.sigmoid(model(x, index, attr))
            m = edges[0]
            score = (p[:m] + p[m:]) / 2
            truth = y[:m]
            keep = score > cut
            tp += int((keep & (truth == 1)).sum())
            fp += int((keep & (truth == 0)).sum())
            fn += int((~keep & (truth == 1)).sum())
    eff = tp / (tp + fn) if tp + fn else float("nan")
    pur = tp / (tp + fp) if tp + fp else float("nan")
    return eff, pur


def main(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    events, splits = load_events(a.data, a.split)
    d_node, d_edge = events[0]["x"].shape[1], events[0]["edge_attr"].shape[1]
    if a.write_weights:
        write_weights(a, d_node, d_edge, np.random.default_rng(a.seed))
    model = InteractionNetwork(a, d_node, d_edge, load_weights(a.weights)).to(a.device)
    cuda = a.device.startswith("cuda")
    train = [int(g) for g in splits["train"]]
    with torch.no_grad():
        epoch0 = float(batch_loss(model, events, train))
    print(f"epoch0_loss {epoch0:.9g}", flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    rng = np.random.default_rng(a.seed)
    seconds, losses = [], []
    for epoch in range(a.epochs):
        order = rng.permutation(train)
        start = time.perf_counter()
        total, batches = 0.0, 0
        for b in range(0, len(order), a.batch_size):
            opt.zero_grad()
            loss = batch_loss(model, events, order[b:b + a.batch_size])
            loss.backward()
            opt.step()
            total += float(loss)
            batches += 1
        if cuda:
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
        losses.append(total / batches)
        print(f"epoch {epoch + 1} loss {losses[-1]:.4f} {seconds[-1]:.3f}s", flush=True)
    eff, pur = edge_metrics(model, events, [int(g) for g in splits["test"]], a.cut)
    steady = sorted(seconds[a.warmup:] or seconds)
    result = {
        "system": "pyg", "model": "interaction", "epoch0_loss": epoch0, "losses": losses,
        "epoch_seconds": seconds, "epoch_seconds_median": steady[len(steady) // 2],
        "test_efficiency": eff, "test_purity": pur,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "threads": a.threads, "torch": torch.__version__, "device": a.device,
        "peak_device_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
    }
    print(f"pyg interaction: median {result['epoch_seconds_median']:.3f} s/epoch, test efficiency "
          f"{eff:.4f} purity {pur:.4f}, peak RSS {result['peak_rss_bytes'] / 2**20:.0f} MiB")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main(ARGS))
