#!/usr/bin/env python3
"""Self-test of the baselines: on random toy workloads, DGL, PyG and the numpy float64 reference
must agree on the epoch-0 loss (relative 1e-5), and a few training epochs must run.
Run with the venv python:  bench/.venv/bin/python bench/baselines/selftest.py
Prints 'N passed, N failed'; exit code 1 on any failure."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable


def run(*args):
    return subprocess.run([PY, *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout


def main():
    passed = failed = 0
    cases = [  # (generator args, hidden, layers, run flags)
        ([], 16, 2, []),
        (["--layers", "3", "--hidden", "8", "--no_labels", "--normalize_features", "0", "--seed", "3"],
         8, 3, ["--input_dropout"]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for ci, (gen, hidden, layers, flags) in enumerate(cases):
            d = os.path.join(tmp, f"toy{ci}")
            run(os.path.join(HERE, "make_toy_workload.py"), "--out", d, "--n", "600", *gen)
            for model in ("gcn", "sage"):
                ref = float(run(os.path.join(HERE, "reference_epoch0.py"), "--data", d,
                                "--model", model, "--layers", str(layers)))
                for fw in ("dgl", "pyg"):
                    out = os.path.join(tmp, f"{ci}_{model}_{fw}.json")
                    run(os.path.join(HERE, "run_baseline.py"), "--framework", fw, "--model", model,
                        "--data", d, "--hidden", str(hidden), "--layers", str(layers), "--epochs", "3",
                        "--warmup", "1", "--threads", "1", "--out", out, *flags)
                    res = json.load(open(out))
                    rel = abs(res["epoch0_loss"] - ref) / abs(ref)
                    ok = rel < 1e-5 and len(res["epoch_seconds"]) == 3 and res["final_loss"] == res["final_loss"]
                    print(f"{'PASS' if ok else 'FAIL'} case{ci} {model} {fw}: epoch0 {res['epoch0_loss']!r} "
                          f"ref {ref!r} rel {rel:.2e}")
                    passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
