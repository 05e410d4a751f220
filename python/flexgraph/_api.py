"""The package's API over flexgraph._core (see flexgraph/__init__.py and _api.pyi)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

from . import _core  # loaded by __init__ with its symbols global
from ._convert import dgl_arrays, hetero_from_arrays, pyg_arrays, to_numpy

Error = _core.Error
InvalidArgumentError = _core.InvalidArgumentError


def models() -> list[str]:
    """The registered model names (what ``train(model=...)`` takes)."""
    return list(_core.models())


def _edge_arrays(edges: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """(sources, destinations, nodes the edges need) of an edge array or a SciPy sparse matrix."""
    if type(edges).__module__.startswith("scipy.sparse"):
        coo = edges.tocoo()  # entry (i, j): an edge i -> j
        return np.asarray(coo.row), np.asarray(coo.col), max(coo.shape)
    e = np.asarray(edges)
    if e.ndim != 2 or 2 not in e.shape:
        raise InvalidArgumentError(f"edges: a [2, m] or [m, 2] integer array expected, got shape {e.shape}")
    if e.dtype.kind not in "iu":
        raise InvalidArgumentError(f"edges: an integer array expected, got dtype {e.dtype}")
    src, dst = (e[0], e[1]) if e.shape[0] == 2 else (e[:, 0], e[:, 1])
    if src.size and min(src.min(), dst.min()) < 0:
        raise InvalidArgumentError("edges: negative node id")
    need = int(max(src.max(), dst.max())) + 1 if src.size else 0
    return src, dst, need


def to_numpy_or_sparse(a: Any) -> Any:
    return a if type(a).__module__.startswith("scipy.sparse") else to_numpy(a)


def _ids(split: Any, what: str, num_nodes: int) -> np.ndarray | None:
    """Node ids of a split given as ids or as a boolean mask over the nodes."""
    if split is None:
        return None
    a = np.asarray(split)
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.dtype == np.bool_:
        if a.shape != (num_nodes,):
            raise InvalidArgumentError(f"{what}: a mask of {a.shape} for {num_nodes} nodes")
        return np.flatnonzero(a)
    return a.reshape(-1) if a.ndim == 0 else a


class Dataset:
    """A graph with node features, labels and splits, held by the C++ core.

    Datasets from arrays train through the same code as files: the core sees them as
    ``memory:NAME`` (``spec``) while this object lives.
    """

    def __init__(self, handle: Any):
        self._h = handle

    @classmethod
    def from_arrays(cls, edges: Any, features: Any = None, labels: Any = None, train: Any = None,
                    valid: Any = None, test: Any = None, *, num_nodes: int | None = None,
                    directed: bool = False, name: str = "arrays") -> "Dataset":
        """A dataset from NumPy (or SciPy sparse, or torch) arrays.

        edges: [2, m] or [m, 2] integer array of (source, destination) pairs, or a SciPy sparse
          matrix whose entry (i, j) is an edge i -> j. A [2, 2] array is read as [2, m].
        features: [n, f]; a C-contiguous float32 array is used without a copy (kept alive),
          anything else is converted first. labels: [n] integer classes (-1: unlabeled).
        train, valid, test: node ids or boolean masks over the n nodes.
        num_nodes: default the largest of what the edges, features, labels and masks need.
        directed: keep edges one way; by default each is added in both directions, as the command
          line reads edge lists.

        Heterogeneous: `edges` a dict {(src_type, relation, dst_type): edges}, and features,
        labels, train, valid, test and num_nodes dicts by node type (the node types: those the
        edges and num_nodes name, in that order); built as the OGB raw loader builds a
        heterogeneous directory (relations as given, no reverse relations added).
        """
        if isinstance(edges, Mapping):
            return cls(hetero_from_arrays(edges, features, labels, train, valid, test, num_nodes, name))
        edges, features, labels, train, valid, test = map(to_numpy_or_sparse,
                                                          (edges, features, labels, train, valid, test))
        src, dst, need = _edge_arrays(edges)
        x = None
        if features is not None:
            x = np.asarray(features)
            if x.dtype != np.float32 or not x.flags.c_contiguous:
                x = np.ascontiguousarray(x, dtype=np.float32)
        y = None if labels is None else np.asarray(labels)
        sizes = [need]
        if x is not None and x.ndim >= 1:
            sizes.append(x.shape[0])
        if y is not None and y.ndim >= 1:
            sizes.append(y.shape[0])
        for s in (train, valid, test):
            if s is not None and np.asarray(s).dtype == np.bool_:
                sizes.append(np.asarray(s).shape[0])
        n = int(num_nodes) if num_nodes is not None else max(sizes)
        if n < need:
            raise InvalidArgumentError(f"num_nodes: {n}, but the edges name node {need - 1}")
        h = _core.from_arrays(n, np.asarray(src), np.asarray(dst), x, y, _ids(train, "train", n),
                              _ids(valid, "valid", n), _ids(test, "test", n), directed, name)
        return cls(h)

    @classmethod
    def from_pyg(cls, data: Any, *, directed: bool = False, name: str = "pyg") -> "Dataset":
        """A PyTorch Geometric ``Data`` (edge_index, x, y, train_mask, val_mask, test_mask) or
        ``HeteroData`` (the same per node and edge type)."""
        args = pyg_arrays(data)
        if isinstance(args["edges"], Mapping):
            return cls.from_arrays(**args, name=name)
        return cls.from_arrays(**args, directed=directed, name=name)

    @classmethod
    def from_dgl(cls, graph: Any, *, feature: str = "feat", label: str = "label", directed: bool = False,
                 name: str = "dgl") -> "Dataset":
        """A DGL graph: edges per canonical edge type; node data `feature`, `label`, train_mask,
        val_mask and test_mask per node type."""
        args = dgl_arrays(graph, feature, label)
        if isinstance(args["edges"], Mapping):
            return cls.from_arrays(**args, name=name)
        return cls.from_arrays(**args, directed=directed, name=name)

    @classmethod
    def load(cls, path: str | os.PathLike, split: str = "") -> "Dataset":
        """Whatever ``flexgraph train --dataset`` reads: an OGB raw directory, an edge list, a .npy
        directory, a .fgc cache or a generator spec such as ``sbm:nodes=2000,classes=4,features=16``."""
        return cls(_core.load(os.fspath(path), split))

    def save(self, path: str | os.PathLike) -> None:
        """Writes the binary cache (a path ending in .fgc) or an OGB raw directory."""
        self._h.save(os.fspath(path))

    @property
    def spec(self) -> str:
        """The name the C++ core loads this dataset by (``memory:NAME``)."""
        return self._h.spec

    @property
    def name(self) -> str:
        return self._h.name

    @property
    def node_types(self) -> list[str]:
        return list(self._h.node_types)

    @property
    def num_nodes(self) -> int:
        """Nodes of all types."""
        return int(sum(self._h.num_nodes))

    @property
    def num_edges(self) -> int:
        """Stored edges of all relations (reverse edges included)."""
        return int(self._h.num_edges)

    def _type(self, node_type: str | None) -> str:
        return node_type if node_type is not None else self._h.labeled_type

    def features(self, node_type: str | None = None) -> np.ndarray | None:
        """The feature matrix of a node type (default: the labeled one), without a copy."""
        return self._h.features(self._type(node_type))

    def labels(self, node_type: str | None = None) -> np.ndarray | None:
        return self._h.labels(self._type(node_type))

    def split(self, node_type: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(train, valid, test) node ids."""
        return self._h.split(self._type(node_type))

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, nodes={self.num_nodes}, edges={self.num_edges}, types={self.node_types})"


