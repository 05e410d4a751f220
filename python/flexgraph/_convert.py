"""Datasets from heterogeneous arrays, PyTorch Geometric ``Data``/``HeteroData`` and DGL graphs
(used by flexgraph.Dataset; neither library is imported: their objects are read by attribute)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from . import _core

Edges = Mapping[tuple[str, str, str], Any]


def to_numpy(t: Any) -> np.ndarray | None:
    """A NumPy array of a torch tensor (detached, on the CPU), an array or a list; None stays None."""
    if t is None:
        return None
    if hasattr(t, "detach"):
        t = t.detach()
    if hasattr(t, "cpu"):
        t = t.cpu()
    if hasattr(t, "numpy"):
        return np.asarray(t.numpy())
    return np.asarray(t)


def _pairs(edges: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    e = to_numpy(edges)
    if type(edges).__module__.startswith("scipy.sparse"):
        coo = edges.tocoo()
        return np.asarray(coo.row), np.asarray(coo.col)
    if e.ndim != 2 or 2 not in e.shape:
        raise _core.InvalidArgumentError(f"{what}: a [2, m] or [m, 2] integer array expected, got shape {e.shape}")
    return (e[0], e[1]) if e.shape[0] == 2 else (e[:, 0], e[:, 1])


def _ids(split: Any, what: str, n: int) -> np.ndarray | None:
    a = to_numpy(split)
    if a is None:
        return None
    if a.dtype == np.bool_:
        if a.shape != (n,):
            raise _core.InvalidArgumentError(f"{what}: a mask of {a.shape} for {n} nodes")
        return np.flatnonzero(a)
    return a.reshape(-1)


def _per_type(arg: Any, what: str) -> dict[str, Any]:
    if arg is None:
        return {}
    if not isinstance(arg, Mapping):
        raise _core.InvalidArgumentError(f"{what}: a dict by node type expected for heterogeneous edges")
    return dict(arg)


def hetero_from_arrays(edges: Edges, features: Any = None, labels: Any = None, train: Any = None,
                       valid: Any = None, test: Any = None, num_nodes: Mapping[str, int] | None = None,
                       name: str = "arrays") -> Any:
    """The core's dataset handle of a heterogeneous graph (see Dataset.from_arrays)."""
    features, labels = _per_type(features, "features"), _per_type(labels, "labels")
    splits = {w: _per_type(s, w) for w, s in (("train", train), ("valid", valid), ("test", test))}
    relations, need = [], {}
    for key, e in edges.items():
        if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key)):
            raise _core.InvalidArgumentError(f"edges: keys are (src_type, relation, dst_type), got {key!r}")
        src, dst = _pairs(e, f"edges[{key!r}]")
        if src.size and min(src.min(), dst.min()) < 0:
            raise _core.InvalidArgumentError(f"edges[{key!r}]: negative node id")
        for t, ids in ((key[0], src), (key[2], dst)):
            need[t] = max(need.get(t, 0), int(ids.max()) + 1 if ids.size else 0)
        relations.append((key[0], key[1], key[2], src, dst))
    x = {t: np.ascontiguousarray(to_numpy(f), dtype=np.float32) for t, f in features.items() if f is not None}
    y = {t: to_numpy(v) for t, v in labels.items() if v is not None}
    # Node types are those the edges and num_nodes name; arrays of another type are refused by name.
    known = set(need) | set(num_nodes or {})
    for t, a in list(x.items()) + list(y.items()):
        if t in known:
            need[t] = max(need.get(t, 0), a.shape[0])
    for s in splits.values():
        for t, v in s.items():
            a = to_numpy(v)
            if t in known and a is not None and a.dtype == np.bool_:
                need[t] = max(need.get(t, 0), a.shape[0])
    # Node types in num_nodes' order, then as they first appear (edges, features, labels, masks):
    # the order a model's per-type parameters follow, as a directory's num-node-dict gives it.
    counts = {}
    for t, n in (num_nodes or {}).items():
        if int(n) < need.get(t, 0):
            raise _core.InvalidArgumentError(f"num_nodes[{t!r}]: {n}, but the arrays need {need[t]}")
        counts[t] = int(n)
    for t, n in need.items():
        counts.setdefault(t, n)
    split_args = {}
    for t in set().union(*[s.keys() for s in splits.values()]):
        n = counts.get(t, 0)
        split_args[t] = tuple(_ids(splits[w].get(t), f"{w}[{t!r}]", n) for w in ("train", "valid", "test"))
    return _core.from_hetero_arrays(list(counts.items()), relations, x, y, split_args, name)


def _get(store: Any, *names: str) -> Any:
    for n in names:
        v = store.get(n) if isinstance(store, Mapping) else getattr(store, n, None)
        if v is not None:
            return v
    return None


def pyg_arrays(data: Any) -> dict[str, Any]:
    """from_arrays' arguments of a PyG ``Data`` (edge_index, x, y, train/val/test masks) or
    ``HeteroData`` (the same per node and edge type)."""
    if hasattr(data, "edge_types") and hasattr(data, "node_types"):
        args: dict[str, Any] = {k: {} for k in ("features", "labels", "train", "valid", "test", "num_nodes")}
        edges = {tuple(et): data[et].edge_index for et in data.edge_types}
        for nt in data.node_types:
            store = data[nt]
            for arg, names in (("features", ("x",)), ("labels", ("y",)), ("train", ("train_mask",)),
                               ("valid", ("val_mask", "valid_mask")), ("test", ("test_mask",)),
                               ("num_nodes", ("num_nodes",))):
                v = _get(store, *names)
                if v is not None:
                    args[arg][nt] = v
        return {"edges": edges, **args}
    return {"edges": data.edge_index, "features": _get(data, "x"), "labels": _get(data, "y"),
            "train": _get(data, "train_mask"), "valid": _get(data, "val_mask", "valid_mask"),
            "test": _get(data, "test_mask"), "num_nodes": _get(data, "num_nodes")}


def dgl_arrays(g: Any, feature: str = "feat", label: str = "label") -> dict[str, Any]:
    """from_arrays' arguments of a DGL graph: edges per canonical edge type, and per node type the
    node data `feature`, `label`, train_mask, val_mask and test_mask."""
    per_type: dict[str, dict[str, Any]] = {k: {} for k in ("features", "labels", "train", "valid", "test")}
    num_nodes = {}
    for nt in g.ntypes:
        data = g.nodes[nt].data
        num_nodes[nt] = int(g.num_nodes(nt))
        for arg, names in (("features", (feature,)), ("labels", (label,)), ("train", ("train_mask",)),
                           ("valid", ("val_mask", "valid_mask")), ("test", ("test_mask",))):
            v = _get(data, *names)
            if v is not None:
                per_type[arg][nt] = v
    edges = {}
    for et in g.canonical_etypes:
        u, v = g.edges(etype=et)
        edges[tuple(et)] = np.stack([to_numpy(u), to_numpy(v)])
    if len(g.ntypes) == 1 and len(edges) == 1:  # homogeneous
        nt = g.ntypes[0]
        return {"edges": next(iter(edges.values())), "num_nodes": num_nodes[nt],
                **{k: v.get(nt) for k, v in per_type.items()}}
    return {"edges": edges, "num_nodes": num_nodes, **per_type}
