"""The package with models beyond node classification: a link-prediction model's recommendations
as arrays (the same as ``flexgraph embed --recommend`` writes), and a model from a UDF library
loaded by path. Needs the extension module, this build's flexgraph binary and its out-of-tree
example model (udf_examples/external_model), and ../shared/data/lastfm: a missing one fails."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
import flexgraph  # noqa: E402
from flexgraph import _core  # noqa: E402,F401  (fails here when the module is not built)

ROOT = PYTHON_DIR.parent


def flexgraph_bin() -> Path:
    path = Path(os.environ.get("FLEXGRAPH_BIN") or ROOT / "build" / "release" / "runtime" / "flexgraph")
    assert os.access(path, os.X_OK), f"no flexgraph binary at {path} (build it, or set FLEXGRAPH_BIN)"
    return path


def shared_data(name: str) -> Path:
    base = Path(os.environ.get("FLEXGRAPH_SHARED_DATA") or ROOT.parent / "shared" / "data")
    assert (base / name).is_dir(), f"no dataset {base / name} (set FLEXGRAPH_SHARED_DATA)"
    return base / name


@pytest.fixture(scope="module")
def lastfm():
    return flexgraph.Dataset.load(str(shared_data("lastfm")))


@pytest.fixture(scope="module")
def pinsage(lastfm, tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("pinsage") / "model"
    return flexgraph.train(lastfm, model="pinsage", epochs=2, seed=1, threads=1, save_model=model_dir)


def test_recommend_matches_the_command_line(lastfm, pinsage, tmp_path):
    k = 5
    rec = pinsage.model.recommend(lastfm, k=k)
    assert isinstance(rec, flexgraph.Recommendations)
    assert rec.ids.dtype == np.int32 and rec.scores.dtype == np.float32
    assert rec.ids.shape == rec.scores.shape and rec.ids.shape[1] == k and rec.ids.shape[0] > 0
    assert (rec.src_type, rec.dst_type) == ("user", "artist")
    assert 0 <= rec.test_recall <= 1
    valid = rec.ids >= 0
    assert valid.any() and (np.diff(np.where(valid, rec.scores, -np.inf), axis=1) <= 0).all()  # best first

    out = tmp_path / "top.csv"
    r = subprocess.run([str(flexgraph_bin()), "embed", "--model_dir", pinsage.model.path, "--dataset",
                        str(shared_data("lastfm")), "--out",
                        str(tmp_path / "h.npy"), "--recommend", str(out), "--top_k", str(k)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ids = np.full(rec.ids.shape, -1, np.int32)
    scores = np.zeros(rec.scores.shape, np.float32)
    with open(out) as f:
        rows = csv.reader(f)
        assert next(rows) == ["user", "rank", "artist", "score"]
        for src, rank, dst, score in rows:
            ids[int(src), int(rank) - 1] = int(dst)
            scores[int(src), int(rank) - 1] = float(score)
    np.testing.assert_array_equal(rec.ids, ids)
    np.testing.assert_allclose(np.where(valid, rec.scores, 0), scores, rtol=1e-5, atol=1e-6)  # CSV: %.6g
    assert f"test recall@{k} {rec.test_recall:.4f}" in r.stdout


def test_recommend_refuses_bad_k_and_node_classifiers(lastfm, pinsage):
    with pytest.raises(flexgraph.InvalidArgumentError, match=r"recommend: k must lie in \[1, [0-9]+\]"):
        pinsage.model.recommend(lastfm, k=0)
    rng = np.random.default_rng(0)
    ds = flexgraph.Dataset.from_arrays(rng.integers(0, 50, (2, 200)), features=np.eye(50, dtype=np.float32),
                                       labels=np.arange(50) % 2, train=np.arange(25), test=np.arange(25, 50))
    run = flexgraph.train(ds, model="gcn", epochs=2)
    with pytest.raises(flexgraph.InvalidArgumentError, match="recommendations need a link-prediction model"):
        run.model.recommend(ds, k=3)


def test_a_model_from_a_udf_library_by_path():
    lib = flexgraph_bin().parents[1] / "udf_examples" / "external_model" / "libsgc_model.so"
    assert lib.is_file(), f"no {lib} (the build's target sgc_model)"
    rng = np.random.default_rng(2)
    n, classes = 300, 3
    y = np.arange(n) % classes
    src = rng.integers(0, n, 6 * n)
    dst = (src + classes * rng.integers(1, n // classes, 6 * n)) % n  # edges inside a class
    x = rng.normal(0, 0.5, (n, 8)).astype(np.float32)
    x[np.arange(n), y] += 1.0
    ds = flexgraph.Dataset.from_arrays(np.stack([src, dst]), features=x, labels=y, train=np.arange(n // 2),
                                       test=np.arange(n // 2, n))
    run = flexgraph.train(ds, model="sgc", epochs=30, seed=1, udf_library=str(lib))
    assert run.summary["model"] == "sgc" and "sgc" in flexgraph.models()
    assert run.summary["test_accuracy"] > 0.8
    assert run.model.predict(ds).shape == (n, classes)
    with pytest.raises(flexgraph.InvalidArgumentError, match="--udf_library: cannot load /nonexistent/lib.so"):
        flexgraph.train(ds, model="sgc", epochs=1, udf_library="/nonexistent/lib.so")
