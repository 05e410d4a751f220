"""--tensorboard: the event files the C++ core writes, read back with TensorBoard's own reader
(EventAccumulator) and compared with the run's summary JSON ("history"), for one process and for a
launch of two workers (whose per-worker bytes and waiting rank 0 writes)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tensorboard.backend.event_processing import event_accumulator

PYTHON_DIR = Path(__file__).resolve().parents[1]
STAGES = ["selection", "message", "aggregation", "update", "loss", "backward", "optimizer", "evaluation"]
METRICS = ["train_accuracy", "valid_accuracy", "valid_macro_f1", "test_accuracy", "test_macro_f1", "test_micro_f1"]
SMALL = ["--dataset", "sbm:nodes=600,classes=4,features=8", "--model", "gcn", "--epochs", "5", "--hidden", "8",
         "--threads", "1", "--eval_every", "2", "--lr", "0.02"]


def flexgraph_bin() -> str:
    """The built command line: FLEXGRAPH_BIN (ctest sets it), else build/release's. Missing is a failure."""
    path = os.environ.get("FLEXGRAPH_BIN") or str(PYTHON_DIR.parent / "build" / "release" / "runtime" / "flexgraph")
    assert os.access(path, os.X_OK), f"no flexgraph binary at {path} (build it, or set FLEXGRAPH_BIN)"
    return path


def read_scalars(logdir: Path) -> dict[str, dict[int, float]]:
    files = list(logdir.glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


def check_against_history(scalars: dict[str, dict[int, float]], history: list[dict], epochs: int) -> None:
    assert [h["epoch"] for h in history] == list(range(1, epochs + 1))
    approx = lambda v: pytest.approx(v, rel=1e-6, abs=1e-7)  # the event files hold float32
    for h in history:
        e = h["epoch"]
        assert scalars["loss/train"][e] == approx(h["loss"])
        assert scalars["time/epoch_seconds"][e] == approx(h["seconds"])
        assert scalars["learning_rate"][e] == approx(0.02)
        for stage in STAGES:
            assert scalars[f"stage_seconds/{stage}"][e] == approx(h["stage_seconds"][stage]), stage
        evaluated = e % 2 == 0 or e == epochs
        for m in METRICS:
            assert (m in h) == evaluated, (e, m)
            if evaluated:
                assert scalars[f"metrics/{m}"][e] == approx(h[m]), (e, m)
            else:
                assert e not in scalars[f"metrics/{m}"], (e, m)
        if evaluated:
            assert h["stage_seconds"]["evaluation"] > 0
    assert set(scalars["loss/train"]) == set(range(1, epochs + 1))


def test_single_process_scalars_match_the_summary(tmp_path):
    summary, tb = tmp_path / "summary.json", tmp_path / "tb"
    r = subprocess.run([flexgraph_bin(), "train", *SMALL, "--summary_json", str(summary), "--tensorboard", str(tb)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    s = json.loads(summary.read_text())
    scalars = read_scalars(tb)
    check_against_history(scalars, s["history"], 5)
    assert [h["loss"] for h in s["history"]] == s["losses"]
    assert not any(t.startswith("worker_") for t in scalars)  # one process: no workers' figures


def test_launch_writes_every_workers_figures(tmp_path):
    summary, tb = tmp_path / "summary.json", tmp_path / "tb"
    r = subprocess.run([flexgraph_bin(), "launch", "--workers", "2", "--", "train", *SMALL, "--summary_json",
                        str(summary), "--tensorboard", str(tb)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    s = json.loads(summary.read_text())
    scalars = read_scalars(tb)  # one file: rank 0 writes
    check_against_history(scalars, s["history"], 5)
    for rank in range(2):
        sent = scalars[f"worker_bytes_sent/rank_{rank}"]
        wait = scalars[f"worker_wait_seconds/rank_{rank}"]
        assert set(sent) == set(wait) == set(range(1, 6))
        assert all(v > 0 for v in sent.values()), sent  # features and gradients cross every epoch
        assert all(v >= 0 for v in wait.values()), wait
    # The epochs' bytes are part of each worker's total, which adds the setup's (the exchange plan).
    for w in s["workers"]:
        total = sum(w[f"bytes_{k}_per_epoch"] for k in ("features", "partials", "gradients", "allreduce", "control"))
        per_epoch = sum(scalars[f"worker_bytes_sent/rank_{w['rank']}"].values()) / 5
        assert 0.5 * total < per_epoch <= total, (per_epoch, total)


def test_unwritable_directory_fails_naming_the_flag(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = subprocess.run([flexgraph_bin(), "train", *SMALL, "--tensorboard", str(blocker / "tb")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "--tensorboard" in r.stderr and str(blocker) in r.stderr, r.stderr
