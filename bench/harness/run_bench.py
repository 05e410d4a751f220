#!/usr/bin/env python3
"""FlexGraph vs DGL (and optionally PyG): the same workloads, weights and settings; one table.

  bench/run.sh [--large] [--pyg] [--only gcn:cora,sage:rmat17] [--epochs_scale 1.0]
  bench/run.sh --workload rmat:scale=18,edge_factor=8,a=0.45 --only sage   # the shape of your graph

Steps (see bench/README.md, section "FlexGraph vs DGL"):
  1. bench/baselines/setup_venv.sh (a quick check when bench/.venv already works);
  2. workloads as .npy directories written by FlexGraph (`flexgraph convert` / `flexgraph generate`)
     under --work_dir, plus initial weights (weights/*.npy) that both systems load;
  3. per workload: `flexgraph train` and bench/baselines/run_baseline.py with the same model, layer
     sizes, dropout placement, optimizer, epochs and 2 threads;
  4. epoch-0 loss agreement (initial weights, no dropout) within --tolerance relative, else exit 1;
  5. one table on stdout, and bench/results/bench-<date>.{csv,json} (+ latest.{csv,json}).

Run with bench/.venv/bin/python (needs numpy). Timing medians use the same warm-up on both sides.
"""
import argparse
import csv
import datetime
import functools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
BASELINES = os.path.join(BENCH, "baselines")
sys.path.insert(0, BASELINES)
sys.path.insert(0, HERE)
import floor as epoch_floors  # noqa: E402

# name -> how to make it. "cora" from the shared data, RMAT graphs from FlexGraph's generator.
WORKLOADS = {
    "cora": {"source": os.path.join(os.path.dirname(ROOT), "shared", "data", "cora"),
             "normalize_features": True, "epochs": 200},
    # 2^17 vertices, 16 * 2^17 = 2.1M generated edges (about 3.9M directed after symmetrising)
    "rmat17": {"spec": "rmat:scale=17,edge_factor=16,features=128,classes=8,seed=1",
               "normalize_features": False, "epochs": 12},
    # 2^22 vertices, 12 * 2^22 = 50M generated edges (about 100M directed after symmetrising)
    "rmat22": {"spec": "rmat:scale=22,edge_factor=12,features=128,classes=8,seed=1",
               "normalize_features": False, "epochs": 7, "large": True},
    # heterogeneous (movie, director, actor); FlexGraph reads the OGB raw layout directly
    "imdb": {"source": os.path.join(os.path.dirname(ROOT), "shared", "data", "imdb"),
             "normalize_features": True, "epochs": 7, "hetero": True},
}

# The model settings both sides run. Dropout: FlexGraph's GCN and SAGE drop the input of every
# layer including layer 0 (GCN: model option input_dropout=1, Kipf's setup); the baseline does the
# same with --input_dropout.
MODELS = {
    "gcn": {"hidden": 256, "layers": 2, "dropout": 0.5, "input_dropout": True, "lr": 0.01,
            "weight_decay": 5e-4, "fg_opts": "input_dropout=1"},
    "sage": {"hidden": 256, "layers": 2, "dropout": 0.5, "input_dropout": True, "lr": 0.01,
             "weight_decay": 5e-4, "fg_opts": ""},
    # FlexGraph's defaults for walks (10 traces of 3 hops, top 10), drawn once; dropout on every
    # layer's input. The DGL side selects with RandomWalkNeighborSampler (PinSAGESampler's
    # homogeneous form): the same walk count, length and top-k, but its own random numbers.
    "pinsage": {"hidden": 256, "layers": 2, "dropout": 0.5, "input_dropout": True, "lr": 0.01,
                "weight_decay": 5e-4, "fg_opts": "num_traces=10,n_hops=3,top_k=10",
                "walks": (10, 3, 10)},
    # MAGNN with its IMDB defaults (auto metapaths M-D-M, M-A-M, D-M-D, D-M-A-M-D, A-M-A, A-M-D-M-A,
    # RotatE encoder, 8 heads, attention dimension 128, at most 1024 instances per root and
    # metapath): dropout on the projected input of layer 0 and on the instance attention weights.
    # The DGL side is bench/baselines/run_magnn.py.
    "magnn": {"hidden": 64, "layers": 2, "dropout": 0.5, "input_dropout": True, "lr": 0.005,
              "weight_decay": 1e-3, "fg_opts": "", "heads": 8},
}

