#!/usr/bin/env python3
"""Self-test of the baselines: on random toy workloads, DGL, PyG (edge_index and sparse adj_t), the
hand-written torch.sparse layers and the numpy float64 reference must agree on the epoch-0 loss
(relative 1e-5), and a few training epochs must run; without dropout, PyG and torch.sparse must
reach the same loss after 3 epochs (their gradients agree). MAGNN
(run_magnn.py): the metapath choice on an IMDB-shaped schema, and the vectorised instance
enumeration against a recursive walk on a random heterogeneous graph with duplicate edges.
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


def toy_hetero(seed=0):
    """movie, director, actor with random edges (some duplicated), in run_magnn's HeteroData form."""
    import argparse
    import numpy as np
    import run_magnn as rm
    rng = np.random.default_rng(seed)
    g = argparse.Namespace(types=["movie", "director", "actor"], counts=[30, 8, 20])
    g.offsets = np.concatenate([[0], np.cumsum(g.counts)]).astype(np.int64)
    g.relations = []
    for dst, m in ((1, 40), (2, 90)):
        src, tgt = rng.integers(0, g.counts[0], m), rng.integers(0, g.counts[dst], m)
        src, tgt = np.concatenate([src, src[:3]]), np.concatenate([tgt, tgt[:3]])  # duplicates
        g.relations.append({"src": 0, "dst": dst, "by_src": rm.sorted_csr(src, tgt, g.counts[0]),
                            "by_dst": rm.sorted_csr(tgt, src, g.counts[dst])})
    return g


def walks(g, mp, v, i=0):
    """All instances of mp from local vertex v, recursively, in sorted neighbour order."""
    if i == len(mp["steps"]):
        return [[v]]
    rel, forward = mp["steps"][i]
    indptr, indices = g.relations[rel]["by_src" if forward else "by_dst"]
    return [[v] + rest for u in indices[indptr[v]:indptr[v + 1]] for rest in walks(g, mp, int(u), i + 1)]


def magnn_cases():
    """(passed, failed) of the MAGNN selection checks."""
    import numpy as np
    sys.path.insert(0, HERE)
    import run_magnn as rm
    g = toy_hetero()
    mps = rm.default_metapaths(g)
    names = [m["name"] for m in mps]
    checks = [("auto metapaths", names == ["M-D-M", "M-A-M", "D-M-D", "D-M-A-M-D", "A-M-A", "A-M-D-M-A"])]
    for mp in mps:
        t = mp["types"]
        want = [[int(x + g.offsets[t[k]]) for k, x in enumerate(w)]
                for v in range(g.counts[t[0]]) for w in walks(g, mp, v)]
        glob, roots, capped = rm.enumerate_instances(g, mp, 0, np.random.default_rng(0))
        checks.append((f"{mp['name']} all {len(want)} instances",
                       glob.tolist() == want and roots.tolist() == [w[0] - g.offsets[t[0]] for w in want]
                       and capped == 0))
        cap = 2
        sub, sroots, capped = rm.enumerate_instances(g, mp, cap, np.random.default_rng(1))
        per_root = np.bincount([w[0] - g.offsets[t[0]] for w in want], minlength=g.counts[t[0]])
        rest = iter(want)  # the sample is a subsequence of the full enumeration (order kept)
        checks.append((f"{mp['name']} capped at {cap}",
                       all(any(w == x for x in rest) for w in sub.tolist())
                       and np.array_equal(np.bincount(sroots, minlength=g.counts[t[0]]), np.minimum(per_root, cap))
                       and capped == int((per_root > cap).sum())))
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'} magnn {name}")
    return sum(ok for _, ok in checks), sum(not ok for _, ok in checks)


# (name, run_baseline.py arguments) of every framework checked
FRAMEWORKS = [("dgl", ["--framework", "dgl"]), ("pyg", ["--framework", "pyg"]),
              ("pyg-sparse", ["--framework", "pyg", "--adjacency", "sparse"]), ("torch", ["--framework", "torch"])]


def main():
    passed, failed = magnn_cases()
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
                for fw, fw_args in FRAMEWORKS:
                    out = os.path.join(tmp, f"{ci}_{model}_{fw}.json")
                    run(os.path.join(HERE, "run_baseline.py"), *fw_args, "--model", model,
                        "--data", d, "--hidden", str(hidden), "--layers", str(layers), "--epochs", "3",
                        "--warmup", "1", "--threads", "1", "--out", out, *flags)
                    res = json.load(open(out))
                    rel = abs(res["epoch0_loss"] - ref) / abs(ref)
                    ok = rel < 1e-5 and len(res["epoch_seconds"]) == 3 and res["final_loss"] == res["final_loss"]
                    print(f"{'PASS' if ok else 'FAIL'} case{ci} {model} {fw}: epoch0 {res['epoch0_loss']!r} "
                          f"ref {ref!r} rel {rel:.2e}")
                    passed, failed = passed + ok, failed + (not ok)
                if ci == 0:  # training without dropout: the same losses in PyG and torch.sparse
                    final = {}
                    for fw, fw_args in FRAMEWORKS[1:]:
                        out = os.path.join(tmp, f"{ci}_{model}_{fw}_nodrop.json")
                        run(os.path.join(HERE, "run_baseline.py"), *fw_args, "--model", model, "--data", d,
                            "--hidden", str(hidden), "--layers", str(layers), "--epochs", "3", "--dropout", "0",
                            "--threads", "1", "--out", out)
                        final[fw] = json.load(open(out))["final_loss"]
                    rel = max(abs(v - final["pyg"]) / abs(final["pyg"]) for v in final.values())
                    ok = rel < 1e-5
                    print(f"{'PASS' if ok else 'FAIL'} case{ci} {model} training without dropout: final losses "
                          f"{final} rel {rel:.2e}")
                    passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
