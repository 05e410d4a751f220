#!/usr/bin/env python3
"""FlexGraph's Interaction Network against the PyTorch + PyG reference (bench/baselines/
run_interaction.py) on the same generated tracking events, weights and settings, per event size.

  bench/tracking/run.sh [--particles "50 200 1000"] [--events 6] [--epochs 3] [--threads 2]
                        [--hidden 128] [--layers 8] [--batch_size 1] [--build build/release]
                        [--reference_max_particles P] [--model_opt recompute=0]
  python3 bench/tracking/run_tracking.py --device cuda --flexgraph BIN --python python3 ...

Per size: `flexgraph generate trackml:events=E,particles=P,noise=0.1,seed=S --out DIR` (the OGB
graph-property layout both sides read), Glorot weights written by the reference
(--write_weights), then both train E events for the given epochs on the same threads. The epoch-0
loss (every training event, before any step) must agree within 1e-4 relative, or the run exits 1
after printing the table. Printed per size: hits and candidate edges per event, median s/epoch of
both and their ratio, peak RSS of both, and the fraction of the machine's roofline floor each
reaches (bench/harness/floor.py's ceilings; the floor of an epoch is the sum over its GEMMs, edge
gathers and aggregations of max(bytes / triad bandwidth, flops / GEMM peak), element-wise work
fused), and FlexGraph's peak RSS per candidate edge of one event (KB; one event per batch).
With --device cuda both train on the GPU (batches built on the host, as each does): the memory
columns are then peak device memory (FlexGraph's allocator, torch.cuda.max_memory_allocated) and
the floor uses the GPU's ceilings measured with torch (floor.device_ceilings).
Sizes above --reference_max_particles run FlexGraph only (the reference's columns say "not run";
no epoch-0 check there): how time and memory grow up to events the reference cannot hold.
Writes bench/results/tracking-latest.json.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))
import floor  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--particles", default="50 200 1000", help="mean particles per event, per size")
    p.add_argument("--events", type=int, default=6)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch_size", type=int, default=1)
    p.add_argument("--seed", type=int, default=21)
    p.add_argument("--reference_max_particles", type=int, default=10**9,
                   help="larger sizes run FlexGraph only")
    p.add_argument("--model_opt", default="", help="FlexGraph's --model_opt (default: the model's)")
    p.add_argument("--device", default="cpu", help="cpu or cuda: where both train")
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--flexgraph", default=None, help="the flexgraph binary (default: BUILD/runtime/flexgraph)")
    p.add_argument("--python", default=os.path.join(ROOT, "bench", ".venv", "bin", "python"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench_work", "tracking"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "tracking-latest.json"))
    p.add_argument("--table", default=None, help="also write the printed table (markdown) there")
    return p.parse_args()


def run(cmd, log):
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit(f"failed (exit {r.returncode}): {' '.join(cmd)}\n{open(log).read()[-3000:]}")


def counts(data):
    def column(name):
        with gzip.open(os.path.join(data, "raw", name), "rt") as f:
            return [int(line) for line in f if line.strip()]
    return column("num-node-list.csv.gz"), column("num-edge-list.csv.gz")


def epoch_floor(hits, edges, f_node, f_edge, a, ceilings):
    """Floor seconds of one training epoch over events of `hits` vertices and `edges` original
    edges (2 entries each): forward and backward GEMMs (dW and dX), edge-input gathers and their
    scatter-back, aggregations; element-wise work fused."""
    h, k, e = a.hidden, 2, 2 * edges
    total = 0.0

    def gemm(rows, i, o):
        nonlocal total
        for _ in range(3):  # Y = X W, dX = dY W^T, dW = X^T dY
            total += floor.kernel_seconds(4 * (rows * i + i * o + rows * o), 2 * rows * i * o, ceilings)

    def mlp(rows, d_in, d_out):
        for b in range(k):
            gemm(rows, d_in if b == 0 else h, d_out if b == k - 1 else h)

    def moved(nbytes):
        nonlocal total
        total += floor.kernel_seconds(nbytes, 0, ceilings)

    mlp(hits, f_node, h)
    mlp(e, f_edge, h)
    for _ in range(a.layers):
        moved(2 * 4 * e * 3 * h)      # [h_src, h_dst, e] per entry, and its gradient scattered back
        mlp(e, 3 * h, h)
        moved(2 * 4 * (e * h + hits * h))  # aggregation and its backward
        mlp(hits, 2 * h, h)
    moved(2 * 4 * e * 3 * h)
    mlp(e, 3 * h, 1)
    return total


def main():
    a = parse_args()
    fg = a.flexgraph or os.path.join(a.build, "runtime", "flexgraph")
    ceil_bin = os.path.join(a.build, "bench", "machine_ceilings")
    gpu = a.device.startswith("cuda")
    nan = float("nan")
    for path in (fg, a.python) if gpu else (fg, ceil_bin, a.python):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path}: not found (build build/release with its bench targets; "
                     "bench/baselines/setup_venv.sh for the reference)")
    os.makedirs(a.work, exist_ok=True)

    def measure():
        return floor.device_ceilings(a.device) if gpu else floor.measure_ceilings(ceil_bin, a.threads)
    ceilings = measure()
    memory_key = "peak_device_bytes" if gpu else "peak_rss_bytes"
    rows, disagree = [], []
    for particles in [int(p) for p in a.particles.split()]:
        spec = f"trackml:events={a.events},particles={particles},noise=0.1,seed={a.seed}"
        data = os.path.join(a.work, f"p{particles}_e{a.events}_s{a.seed}")
        if not os.path.exists(os.path.join(data, "raw")):
            run([fg, "generate", spec, "--out", data], os.path.join(a.work, "generate.log"))
        hits, edges = counts(data)
        weights = os.path.join(data, "weights")
        settings = ["--hidden", str(a.hidden), "--layers", str(a.layers), "--epochs", str(a.epochs),
                    "--batch_size", str(a.batch_size), "--threads", str(a.threads), "--device", a.device]
        ref_json = os.path.join(data, "pyg.json")
        with_ref = particles <= a.reference_max_particles
        if with_ref:
            run([a.python, os.path.join(ROOT, "bench", "baselines", "run_interaction.py"), "--data", data,
                 "--weights", weights, "--write_weights", "--out", ref_json, "--lr", "0.001"] + settings,
                os.path.join(data, "pyg.log"))
        fg_json = os.path.join(data, "flexgraph.json")
        init = ["--init_weights", weights, "--epoch0_loss"] if with_ref else []
        opts = ["--model_opt", a.model_opt] if a.model_opt else []
        run([fg, "train", "--model", "interaction", "--dataset", data, "--lr", "0.001",
             "--summary_json", fg_json] + init + opts + settings,
            os.path.join(data, "flexgraph.log"))
        got = json.load(open(fg_json))
        ref = json.load(open(ref_json)) if with_ref else {
            "epoch0_loss": nan, "epoch_seconds_median": nan, memory_key: nan}
        if with_ref and abs(ref["epoch0_loss"] - got["epoch0_loss"]) > 1e-4 * abs(ref["epoch0_loss"]):
            disagree.append((particles, got["epoch0_loss"], ref["epoch0_loss"]))
        mean_hits = sum(hits) / len(hits)
        mean_edges = sum(edges) / len(edges)
        rows.append({
            "particles": particles, "hits_per_event": mean_hits, "edges_per_event": mean_edges,
            "flexgraph_s": got["epoch_seconds_median"], "pyg_s": ref["epoch_seconds_median"],
            "speedup": ref["epoch_seconds_median"] / got["epoch_seconds_median"],
            "flexgraph_rss_mib": got[memory_key] / 2**20, "pyg_rss_mib": ref[memory_key] / 2**20,
            "epoch0_loss": got.get("epoch0_loss"), "pyg_epoch0_loss": ref["epoch0_loss"],
            "reference_run": with_ref,
            "flexgraph_kb_per_edge": got[memory_key] / 1e3 / max(edges), "memory": memory_key,
        })
        r = rows[-1]
        print(f"particles {particles}: {mean_hits:.0f} hits, {mean_edges:.0f} edges per event; "
              f"flexgraph {r['flexgraph_s']:.3f} s/epoch, pyg {r['pyg_s']:.3f} ({r['speedup']:.2f}x)",
              flush=True)
    # Ceilings measured before and after the runs, the higher of each (a busy machine's lower
    # ceilings would lower the bar).
    again = measure()
    ceilings = floor.ceilings_max(ceilings, again) if ceilings and again else ceilings or again
    train_events = max(1, round(0.8 * a.events))  # the generator's split: the first 80% train
    for r in rows:
        r["floor_s"] = (train_events * epoch_floor(r["hits_per_event"], r["edges_per_event"], 3, 6, a, ceilings)
                        if ceilings else nan)
        r["flexgraph_of_floor"] = r["floor_s"] / r["flexgraph_s"]
        r["pyg_of_floor"] = r["floor_s"] / r["pyg_s"]
    memory_name = "device MiB" if gpu else "RSS MiB"
    header = ("hits/event", "edges/event", "FlexGraph s/epoch", "PyG s/epoch", "speedup",
              f"FlexGraph {memory_name}", f"PyG {memory_name}", "FlexGraph KB/edge", "FlexGraph % of floor",
              "PyG % of floor")
    lines = [f"Interaction Network on {a.device}, FlexGraph against PyTorch + PyG "
             f"({a.events} events per size, {a.epochs} epochs, {a.threads} threads)", "",
             "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in rows:
        if r["reference_run"]:
            pyg = (f"{r['pyg_s']:.3f} | {r['speedup']:.2f}x", f"{r['pyg_rss_mib']:.0f}",
                   f"{100 * r['pyg_of_floor']:.1f}")
        else:
            pyg = ("not run | -", "not run", "-")
        lines.append(f"| {r['hits_per_event']:.0f} | {r['edges_per_event']:.0f} | {r['flexgraph_s']:.3f} | "
                     f"{pyg[0]} | {r['flexgraph_rss_mib']:.0f} | {pyg[1]} | {r['flexgraph_kb_per_edge']:.1f} | "
                     f"{100 * r['flexgraph_of_floor']:.1f} | {pyg[2]} |")
    print("\n".join(lines))
    if a.table:
        with open(a.table, "w") as f:
            f.write("\n".join(lines) + "\n")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"settings": vars(a), "ceilings": ceilings, "rows": rows}, f, indent=1)
    for particles, got, want in disagree:
        print(f"epoch-0 loss disagrees at particles {particles}: flexgraph {got:.9g}, pyg {want:.9g}",
              file=sys.stderr)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
