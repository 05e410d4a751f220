#!/usr/bin/env python3
"""Mini-batch GraphSAGE: FlexGraph against DGL (NeighborSampler + DataLoader) and PyG (NeighborLoader)
on the same workload, threads and settings (fanouts 25,10, batches of 1024, hidden 256).

Per workload and system: sampled edges per epoch, sampling throughput (edges per second; FlexGraph
in bulks of 1 and of 32, with the fraction of the memory ceiling minibatch_bench measures) and the
training epoch time, with the ratios to DGL (or --reference pyg) measured in the same run. With
--device cuda every system trains on the GPU; FlexGraph draws its samples there too (the baselines
sample on the host). With --rounds N every
system runs N times, in turn, and the table gives medians with the range of the per-round ratios
(on a shared host the load moves between runs). Writes bench/results/minibatch/minibatch.{md,json}
after every row.

  bench/.venv/bin/python bench/minibatch/run.py                       # Cora and RMAT scale 20
  bench/.venv/bin/python bench/minibatch/run.py --workloads cora --frameworks dgl
  bench/.venv/bin/python bench/minibatch/run.py --workloads rmat --frameworks dgl --rounds 3
  bench/.venv/bin/python bench/minibatch/run.py --rmat_spec rmat:scale=22,edge_factor=16,features=128,classes=8,seed=1
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


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="cora,rmat")
    p.add_argument("--rmat_spec", default="rmat:scale=20,edge_factor=16,features=128,classes=8,seed=1")
    p.add_argument("--frameworks", default="dgl,pyg")
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--batch_size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs, after one warm-up epoch")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1, help="runs of every system, in turn: medians, and the "
                   "range of the ratios of runs in the same round")
    p.add_argument("--reference", choices=["dgl", "pyg"], default="dgl",
                   help="the system the ratios divide by (pyg where DGL is not installed, as on the GPU machine)")
    p.add_argument("--device", default="cpu", help="where every system trains (cuda: a GPU; sampling stays on the "
                   "host); FlexGraph's sampling rates are measured on the host either way")
    p.add_argument("--build", default=os.environ.get("FLEXGRAPH_BUILD", os.path.join(ROOT, "build", "release")))
    p.add_argument("--flexgraph", default=None, help="the flexgraph binary (default: BUILD/runtime/flexgraph)")
    p.add_argument("--minibatch_bench", default=None, help="default: BUILD/bench/minibatch_bench")
    p.add_argument("--data_root", default=SHARED, help="the folder holding cora/ (the shared datasets)")
    p.add_argument("--work_dir", default=os.path.join(ROOT, "build", "bench_work"))
    p.add_argument("--out_dir", default=os.path.join(ROOT, "bench", "results", "minibatch"))
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    a.flexgraph = a.flexgraph or os.path.join(a.build, "runtime", "flexgraph")
    a.minibatch_bench = a.minibatch_bench or os.path.join(a.build, "bench", "minibatch_bench")
    return a


def log(msg):
    print(f"[minibatch] {msg}", file=sys.stderr, flush=True)


def run(cmd, env=None):
    log(" ".join(cmd))
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return p.stdout


def thread_env(threads):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[k] = str(threads)
    return env


def prepare(a, name):
    """The .npy workload directory both sides read, written once."""
    d = os.path.join(a.work_dir, "minibatch-" + (name if name == "cora" else a.rmat_spec.replace(":", "_").replace(",", "_")))
    if os.path.exists(os.path.join(d, "meta.json")):
        return d
    os.makedirs(a.work_dir, exist_ok=True)
    flexgraph = a.flexgraph
    if name == "cora":
        run([flexgraph, "convert", os.path.join(a.data_root, "cora"), "--npy_dir", d, "--normalize_features"])
    else:
        run([flexgraph, "generate", a.rmat_spec, "--format", "npy", "--out", d])
    return d


def flexgraph_row(a, d, name):
    tmp = os.path.join(a.work_dir, "minibatch-runs")
    os.makedirs(tmp, exist_ok=True)
    sampling_json = os.path.join(tmp, f"{name}-sampling.json")
    run([a.minibatch_bench, "--dataset", d, "--model", "sage",
         "--batch_size", str(a.batch_size), "--fanouts", a.fanouts, "--bulk_sizes", "1,32",
         "--epochs", str(a.epochs), "--threads", str(a.threads), "--summary_json", sampling_json,
         # where training samples: on a GPU, the rows are drawn there (--sample_on device)
         "--sample_on", "device" if a.device.startswith("cuda") else "host"],
        env=thread_env(a.threads))
    with open(sampling_json) as f:
        s = json.load(f)
    train_json = os.path.join(tmp, f"{name}-train.json")
    run([a.flexgraph, "train", "--dataset", d, "--model", "sage",
         "--hidden", str(a.hidden), "--batch_size", str(a.batch_size), "--fanouts", a.fanouts,
         "--epochs", str(a.epochs + 1), "--eval_every", str(a.epochs + 1), "--threads", str(a.threads), "--quiet",
         "--device", a.device, "--summary_json", train_json], env=thread_env(a.threads))
    with open(train_json) as f:
        t = json.load(f)
    bulks = {int(b["bulk"]): b for b in s["bulks"]}
    return {
        "system": "FlexGraph",
        "sampled_edges_per_epoch": bulks[1]["entries_per_epoch"],
        "sampled_edges_per_second": bulks[1]["entries_per_second"],
        "bulk32_edges_per_second": bulks[32]["entries_per_second"],
        "sampling_memory_ceiling_fraction": bulks[32]["fraction_of_memory_ceiling"],
        "epoch_seconds": statistics.median(t["epoch_seconds"][1:]),
        "triad_gb_per_second": s["triad_bytes_per_second"] / 1e9,
    }


def baseline_row(a, d, name, framework):
    out = os.path.join(a.work_dir, "minibatch-runs", f"{name}-{framework}.json")
    run([sys.executable, os.path.join(ROOT, "bench", "baselines", "run_minibatch.py"), "--framework", framework,
         "--data", d, "--fanouts", a.fanouts, "--batch_size", str(a.batch_size), "--hidden", str(a.hidden),
         "--epochs", str(a.epochs), "--threads", str(a.threads), "--device", a.device, "--out", out],
        env=thread_env(a.threads))
    with open(out) as f:
        r = json.load(f)
    return {"system": {"dgl": "DGL", "pyg": "PyG"}[framework],
            "sampled_edges_per_epoch": r["sampled_edges_per_epoch"],
            "sampled_edges_per_second": r["sampled_edges_per_second"],
            "epoch_seconds": r["epoch_seconds"]}


def ratio_range(ref, r, key, ratio):
    """' (lo–hi)' over the rounds both rows ran, from each round's pair of runs; '' for one round."""
    pairs = [(x.get(key), y.get(key)) for x, y in zip(ref.get("rounds", []), r.get("rounds", []))]
    values = [ratio(x, y) for x, y in pairs if x and y]
    return f" ({min(values):.2f}–{max(values):.2f})" if len(values) > 1 else ""