class Recommendations(NamedTuple):
    """``ids[s]``: source vertex s's destinations (local ids of ``dst_type``), best first, -1 past
    its candidates; ``scores[s]`` their scores; ``test_recall``: recall@k on the test edges."""
    ids: np.ndarray  # int32 [sources, k]
    scores: np.ndarray  # float32 [sources, k]
    test_recall: float
    src_type: str
    dst_type: str


class Model:
    """A trained model: a directory written by ``train --save_model`` (the parameters of the best
    validation epoch), used as ``flexgraph predict`` and ``flexgraph embed`` use it."""

    def __init__(self, path: str | os.PathLike, _owned: tempfile.TemporaryDirectory | None = None):
        self.path = os.fspath(path)
        self._owned = _owned  # a temporary directory removed with this object

    def predict(self, dataset: Dataset) -> np.ndarray:
        """Class probabilities [nodes, classes] of every target vertex of `dataset` (same schema)."""
        return _core.predict(self.path, dataset._h)

    def embed(self, dataset: Dataset, layer: int | None = None, before_output: bool = False,
              node_type: str | None = None) -> np.ndarray:
        """Hidden representations [nodes, width]: by default what ``flexgraph embed`` writes (the
        last hidden layer's output; MAGNN's and HAN's metapath embedding); `layer` K picks layer
        K's output (-1: the model's input)."""
        return _core.embed(self.path, dataset._h, -2 if layer is None else int(layer), before_output,
                           node_type or "")

    def recommend(self, dataset: Dataset, k: int = 10) -> Recommendations:
        """A link-prediction model's `k` best-scoring destinations per source vertex that the
        source did not link to in training, as ``flexgraph embed --recommend`` writes them."""
        ids, scores, recall, src_type, dst_type = _core.recommend(self.path, dataset._h, int(k))
        return Recommendations(ids, scores, recall, src_type, dst_type)

    def save(self, path: str | os.PathLike) -> "Model":
        """Copies the model directory to `path` (for ``flexgraph predict --model_dir``)."""
        shutil.copytree(self.path, os.fspath(path))
        return Model(path)

    def __repr__(self) -> str:
        return f"Model({self.path!r})"


def load_model(path: str | os.PathLike) -> Model:
    """A model saved by ``flexgraph train --save_model DIR`` (or ``train(save_model=DIR)``)."""
    return Model(path)


