#!/usr/bin/env python3
"""The largest RMAT graph each system trains on one GPU: GCN and SAGE (2 layers, hidden 256, the
settings of bench/gpu/run.py), FlexGraph against PyG (sparse adj_t), each climbing RMAT scales
from --from_scale until a run fails (out of memory) or --to_scale is reached.

--memory_gib caps both systems' device memory alike (FlexGraph's --device_memory_gib, PyTorch's
per-process memory fraction), as a smaller GPU: the crossing then happens at smaller, quicker
scales. Each attempt trains --epochs epochs from the same initial weights.

  python3 bench/gpu/largest.py --memory_gib 8 --from_scale 19 --to_scale 23     # ~5 min on an H100
  bench/.venv/bin/python bench/gpu/largest.py --device cpu --from_scale 10 --to_scale 11  # dry run

Writes largest.md and largest.json to --out after every attempt; progress goes to stderr. Exits 1
when a system's first scale already fails for another reason than memory.
"""
import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "harness"))
sys.path.insert(0, HERE)
import run_bench as harness  # noqa: E402
from run import device_name, error_text  # noqa: E402  (bench/gpu/run.py)

EDGE_FACTOR = 12  # as run.py's rmat22
MEMORY_WORDS = ("out of memory", "out of gpu memory", "outofmemory", "cuda error: out of memory",
                "cudaerrormemoryallocation", "device_memory_gib")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flexgraph", default=os.environ.get("FLEXGRAPH", os.path.join(ROOT, "build", "release",
                                                                                   "runtime", "flexgraph")))
    p.add_argument("--device", default="cuda")
    p.add_argument("--models", default="gcn,sage")
    p.add_argument("--frameworks", default="flexgraph,pyg")
    p.add_argument("--from_scale", type=int, default=20)
    p.add_argument("--to_scale", type=int, default=25)
    p.add_argument("--memory_gib", type=float, default=0, help="device memory cap of every run (0: none)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--time_budget", type=float, default=0, help="seconds after which no attempt starts")
    p.add_argument("--work_dir", default=os.path.join(ROOT, "build", "gpu_largest_work"))
    p.add_argument("--out", default=os.environ.get("OUT") or os.path.join(BENCH, "results", "gpu"))
    p.add_argument("--python", default=sys.executable)
    a = p.parse_args()
    a.models = [m for m in a.models.split(",") if m]
    a.frameworks = [f for f in a.frameworks.split(",") if f]
    a.warmup = 0
    a.pinsage_selection = "dgl"
    for m in a.models:
        if m not in ("gcn", "sage"):
            p.error(f"model {m}: gcn or sage")
    for f in a.frameworks:
        if f not in ("flexgraph", "pyg"):
            p.error(f"framework {f}: flexgraph or pyg")
    if not a.from_scale <= a.to_scale:
        p.error("--from_scale must not exceed --to_scale")
    return a


def is_memory_error(text):
    t = text.lower()
    return any(w in t for w in MEMORY_WORDS)


def attempt(a, framework, model, scale, run_dir):
    """One training run at RMAT `scale`: (ok, peak device MiB or None, error text)."""
    name = f"rmat{scale}"
    harness.WORKLOADS[name] = {"spec": f"rmat:scale={scale},edge_factor={EDGE_FACTOR},features=128,classes=8,seed=1",
                               "normalize_features": False, "epochs": a.epochs}
    m = dict(harness.MODELS[model])
    d = harness.prepare(a, name)
    wdir = harness.write_weights(a, d, name, model, m, seed=1)
    if framework == "flexgraph":
        extra = ["--device", a.device]
        if a.memory_gib > 0:
            extra += ["--device_memory_gib", str(a.memory_gib)]
        r = harness.run_flexgraph(a, model, m, name, d, wdir, a.epochs, run_dir, extra=extra)
    else:
        extra = ["--device", a.device, "--adjacency", "sparse"]
        if a.memory_gib > 0:
            extra += ["--memory_gib", str(a.memory_gib)]
        r = harness.run_baseline(a, framework, model, m, name, d, wdir, a.epochs, run_dir, extra=extra)
    peak = r.get("peak_device_bytes")
    return peak / 2**20 if peak else None


def markdown(info, rows, largest):
    lines = [f"# Largest RMAT scale trained on {info['device_name']} ({info['device']})", "",
             f"{info['date']}; GCN and SAGE, 2 layers, hidden 256, edge factor {EDGE_FACTOR}, 128 features, "
             f"{info['epochs']} epochs per attempt; device memory cap: "
             f"{str(info['memory_gib']) + ' GiB' if info['memory_gib'] else 'none (the whole device)'}.", "",
             "| model | system | largest scale trained | vertices | peak MiB there | first failing scale | why |",
             "|---|---|---|---|---|---|---|"]
    for (model, fw), v in largest.items():
        s = v.get("largest")
        lines.append(f"| {model} | {fw} | {s if s is not None else 'none'} | "
                     f"{f'{2**s:,}' if s is not None else '—'} | "
                     f"{harness.fmt(v.get('peak_mib'), '.0f')} | {v.get('failed_at', '—')} | "
                     f"{(v.get('why') or '—').replace('|', '/')[:120]} |")
    lines += ["", "| model | system | scale | status | peak MiB | seconds |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['framework']} | {r['scale']} | {r['status'].replace('|', '/')[:120]} | "
                     f"{harness.fmt(r['peak_mib'], '.0f')} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def main():
    a = parse_args()
    start = time.monotonic()
    run_dir = os.path.join(a.work_dir, "runs")
    os.makedirs(run_dir, exist_ok=True)
    info = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "device": a.device,
            "device_name": device_name(a.device), "memory_gib": a.memory_gib, "epochs": a.epochs}
    rows, largest, failures = [], {}, []

    def write():
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "largest.json"), "w") as f:
            json.dump({"info": info, "rows": rows,
                       "largest": [{"model": k[0], "framework": k[1], **v} for k, v in largest.items()]}, f, indent=1)
        with open(os.path.join(a.out, "largest.md"), "w") as f:
            f.write(markdown(info, rows, largest) + "\n")

    for model in a.models:
        for fw in a.frameworks:
            key = (model, {"flexgraph": "FlexGraph", "pyg": "PyG"}[fw])
            largest[key] = {"largest": None}
            for scale in range(a.from_scale, a.to_scale + 1):
                if a.time_budget > 0 and time.monotonic() - start > a.time_budget:
                    largest[key]["why"] = "stopped: --time_budget reached"
                    break
                t0 = time.monotonic()
                try:
                    peak = attempt(a, fw, model, scale, run_dir)
                    rows.append({"model": model, "framework": key[1], "scale": scale, "status": "ok",
                                 "peak_mib": peak, "seconds": time.monotonic() - t0})
                    largest[key].update(largest=scale, peak_mib=peak)
                    write()
                except Exception as e:  # noqa: BLE001 (a failing attempt ends this system's climb)
                    text = error_text(e)
                    memory = is_memory_error(str(e))
                    rows.append({"model": model, "framework": key[1], "scale": scale,
                                 "status": ("out of memory: " if memory else "error: ") + text,
                                 "peak_mib": None, "seconds": time.monotonic() - t0})
                    largest[key].update(failed_at=scale, why=text)
                    if not memory and scale == a.from_scale:
                        failures.append(f"{key[1]} {model} at scale {scale}: {text}")
                    write()
                    break
                harness.log(f"{model} {key[1]} scale {scale}: ok, peak {harness.fmt(peak, '.0f')} MiB")
    write()
    print(markdown(info, rows, largest))
    if failures:
        print("\nFAILURES:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