def merge_rounds(runs):
    """One row from a system's runs: the median of every number, the runs kept under 'rounds'."""
    ok = [x for x in runs if "error" not in x]
    if not ok:
        return runs[-1]
    row = {"system": ok[0]["system"]}
    for k, v in ok[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            row[k] = statistics.median(x[k] for x in ok if k in x)
    if len(runs) > 1:
        row["rounds"] = runs
    return row


def fmt(v, spec=".3g", suffix=""):
    return "—" if v is None else format(v, spec) + suffix


def write_table(a, rows):
    os.makedirs(a.out_dir, exist_ok=True)
    ref_name = {"dgl": "DGL", "pyg": "PyG"}[a.reference]
    lines = [f"Mini-batch GraphSAGE-mean, fanouts {a.fanouts}, batches of {a.batch_size}, hidden {a.hidden}, "
             f"{a.threads} threads, training on {a.device}, median of {a.epochs} epochs after a warm-up; ratios to {ref_name} in the same run"
             + (f"; medians of {a.rounds} rounds, each system once per round (range: the ratios of each round's runs)." if a.rounds > 1 else "."), "",
             f"| workload | system | sampled edges / epoch | sampling edges/s | × {ref_name} | bulk 32 edges/s | × {ref_name} "
             f"| × bulk 1 | memory ceiling (bulk 32) | epoch (s) | × {ref_name} |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['system']} | not run: {r['error']} ||||||||||")
            continue
        dgl = next((x for x in rows if x["workload"] == r["workload"] and x["system"] == ref_name), None)
        s_ratio = r["sampled_edges_per_second"] / dgl["sampled_edges_per_second"] if dgl and r.get("sampled_edges_per_second") else None
        e_ratio = dgl["epoch_seconds"] / r["epoch_seconds"] if dgl and r.get("epoch_seconds") else None
        e_range = ratio_range(dgl, r, "epoch_seconds", lambda ref, x: ref / x) if dgl and dgl is not r else ""
        s_range = ratio_range(dgl, r, "sampled_edges_per_second", lambda ref, x: x / ref) if dgl and dgl is not r else ""
        b32 = r.get("bulk32_edges_per_second")
        lines.append(
            f"| {r['workload']} | {r['system']} | {fmt(r.get('sampled_edges_per_epoch'), ',.0f')} "
            f"| {fmt(r.get('sampled_edges_per_second'))} | {fmt(s_ratio, '.2f', '×')}{s_range} | {fmt(b32)} "
            f"| {fmt(b32 / dgl['sampled_edges_per_second'] if b32 and dgl else None, '.2f', '×')} "
            f"| {fmt(b32 / r['sampled_edges_per_second'] if b32 else None, '.2f', '×')} "
            f"| {fmt(100 * r['sampling_memory_ceiling_fraction'] if 'sampling_memory_ceiling_fraction' in r else None, '.1f', '%')} "
            f"| {fmt(r.get('epoch_seconds'), '.3f')} | {fmt(e_ratio, '.2f', '×')}{e_range} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out_dir, "minibatch.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out_dir, "minibatch.json"), "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "settings": vars(a),
                   "rows": rows}, f, indent=1)
    print(text)


def main():
    a = parse_args()
    rows = []
    for name in a.workloads.split(","):
        d = prepare(a, name)
        workload = "cora" if name == "cora" else a.rmat_spec
        systems = ["flexgraph"] + [x for x in a.frameworks.split(",") if x]
        runs = {system: [] for system in systems}
        for round_index in range(a.rounds):
            for system in systems:
                if round_index > 0 and "error" in runs[system][-1]:
                    continue
                try:
                    row = flexgraph_row(a, d, name) if system == "flexgraph" else baseline_row(a, d, name, system)
                except RuntimeError as e:
                    log(str(e))
                    row = {"system": system, "error": str(e).splitlines()[-1][:200]}
                runs[system].append(row)
                done = [dict(merge_rounds(runs[x]), workload=workload) for x in systems if runs[x]]
                write_table(a, rows + done)
        rows += [dict(merge_rounds(runs[x]), workload=workload) for x in systems]
    write_table(a, rows)


if __name__ == "__main__":
    main()