# model -> workloads it runs on (MAGNN needs typed metapaths: IMDB; the others are homogeneous).
JOBS = {"gcn": ["cora", "rmat17", "rmat22"], "sage": ["cora", "rmat17", "rmat22"],
        "pinsage": ["cora", "rmat17", "rmat22"], "magnn": ["imdb"]}


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, env=None, log_path=None):
    log(" ".join(cmd))
    t0 = time.perf_counter()
    with open(log_path, "w") if log_path else open(os.devnull, "w") as out:
        p = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        tail = ""
        if log_path:
            with open(log_path) as f:
                tail = "".join(f.readlines()[-20:])
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{tail}")
    return time.perf_counter() - t0


def thread_env(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


# ----------------------------------------------------------------------------- workloads

def prepare(a, name):
    """Writes <work_dir>/<name>/ (the .npy workload) once; returns its path."""
    import numpy as np
    w = WORKLOADS[name]
    if w.get("hetero"):
        return w["source"]
    d = os.path.join(a.work_dir, name)
    if os.path.exists(os.path.join(d, "meta.json")):
        return d
    os.makedirs(a.work_dir, exist_ok=True)
    norm = ["--normalize_features"] if w["normalize_features"] else []
    logp = os.path.join(a.work_dir, f"prepare-{name}.log")
    if "source" in w:
        run([a.flexgraph, "convert", w["source"], "--npy_dir", d, *norm], log_path=logp)
    else:
        run([a.flexgraph, "generate", w["spec"], "--format", "npy", "--out", d, *norm], log_path=logp)
    # the baselines read the fields they need; keep the FlexGraph-side meta.json as written
    assert np.load(os.path.join(d, "indptr.npy"), mmap_mode="r").dtype == np.int64
    return d


def write_weights(a, d, name, model, m, seed):
    """Initial weights both systems load: GCN and SAGE as weights/<model>_l{l}_*.npy
    (bench/baselines/README.md; FlexGraph reads them through flexgraph_named_weights); PinSage and MAGNN under FlexGraph's parameter names
    (layer{l}.pool.weight.npy, ...; see run_pinsage.py and run_magnn.py; MAGNN's under --work_dir,
    since its dataset directory is the shared one). Returns the directory."""
    import numpy as np
    from make_toy_workload import glorot, write_weights as ww
    hidden, layers = m["hidden"], m["layers"]
    if model == "magnn":
        out = os.path.join(a.work_dir, name, f"weights-h{hidden}-l{layers}-heads{m['heads']}", "magnn")
        if not os.path.exists(os.path.join(out, f"layer{layers - 1}.output.bias.npy")):
            run([a.python, os.path.join(BASELINES, "run_magnn.py"), "--data", d, "--write_weights", out,
                 "--hidden", str(hidden), "--layers", str(layers), "--heads", str(m["heads"]),
                 "--seed", str(seed)])
        return out
    meta = json.load(open(os.path.join(d, "meta.json")))
    f = np.load(os.path.join(d, "feat.npy"), mmap_mode="r").shape[1]
    c = int(meta["num_classes"])
    wdir = os.path.join(d, f"weights-h{hidden}-l{layers}")
    if model in ("gcn", "sage"):
        if not os.path.exists(os.path.join(wdir, "weights", f"{model}_l{layers - 1}_bias.npy")):
            ww(wdir, f, hidden, c, layers, seed=seed, bias_scale=0.1)
        return os.path.join(wdir, "weights")
    out = os.path.join(wdir, "pinsage")
    if not os.path.exists(os.path.join(out, f"layer{layers - 1}.update.bias.npy")):
        os.makedirs(out, exist_ok=True)
        rng = np.random.default_rng(seed)
        dims = [f] + [hidden] * (layers - 1) + [c]
        for l in range(layers):
            i, o = dims[l], dims[l + 1]
            np.save(os.path.join(out, f"layer{l}.pool.weight.npy"), glorot(rng, i, hidden))
            np.save(os.path.join(out, f"layer{l}.pool.bias.npy"), (0.1 * rng.standard_normal(hidden)).astype(np.float32))
            np.save(os.path.join(out, f"layer{l}.update.weight.npy"), glorot(rng, i + hidden, o))
            np.save(os.path.join(out, f"layer{l}.update.bias.npy"), (0.1 * rng.standard_normal(o)).astype(np.float32))
    return out


@functools.lru_cache(maxsize=None)
def feature_nonzeros(d):
    """Non-zero entries of the workload's features (None without feat.npy)."""
    import numpy as np
    path = os.path.join(d, "feat.npy")
    if not os.path.exists(path):
        return None
    feat = np.load(path, mmap_mode="r")
    return int(sum(np.count_nonzero(feat[i:i + 65536]) for i in range(0, feat.shape[0], 65536)))


@functools.lru_cache(maxsize=None)
def column_counts(d):
    """In-edges per source vertex (the SpMMs' gather counts), None without indices.npy."""
    import numpy as np
    path = os.path.join(d, "indices.npy")
    if not os.path.exists(path):
        return None
    n = graph_sizes(d)[0]
    idx = np.load(path, mmap_mode="r")
    counts = np.zeros(n, dtype=np.int64)
    for i in range(0, idx.shape[0], 1 << 24):
        counts += np.bincount(idx[i:i + (1 << 24)], minlength=n)
    return counts


def graph_sizes(d):
    import numpy as np
    if not os.path.exists(os.path.join(d, "indptr.npy")):
        return None, None, None, None
    indptr = np.load(os.path.join(d, "indptr.npy"), mmap_mode="r")
    feat = np.load(os.path.join(d, "feat.npy"), mmap_mode="r")
    meta = json.load(open(os.path.join(d, "meta.json")))
    return int(indptr.shape[0] - 1), int(indptr[-1]), int(feat.shape[1]), int(meta["num_classes"])


# ----------------------------------------------------------------------------- runs

def estimated_bytes(n, nnz, f, hidden):
    """Rough peak memory of one full-batch 2-layer run with dropout on every layer's input: the
    features, their dropout copy and mask, the first aggregation, and about eight [n, hidden]
    activations, masks and gradients kept for backward; plus the graph (both directions)."""
    return 4.0 * n * (4 * f + 8 * hidden) + 16.0 * nnz


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return float("inf")


def median_after(times, warmup):
    t = times[warmup:] if len(times) > warmup else times
    return statistics.median(t) if t else float("nan")


# The baselines' GCN/SAGE weight files (make_toy_workload.py) under FlexGraph's parameter names.
FLEXGRAPH_NAMES = {"gcn": {"linear.weight": "weight", "bias": "bias"},
                   "sage": {"self.weight": "self", "neigh.weight": "neigh", "self.bias": "bias"}}


def flexgraph_named_weights(wdir, model, layers):
    """A directory of links <parameter>.npy -> the baselines' <model>_l<l>_<suffix>.npy, which
    `flexgraph train --init_weights` reads; PinSage and MAGNN weights already use those names."""
    if model not in FLEXGRAPH_NAMES:
        return wdir
    out = os.path.join(wdir, "flexgraph-names")
    os.makedirs(out, exist_ok=True)
    for l in range(layers):
        for param, suffix in FLEXGRAPH_NAMES[model].items():
            link = os.path.join(out, f"layer{l}.{param}.npy")
            if not os.path.lexists(link):
                os.symlink(os.path.join(os.path.abspath(wdir), f"{model}_l{l}_{suffix}.npy"), link)
    return out


def run_flexgraph(a, model, m, name, d, wdir, epochs, out_dir, extra=()):
    """`flexgraph train` with the settings m (plus the arguments extra); returns its summary."""
    out = os.path.join(out_dir, f"fg-{model}-{name}.json")
    cmd = [a.flexgraph, "train", "--dataset", d, "--model", model,
           "--hidden", str(m["hidden"]), "--layers", str(m["layers"]), "--dropout", str(m["dropout"]),
           "--lr", str(m["lr"]), "--weight_decay", str(m["weight_decay"]), "--optimizer", "adam",
           "--epochs", str(epochs), "--threads", str(a.threads), "--seed", "0",
           "--normalize_features", "true" if WORKLOADS[name]["normalize_features"] else "false",
           "--epoch0_loss", "--summary_json", out]
    if wdir:
        cmd += ["--init_weights", flexgraph_named_weights(wdir, model, m["layers"])]
    if "heads" in m:
        cmd += ["--heads", str(m["heads"])]
    if m["fg_opts"]:
        cmd += ["--model_opt", m["fg_opts"]]
    if model == "pinsage" and a.pinsage_selection == "flexgraph":
        cmd += ["--export_hdg", pinsage_selection_dir(out_dir, name)]
    cmd += list(extra)
    wall = run(cmd, env=thread_env(a.threads), log_path=out.replace(".json", ".log"))
    r = json.load(open(out))
    r["wall_seconds"] = wall
    return r


def pinsage_selection_dir(out_dir, name):
    """Where FlexGraph exports its PinSage HDGs for the baseline (--pinsage_selection flexgraph)."""
    return os.path.join(out_dir, f"fg-pinsage-{name}-hdg")


def run_baseline(a, framework, model, m, name, d, wdir, epochs, out_dir, extra=()):
    """The baseline of framework for model (extra: more arguments of the baseline's script, GCN,
    SAGE and MAGNN); returns its result JSON."""
    out = os.path.join(out_dir, f"{framework}-{model}-{name}.json")
    if model == "magnn":
        cmd = [a.python, os.path.join(BASELINES, "run_magnn.py"), "--data", d, "--weights", wdir,
               "--epochs", str(epochs), "--warmup", str(a.warmup), "--hidden", str(m["hidden"]),
               "--layers", str(m["layers"]), "--heads", str(m["heads"]), "--dropout", str(m["dropout"]),
               "--lr", str(m["lr"]), "--weight_decay", str(m["weight_decay"]), "--threads", str(a.threads),
               "--seed", "0", "--model_selection", "best_valid", "--out", out]
        if WORKLOADS[name]["normalize_features"]:
            cmd.append("--normalize_features")
        cmd += list(extra)
        wall = run(cmd, env=thread_env(a.threads), log_path=out.replace(".json", ".log"))
        r = json.load(open(out))
        r["wall_seconds"] = wall
        return r
    if model == "pinsage":
        traces, hops, top_k = m["walks"]
        cmd = [a.python, os.path.join(BASELINES, "run_pinsage.py"), "--data", d, "--weights", wdir,
               "--epochs", str(epochs), "--warmup", str(a.warmup), "--hidden", str(m["hidden"]),
               "--layers", str(m["layers"]), "--dropout", str(m["dropout"]), "--lr", str(m["lr"]),
               "--weight_decay", str(m["weight_decay"]), "--threads", str(a.threads), "--seed", "0",
               "--num_traces", str(traces), "--n_hops", str(hops), "--top_k", str(top_k), "--out", out]
        if a.pinsage_selection == "flexgraph":
            cmd += ["--selection", pinsage_selection_dir(out_dir, name)]
        wall = run(cmd, env=thread_env(a.threads), log_path=out.replace(".json", ".log"))
        r = json.load(open(out))
        r["wall_seconds"] = wall
        return r
    cmd = [a.python, os.path.join(BASELINES, "run_baseline.py"), "--framework", framework,
           "--model", model, "--data", d, "--weights", wdir, "--epochs", str(epochs),
           "--warmup", str(a.warmup), "--hidden", str(m["hidden"]), "--layers", str(m["layers"]),
           "--dropout", str(m["dropout"]), "--lr", str(m["lr"]), "--weight_decay", str(m["weight_decay"]),
           "--threads", str(a.threads), "--seed", "0", "--model_selection", "best_valid", "--out", out]
    if m["input_dropout"]:
        cmd.append("--input_dropout")
    cmd += list(extra)
    wall = run(cmd, env=thread_env(a.threads), log_path=out.replace(".json", ".log"))
    r = json.load(open(out))
    r["wall_seconds"] = wall
    return r


def rel(x, y):
    return abs(x - y) / max(abs(y), 1e-30)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flexgraph", default=os.path.join(ROOT, "build", "bench", "runtime", "flexgraph"))
    p.add_argument("--python", default=os.path.join(BENCH, ".venv", "bin", "python"))
    p.add_argument("--ceilings", default=os.path.join(ROOT, "build", "bench", "bench", "machine_ceilings"),
                   help="the machine_ceilings binary that measures the floors' bandwidth and GEMM peak")
    p.add_argument("--work_dir", default=os.path.join(ROOT, "build", "bench_work"),
                   help="workload .npy directories and logs (large: rmat22 needs ~10 GB of disk)")
    p.add_argument("--results_dir", default=os.path.join(BENCH, "results"))
    p.add_argument("--large", action="store_true", help="also the ~100M-edge RMAT (scale 22)")
    p.add_argument("--large_hidden", type=int, default=256,
                   help="hidden width on the large RMAT (256 needs about 30 GB per system)")
    p.add_argument("--pyg", action="store_true", help="also run PyG")
    p.add_argument("--only", default="", help="comma list of model:workload or model, e.g. gcn:cora,sage")
    p.add_argument("--workload", action="append", default=[], metavar="SPEC",
                   help="compare on this generator spec instead of the built-in workloads (repeatable), e.g. "
                        "rmat:scale=18,edge_factor=8,a=0.45 or sbm:nodes=200000,classes=8,features=64; "
                        "--only picks the models (default gcn, sage, pinsage)")
    p.add_argument("--workload_epochs", type=int, default=12, help="epochs on a --workload spec")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2, help="epochs excluded from both medians")
    p.add_argument("--epochs_scale", type=float, default=1.0, help="scale every workload's epochs")
    p.add_argument("--tolerance", type=float, default=1e-4, help="epoch-0 loss, relative")
    p.add_argument("--pinsage_selection", choices=["flexgraph", "dgl"], default="flexgraph",
                   help="PinSage neighbours for DGL: FlexGraph's exported HDG (same function, exact "
                        "epoch-0 check) or DGL's own random walks (statistically equal)")
    p.add_argument("--skip_setup", action="store_true", help="do not run setup_venv.sh")
    a = p.parse_args()

    if not os.path.exists(a.flexgraph):
        sys.exit(f"{a.flexgraph}: not built (bench/run.sh builds it, or pass --flexgraph)")
    if not a.skip_setup:
        run(["bash", os.path.join(BASELINES, "setup_venv.sh")])
    frameworks = ["dgl"] + (["pyg"] if a.pyg else [])

    only = [x for x in a.only.split(",") if x]
    custom = []
    for spec in a.workload:  # named by the spec, made path-safe
        if not spec.startswith(("rmat:", "sbm:")):
            sys.exit(f"--workload {spec}: expected a generator spec, rmat:... or sbm:...")
        name = re.sub(r"[^A-Za-z0-9.]+", "_", spec)
        WORKLOADS[name] = {"spec": spec, "normalize_features": False, "epochs": a.workload_epochs}
        custom.append(name)
    if custom:
        models = only or ["gcn", "sage", "pinsage"]
        bad = [x for x in models if x not in MODELS or x == "magnn" or ":" in x]
        if bad:
            sys.exit(f"--only {','.join(bad)}: with --workload, name homogeneous models (gcn, sage, pinsage)")
        jobs = [(m, w) for m in models for w in custom]
    else:
        jobs = [(m, w) for m in MODELS for w in JOBS[m] if a.large or not WORKLOADS[w].get("large")]
    if only and not custom:
        want = {tuple(x.split(":")) for x in only if ":" in x}
        whole = {x for x in only if ":" not in x}
        jobs = [j for j in jobs if j in want or j[0] in whole]
        if not jobs:
            sys.exit(f"--only {a.only}: no such model:workload (have {list(MODELS)} x {list(WORKLOADS)})")

    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M")
    run_dir = os.path.join(a.work_dir, "runs", stamp)
    os.makedirs(run_dir, exist_ok=True)
    load_before = os.getloadavg()
    ceilings = epoch_floors.measure_ceilings(a.ceilings, a.threads)
    log(f"ceilings ({a.threads} threads): triad {ceilings['triad_bytes_per_s'] / 1e9:.1f} GB/s, GEMM "
        f"{ceilings['gemm_flops_per_s'] / 1e9:.0f} GFLOP/s, last-level cache {ceilings['llc_bytes'] / 2**20:.0f} MiB")
    rows, failures, skipped = [], [], []
    for model, name in jobs:
        d = prepare(a, name)
        m = dict(MODELS[model])
        if WORKLOADS[name].get("large"):
            m["hidden"] = a.large_hidden
            n_, nnz_, f_, _ = graph_sizes(d)
            need, have = estimated_bytes(n_, nnz_, f_, m["hidden"]), mem_available()
            if need > have:
                skipped.append(f"{model} on {name} (hidden {m['hidden']}): needs about {need / 2**30:.0f} GiB, "
                               f"{have / 2**30:.0f} GiB available (try a smaller --large_hidden)")
                log("SKIP " + skipped[-1])
                continue
        wdir = write_weights(a, d, name, model, m, seed=1)
        n, nnz, f, c = graph_sizes(d)
        epochs = max(a.warmup + 5, int(round(WORKLOADS[name]["epochs"] * a.epochs_scale)))
        fg = run_flexgraph(a, model, m, name, d, wdir, epochs, run_dir)
        if m.get("fg_only"):
            fws = []
        elif model in ("pinsage", "magnn"):
            fws = ["dgl"]  # no PyG PinSage or MAGNN baseline
        else:
            fws = frameworks
        base = {fw: run_baseline(a, fw, model, m, name, d, wdir, epochs, run_dir) for fw in fws}
        spmm_nnz = nnz
        if model == "pinsage" and "dgl" in base:
            spmm_nnz = base["dgl"]["selected_edges"]
        floor_args = (model, n, spmm_nnz, f, c, m["hidden"], m["layers"])
        floor_data = (feature_nonzeros(d), column_counts(d))
        fg_s = median_after(fg["epoch_seconds"], a.warmup)
        fg_stages = {k: v for k, v in fg.get("stage_seconds_median_epoch", {}).items() if k in epoch_floors.STAGES}
        if n is None:
            n, nnz = fg.get("num_vertices"), fg.get("num_edges")
        row = {
            "workload": name, "spec": WORKLOADS[name].get("spec", WORKLOADS[name].get("source")), "model": model, "vertices": n, "edges": nnz, "features": f,
            "classes": c, "hidden": m["hidden"], "layers": m["layers"], "dropout": m["dropout"],
            "input_dropout": m["input_dropout"], "epochs": epochs, "warmup": a.warmup,
            "threads": a.threads,
            "fg_epoch_s": fg_s,
            "fg_test_acc": fg.get("test_accuracy"),
            "fg_peak_rss_mib": fg["peak_rss_bytes"] / 2**20,
            "fg_epoch0_loss": fg.get("epoch0_loss"),
            "fg_hdg_mib": fg.get("hdg_bytes", 0) / 2**20,
            "fg_stage_seconds_per_epoch": json.dumps(fg_stages),
            "_floor": (floor_args, floor_data),  # floors are set once the ceilings are measured again
            "epoch0_check": "exact" if model in ("gcn", "sage") or
                            (model == "pinsage" and a.pinsage_selection == "flexgraph") else
                            ("n/a: FlexGraph only" if m.get("fg_only") else "n/a: random walks differ"),
        }
        if model == "magnn" and "dgl" in base:
            # exact when no (root, metapath) hit the instance cap (then both sides sample differently)
            row["epoch0_check"] = "exact" if base["dgl"].get("capped_groups") == 0 else \
                "n/a: capped instance samples differ"
        for fw in frameworks:
            for k in ("epoch_s", "over_fg", "test_acc", "peak_rss_mib", "epoch0_loss", "epoch0_rel_diff"):
                row[f"{fw}_{k}"] = None
        for fw, r in base.items():
            s = median_after(r["epoch_seconds"], a.warmup)
            row[f"{fw}_epoch_s"] = s
            row[f"{fw}_over_fg"] = s / fg_s if fg_s > 0 else float("nan")
            row[f"{fw}_test_acc"] = r.get("test_accuracy")
            row[f"{fw}_peak_rss_mib"] = r["peak_rss_bytes"] / 2**20
            row[f"{fw}_epoch0_loss"] = r["epoch0_loss"]
            e = rel(fg["epoch0_loss"], r["epoch0_loss"]) if fg.get("epoch0_loss") is not None else float("inf")
            row[f"{fw}_epoch0_rel_diff"] = e
            if row["epoch0_check"] == "exact" and not e <= a.tolerance:
                failures.append(f"{model} on {name}: epoch-0 loss FlexGraph {fg.get('epoch0_loss')!r} vs "
                                f"{fw} {r['epoch0_loss']!r} (relative {e:.3g} > {a.tolerance:g})")
        rows.append(row)
        log(f"{model} {name}: FlexGraph {fg_s:.4f}s  DGL {row['dgl_epoch_s']}s  "
            f"epoch0 {fg.get('epoch0_loss')} vs {row['dgl_epoch0_loss']}")

    # Ceilings measured again after the runs: the higher of each is kept, so a busy machine at
    # either end cannot lower the bar (bench/harness/floor.py).
    ceilings = epoch_floors.ceilings_max(ceilings, epoch_floors.measure_ceilings(a.ceilings, a.threads))
    floor_beaten = []
    for row in rows:
        args, (feature_nnz, counts) = row.pop("_floor")
        fl = epoch_floors.epoch_floor(*args, ceilings, feature_nnz, counts)
        floor = fl.total() if fl and not fl.cache_resident() else float("nan")
        fg_s = row["fg_epoch_s"]
        row.update({
            "floor_s": floor, "floor_cache_resident": bool(fl and fl.cache_resident()),
            "floor_stage_seconds": json.dumps({k: fl.seconds(k) for k in epoch_floors.STAGES} if fl else {}),
            "floor_gflop": sum(fl.flops.values()) / 1e9 if fl else float("nan"),
            "floor_gbytes": sum(fl.bytes.values()) / 1e9 if fl else float("nan"),
            "fg_fraction_of_floor": floor / fg_s if fg_s > 0 else float("nan"),
        })
        stages = json.loads(row["fg_stage_seconds_per_epoch"])
        for k, v in ([("epoch", fg_s)] + list(stages.items())) if fl and not fl.cache_resident() else []:
            bar = floor if k == "epoch" else fl.seconds(k)
            if v < bar:
                floor_beaten.append(f"{row['model']} on {row['workload']}: {k} {v:.4g}s beats its floor {bar:.4g}s")
    for line in floor_beaten:
        log(f"FLOOR BEATEN (a ceiling is wrong): {line}")
    load_after = os.getloadavg()
    info = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(), "cpus": os.cpu_count(),
        "load_average_before": load_before, "load_average_after": load_after,
        "ceilings": ceilings, "floor_beaten": floor_beaten,
        "tolerance": a.tolerance, "frameworks": frameworks, "skipped": skipped,
    }
    print_table(rows, frameworks, info)
    os.makedirs(a.results_dir, exist_ok=True)
    for base_name in (f"bench-{stamp}", "latest") if rows else (f"bench-{stamp}",):
        with open(os.path.join(a.results_dir, base_name + ".json"), "w") as fjs:
            json.dump({"info": info, "rows": rows, "epoch0_failures": failures}, fjs, indent=1)
        if rows:
            with open(os.path.join(a.results_dir, base_name + ".csv"), "w", newline="") as fcsv:
                wr = csv.DictWriter(fcsv, fieldnames=list(rows[0].keys()))
                wr.writeheader()
                wr.writerows(rows)
    log(f"wrote {a.results_dir}/bench-{stamp}.{{csv,json}} (and latest.*); runs and logs in {run_dir}")
    for s_ in skipped:
        print("skipped: " + s_, file=sys.stderr)
    if failures:
        print("\nEPOCH-0 LOSS DISAGREEMENT — the two systems do not compute the same thing:", file=sys.stderr)
        for f_ in failures:
            print("  " + f_, file=sys.stderr)
        sys.exit(1)


