"""The Python package (flexgraph): datasets from arrays trained, predicted and embedded by the C++
core. Needs the extension module (FLEXGRAPH_MODULE_DIR, or the installed package): a missing one
fails these tests, it does not skip them."""

from __future__ import annotations

import json
import os
import shutil
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

PYTHON_DIR = Path(__file__).resolve().parents[1]
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
import flexgraph  # noqa: E402
from flexgraph import _core  # noqa: E402  (fails here when the module is not built)

N, CLASSES, WIDTH = 240, 3, 8


def planted_graph(seed: int = 0):
    """Three planted classes: edges mostly inside a class, features a noisy one-hot of it."""
    rng = np.random.default_rng(seed)
    y = np.arange(N) % CLASSES
    src = rng.integers(0, N, 6 * N)
    dst = np.where(rng.random(6 * N) < 0.9,
                   (src + CLASSES * rng.integers(1, N // CLASSES, 6 * N)) % N,  # same class
                   rng.integers(0, N, 6 * N))
    x = rng.normal(0, 0.5, (N, WIDTH)).astype(np.float32)
    x[np.arange(N), y] += 1.0
    edges = np.stack([src, dst])  # [2, m]
    train = np.zeros(N, bool)
    train[: N // 2] = True
    valid = np.zeros(N, bool)
    valid[N // 2: 3 * N // 4] = True
    test = np.zeros(N, bool)
    test[3 * N // 4:] = True
    return edges, x, y, train, valid, test


@pytest.fixture(scope="module")
def data():
    return planted_graph()


@pytest.fixture(scope="module")
def dataset(data):
    edges, x, y, train, valid, test = data
    return flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=train, valid=valid, test=test)


@pytest.fixture(scope="module")
def run(dataset):
    return flexgraph.train(dataset, model="gcn", epochs=12, seed=3, lr=0.05, hidden=16)


def test_from_a_numpy_edge_list_to_embeddings_in_five_lines(data):
    edges, x, y, train, _, test = data
    program = textwrap.dedent("""\
        import flexgraph
        ds = flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=train, test=test)
        run = flexgraph.train(ds, model="gcn", epochs=20, seed=1)
        h = run.model.embed(ds)
        """)
    assert len(program.strip().splitlines()) <= 5
    scope = {"edges": edges, "x": x, "y": y, "train": train, "test": test}
    exec(compile(program, "five_lines", "exec"), scope)
    h, run = scope["h"], scope["run"]
    assert isinstance(h, np.ndarray) and h.dtype == np.float32
    assert h.shape[0] == N and h.shape[1] > 0 and np.isfinite(h).all()
    assert run.summary["test_accuracy"] > 0.8  # the planted classes are found


def test_history_has_one_entry_per_epoch(run):
    assert len(run.history) == 12
    assert [e["epoch"] for e in run.history] == list(range(1, 13))
    assert [e["loss"] for e in run.history] == pytest.approx(run.summary["losses"])
    assert run.summary["epochs"] == 12 and run.summary["model"] == "gcn"
    assert run.history[-1]["loss"] < run.history[0]["loss"]


def test_predict_returns_probabilities_per_node(run, dataset, data):
    p = run.model.predict(dataset)
    assert p.shape == (N, CLASSES) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    y, test = data[2], data[5]
    # The saved model is the best validation epoch's: its test accuracy is the one the run reported.
    acc = float((p.argmax(axis=1)[test] == y[test]).mean())
    assert acc == pytest.approx(run.summary["test_accuracy"], abs=1e-6)
    e = run.model.embed(dataset, layer=0)
    assert e.shape == (N, 16)


def test_features_are_borrowed_not_copied(data):
    edges, x, y, train, valid, test = data
    assert x.dtype == np.float32 and x.flags.c_contiguous
    ds = flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=train)
    assert _core.tensor_address(ds._h, "node") == x.__array_interface__["data"][0]
    assert np.shares_memory(ds.features(), x)
    # Anything else is converted first, and so not shared.
    f = np.asfortranarray(x.astype(np.float64))
    other = flexgraph.Dataset.from_arrays(edges, features=f, labels=y, train=train)
    assert _core.tensor_address(other._h, "node") != f.__array_interface__["data"][0]
    np.testing.assert_array_equal(other.features(), x)


def test_borrowed_features_outlive_the_callers_reference(data):
    edges, x, y, train, _, _ = data
    copy = x.copy()
    ds = flexgraph.Dataset.from_arrays(edges, features=copy, labels=y, train=train)
    address = copy.__array_interface__["data"][0]
    del copy  # the dataset keeps the array alive
    assert _core.tensor_address(ds._h, "node") == address
    np.testing.assert_array_equal(ds.features(), x)


def test_masks_and_index_splits_train_alike(data):
    edges, x, y, train, valid, test = data
    by_mask = flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=train, valid=valid, test=test)
    by_ids = flexgraph.Dataset.from_arrays(edges.T.copy(), features=x, labels=y, train=np.flatnonzero(train),
                                           valid=np.flatnonzero(valid), test=np.flatnonzero(test))
    for a, b in zip(by_mask.split(), by_ids.split()):
        np.testing.assert_array_equal(a, b)
    r1 = flexgraph.train(by_mask, epochs=4, seed=7)
    r2 = flexgraph.train(by_ids, epochs=4, seed=7)
    assert r1.summary["losses"] == r2.summary["losses"]
    assert r1.summary["test_accuracy"] == r2.summary["test_accuracy"]


def test_scipy_sparse_edges_match_the_edge_list(data):
    edges, x, y, train, _, test = data
    adj = scipy.sparse.coo_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(N, N)).tocsr()
    a = flexgraph.Dataset.from_arrays(adj, features=x, labels=y, train=train, test=test)
    b = flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=train, test=test)
    assert a.num_edges == b.num_edges
    assert flexgraph.train(a, epochs=3, seed=2).summary["losses"] == flexgraph.train(b, epochs=3, seed=2).summary["losses"]


