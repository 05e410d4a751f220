#!/usr/bin/env python3
"""Full-batch MAGNN node classification in DGL or in PyTorch with PyG's utilities, on a heterogeneous
dataset in the OGB raw layout
(IMDB: movie, director, actor) — the model of FlexGraph's udf_examples/magnn, organised like
MAGNN's reference code (MAGNN_nc with MAGNN_ctr_ntype_specific and one metapath-specific module per
metapath). One layer, for a root v of type T:

  NeighborSelection: every instance (walk) of every metapath starting at T, root first, enumerated
                     in numpy once before training (at most --max_instances per (v, P); beyond that
                     a uniform sample — IMDB never gets there, so the instance sets are exact).
  Instance encoder:  RotatE: h_p = 1/L sum_i rot_i * h_{p_i}, rot_0 = 1 and rot_{i+1} = rot_i * r
                     (r the unit rotation of step i's relation, conj(r) for a forward step).
  Instance attention per (v, P), H heads, on an instance -> root DGL graph:
                     e = LeakyReLU(a_center^h . h_v + a_inst^h . h_p)  (dgl.ops.e_add_v),
                     alpha = dgl.ops.edge_softmax, dropout on alpha,
                     h_v^P = ELU(||_h sum_p alpha_p^h h_p)             (dgl.ops.u_mul_e_sum).
                     --backend pyg: the same with an index gather, torch_geometric.utils.softmax
                     and torch_geometric.utils.scatter (the model "written with PyTorch and PyG's
                     utilities"); --device cuda runs either on a GPU.
  Metapath attention per type: s_P = q . mean_v tanh(h_v^P M + b), beta = softmax_P(s),
                     h_v = sum_P beta_P h_v^P.
  Update:            W_o h_v + b_o, ELU on hidden layers.
Input: h_v = x_v W_type + b_type (a learned table for types without features), dropout on it
before layer 0 (the instances' rows; the attention's h_v is the undropped row, as in FlexGraph).
Hidden layers compute every vertex with its own type's metapaths, the last layer the target type's.
Metapaths "auto": for each type T, T-X-T for every type X joined to T by one relation, then
T-X-Y-X-T (IMDB: M-D-M, M-A-M, D-M-D, D-M-A-M-D, A-M-A, A-M-D-M-A).

  bench/.venv/bin/python bench/baselines/run_magnn.py --data /work/shared/data/imdb \
      --weights DIR --epochs 7 --threads 2 --normalize_features --out result.json
  python3 bench/baselines/run_magnn.py --data /work/shared/data/imdb --weights DIR --backend pyg \
      --device cuda --normalize_features --out result.json
  bench/.venv/bin/python bench/baselines/run_magnn.py --data /work/shared/data/imdb \
      --write_weights DIR --seed 1      # initial weights in FlexGraph's names, then exit

Weights use FlexGraph's parameter names (`flexgraph train --init_weights DIR` reads the same
files): project.<type>.weight [f, hidden] and .bias (or embed.<type>.table), and per layer l
layer<l>.relation_rotations [relations, d] ((re, im) pairs interleaved), layer<l>.attn_center and
layer<l>.attn_inst [d, metapaths * heads] (column m * heads + h), layer<l>.fuse.<type>.weight
[heads * d, attn_dim], .bias, .q [attn_dim, 1], layer<l>.output.weight [heads * d, out] and .bias.
Missing files: Glorot from numpy with --seed (bias 0).
"""
import argparse
import gzip
import os
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="dataset directory in the OGB raw layout")
    p.add_argument("--split", default="", help="split/<name> (default: the only one)")
    p.add_argument("--weights", default=None)
    p.add_argument("--write_weights", default=None,
                   help="write initial weights (Glorot, biases N(0, 0.1^2)) here and exit")
    p.add_argument("--epochs", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--attn_dim", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--attn_dropout", type=float, default=None, help="default: --dropout")
    p.add_argument("--slope", type=float, default=0.2)
    p.add_argument("--max_instances", type=int, default=1024, help="per (root, metapath); 0 = all")
    p.add_argument("--lr", type=float, default=0.005)
    p.add_argument("--weight_decay", type=float, default=1e-3)
    p.add_argument("--normalize_features", action="store_true",
                   help="divide each non-negative feature row by its sum (rows summing to 0 stay 0)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model_selection", choices=["final", "best_valid"], default="best_valid")
    p.add_argument("--backend", choices=["dgl", "pyg"], default="dgl",
                   help="the instance attention's graph ops: DGL's, or PyG's softmax and scatter")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.attn_dropout is None:
        a.attn_dropout = a.dropout
    return a


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------- data