def fmt(v, spec, suffix=""):
    return "—" if v is None or (isinstance(v, float) and v != v) else format(v, spec) + suffix


def print_table(rows, frameworks, info):
    hdr = ["model", "workload", "|V|", "|E|", "FG s/epoch", "DGL s/epoch", "DGL/FG",
           "FG acc", "DGL acc", "FG MiB", "DGL MiB", "floor s", "FG % floor", "epoch0 rel"]
    if "pyg" in frameworks:
        hdr[7:7] = ["PyG s/epoch", "PyG/FG"]
    lines = []
    for r in rows:
        cells = [r["model"], r["workload"], fmt(r["vertices"], ","), fmt(r["edges"], ","),
                 fmt(r["fg_epoch_s"], ".4f"), fmt(r["dgl_epoch_s"], ".4f"), fmt(r["dgl_over_fg"], ".2f", "x"),
                 fmt(r["fg_test_acc"], ".3f"), fmt(r["dgl_test_acc"], ".3f"),
                 fmt(r["fg_peak_rss_mib"], ".0f"), fmt(r["dgl_peak_rss_mib"], ".0f"),
                 "(cache-resident)" if r["floor_cache_resident"] else fmt(r["floor_s"], ".4f"),
                 fmt(100 * r["fg_fraction_of_floor"], ".1f", "%"),
                 fmt(r["dgl_epoch0_rel_diff"], ".1e") + ("" if r["epoch0_check"] == "exact" else " (" + r["epoch0_check"] + ")")]
        if "pyg" in frameworks:
            cells[7:7] = [fmt(r["pyg_epoch_s"], ".4f"), fmt(r["pyg_over_fg"], ".2f", "x")]
        lines.append(cells)
    la, lb = info["load_average_before"], info["load_average_after"]
    print(f"\nFlexGraph vs {', '.join(x.upper() if x == 'dgl' else 'PyG' for x in frameworks)} — "
          f"{info['date']} on {info['host']} ({info['cpus']} cores), load average {la[0]:.1f} before, "
          f"{lb[0]:.1f} after")
    print(markdown_table(hdr, lines))
    print("s/epoch: median training-step seconds after warm-up; acc: test accuracy at the best validation "
          "epoch; MiB: peak RSS; floor: per kernel the larger of bytes it must move / measured triad bandwidth and flops / "
          "measured GEMM peak (the higher of the ceilings measured before and after the runs) (bench/harness/floor.py); epoch0 rel: |FG - DGL| / |DGL| of the loss of the "
          "shared initial weights.")
    print_stage_table(rows, info["ceilings"])


