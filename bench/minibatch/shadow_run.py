#!/usr/bin/env python3
"""ShaDow-GNN: FlexGraph (--sampler shadow) against PyG's ShaDowKHopSampler on the same workload, threads and
settings (2 hops of 10 neighbours each, as PyG draws one fanout for every hop; batches of 32 roots; GCN read
out at the root). Per workload: the sampling rate (induced subgraph edges per second over an epoch of the
training vertices; FlexGraph in bulks of 1 and 8, with the fraction of the memory ceiling minibatch_bench
measures), the training epoch time, and with --accuracy_epochs on Cora the test accuracy at the best
validation accuracy (both evaluate each vertex on its own subgraph). Writes
bench/results/minibatch/shadow.{md,json}.

  bench/.venv/bin/python bench/minibatch/shadow_run.py                      # Cora and RMAT-18
  bench/.venv/bin/python bench/minibatch/shadow_run.py --workloads rmat --epochs 1 --pyg_train_batches 2000 \
      --rmat_spec rmat:scale=20,edge_factor=16,features=128,classes=8,seed=1   # PyG's epoch projected
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import run, thread_env  # noqa: E402  (bench/minibatch/run.py's)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="cora,rmat")
    p.add_argument("--rmat_spec", default="rmat:scale=18,edge_factor=16,features=128,classes=8,seed=1")
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--fanout", type=int, default=10)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs, after one warm-up epoch")
    p.add_argument("--accuracy_epochs", type=int, default=100, help="on Cora (0: no accuracy)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pyg_train_batches", type=int, default=0,
                   help="PyG's epoch time projected from this many timed training batches (0: whole epochs)")
    p.add_argument("--ego_library", default=None, help="run_shadow.py's: torch_sparse's ego_sample op as a library, "
                   "where torch_sparse is not installed")
    p.add_argument("--build", default=os.environ.get("FLEXGRAPH_BUILD", os.path.join(ROOT, "build", "release")))
    p.add_argument("--work_dir", default=os.path.join(ROOT, "build", "bench_work"))
    p.add_argument("--out_dir", default=os.path.join(ROOT, "bench", "results", "minibatch"))
    return p.parse_args()


def prepare(a, name):
    d = os.path.join(a.work_dir, "shadow-" + (name if name == "cora" else a.rmat_spec.replace(":", "_").replace(",", "_")))
    if os.path.exists(os.path.join(d, "meta.json")):
        return d
    os.makedirs(a.work_dir, exist_ok=True)
    flexgraph = os.path.join(a.build, "runtime", "flexgraph")
    if name == "cora":
        run([flexgraph, "convert", os.path.join(SHARED, "cora"), "--npy_dir", d, "--normalize_features"])
    else:
        run([flexgraph, "generate", a.rmat_spec, "--format", "npy", "--out", d])
    return d


def flexgraph_row(a, d, name, accuracy_epochs):
    tmp = os.path.join(a.work_dir, "shadow-runs")
    os.makedirs(tmp, exist_ok=True)
    fanouts = ",".join([str(a.fanout)] * a.depth)
    sampling_json = os.path.join(tmp, f"{name}-sampling.json")
    # SAGE's neighbourhoods: the adjacency itself (no self loops, unweighted), as PyG's sampler reads it.
    run([os.path.join(a.build, "bench", "minibatch_bench"), "--dataset", d, "--model", "sage", "--sampler", "shadow",
         "--batch_size", str(a.batch_size), "--fanouts", fanouts, "--bulk_sizes", "1,8",
         "--epochs", str(a.epochs if name != "cora" else 20), "--threads", str(a.threads),
         "--summary_json", sampling_json], env=thread_env(a.threads))
    with open(sampling_json) as f:
        s = json.load(f)
    train_json = os.path.join(tmp, f"{name}-train.json")
    epochs = max(a.epochs + 1, accuracy_epochs)
    run([os.path.join(a.build, "runtime", "flexgraph"), "train", "--dataset", d, "--model", "gcn",
         "--layers", str(a.layers), "--hidden", str(a.hidden), "--batch_size", str(a.batch_size),
         "--sampler", "shadow", "--fanouts", fanouts, "--epochs", str(epochs),
         "--eval_every", str(5 if accuracy_epochs else epochs), "--threads", str(a.threads), "--quiet",
         "--summary_json", train_json], env=thread_env(a.threads))
    with open(train_json) as f:
        t = json.load(f)
    bulks = {int(b["bulk"]): b for b in s["bulks"]}
    row = {
        "system": "FlexGraph",
        "sampled_edges_per_epoch": bulks[1]["entries_per_epoch"],
        "sampled_edges_per_second": bulks[1]["entries_per_second"],
        "bulk8_edges_per_second": bulks[8]["entries_per_second"],
        "sampling_memory_ceiling_fraction": bulks[8]["fraction_of_memory_ceiling"],
        "epoch_seconds": statistics.median(t["epoch_seconds"][1:]),
        "triad_gb_per_second": s["triad_bytes_per_second"] / 1e9,
    }
    if accuracy_epochs:
        row["test_accuracy"] = t.get("test_accuracy")
    return row


def pyg_row(a, d, name, accuracy_epochs):
    out = os.path.join(a.work_dir, "shadow-runs", f"{name}-pyg.json")
    run([sys.executable, os.path.join(ROOT, "bench", "baselines", "run_shadow.py"), "--data", d,
         "--depth", str(a.depth), "--fanout", str(a.fanout), "--batch_size", str(a.batch_size),
         "--layers", str(a.layers), "--hidden", str(a.hidden), "--epochs", str(a.epochs if name != "cora" else 20),
         "--accuracy_epochs", str(accuracy_epochs), "--threads", str(a.threads), "--out", out,
         "--train_batches", str(a.pyg_train_batches)]
        + (["--ego_library", a.ego_library] if a.ego_library else []),
        env=thread_env(a.threads))
    with open(out) as f:
        return json.load(f)


def main():
    a = parse_args()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    rows = []
    for name in a.workloads.split(","):
        d = prepare(a, name)
        acc = a.accuracy_epochs if name == "cora" else 0
        fg_r, pyg_r = flexgraph_row(a, d, name, acc), pyg_row(a, d, name, acc)
        for r in (fg_r, pyg_r):
            r["workload"] = name if name == "cora" else a.rmat_spec
            rows.append(r)
        print(json.dumps(fg_r), json.dumps(pyg_r), sep="\n", flush=True)
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "shadow.json"), "w") as f:
        json.dump({"commit": commit, "date": datetime.date.today().isoformat(), "threads": a.threads,
                   "depth": a.depth, "fanout": a.fanout, "batch_size": a.batch_size, "rows": rows}, f, indent=1)
    lines = [f"ShaDow, {a.depth} hops of {a.fanout}, batches of {a.batch_size}, GCN {a.layers} layers hidden "
             f"{a.hidden}, {a.threads} threads, commit {commit}", "",
             "| workload | system | subgraph edges/epoch | edges/s | bulk 8 edges/s (memory ceiling) | epoch (s) | test acc |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        bulk = (f"{r['bulk8_edges_per_second']:.3g} ({100 * r['sampling_memory_ceiling_fraction']:.1f}%)"
                if "bulk8_edges_per_second" in r else "")
        acc = f"{r['test_accuracy']:.3f}" if r.get("test_accuracy") is not None else ""
        proj = r.get("epoch_projected_from")
        epoch = f"{r['epoch_seconds']:.3f}" + (f" (projected from {proj['timed_batches']} of {proj['batches_per_epoch']} "
                                               f"batches)" if proj else "")
        lines.append(f"| {r['workload']} | {r['system']} | {r['sampled_edges_per_epoch']:.0f} | "
                     f"{r['sampled_edges_per_second']:.3g} | {bulk} | {epoch} | {acc} |")
    with open(os.path.join(a.out_dir, "shadow.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
