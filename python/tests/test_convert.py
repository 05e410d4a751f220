"""Datasets by node and edge type, and from PyTorch Geometric and DGL objects. Heterogeneous
arrays must build what the OGB raw loader builds from the same data written as a directory (the
same training losses); the converters must give what from_arrays gives. PyG and DGL objects are
stood in for by objects with their attributes, whose tensors answer detach/cpu/numpy as torch's
do (torch_geometric and dgl are not installed here; with them, the real objects go the same way).
Needs the extension module: a missing one fails these tests."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
import flexgraph  # noqa: E402
from flexgraph import _core  # noqa: E402,F401  (fails here when the module is not built)

COUNTS = {"movie": 120, "director": 40, "actor": 90}
CLASSES = 3


def hetero_data(seed: int = 0) -> dict:
    """Movies whose class shows in their director and actors (as IMDB's genres do)."""
    rng = np.random.default_rng(seed)
    n = COUNTS
    y = rng.integers(0, CLASSES, n["movie"])
    director = (y * (n["director"] // CLASSES) + rng.integers(0, n["director"] // CLASSES, n["movie"]))
    movies = np.repeat(np.arange(n["movie"]), 3)
    actors = y[movies] * (n["actor"] // CLASSES) + rng.integers(0, n["actor"] // CLASSES, movies.size)
    x = {t: rng.normal(0, 1, (c, 6)).astype(np.float32) for t, c in n.items()}
    x["movie"][np.arange(n["movie"]), y] += 0.5
    perm = rng.permutation(n["movie"])
    return {
        "edges": {("movie", "directed_by", "director"): np.stack([np.arange(n["movie"]), director]),
                  ("movie", "starring", "actor"): np.stack([movies, actors])},
        "features": x, "labels": {"movie": y},
        "train": {"movie": np.sort(perm[:60])}, "valid": {"movie": np.sort(perm[60:80])},
        "test": {"movie": np.sort(perm[80:])},
    }


def write_ogb(d: dict, root: Path) -> Path:
    """The same data as an OGB raw heterogeneous directory (the layout of ../shared/data/imdb)."""
    def csv(path: Path, rows) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt") as f:
            for r in rows:
                f.write(",".join(str(v) for v in (r if np.ndim(r) else [r])) + "\n")

    types = list(COUNTS)
    csv(root / "raw" / "num-node-dict.csv.gz", [types, [COUNTS[t] for t in types]])
    csv(root / "raw" / "triplet-type-list.csv.gz", list(d["edges"]))
    for key, e in d["edges"].items():
        rel = root / "raw" / "relations" / "___".join(key)
        csv(rel / "num-edge-list.csv.gz", [e.shape[1]])
        csv(rel / "edge.csv.gz", e.T.tolist())
    for t, x in d["features"].items():
        csv(root / "raw" / "node-feat" / t / "node-feat.csv.gz", [[repr(float(v)) for v in row] for row in x])
    csv(root / "raw" / "node-label" / "movie" / "node-label.csv.gz", d["labels"]["movie"].tolist())
    for w in ("train", "valid", "test"):
        csv(root / "split" / "s" / "movie" / f"{w}.csv.gz", d[w]["movie"].tolist())
    return root


def losses(ds, model: str = "rgcn", **kw) -> list[float]:
    return flexgraph.train(ds, model=model, epochs=4, seed=5, threads=1, **kw).losses


def test_hetero_arrays_build_what_the_ogb_loader_builds(tmp_path):
    d = hetero_data()
    ds = flexgraph.Dataset.from_arrays(**d)
    assert sorted(ds.node_types) == sorted(COUNTS) and ds.num_nodes == sum(COUNTS.values())
    assert ds.features("actor") is not None and np.shares_memory(ds.features("actor"), d["features"]["actor"])
    np.testing.assert_array_equal(ds.labels("movie"), d["labels"]["movie"])
    loaded = flexgraph.Dataset.load(write_ogb(d, tmp_path / "ogb"))
    assert ds.num_edges == loaded.num_edges
    expected = losses(loaded)
    assert len(expected) == 4 and expected[-1] < expected[0]
    assert losses(ds) == pytest.approx(expected, rel=1e-6)
    moved = {k: np.stack([e[0], (e[1] + 1) % COUNTS["actor"]]) if k[1] == "starring" else e
             for k, e in d["edges"].items()}  # other actors: the losses must tell
    assert losses(flexgraph.Dataset.from_arrays(**dict(d, edges=moved))) != pytest.approx(expected, rel=1e-6)


def test_hetero_arrays_errors_name_the_type_and_field():
    d = hetero_data()
    with pytest.raises(flexgraph.InvalidArgumentError, match=r"labels: unknown node type 'film'"):
        flexgraph.Dataset.from_arrays(**dict(d, labels={"film": d["labels"]["movie"]}))
    with pytest.raises(flexgraph.InvalidArgumentError, match=r"train\['movie'\]: node 500 outside \[0, 120\)"):
        flexgraph.Dataset.from_arrays(**dict(d, train={"movie": [1, 500]}))
    with pytest.raises(flexgraph.InvalidArgumentError, match=r"num_nodes\['actor'\]: 5, but the arrays need 90"):
        flexgraph.Dataset.from_arrays(**d, num_nodes={"actor": 5})
    with pytest.raises(flexgraph.InvalidArgumentError, match=r"keys are \(src_type, relation, dst_type\)"):
        flexgraph.Dataset.from_arrays({("movie", "actor"): np.zeros((2, 1), np.int64)})


class Tensor:
    """Answers what the converters ask of a torch tensor."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.a


def planted(seed: int = 1):
    rng = np.random.default_rng(seed)
    n = 150
    y = np.arange(n) % CLASSES
    src = rng.integers(0, n, 5 * n)
    dst = (src + CLASSES * rng.integers(1, n // CLASSES, 5 * n)) % n
    x = rng.normal(0, 0.5, (n, 8)).astype(np.float32)
    x[np.arange(n), y] += 1.0
    masks = [np.arange(n) % 3 == k for k in range(3)]
    return np.stack([src, dst]), x, y, masks


def test_pyg_data_trains_as_its_arrays():
    e, x, y, (tr, va, te) = planted()
    data = SimpleNamespace(edge_index=Tensor(e), x=Tensor(x), y=Tensor(y), train_mask=Tensor(tr),
                           val_mask=Tensor(va), test_mask=Tensor(te), num_nodes=len(y))
    ds = flexgraph.Dataset.from_pyg(data)
    assert np.shares_memory(ds.features(), x)  # the tensor's memory, no copy
    ref = flexgraph.Dataset.from_arrays(e, features=x, labels=y, train=tr, valid=va, test=te)
    assert losses(ds, "gcn") == losses(ref, "gcn")
    np.testing.assert_array_equal(ds.split()[1], np.flatnonzero(va))


class HeteroData:
    """PyG's HeteroData as the converter reads it: node_types, edge_types, data[type].attr."""

    def __init__(self, d: dict):
        self.node_types = list(COUNTS)
        self.edge_types = list(d["edges"])
        self._s = {}
        for t in self.node_types:
            store = SimpleNamespace(x=Tensor(d["features"][t]), num_nodes=COUNTS[t])
            if t in d["labels"]:
                n = COUNTS[t]
                store.y = Tensor(d["labels"][t])
                for w, name in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
                    m = np.zeros(n, bool)
                    m[d[w][t]] = True
                    setattr(store, name, Tensor(m))
            self._s[t] = store
        for k, e in d["edges"].items():
            self._s[k] = SimpleNamespace(edge_index=Tensor(e))

    def __getitem__(self, key):
        return self._s[key]


def test_pyg_hetero_data_trains_as_its_arrays():
    d = hetero_data(3)
    ds = flexgraph.Dataset.from_pyg(HeteroData(d))
    assert losses(ds) == losses(flexgraph.Dataset.from_arrays(**d))
    for got, w in zip(ds.split("movie"), ("train", "valid", "test")):
        np.testing.assert_array_equal(got, d[w]["movie"])


class DGLGraph:
    """A DGL graph as the converter reads it: ntypes, canonical_etypes, num_nodes, edges, nodes[t].data."""

    def __init__(self, edges: dict, counts: dict, data: dict):
        self.ntypes = list(counts)
        self.canonical_etypes = list(edges)
        self._edges, self._counts = edges, counts
        self.nodes = {t: SimpleNamespace(data=data.get(t, {})) for t in counts}

    def num_nodes(self, ntype):
        return self._counts[ntype]

    def edges(self, etype):
        e = self._edges[etype]
        return Tensor(e[0]), Tensor(e[1])


def test_dgl_graphs_train_as_their_arrays():
    e, x, y, (tr, va, te) = planted(2)
    g = DGLGraph({("_N", "_E", "_N"): e}, {"_N": len(y)},
                 {"_N": {"feat": Tensor(x), "label": Tensor(y), "train_mask": Tensor(tr), "val_mask": Tensor(va),
                         "test_mask": Tensor(te)}})
    ref = flexgraph.Dataset.from_arrays(e, features=x, labels=y, train=tr, valid=va, test=te)
    assert losses(flexgraph.Dataset.from_dgl(g), "gcn") == losses(ref, "gcn")

    d = hetero_data(4)
    data = {t: {"feat": Tensor(f)} for t, f in d["features"].items()}
    data["movie"].update({"label": Tensor(d["labels"]["movie"])})
    for w, name in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
        m = np.zeros(COUNTS["movie"], bool)
        m[d[w]["movie"]] = True
        data["movie"][name] = Tensor(m)
    g = DGLGraph(d["edges"], COUNTS, data)
    ds = flexgraph.Dataset.from_dgl(g)
    assert losses(ds) == losses(flexgraph.Dataset.from_arrays(**d))
    for got, w in zip(ds.split("movie"), ("train", "valid", "test")):
        np.testing.assert_array_equal(got, d[w]["movie"])