def print_stage_table(rows, ceilings):
    """FlexGraph's seconds per epoch in each stage against that stage's floor."""
    lines = []
    for r in rows:
        fg, fl = json.loads(r["fg_stage_seconds_per_epoch"]), json.loads(r["floor_stage_seconds"])
        if not fl or r["floor_cache_resident"]:
            continue
        lines.append([r["model"], r["workload"]] +
                     [f"{fmt(fg.get(k), '.4f')} / {fmt(fl[k], '.4f')} ({fmt(100 * fl[k] / fg[k] if fg.get(k) else None, '.0f', '%')})"
                      for k in epoch_floors.STAGES])
    if not lines:
        return
    print(f"\nWhere FlexGraph's epoch goes: seconds per epoch / floor (floor as % of FlexGraph); "
          f"triad {ceilings['triad_bytes_per_s'] / 1e9:.1f} GB/s, GEMM {ceilings['gemm_flops_per_s'] / 1e9:.0f} "
          f"GFLOP/s, last-level cache {ceilings['llc_bytes'] / 2**20:.0f} MiB, {ceilings['threads']} threads")
    print(markdown_table(["model", "workload"] + list(epoch_floors.STAGES), lines))


def markdown_table(hdr, lines):
    """A Markdown table with padded columns."""
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(hdr)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(hdr, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(l, widths)) + " |" for l in lines]
    return "\n".join(out)


if __name__ == "__main__":
    main()
