#!/usr/bin/env python3
"""The Python path's cost against the command line for the same run (issue target: at most 2% of
the epoch time). Both read the same generated .fgc dataset. Each round trains with `flexgraph
train` and with `flexgraph.train` in a fresh Python process (with a per-epoch progress callback,
as a notebook would), each for --short and --epochs epochs, interleaved. Two figures per path:
the median epoch time of the summary (the training step alone), and the cost per epoch of the
whole process, (wall(--epochs) - wall(--short)) / (--epochs - --short), which includes evaluation
and the callback while start-up, loading and saving cancel. Prints both per round, and the ratios
of the medians over rounds.

    PYTHONPATH=python FLEXGRAPH_MODULE_DIR=build/release/python/flexgraph \
      python3 bench/python/overhead.py [--spec rmat:scale=18,...] [--rounds 3] [--short 2] [--epochs 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PY_RUN = """
import json, sys, time, flexgraph
path, summary, epochs, threads, hidden = sys.argv[1:6]
ds = flexgraph.Dataset.load(path)
calls = []
t = time.perf_counter()
run = flexgraph.train(ds, model="gcn", epochs=int(epochs), seed=1, threads=int(threads), hidden=int(hidden),
                      progress=lambda e, loss, m: calls.append(e))
wall = time.perf_counter() - t
assert calls == list(range(1, int(epochs) + 1)), calls
json.dump(dict(run.summary, wall_seconds=wall), open(summary, "w"))
"""


def cli_run(exe: str, data: str, out: Path, a, epochs: int) -> dict:
    t = time.perf_counter()
    subprocess.run([exe, "train", "--dataset", data, "--model", "gcn", "--epochs", str(epochs), "--seed", "1",
                    "--threads", str(a.threads), "--hidden", str(a.hidden), "--summary_json", str(out), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    s = json.loads(out.read_text())
    s["process_seconds"] = time.perf_counter() - t
    return s


def py_run(data: str, out: Path, a, epochs: int) -> dict:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", PY_RUN, data, str(out), str(epochs), str(a.threads), str(a.hidden)],
                   check=True, stdout=subprocess.DEVNULL)
    s = json.loads(out.read_text())
    s["process_seconds"] = time.perf_counter() - t
    return s


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flexgraph", default=str(ROOT / "build" / "release" / "runtime" / "flexgraph"))
    p.add_argument("--spec", default="rmat:scale=18,edge_factor=16,features=128,classes=8,seed=1")
    p.add_argument("--short", type=int, default=2)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    a = p.parse_args()
    if not 1 <= a.short < a.epochs:
        p.error("--short must lie in [1, --epochs)")
    import flexgraph  # noqa: F401  (fails early when the package or its module is missing)
    from flexgraph import _core  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="fg-py-overhead-") as tmp:
        tmp = Path(tmp)
        data = str(tmp / "data.fgc")
        subprocess.run([a.flexgraph, "generate", a.spec, "--out", data, "--format", "fgc"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"{a.spec}: GCN, hidden {a.hidden}, {a.short} and {a.epochs} epochs, {a.threads} threads, "
              f"{a.rounds} rounds (command line, then Python, each round)")
        print(f"{'round':>5} {'cli step s':>11} {'py step s':>10} {'py/cli':>7} {'cli s/epoch':>12} "
              f"{'py s/epoch':>11} {'py/cli':>7}")
        step = {"cli": [], "py": []}
        per_epoch = {"cli": [], "py": []}
        for r in range(a.rounds):
            runs = {}
            for path, fn in (("cli", lambda out, n: cli_run(a.flexgraph, data, out, a, n)),
                             ("py", lambda out, n: py_run(data, out, a, n))):
                short = fn(tmp / f"{path}{r}s.json", a.short)
                full = fn(tmp / f"{path}{r}.json", a.epochs)
                runs[path] = full
                step[path].append(full["epoch_seconds_median"])
                per_epoch[path].append((full["process_seconds"] - short["process_seconds"]) / (a.epochs - a.short))
            print(f"{r + 1:>5} {step['cli'][-1]:>11.4f} {step['py'][-1]:>10.4f} {step['py'][-1] / step['cli'][-1]:>7.3f}"
                  f" {per_epoch['cli'][-1]:>12.4f} {per_epoch['py'][-1]:>11.4f}"
                  f" {per_epoch['py'][-1] / per_epoch['cli'][-1]:>7.3f}")
            if runs["cli"]["losses"] != runs["py"]["losses"]:
                print("  the two paths' losses differ: not the same run", file=sys.stderr)
                return 1
        med = {k: {p: statistics.median(v[p]) for p in v} for k, v in (("step", step), ("per_epoch", per_epoch))}
        for k, what in (("step", "training step (summary median)"), ("per_epoch", "whole process per epoch")):
            ratio = med[k]["py"] / med[k]["cli"]
            print(f"{what}: command line {med[k]['cli']:.4f} s, Python {med[k]['py']:.4f} s, ratio {ratio:.3f} "
                  f"({(ratio - 1) * 100:+.1f}%; target at most +2%)")
        print(f"losses identical in every round (final {runs['cli']['final_loss']:.6f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
