#!/usr/bin/env python3
"""Heterogeneous node-classification quality: test Macro-F1 over seeds (min, mean, max and the
standard deviation, and the spread of the selected epochs: a run that selects epoch 1 learned
nothing after its first update), median epoch time and peak memory of MAGNN, HAN and R-GCN with their default options on
IMDB (MAGNN's split) and DBLP (HeCo's heco20/40/60), beside the baselines in the datasets' READMEs
and the published figures. Writes bench/results/quality/quality.{md,json}.

  bench/quality/run.py [--seeds 5] [--models magnn,han,rgcn] [--datasets imdb:magnn,dblp:heco20,...]
                       [--build build/release] [--data ../shared/data] [--threads 0]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Reference figures (test Macro-F1) from the datasets' READMEs and the papers they cite.
REFERENCES = {
    "imdb:magnn": "README: end-to-end semi-supervised training reported in the high 50s to low 60s; "
                  "MAGNN (WWW 2020) about 0.59-0.61 (SVM on embeddings)",
    "dblp:heco20": "README: features only 0.697, metapath means 0.924; HeCo (KDD 2021) 0.913",
    "dblp:heco40": "README: features only 0.722, metapath means 0.922; HeCo 0.903",
    "dblp:heco60": "README: features only 0.771, metapath means 0.933; HeCo 0.906",
}


def run(fg, data, model, dataset, split, seed, threads):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        summary = f.name
    cmd = [fg, "train", "--dataset", os.path.join(data, dataset), "--split", split,
           "--model", model, "--seed", str(seed), "--threads", str(threads), "--quiet",
           "--summary_json", summary]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.time() - started
    if proc.returncode != 0:
        os.unlink(summary)
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:], "seconds": elapsed}
    with open(summary) as f:
        s = json.load(f)
    os.unlink(summary)
    s["seconds"] = elapsed
    return s


def write(rows, a):
    """Writes the table so far (after every row, so an interrupted run keeps what it measured)."""
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "quality.json"), "w") as f:
        json.dump({"threads": a.threads, "rows": rows}, f, indent=2)
    fmt = lambda x, spec: "n/a" if x is None else format(x, spec)
    lines = ["| model | dataset:split | test Macro-F1 min / mean / max (± std) | Micro-F1 | runs | "
             "selected epoch min-max | epochs | median epoch (s) | peak RSS (MiB) | reference |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['dataset']} | {fmt(r['test_macro_f1_min'], '.4f')} / "
            f"{fmt(r['test_macro_f1_mean'], '.4f')} / {fmt(r['test_macro_f1_max'], '.4f')} (± "
            f"{fmt(r['test_macro_f1_std'], '.4f')}) | {fmt(r['test_micro_f1_mean'], '.4f')} | "
            f"{r['succeeded']}/{r['seeds']} | {r['best_epoch_range']} | "
            f"{fmt(r['epochs_mean'], '.0f')} | "
            f"{fmt(r['epoch_seconds_median'], '.3f')} | {fmt(r['peak_rss_mib_max'], '.0f')} | "
            f"{r['reference']} |")
    with open(os.path.join(a.out, "quality.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--models", default="magnn,han,rgcn")
    p.add_argument("--datasets", default="imdb:magnn,dblp:heco20,dblp:heco40,dblp:heco60")
    p.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--out", default=os.path.join(ROOT, "bench/results/quality"))
    a = p.parse_args()
    fg = os.path.join(a.build, "runtime/flexgraph")
    if not os.access(fg, os.X_OK):
        sys.exit(f"quality: {fg} is not built (cmake --build --preset release)")
    models = [m for m in a.models.split(",") if m]
    datasets = [d for d in a.datasets.split(",") if d]
    for d in datasets:
        if ":" not in d:
            sys.exit(f"quality: --datasets entry '{d}' is not DATASET:SPLIT")
    rows, total, done = [], len(models) * len(datasets) * a.seeds, 0
    for d in datasets:
        dataset, split = d.split(":", 1)
        for model in models:
            runs = []
            for seed in range(1, a.seeds + 1):
                r = run(fg, a.data, model, dataset, split, seed, a.threads)
                done += 1
                status = (f"macro-F1 {r['test_macro_f1']:.4f}, epoch {r['best_epoch']} of {r['epochs']}"
                          if "error" not in r
                          else f"failed: {r['error']}")
                print(f"[quality] {done}/{total} {model} {d} seed {seed}: {status} "
                      f"({r['seconds']:.0f}s)", file=sys.stderr, flush=True)
                runs.append(r)
            ok = [r for r in runs if "error" not in r]
            f1 = [r["test_macro_f1"] for r in ok]
            rows.append({
                "model": model, "dataset": d, "seeds": a.seeds, "succeeded": len(ok),
                "test_macro_f1_mean": statistics.mean(f1) if f1 else None,
                "test_macro_f1_std": statistics.stdev(f1) if len(f1) > 1 else 0.0 if f1 else None,
                "test_macro_f1_min": min(f1) if f1 else None,
                "test_macro_f1_max": max(f1) if f1 else None,
                "best_epochs": [r["best_epoch"] for r in ok],
                "best_epoch_range": (f"{min(r['best_epoch'] for r in ok)}-{max(r['best_epoch'] for r in ok)}"
                                     if ok else "n/a"),
                "test_micro_f1_mean": statistics.mean(r["test_micro_f1"] for r in ok) if ok else None,
                "epoch_seconds_median": statistics.median(r["epoch_seconds_median"] for r in ok) if ok else None,
                "peak_rss_mib_max": max(r["peak_rss_bytes"] for r in ok) / 2**20 if ok else None,
                "epochs_mean": statistics.mean(r["epochs"] for r in ok) if ok else None,
                "errors": [r["error"] for r in runs if "error" in r],
                "reference": REFERENCES.get(d, ""),
            })
            write(rows, a)
    print("\n".join(write(rows, a)))


if __name__ == "__main__":
    main()
