#!/usr/bin/env python3
"""FlexGraph against PyG and plain torch.sparse on one GPU: the same workloads, models, initial
weights and hyperparameters on the same device; one table.

  python3 bench/gpu/run.py                                    # CUDA machine; ~5 minutes on an H100
  python3 bench/gpu/run.py --workloads cora,rmat20 --epochs 20 --out /tmp/gpu
  bench/.venv/bin/python bench/gpu/run.py --device cpu --workloads cora --epochs 5   # dry run here

Per workload and model (bench/README.md, "GPU: FlexGraph vs PyG"):
  - FlexGraph: `flexgraph train --device D --epoch0_loss --init_weights ... --summary_json`;
  - PyG: bench/baselines/run_baseline.py --framework pyg --adjacency sparse (GCNConv / SAGEConv on
    a sparse adj_t: torch_sparse.SparseTensor when importable, else a torch.sparse CSR tensor);
  - torch.sparse: run_baseline.py --framework torch (hand-written layers on torch.sparse.mm);
all on device D from the same weight files (bench/harness/run_bench.py writes them). MAGNN's
baseline is the same model in PyTorch with PyG's softmax and scatter (run_magnn.py --backend pyg);
PinSage runs in FlexGraph alone (PyG has no layer computing the same function).

Contract: every row is written to --out (gpu_bench.md, gpu_bench.json) as soon as it is known; a
run that fails becomes a row with its error, the others go on. Exits 1 when a run failed or an
epoch-0 loss differs from FlexGraph's by more than --tolerance relative. Progress goes to stderr.
Needs numpy and torch in this python, torch_geometric for the PyG rows.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "harness"))
import run_bench as harness  # noqa: E402  (workload preparation, weights, runs, table helpers)
import floor as epoch_floors  # noqa: E402  (the epoch floor model, fed with this device's ceilings)

# Workloads in the default order: small first, so that --time_budget cuts the largest.
# "source" is a dataset under --data_root; "spec" a `flexgraph generate` spec.
WORKLOADS = {
    "cora": {"source": "cora", "normalize_features": True, "epochs": 200, "models": ["gcn", "sage"]},
    # 2^20 vertices, 16 * 2^20 = 17M generated edges (about 31M directed after symmetrising)
    "rmat20": {"spec": "rmat:scale=20,edge_factor=16,features=128,classes=8,seed=1",
               "normalize_features": False, "epochs": 20, "models": ["gcn", "sage", "pinsage"]},
    "imdb": {"source": "imdb", "normalize_features": True, "epochs": 20, "models": ["magnn"], "hetero": True},
    # 2^22 vertices, 12 * 2^22 = 50M generated edges (about 100M directed after symmetrising)
    "rmat22": {"spec": "rmat:scale=22,edge_factor=12,features=128,classes=8,seed=1",
               "normalize_features": False, "epochs": 10, "models": ["gcn", "sage"]},
}
FRAMEWORKS = {"flexgraph": "FlexGraph", "pyg": "PyG", "torch": "torch.sparse"}
# Baseline arguments per framework (run_baseline.py); the device is added per run.
BASELINE_ARGS = {"pyg": ["--adjacency", "sparse"], "torch": []}
# MAGNN's baselines: the same model in PyTorch with PyG's softmax and scatter (run_magnn.py).
MAGNN_BASELINE_ARGS = {"pyg": ["--backend", "pyg"]}
NO_PYG_MODEL = {"pinsage": "PyG has no PinSage layer: FlexGraph alone"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flexgraph", default=os.environ.get("FLEXGRAPH", os.path.join(ROOT, "build", "release",
                                                                                   "runtime", "flexgraph")))
    p.add_argument("--data_root", default=os.path.join(os.path.dirname(ROOT), "shared", "data"),
                   help="directory holding cora/ and imdb/ (OGB raw layout)")
    p.add_argument("--device", default="cuda", help="cuda or cpu (all frameworks)")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma list of {', '.join(WORKLOADS)}")
    p.add_argument("--models", default="gcn,sage,pinsage,magnn", help="comma list; each workload runs its own")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS), help=f"comma list of {', '.join(FRAMEWORKS)}")
    p.add_argument("--epochs", type=int, default=None, help="epochs on every workload (default: per workload)")
    p.add_argument("--warmup", type=int, default=2, help="epochs excluded from every median")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads of every process")
    p.add_argument("--tolerance", type=float, default=1e-4, help="epoch-0 loss agreement, relative")
    p.add_argument("--time_budget", type=float, default=0, help="seconds after which no new run starts (0: none)")
    p.add_argument("--work_dir", default=os.path.join(ROOT, "build", "gpu_bench_work"),
                   help="generated workloads, weights, logs (rmat22 takes ~4 GB)")
    p.add_argument("--out", default=os.environ.get("OUT") or os.path.join(BENCH, "results", "gpu"),
                   help="where gpu_bench.md and gpu_bench.json go")
    p.add_argument("--python", default=sys.executable, help="python that runs the baselines")
    a = p.parse_args()
    a.workloads = [w for w in a.workloads.split(",") if w]
    a.models = [m for m in a.models.split(",") if m]
    a.frameworks = [f for f in a.frameworks.split(",") if f]
    for kind, got, have in (("workload", a.workloads, WORKLOADS), ("model", a.models, harness.MODELS),
                            ("framework", a.frameworks, FRAMEWORKS)):
        bad = [x for x in got if x not in have]
        if bad:
            p.error(f"unknown {kind} {', '.join(bad)} (have {', '.join(have)})")
    a.pinsage_selection = "dgl"  # FlexGraph exports no PinSage selection: no baseline reads one
    return a


def device_name(device):
    """The GPU's name (nvidia-smi, else torch) for cuda, the CPU model for cpu."""
    if device.startswith("cuda"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            import torch
            return torch.cuda.get_device_name(0)
        except Exception as e:  # noqa: BLE001 (any failure only leaves the name unknown)
            return f"unknown GPU ({str(e)[:60]})"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"CPU: {line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"CPU: {platform.processor() or 'unknown'}"


def error_text(e):
    """An exception as one short table cell (the full text stays in the JSON): for a failed
    command (run_bench.run: "command failed (rc): CMD" then its log's tail), the exit status and
    the log's last line, which names the cause."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    if not lines:
        return type(e).__name__
    text = lines[0]
    if text.startswith("command failed ("):
        text = "exit " + text[len("command failed ("):].split(")", 1)[0] + (": " + lines[-1] if len(lines) > 1 else "")
    return (text[:197] + "...") if len(text) > 200 else text


class Bench:
    """Runs the jobs and keeps gpu_bench.{md,json} in --out up to date after every row."""

    def __init__(self, a):
        self.a = a
        self.rows, self.failures = [], []
        self.start = time.monotonic()
        self.run_dir = os.path.join(a.work_dir, "runs", datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S"))
        os.makedirs(self.run_dir, exist_ok=True)
        self.info = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
                     "device": a.device, "device_name": device_name(a.device), "warmup": a.warmup,
                     "threads": a.threads, "tolerance": a.tolerance, "flexgraph": a.flexgraph,
                     "settings": {m: {k: v for k, v in s.items() if k != "fg_opts"} for m, s in harness.MODELS.items()}}
        self.ceilings = epoch_floors.device_ceilings(a.device, harness.log)
        self.info["ceilings"] = self.ceilings
        harness.log(f"device {a.device}: {self.info['device_name']}; logs in {self.run_dir}")
        if self.ceilings:
            harness.log(f"ceilings: copy {self.ceilings['triad_bytes_per_s'] / 1e9:.0f} GB/s, float32 GEMM "
                        f"{self.ceilings['gemm_flops_per_s'] / 1e12:.1f} TFLOP/s, L2 {self.ceilings['llc_bytes'] >> 20} MiB")

    def floor_seconds(self, model, d):
        """The epoch floor of `model` on workload directory d with this device's ceilings (None
        where the model has no floor model, the ceilings are unknown or the data stays in cache)."""
        if not self.ceilings:
            return None
        try:
            n, nnz, f, c = harness.graph_sizes(d)
            m = harness.MODELS[model]
            fl = epoch_floors.epoch_floor(model, n, nnz, f, c, m["hidden"], m["layers"], self.ceilings,
                                          harness.feature_nonzeros(d), harness.column_counts(d))
        except Exception as e:  # noqa: BLE001
            harness.log(f"floor of {model} on {d}: {e}")
            return None
        return fl.total() if fl is not None and not fl.cache_resident() else None

    def over_budget(self):
        return self.a.time_budget > 0 and time.monotonic() - self.start > self.a.time_budget

    def add(self, name, model, framework, sizes, epochs, **fields):
        row = {"workload": name, "model": model, "framework": FRAMEWORKS.get(framework, framework),
               "device": self.a.device, "device_name": self.info["device_name"],
               "vertices": sizes[0], "edges": sizes[1], "epochs": epochs, "warmup": self.a.warmup,
               "epoch_s": None, "ratio_to_flexgraph": None, "peak_device_mib": None, "epoch0_loss": None,
               "epoch0_rel_diff": None, "epoch0_agrees": None, "test_acc": None, "adjacency": None,
               "floor_fraction": None,
               "status": "ok", "error": None}
        row.update(fields)
        self.rows.append(row)
        self.write()
        harness.log(f"{name} {model} {row['framework']}: {row['status']}" +
                    (f", {row['epoch_s']:.4f} s/epoch" if row["epoch_s"] is not None else ""))
        return row

    def run_all(self):
        for name in self.a.workloads:
            models = [m for m in WORKLOADS[name]["models"] if m in self.a.models]
            if models:
                self.run_workload(name, models)
        self.write()

    def run_workload(self, name, models):
        a, w = self.a, WORKLOADS[name]
        epochs = a.epochs or w["epochs"]
        fws = [f for f in FRAMEWORKS if f in a.frameworks]
        if self.over_budget():
            for m in models:
                self.add(name, m, "all", (None, None), epochs, status="skipped: --time_budget reached")
            return
        # run_bench.prepare reads its own WORKLOADS table: register this one there
        harness.WORKLOADS[name] = {k: v for k, v in w.items() if k not in ("source", "models")}
        if "source" in w:
            harness.WORKLOADS[name]["source"] = os.path.join(a.data_root, w["source"])
        try:
            d = harness.prepare(a, name)
            sizes = harness.graph_sizes(d)[:2]
        except Exception as e:  # noqa: BLE001 (a workload that cannot be made fails its rows only)
            for m in models:
                self.add(name, m, "all", (None, None), epochs, status="error: " + error_text(e), error=str(e))
            self.failures.append(f"{name}: {error_text(e)}")
            return
        for model in models:
            if self.over_budget():
                self.add(name, model, "all", sizes, epochs, status="skipped: --time_budget reached")
                continue
            self.run_model(name, model, d, sizes, epochs, fws)

    def run_model(self, name, model, d, sizes, epochs, fws):
        a, m = self.a, dict(harness.MODELS[model])
        compared = model not in NO_PYG_MODEL
        wdir = None
        if compared or model == "pinsage":
            try:
                wdir = harness.write_weights(a, d, name, model, m, seed=1)
            except Exception as e:  # noqa: BLE001
                self.add(name, model, "all", sizes, epochs, status="error: weights: " + error_text(e), error=str(e))
                self.failures.append(f"{model} on {name}: weights: {error_text(e)}")
                return
        fg = None
        floor_s = self.floor_seconds(model, d)
        if "flexgraph" in fws:
            try:
                fg = harness.run_flexgraph(a, model, m, name, d, wdir, epochs, self.run_dir,
                                           extra=["--device", a.device])
                fg_epoch_s = harness.median_after(fg["epoch_seconds"], a.warmup)
                self.add(name, model, "flexgraph", sizes, epochs, epoch_s=fg_epoch_s,
                         floor_fraction=floor_s / fg_epoch_s if floor_s and fg_epoch_s else None,
                         peak_device_mib=mib(fg.get("peak_device_bytes")) if a.device != "cpu" else None,
                         epoch0_loss=fg.get("epoch0_loss"),
                         test_acc=fg.get("test_accuracy"), adjacency="HDG")
            except Exception as e:  # noqa: BLE001
                self.add(name, model, "flexgraph", sizes, epochs, status="error: " + error_text(e), error=str(e))
                self.failures.append(f"FlexGraph {model} on {name}: {error_text(e)}")
        if not compared:
            if "pyg" in fws:
                self.add(name, model, "pyg", sizes, epochs, status="n/a: " + NO_PYG_MODEL[model])
            return
        fg_s = harness.median_after(fg["epoch_seconds"], a.warmup) if fg else None
        fg_loss = fg.get("epoch0_loss") if fg else None
        for fw in (f for f in fws if f != "flexgraph"):
            args = MAGNN_BASELINE_ARGS if model == "magnn" else BASELINE_ARGS
            if fw not in args:
                self.add(name, model, fw, sizes, epochs, status=f"n/a: no {FRAMEWORKS[fw]} {model}")
                continue
            try:
                r = harness.run_baseline(a, fw, model, m, name, d, wdir, epochs, self.run_dir,
                                         extra=["--device", a.device, *args[fw]])
            except Exception as e:  # noqa: BLE001
                self.add(name, model, fw, sizes, epochs, status="error: " + error_text(e), error=str(e))
                self.failures.append(f"{FRAMEWORKS[fw]} {model} on {name}: {error_text(e)}")
                continue
            s = harness.median_after(r["epoch_seconds"], a.warmup)
            fields = {"epoch_s": s, "ratio_to_flexgraph": s / fg_s if fg_s else None,
                      "floor_fraction": floor_s / s if floor_s and s else None,
                      "peak_device_mib": mib(r.get("peak_device_bytes")), "epoch0_loss": r["epoch0_loss"],
                      "test_acc": r.get("test_accuracy"), "adjacency": r.get("adjacency"),
                      "device_name": r.get("device_name") or self.info["device_name"]}
            if fg_loss is not None:
                e = harness.rel(fg_loss, r["epoch0_loss"])
                fields.update(epoch0_rel_diff=e, epoch0_agrees=e <= a.tolerance)
                if not e <= a.tolerance:
                    fields["status"] = f"epoch-0 loss differs from FlexGraph's by {e:.2e} relative"
                    self.failures.append(f"{FRAMEWORKS[fw]} {model} on {name}: epoch-0 loss {r['epoch0_loss']!r} vs "
                                         f"FlexGraph {fg_loss!r} (relative {e:.3g} > {a.tolerance:g})")
            self.add(name, model, fw, sizes, epochs, **fields)

    def write(self):
        os.makedirs(self.a.out, exist_ok=True)
        self.info["elapsed_s"] = round(time.monotonic() - self.start, 1)
        with open(os.path.join(self.a.out, "gpu_bench.json"), "w") as f:
            json.dump({"info": self.info, "rows": self.rows, "failures": self.failures}, f, indent=1)
        with open(os.path.join(self.a.out, "gpu_bench.md"), "w") as f:
            f.write(markdown(self.info, self.rows) + "\n")


def mib(b):
    return None if b is None else b / 2**20


def markdown(info, rows):
    """The report: a heading naming the device, the table, and what the columns mean."""
    fmt = harness.fmt
    hdr = ["workload", "model", "framework", "vertices", "edges", "s/epoch", "÷ FlexGraph", "of floor",
           "peak device MiB", "epoch-0 loss", "agrees", "test acc", "status"]
    lines = []
    for r in rows:
        agrees = "—" if r["epoch0_agrees"] is None else \
            f"{'yes' if r['epoch0_agrees'] else 'NO'} ({r['epoch0_rel_diff']:.1e})"
        peak = "n/a" if r["peak_device_mib"] is None and r["status"] == "ok" else fmt(r["peak_device_mib"], ".0f")
        lines.append([r["workload"], r["model"], r["framework"], fmt(r["vertices"], ","), fmt(r["edges"], ","),
                      fmt(r["epoch_s"], ".4f"), fmt(r["ratio_to_flexgraph"], ".2f", "x"),
                      fmt(100 * r["floor_fraction"] if r.get("floor_fraction") else None, ".0f", "%"), peak,
                      fmt(r["epoch0_loss"], ".7f"), agrees, fmt(r["test_acc"], ".3f"),
                      r["status"].replace("|", "/")])
    settings = "; ".join(f"{m}: {s['layers']} layers, hidden {s['hidden']}, dropout {s['dropout']}, lr {s['lr']}, "
                         f"wd {s['weight_decay']}" for m, s in info["settings"].items()
                         if any(r["model"] == m for r in rows))
    return "\n".join([
        f"# FlexGraph vs PyG and torch.sparse on {info['device_name']} ({info['device']})",
        "",
        f"{info['date']} on {info['host']}, {info['threads']} CPU threads per process, {info['elapsed_s']} s. "
        f"Settings: {settings}; Adam with L2 in the gradient.",
        "",
        harness.markdown_table(hdr, lines),
        "",
        f"s/epoch: median training step (forward, loss, backward, Adam) after {info['warmup']} warm-up epochs; the "
        "baselines synchronise the GPU around every timed step. ÷ FlexGraph: this row's s/epoch over FlexGraph's "
        "(> 1: FlexGraph is faster). Peak device MiB: torch.cuda.max_memory_allocated for the baselines, the "
        "summary's peak_device_bytes for FlexGraph; n/a where the run is on the CPU. epoch-0 loss: the initial weights' "
        f"loss without dropout; agrees: within {info['tolerance']:g} relative of FlexGraph's (all runs load the same "
        "weight files). test acc: at the best validation epoch. PyG: GCNConv / SAGEConv on a sparse adj_t "
        "(GCNConv caching its normalisation); for MAGNN, the same model in PyTorch with PyG's softmax and scatter "
        "(bench/baselines/run_magnn.py --backend pyg); torch.sparse: hand-written layers on torch.sparse.mm over a CSR, "
        "each aggregation on the narrower side of its layer's product. Of floor: the epoch floor (bench/harness/"
        "floor.py: per kernel the larger of the bytes it must move over the measured device-to-device copy "
        "bandwidth and its flops over the measured float32 cuBLAS peak) over this row's s/epoch" + (
            f" (ceilings here: copy {info['ceilings']['triad_bytes_per_s'] / 1e9:.0f} GB/s, GEMM "
            f"{info['ceilings']['gemm_flops_per_s'] / 1e12:.1f} TFLOP/s, L2 {info['ceilings']['llc_bytes'] >> 20} MiB)"
            if info.get("ceilings") else " (ceilings not measured)") + ".",
    ])


def main():
    a = parse_args()
    if not os.path.exists(a.flexgraph):
        print(f"note: {a.flexgraph} not found; the FlexGraph rows will say so (--flexgraph)", file=sys.stderr)
    bench = Bench(a)
    bench.run_all()
    print(markdown(bench.info, bench.rows))
    harness.log(f"wrote {a.out}/gpu_bench.md and gpu_bench.json")
    if bench.failures:
        print("\nFAILURES:", file=sys.stderr)
        for f in bench.failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