def read_csv(path, dtype):
    """A gzip (or plain) CSV without header as a 2-D array; None when absent."""
    import pandas as pd
    for p in (path + ".gz", path):
        if os.path.exists(p):
            return pd.read_csv(p, header=None, dtype=dtype).values
    return None


def sorted_csr(rows, cols, n_rows):
    """CSR (indptr, indices) with each row's columns sorted, duplicates kept."""
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return indptr, cols[order].astype(np.int64)


class HeteroData:
    """Node types, relations (both directions as sorted CSRs), features, the target type's labels
    and split. Global vertex ids lay the types out one after another, in num-node-dict order."""

    def __init__(self, d, split="", normalize=False, need_features=True):
        import pandas as pd
        raw = os.path.join(d, "raw")
        nd = pd.read_csv(os.path.join(raw, "num-node-dict.csv.gz"))
        self.types = list(nd.columns)
        self.counts = [int(nd[t].iloc[0]) for t in self.types]
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        self.n = int(self.offsets[-1])
        self.relations = []  # dicts: src, dst type indices, by_src and by_dst CSRs
        for src, name, dst in read_csv(os.path.join(raw, "triplet-type-list.csv"), str):
            e = read_csv(os.path.join(raw, "relations", f"{src}___{name}___{dst}", "edge.csv"), np.int64)
            s, t = self.types.index(src), self.types.index(dst)
            self.relations.append({"name": name, "src": s, "dst": t, "edges": len(e),
                                   "by_src": sorted_csr(e[:, 0], e[:, 1], self.counts[s]),
                                   "by_dst": sorted_csr(e[:, 1], e[:, 0], self.counts[t])})
        self.features = {}
        for t in self.types:
            path = os.path.join(raw, "node-feat", t, "node-feat.csv")
            if not need_features:  # the width only
                if os.path.exists(path + ".gz"):
                    self.features[t] = np.zeros((0, pd.read_csv(path + ".gz", header=None, nrows=1).shape[1]),
                                                np.float32)
                continue
            f = read_csv(path, np.float32)
            if f is None:
                continue
            if normalize and (f >= 0).all():
                s = f.sum(axis=1, keepdims=True, dtype=np.float64)
                f = (f * np.divide(1.0, s, out=np.zeros_like(s), where=s != 0)).astype(np.float32)
            self.features[t] = f
        labeled = [t for t in self.types if os.path.exists(os.path.join(raw, "node-label", t))]
        if len(labeled) != 1:
            sys.exit(f"{d}: expected one labeled node type, found {labeled}")
        self.target = labeled[0]
        self.label = read_csv(os.path.join(raw, "node-label", self.target, "node-label.csv"), np.int64)[:, 0]
        self.num_classes = int(self.label.max()) + 1
        splits = sorted(os.listdir(os.path.join(d, "split")))
        name = split or (splits[0] if len(splits) == 1 else sys.exit(f"{d}: several splits {splits}; pass --split"))
        sd = os.path.join(d, "split", name, self.target)
        self.train_idx, self.valid_idx, self.test_idx = (
            read_csv(os.path.join(sd, s + ".csv"), np.int64)[:, 0] for s in ("train", "valid", "test"))

    def feature_dim(self, t):
        f = self.features.get(self.types[t])
        return 0 if f is None else f.shape[1]


# ----------------------------------------------------------------------------- metapaths

def initials(types):
    """Type tokens: the upper-case initial when unique, else the full name (FlexGraph's TypeToken)."""
    first = [t[0].lower() for t in types]
    return [t[0].upper() if first.count(t[0].lower()) == 1 else t for t in types]


def steps_between(data, a, b):
    """Every (relation, forward) joining type a to type b."""
    out = []
    for r, rel in enumerate(data.relations):
        if rel["src"] == a and rel["dst"] == b:
            out.append((r, True))
        if rel["src"] == b and rel["dst"] == a and a != b:
            out.append((r, False))
    return out


