#!/usr/bin/env bash
# Training runs over every exchange scheme with real processes (`flexgraph launch` on loopback):
# FlexGraph's 1D exchange (per-peer choice of rows or partial sums, under a METIS and a hash
# partition) against CAGNET's 1.5D (c = 2), 2D and 3D process grids (sparsity-aware) and against
# --exchange auto (the plan's choice between them, under METIS), on Cora, an RMAT graph (power
# law) and an SBM (communities). Checks that auto never sends more than the best of the other
# schemes under METIS (within 0.5%: control messages). Per run: the bytes each worker sends per epoch
# (mean over workers: exchange or grid products, gradient all-reduce, control), the median epoch
# time, and the final loss, which must equal the 1D run's within 1e-4 relative (all schemes train
# the same model). Prints a table and writes it as JSON (--json).
#
#   bench/distributed/grid_training.sh [--parts "4 8"] [--epochs 4] [--hidden 256] [--build build/release] [--json F]
set -euo pipefail
cd "$(dirname "$0")/../.."
parts="4 8"; epochs=4; hidden=256; build=build/release; json=""
while [ $# -gt 0 ]; do
  case "$1" in
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --hidden) hidden=$2; shift 2;;
    --build) build=$2; shift 2;;
    --json) json=$2; shift 2;;
    *) echo "grid_training: unknown argument $1" >&2; exit 2;;
  esac
done
fg=$build/runtime/flexgraph
[ -x "$fg" ] || { echo "grid_training: no flexgraph binary at $fg" >&2; exit 2; }
data=${FG_DATA:-../shared/data}
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_grid_training.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 - "$fg" "$work" "$parts" "$epochs" "$hidden" "$data" "$json" <<'PY'
import json, os, statistics, subprocess, sys
fg, work, parts, epochs, hidden, data, out = sys.argv[1:8]
graphs = {
    "cora": os.path.join(data, "cora"),
    "rmat-14": "rmat:scale=14,edge_factor=16,features=128,classes=8,seed=1",
    "sbm-16k": "sbm:nodes=16384,classes=8,features=128,avg_degree=32,seed=1",
}
schemes = [("1d metis", "1d", "metis"), ("1d hash", "1d", "hash"), ("1.5d c=2", "1.5d:c=2", "metis"),
           ("2d", "2d", "metis"), ("3d", "3d", "metis"), ("auto", "auto", "metis")]
rows = []
failed = False
for g, spec in graphs.items():
    for p in map(int, parts.split()):
        base_loss = None
        for name, exchange, partition in schemes:
            if exchange == "1.5d:c=2" and p % 4: continue
            summary = os.path.join(work, f"{g}-{p}-{exchange}-{partition}.json")
            cmd = [fg, "launch", "--quiet", "--workers", str(p), "--partition", partition, "--exchange", exchange,
                   "--log_dir", os.path.join(work, f"logs-{g}-{p}-{exchange}-{partition}"), "--", "train",
                   "--dataset", spec, "--model", "gcn", "--hidden", hidden, "--epochs", epochs, "--threads", "1",
                   "--quiet", "--summary_json", summary]
            print(f"[grid_training] {g} P={p} {name}", file=sys.stderr, flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"grid_training: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
            s = json.load(open(summary))
            w = s["workers"]
            sent = statistics.mean(sum(x[k] for k in x if k.startswith("bytes_") and k.endswith("_per_epoch")) for x in w)
            if base_loss is None: base_loss = s["final_loss"]
            rel = abs(s["final_loss"] - base_loss) / abs(base_loss)
            rows.append({"graph": g, "workers": p, "scheme": name, "exchange": s.get("exchange", ""),
                         "bytes_per_worker_epoch": sent, "epoch_seconds_median": s["epoch_seconds_median"],
                         "final_loss": s["final_loss"], "loss_rel_diff_vs_1d": rel})
            if rel > 1e-4: sys.exit(f"grid_training: {g} P={p} {name}: final loss {s['final_loss']} vs 1D {base_loss}")
print(f"| graph | P | scheme | MB sent per worker and epoch | x 1D metis | epoch s (median) | final loss |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    ref = next(x for x in rows if x["graph"] == r["graph"] and x["workers"] == r["workers"] and x["scheme"] == "1d metis")
    print(f"| {r['graph']} | {r['workers']} | {r['scheme']} ({r['exchange']}) | {r['bytes_per_worker_epoch'] / 1e6:.2f} | "
          f"{r['bytes_per_worker_epoch'] / ref['bytes_per_worker_epoch']:.2f} | {r['epoch_seconds_median']:.3f} | {r['final_loss']:.5f} |")
for g in graphs:
    for p in map(int, parts.split()):
        runs = [r for r in rows if r["graph"] == g and r["workers"] == p]
        auto = next(r for r in runs if r["scheme"] == "auto")
        best = min(r["bytes_per_worker_epoch"] for r in runs if r["scheme"] not in ("auto", "1d hash"))
        verdict = "ok" if auto["bytes_per_worker_epoch"] <= best * 1.005 else "MORE THAN THE BEST"
        print(f"auto on {g} P={p}: {auto['exchange']}, {auto['bytes_per_worker_epoch'] / best:.3f}x the best scheme's bytes: {verdict}")
        if verdict != "ok": failed = True
if out:
    json.dump({"runs": rows, "load": os.getloadavg()}, open(out, "w"), indent=1)
sys.exit(1 if failed else 0)
PY