def test_progress_is_called_after_every_epoch(dataset):
    calls = []
    run = flexgraph.train(dataset, epochs=5, seed=1, eval_every=2,
                          progress=lambda epoch, loss, metrics: calls.append((epoch, loss, dict(metrics))))
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5]
    assert [c[1] for c in calls] == pytest.approx(run.summary["losses"])
    assert calls[0][2] == {} and "test_accuracy" in calls[1][2]  # metrics of evaluated epochs


def test_an_exception_in_progress_stops_the_run(dataset):
    def stop(epoch, loss, metrics):
        if epoch == 2:
            raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        flexgraph.train(dataset, epochs=50, seed=1, progress=stop)


def test_ctrl_c_stops_a_run_with_keyboard_interrupt(tmp_path):
    # No progress callback: the run itself notices the signal between epochs.
    script = tmp_path / "long_run.py"
    script.write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(PYTHON_DIR)!r})
        import flexgraph
        ds = flexgraph.Dataset.load("sbm:nodes=3000,classes=4,features=16")
        flexgraph.train(ds, epochs=100000, seed=1, quiet=False)
        """))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ))
    try:
        seen = ""
        while not seen.startswith("epoch"):  # the first epoch line
            ready, _, _ = select.select([child.stderr], [], [], 120)
            assert ready, "no epoch reported within 120 s"
            seen = child.stderr.readline()
            assert seen, "the run ended before its first epoch"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0
    assert "KeyboardInterrupt" in err
    assert err.count("\nepoch") < 1000  # stopped long before the end


def test_errors_carry_the_core_message(dataset, data):
    edges, x, y, train, _, _ = data
    with pytest.raises(flexgraph.Error) as e:
        flexgraph.train(dataset, model="no_such_model", epochs=1)
    assert "no_such_model" in str(e.value)
    with pytest.raises(ValueError, match=r"train: node 999 outside \[0, 240\)"):
        flexgraph.Dataset.from_arrays(edges, features=x, labels=y, train=[0, 999])
    with pytest.raises(flexgraph.Error, match="--lr"):
        flexgraph.train(dataset, epochs=1, lr="fast")
    with pytest.raises(flexgraph.Error, match="/no/such/dir"):
        flexgraph.Dataset.load("/no/such/dir")
    assert issubclass(flexgraph.Error, RuntimeError)
    assert issubclass(flexgraph.InvalidArgumentError, flexgraph.Error)
    assert issubclass(flexgraph.InvalidArgumentError, ValueError)


def test_save_and_load_round_trip(dataset, tmp_path):
    dataset.save(tmp_path / "ds.fgc")
    back = flexgraph.Dataset.load(tmp_path / "ds.fgc")
    assert (back.num_nodes, back.num_edges) == (dataset.num_nodes, dataset.num_edges)
    np.testing.assert_array_equal(back.features(), dataset.features())
    np.testing.assert_array_equal(back.labels(), dataset.labels())
    a = flexgraph.train(dataset, epochs=3, seed=5).summary["losses"]
    assert flexgraph.train(back, epochs=3, seed=5).summary["losses"] == a


def test_generator_specs_and_saved_models(tmp_path):
    ds = flexgraph.Dataset.load("sbm:nodes=600,classes=4,features=16")
    run = flexgraph.train(ds, model="sage", epochs=3, seed=1, save_model=tmp_path / "m")
    assert (tmp_path / "m" / "model.txtpb").exists()
    again = flexgraph.load_model(tmp_path / "m")
    np.testing.assert_array_equal(again.predict(ds), run.model.predict(ds))
    assert again.predict(ds).shape == (600, 4)


def test_workers_train_through_the_launcher(dataset):
    # The flexgraph binary of this build (FLEXGRAPH_BIN, as ctest sets it) or the installed one.
    one = flexgraph.train(dataset, epochs=4, seed=1)
    two = flexgraph.train(dataset, epochs=4, seed=1, workers=2)
    assert two.summary["world_size"] == 2 and len(two.history) == 4
    assert two.summary["losses"] == pytest.approx(one.summary["losses"], rel=1e-4)
    assert two.model.predict(dataset).shape == (N, CLASSES)
    with pytest.raises(flexgraph.Error, match="--lr"):
        flexgraph.train(dataset, epochs=1, workers=2, lr="fast")


def test_workers_train_as_mpi_ranks(dataset):
    # CI builds with MPI (-DFLEXGRAPH_MPI=ON) and has mpirun: a missing one is a failure here.
    assert shutil.which("mpirun"), "mpirun is not on PATH (Debian: openmpi-bin)"
    one = flexgraph.train(dataset, epochs=4, seed=1)
    ranks = flexgraph.train(dataset, epochs=4, seed=1, workers=2, mpi=["--oversubscribe", "--allow-run-as-root"])
    assert len(ranks.history) == 4
    assert ranks.summary["losses"] == pytest.approx(one.summary["losses"], rel=1e-4)
    assert ranks.model.predict(dataset).shape == (N, CLASSES)
    with pytest.raises(flexgraph.Error, match="mpirun -np 2 failed"):
        flexgraph.train(dataset, epochs=1, workers=2, mpi=["--oversubscribe", "--allow-run-as-root"], lr="fast")
    with pytest.raises(flexgraph.InvalidArgumentError, match="launch_options"):
        flexgraph.train(dataset, epochs=1, workers=2, mpi=[], launch_options={"partition": "hash"})