def default_metapaths(data):
    """MAGNN's choice (FlexGraph's DefaultMetapaths): per type T, T-X-T, then T-X-Y-X-T."""
    tok = initials(data.types)
    k = len(data.types)
    out = []
    for t in range(k):
        longer = []
        for x in range(k):
            tx = steps_between(data, t, x)
            if x == t or len(tx) != 1:
                continue
            tx = tx[0]
            back = (tx[0], not tx[1])
            out.append({"name": "-".join(tok[i] for i in (t, x, t)), "types": [t, x, t], "steps": [tx, back]})
            for y in range(k):
                xy = steps_between(data, x, y)
                if y in (t, x) or len(xy) != 1:
                    continue
                xy = xy[0]
                longer.append({"name": "-".join(tok[i] for i in (t, x, y, x, t)), "types": [t, x, y, x, t],
                               "steps": [tx, xy, (xy[0], not xy[1]), back]})
        out += longer
    return out


def enumerate_instances(data, mp, max_instances, rng):
    """Instances of metapath mp from every vertex of its start type, root-major and depth-first in
    sorted neighbour order: (global ids [n, L] int64, root local ids [n], capped groups)."""
    paths = np.arange(data.counts[mp["types"][0]], dtype=np.int64)[:, None]
    for rel, forward in mp["steps"]:
        indptr, indices = data.relations[rel]["by_src" if forward else "by_dst"]
        last = paths[:, -1]
        deg = indptr[last + 1] - indptr[last]
        total = int(deg.sum())
        first = np.repeat(indptr[last] - (np.cumsum(deg) - deg), deg)
        nbr = indices[first + np.arange(total)]
        paths = np.concatenate([np.repeat(paths, deg, axis=0), nbr[:, None]], axis=1)
    roots = paths[:, 0].copy()
    capped = 0
    if max_instances > 0 and len(roots):
        per_root = np.bincount(roots, minlength=data.counts[mp["types"][0]])
        over = np.nonzero(per_root > max_instances)[0]
        if len(over):
            starts = np.concatenate([[0], np.cumsum(per_root)])
            keep = np.ones(len(roots), bool)
            for r in over:
                keep[starts[r]:starts[r + 1]] = False
                keep[starts[r] + np.sort(rng.choice(per_root[r], max_instances, replace=False))] = True
            paths, roots, capped = paths[keep], roots[keep], len(over)
    glob = paths + data.offsets[mp["types"]][None, :]
    return glob, roots, capped


# ----------------------------------------------------------------------------- parameters

def layer_metapaths(data, metapaths, layers):
    """Per layer: the metapaths it uses (all for hidden layers, the target type's for the last)."""
    target = data.types.index(data.target)
    return [mps if l < layers - 1 else [m for m in metapaths if m["types"][0] == target]
            for l, mps in enumerate([metapaths] * layers)]


def parameter_shapes(data, metapaths, hidden, layers, heads, attn_dim):
    """FlexGraph's MAGNN parameters: name -> shape, in FlexGraph's order."""
    shapes = {}
    for t, name in enumerate(data.types):
        f = data.feature_dim(t)
        if f > 0:
            shapes[f"project.{name}.weight"] = (f, hidden)
            shapes[f"project.{name}.bias"] = (hidden,)
        else:
            shapes[f"embed.{name}.table"] = (data.counts[t], hidden)
    for l, mps in enumerate(layer_metapaths(data, metapaths, layers)):
        d, width = hidden, heads * hidden
        out = hidden if l < layers - 1 else data.num_classes
        pre = f"layer{l}."
        shapes[pre + "relation_rotations"] = (len(data.relations), d)
        shapes[pre + "attn_center"] = (d, len(mps) * heads)
        shapes[pre + "attn_inst"] = (d, len(mps) * heads)
        for t, name in enumerate(data.types):
            if any(m["types"][0] == t for m in mps):
                shapes[pre + f"fuse.{name}.weight"] = (width, attn_dim)
                shapes[pre + f"fuse.{name}.bias"] = (attn_dim,)
                shapes[pre + f"fuse.{name}.q"] = (attn_dim, 1)
        shapes[pre + "output.weight"] = (width, out)
        shapes[pre + "output.bias"] = (out,)
    return shapes


def glorot(rng, shape):
    a = np.sqrt(6.0 / (shape[0] + shape[1]))
    return rng.uniform(-a, a, size=shape).astype(np.float32)


def write_initial_weights(out_dir, shapes, seed, bias_scale=0.1):
    """Glorot matrices, biases N(0, bias_scale^2), one .npy per parameter in FlexGraph's names."""
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, shape in shapes.items():
        arr = (bias_scale * rng.standard_normal(shape)).astype(np.float32) if len(shape) == 1 \
            else glorot(rng, shape)
        np.save(os.path.join(out_dir, name + ".npy"), arr)


