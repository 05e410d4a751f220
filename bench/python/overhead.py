#!/usr/bin/env python3
"""The Python path's cost against the command line for the same run (issue target: at most 2% of
the epoch time). Both read the same generated .fgc dataset; each round trains once with
`flexgraph train` and once with `flexgraph.train` in a fresh Python process (with a per-epoch
progress callback, as a notebook would), interleaved; each run's median epoch time comes from its
summary. Prints both, their ratio per round and the ratio of the medians over rounds.

    PYTHONPATH=python FLEXGRAPH_MODULE_DIR=build/release/python/flexgraph \\
      python3 bench/python/overhead.py [--spec rmat:scale=18,...] [--rounds 3] [--epochs 10]
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


def cli_run(exe: str, data: str, out: Path, a) -> dict:
    t = time.perf_counter()
    subprocess.run([exe, "train", "--dataset", data, "--model", "gcn", "--epochs", str(a.epochs), "--seed", "1",
                    "--threads", str(a.threads), "--hidden", str(a.hidden), "--summary_json", str(out), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    s = json.loads(out.read_text())
    s["process_seconds"] = time.perf_counter() - t
    return s


def py_run(data: str, out: Path, a) -> dict:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", PY_RUN, data, str(out), str(a.epochs), str(a.threads), str(a.hidden)],
                   check=True, stdout=subprocess.DEVNULL)
    s = json.loads(out.read_text())
    s["process_seconds"] = time.perf_counter() - t
    return s


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flexgraph", default=str(ROOT / "build" / "release" / "runtime" / "flexgraph"))
    p.add_argument("--spec", default="rmat:scale=18,edge_factor=16,features=128,classes=8,seed=1")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    a = p.parse_args()
    import flexgraph  # noqa: F401  (fails early when the package or its module is missing)
    from flexgraph import _core  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="fg-py-overhead-") as tmp:
        tmp = Path(tmp)
        data = str(tmp / "data.fgc")
        subprocess.run([a.flexgraph, "generate", a.spec, "--out", data, "--format", "fgc"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"{a.spec}: GCN, hidden {a.hidden}, {a.epochs} epochs, {a.threads} threads, {a.rounds} rounds "
              f"(command line, then Python, each round)")
        print(f"{'round':>5} {'cli s/epoch':>12} {'py s/epoch':>11} {'py/cli':>7} {'cli loss':>10} {'py loss':>10}"
              f" {'cli process s':>14} {'py process s':>13}")
        cli, py = [], []
        for r in range(a.rounds):
            c = cli_run(a.flexgraph, data, tmp / f"cli{r}.json", a)
            q = py_run(data, tmp / f"py{r}.json", a)
            cli.append(c["epoch_seconds_median"])
            py.append(q["epoch_seconds_median"])
            print(f"{r + 1:>5} {cli[-1]:>12.4f} {py[-1]:>11.4f} {py[-1] / cli[-1]:>7.3f} {c['final_loss']:>10.6f}"
                  f" {q['final_loss']:>10.6f} {c['process_seconds']:>14.2f} {q['process_seconds']:>13.2f}")
            if c["losses"] != q["losses"]:
                print("  losses differ between the two paths", file=sys.stderr)
                return 1
        ratio = statistics.median(py) / statistics.median(cli)
        print(f"median s/epoch: command line {statistics.median(cli):.4f}, Python {statistics.median(py):.4f}, "
              f"ratio {ratio:.3f} ({(ratio - 1) * 100:+.1f}%; target at most +2%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