class Run:
    """A finished training run: ``summary`` (the summary JSON as a dict), ``history`` (one dict per
    epoch), ``model`` (the parameters of the best validation epoch)."""

    def __init__(self, summary: dict, model: Model):
        self.summary = summary
        self.model = model

    @property
    def history(self) -> list[dict]:
        return self.summary.get("history", [])

    @property
    def losses(self) -> list[float]:
        return self.summary.get("losses", [])

    @property
    def test_accuracy(self) -> float | None:
        return self.summary.get("test_accuracy")

    def __repr__(self) -> str:
        return (f"Run(model={self.summary.get('model')!r}, epochs={self.summary.get('epochs')}, "
                f"test_accuracy={self.test_accuracy})")


def _flag_args(options: Mapping[str, Any]) -> list[str]:
    """``flexgraph train`` flags from keyword options: True -> --k, False -> --nok, a dict ->
    k=v,... (``model_opt``), a list -> comma-separated, None -> left out."""
    args: list[str] = []
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            args.append(f"--{key}" if value else f"--no{key}")
            continue
        if isinstance(value, Mapping):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        args += [f"--{key}", os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def _binary() -> str:
    """The `flexgraph` binary for distributed runs: $FLEXGRAPH_BIN, the one installed with the
    package, or the one on PATH."""
    for candidate in (os.environ.get("FLEXGRAPH_BIN"), str(Path(__file__).with_name("bin") / "flexgraph"),
                      shutil.which("flexgraph")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise Error("workers: no flexgraph binary (set FLEXGRAPH_BIN, or install the package with it)")


def train(dataset: Dataset | str, model: str = "gcn", *, epochs: int | None = None, seed: int | None = None,
          progress: Callable[[int, float, dict], Any] | None = None, workers: int | None = None,
          save_model: str | os.PathLike | None = None, quiet: bool = True,
          launch_options: Mapping[str, Any] | None = None, mpi: Sequence[str] | None = None,
          **options: Any) -> Run:
    """Trains `model` on `dataset` as ``flexgraph train`` does and returns the Run.

    options: any ``flexgraph train`` flag by name (``lr=0.01``, ``hidden=64``, ``dropout=0.5``,
      ``batch_size=512``, ``model_opt={"heads": 4}``, ``tensorboard="runs/a"``, ...); errors name
      the flag. progress(epoch, loss, metrics) runs after every epoch (metrics: the evaluated
      epoch's, else empty); Ctrl-C stops the run and raises KeyboardInterrupt. The GIL is released
      while training. save_model: keep the model in this directory (default: a temporary one that
      lives as long as the Run's model). quiet=False prints the command line's epoch lines.
    workers=P: a distributed run of P local worker processes through ``flexgraph launch`` (the
      dataset is written to a temporary .fgc cache first; progress is not called).
      launch_options: ``flexgraph launch`` flags (``partition="metis"``, ``hosts=FILE``, ...).
      mpi: with workers=P, MPI ranks instead of the launcher: ``mpirun -np P <mpi...> flexgraph
      worker --comm mpi -- train ...``; mpi holds mpirun's further arguments (``[]``, or e.g.
      ``["--oversubscribe", "--hostfile", "hosts"]``).
    """
    if isinstance(dataset, str):
        dataset = Dataset.load(dataset)
    owned = None
    if save_model is None:
        owned = tempfile.TemporaryDirectory(prefix="flexgraph-model-")
        model_dir = os.path.join(owned.name, "model")
    else:
        model_dir = os.fspath(save_model)
    flags = {"model": model, "epochs": epochs, "seed": seed, "save_model": model_dir, "quiet": quiet, **options}
    if workers is None:
        summary = _core.train(["--dataset", dataset.spec] + _flag_args(flags), progress)
        return Run(json.loads(summary), Model(model_dir, owned))
    with tempfile.TemporaryDirectory(prefix="flexgraph-launch-") as tmp:
        data = os.path.join(tmp, "dataset.fgc")
        dataset.save(data)
        summary_path = os.path.join(tmp, "summary.json")
        flags["summary_json"] = summary_path
        train_args = ["--", "train", "--dataset", data] + _flag_args(flags)
        if mpi is not None:
            if launch_options:
                raise InvalidArgumentError("launch_options: flags of flexgraph launch, which an MPI run does not use")
            what = f"mpirun -np {int(workers)}"
            cmd = ["mpirun", "-np", str(int(workers)), *mpi, _binary(), "worker", "--comm", "mpi"] + train_args
        else:
            what = f"flexgraph launch --workers {workers}"
            cmd = ([_binary(), "launch", "--workers", str(int(workers)), "--log_dir", os.path.join(tmp, "logs")]
                   + _flag_args(dict(launch_options or {})) + train_args)
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except FileNotFoundError as e:
            raise Error(f"{what}: cannot start {e.filename} (MPI runs need mpirun on PATH)") from None
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
            raise Error(f"{what} failed (exit status {done.returncode}):\n{tail}")
        with open(summary_path) as f:
            return Run(json.load(f), Model(model_dir, owned))
