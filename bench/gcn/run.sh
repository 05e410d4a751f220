#!/usr/bin/env bash
# GCN epoch benchmark (2 layers, hidden 256) on an RMAT graph with 128 random features: median
# epoch time, the fraction of the roofline floor of DESIGN.md ((GEMM flops / 180e9) + (bytes SpMM
# must move / 40e9), forward and backward) and the share of time per stage.
#
#   bench/gcn/run.sh [--scale 18] [--threads 2] [--epochs 10] [--build build/release]
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=18; threads=2; epochs=10; build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;; --threads) threads=$2; shift 2;;
    --epochs) epochs=$2; shift 2;; --build) build=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
mkdir -p bench/results
json=bench/results/gcn_rmat$scale.json
"$build/runtime/flexgraph" train --dataset "rmat:scale=$scale,edge_factor=16,features=128,classes=8" \
  --model gcn --hidden 256 --layers 2 --dropout 0.5 --epochs "$epochs" --threads "$threads" \
  --quiet --summary_json "$json"
python3 - "$json" "$threads" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); threads = int(sys.argv[2])
n, nnz = s["num_vertices"], s["num_edges"] + s["num_vertices"]   # GCN adds self loops
f, h, c = 128, 256, 8
# GEMMs (forward, plus two products per GEMM in backward): 128->256 after aggregation, 256->8 before.
flops = 3 * 2 * n * (f * h + h * c)
# SpMM bytes per pass: indices + weights + gathered rows + output; layer 0 at width 128 (forward
# only: the input needs no gradient), layer 1 at width 8 (forward and backward).
def spmm(width): return nnz * 8 + nnz * width * 4 + n * width * 4
bytes_moved = spmm(f) + 2 * spmm(c)
gflops, gbs = (90e9, 25e9) if threads == 1 else (180e9, 40e9)
floor = flops / gflops + bytes_moved / gbs
t = s["epoch_seconds_median"]
st = s["stage_seconds"]; train = sum(st[k] for k in ["selection", "message", "aggregation", "update", "loss", "backward", "optimizer"])
print(f"GCN on RMAT ({n} vertices, {nnz} entries with self loops), hidden {h}, {threads} threads")
print(f"  median epoch {t:.4f} s; roofline floor {floor:.4f} s ({flops/1e9:.2f} GFLOP, {bytes_moved/1e9:.2f} GB); achieved {100*floor/t:.1f}% of the floor")
print("  stages: " + "  ".join(f"{k} {100*st[k]/train:.0f}%" for k in ["selection", "message", "aggregation", "update", "loss", "backward", "optimizer"]))
PY