def load_parameters(wdir, shapes, seed):
    rng = np.random.default_rng(seed)
    out, from_files = {}, 0
    for name, shape in shapes.items():
        path = os.path.join(wdir, name + ".npy") if wdir else ""
        if path and os.path.exists(path):
            arr = np.load(path).astype(np.float32)
            if arr.shape != tuple(shape):
                sys.exit(f"{path}: shape {arr.shape}, expected {tuple(shape)} (check --hidden/--heads/--layers)")
            from_files += 1
        else:
            arr = np.zeros(shape, np.float32) if len(shape) == 1 else glorot(rng, shape)
        out[name] = arr
    return out, from_files


# ----------------------------------------------------------------------------- model

def build_model(data, metapaths, selection, params, a):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    dev = torch.device(a.device)
    if a.backend == "dgl":
        import dgl
    else:
        from torch_geometric.utils import scatter, softmax

    class MetapathSpecific(nn.Module):
        """Instances of one metapath -> per-root embedding [roots of its type, heads * d]."""

        def __init__(self, mp, glob, roots, n_roots, column):
            super().__init__()
            self.mp, self.column, self.n_roots = mp, column, n_roots
            self.inst = torch.from_numpy(glob).to(dev)
            self.roots = torch.from_numpy(data.offsets[mp["types"][0]] + np.arange(n_roots)).to(dev)
            self.root_of = torch.from_numpy(roots).long().to(dev)  # each instance's root
            if a.backend == "dgl":
                self.g = dgl.heterograph({("inst", "of", "root"): (torch.arange(len(roots)), torch.from_numpy(roots))},
                                         num_nodes_dict={"inst": len(roots), "root": n_roots}).to(dev)

        def forward(self, h, h_drop, unit, attn_center, attn_inst, training):
            heads, d = a.heads, h.shape[1]
            n, length = self.inst.shape
            # path rotations towards the root: [L, d/2] complex, row 0 = 1
            rot = [torch.ones(d // 2, dtype=torch.complex64, device=dev)]
            for rel, forward in self.mp["steps"]:
                r = unit[rel]
                rot.append(rot[-1] * (r.conj() if forward else r))
            rot = torch.stack(rot)
            x = torch.view_as_complex(h_drop[self.inst].reshape(n, length, d // 2, 2))
            enc = torch.view_as_real((x * rot).mean(1)).reshape(n, d)
            cols = slice(self.column * heads, (self.column + 1) * heads)
            center = h[self.roots] @ attn_center[:, cols]  # [roots, heads]
            if a.backend == "dgl":
                e = F.leaky_relu(dgl.ops.e_add_v(self.g, enc @ attn_inst[:, cols], center), a.slope)
                alpha = F.dropout(dgl.ops.edge_softmax(self.g, e), a.attn_dropout, training)
                out = dgl.ops.u_mul_e_sum(self.g, enc.unsqueeze(1), alpha.unsqueeze(2))  # [roots, heads, d]
            else:
                e = F.leaky_relu(enc @ attn_inst[:, cols] + center[self.root_of], a.slope)
                alpha = F.dropout(softmax(e, self.root_of, num_nodes=self.n_roots), a.attn_dropout, training)
                out = scatter(enc.unsqueeze(1) * alpha.unsqueeze(2), self.root_of, dim=0, dim_size=self.n_roots,
                              reduce="sum")
            return F.elu(out.reshape(-1, heads * d))

    class MAGNN(nn.Module):
        def __init__(self):
            super().__init__()
            # FlexGraph name -> Parameter ('.' is not allowed in torch parameter names)
            self.p = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(torch.from_numpy(v).to(dev))
                                       for k, v in params.items()})
            self.feats = {t: torch.from_numpy(f).to(dev) for t, f in data.features.items() if f.size}
            self.layers = []
            for l, mps in enumerate(layer_metapaths(data, metapaths, a.layers)):
                by_type = {}
                for col, mp in enumerate(mps):
                    t = mp["types"][0]
                    glob, roots, _ = selection[mp["name"]]
                    by_type.setdefault(t, []).append(MetapathSpecific(mp, glob, roots, data.counts[t], col))
                self.layers.append(by_type)

        def P(self, name):
            return self.p[name.replace(".", "__")]

        def forward(self):
            parts = []
            for t, name in enumerate(data.types):
                if name in self.feats:
                    parts.append(self.feats[name] @ self.P(f"project.{name}.weight") + self.P(f"project.{name}.bias"))
                else:
                    parts.append(self.P(f"embed.{name}.table"))
            h = torch.cat(parts)
            target = data.types.index(data.target)
            for l, by_type in enumerate(self.layers):
                last = l == len(self.layers) - 1
                pre = f"layer{l}."
                h_drop = F.dropout(h, a.dropout, self.training) if l == 0 else h
                raw = self.P(pre + "relation_rotations")
                unit = torch.view_as_complex(F.normalize(raw.reshape(raw.shape[0], -1, 2), p=2, dim=-1, eps=1e-12))
                outs = []
                for t, name in enumerate(data.types):
                    if last and t != target:
                        continue
                    if t not in by_type:
                        outs.append(h.new_zeros(data.counts[t], a.heads * h.shape[1]))
                        continue
                    hp = [m(h, h_drop, unit, self.P(pre + "attn_center"), self.P(pre + "attn_inst"),
                            self.training) for m in by_type[t]]
                    fc_w, fc_b, q = (self.P(pre + f"fuse.{name}.{s}") for s in ("weight", "bias", "q"))
                    s = torch.cat([torch.tanh(x @ fc_w + fc_b).mean(0, keepdim=True) @ q for x in hp])  # [P, 1]
                    beta = torch.softmax(s, dim=0)
                    outs.append(sum(beta[k] * hp[k] for k in range(len(hp))))
                z = torch.cat(outs) @ self.P(pre + "output.weight") + self.P(pre + "output.bias")
                h = z if last else F.elu(z)
            return h

    return MAGNN()


def run(a):
    data = HeteroData(a.data, a.split, a.normalize_features, need_features=a.write_weights is None)
    metapaths = default_metapaths(data)
    shapes = parameter_shapes(data, metapaths, a.hidden, a.layers, a.heads, a.attn_dim)
    if a.write_weights:
        write_initial_weights(a.write_weights, shapes, a.seed)
        print(f"wrote {len(shapes)} parameters to {a.write_weights}")
        return None

    import torch
    from run_baseline import report, train_full_batch
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.backend == "dgl":
        import dgl
        dgl.seed(a.seed)
        versions = {"torch": torch.__version__, "dgl": dgl.__version__}
    else:
        import torch_geometric
        versions = {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__}

    t0 = time.perf_counter()
    rng = np.random.default_rng(a.seed)
    used = {m["name"] for mps in layer_metapaths(data, metapaths, a.layers) for m in mps}
    selection = {m["name"]: enumerate_instances(data, m, a.max_instances, rng) for m in metapaths if m["name"] in used}
    selection_seconds = time.perf_counter() - t0
    instances = {k: int(v[0].shape[0]) for k, v in selection.items()}
    capped = sum(v[2] for v in selection.values())
    print(f"selection {selection_seconds:.3f}s, instances {instances}, capped groups {capped}", flush=True)

    params, from_files = load_parameters(a.weights, shapes, a.seed)
    net = build_model(data, metapaths, selection, params, a)
    w = argparse.Namespace(label=data.label, train_idx=data.train_idx, valid_idx=data.valid_idx,
                           test_idx=data.test_idx)
    t = train_full_batch(a, net, net, w)
    res = {
        "framework": a.backend, "model": "magnn", "dataset": os.path.basename(os.path.normpath(a.data)),
        "num_nodes": data.n, "num_edges": int(sum(r["edges"] for r in data.relations)),
        "metapaths": [m["name"] for m in metapaths], "instances": instances, "capped_groups": int(capped),
        "epochs": a.epochs, "warmup": a.warmup, "hidden": a.hidden, "layers": a.layers, "heads": a.heads,
        "attn_dim": a.attn_dim, "dropout": a.dropout, "attn_dropout": a.attn_dropout, "lr": a.lr,
        "weight_decay": a.weight_decay, "threads": a.threads, "max_instances": a.max_instances,
        "normalize_features": a.normalize_features, "parameters_from_files": from_files,
        "parameters": len(shapes), "selection_seconds": selection_seconds,
        **t,
        "versions": versions,
    }
    return report(a, res)


if __name__ == "__main__":
    run(ARGS)
