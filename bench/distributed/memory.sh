#!/usr/bin/env bash
# Scale-out memory benchmark: GCN (hidden 256) on an RMAT graph, one process on the whole dataset
# against P workers on a partitioned dataset (each loads only its part, the coordinator only the
# metadata). Per P: the largest worker peak RSS and its ratio to the single-process peak, the
# coordinator's peak RSS and its ratio, bytes exchanged per epoch (all workers) and the median
# epoch time; also the edge cut and the largest worker's peak of tensor memory (peak_tensor_bytes).
# Writes bench/results/distributed/memory_scale<S>.csv.
#
#   bench/distributed/memory.sh [--scale 20] [--parts "1 2 4 8"] [--epochs 3] [--method metis]
#                               [--build build/release] [--threads 1]
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=20; parts="1 2 4 8"; epochs=3; method=metis; build=build/release; threads=1
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --method) method=$2; shift 2;;
    --build) build=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
fg=$build/runtime/flexgraph
out=bench/results/distributed
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
source_file=$work/rmat$scale.fgc
echo "memory: generating rmat scale $scale" >&2
"$fg" convert "rmat:scale=$scale,edge_factor=16,features=128,classes=8" --cache "$source_file" > /dev/null 2>&1
train="--model gcn --hidden 256 --epochs $epochs --threads $threads --quiet"
"$fg" train --dataset "$source_file" $train --summary_json "$work/single.json" > /dev/null 2>&1
csv=$out/memory_scale$scale.csv
echo "parts,method,worker_peak_rss_mib,worker_ratio,coordinator_peak_rss_mib,coordinator_ratio,single_peak_rss_mib,bytes_exchanged_per_epoch,epoch_seconds,edge_cut_fraction,worker_peak_tensor_mib" > "$csv"
for p in $parts; do
  echo "memory: $p parts" >&2
  rm -rf "$work/parts"
  "$fg" partition --quiet --dataset "$source_file" --parts "$p" --method "$method" --model gcn \
    --hidden 256 --out "$work/parts" --summary_json "$work/partition.json" > /dev/null
  "$fg" info "$work/parts" --summary_json "$work/info.json" > /dev/null
  "$fg" launch --quiet --workers "$p" --log_dir "$work/logs$p" -- train --dataset "$work/parts" \
    $train --summary_json "$work/run.json" > /dev/null 2>&1
  python3 - "$work/single.json" "$work/run.json" "$work/info.json" "$p" "$method" >> "$csv" <<'PY'
import json, sys
single = json.load(open(sys.argv[1]))["peak_rss_bytes"]
run = json.load(open(sys.argv[2]))
info = json.load(open(sys.argv[3]))
mib = lambda b: round(b / 2**20, 1)
workers = run.get("workers", [])
worker = max([w["peak_rss_bytes"] for w in workers] or [run["peak_rss_bytes"]])
tensors = max([w.get("peak_tensor_bytes", 0) for w in workers] or [run.get("peak_tensor_bytes", 0)])
coord = run.get("coordinator_peak_rss_bytes", 0)
traffic = sum(w["bytes_features_per_epoch"] + w["bytes_partials_per_epoch"] +
              w["bytes_gradients_per_epoch"] + w["bytes_allreduce_per_epoch"] for w in workers)
cut = sum(int(x) for x in info["partCutInEdges"]) / max(1, sum(int(x) for x in info["partInEdges"]))
print(",".join(str(v) for v in [sys.argv[4], sys.argv[5], mib(worker), round(worker / single, 3),
      mib(coord), round(coord / single, 3), mib(single), traffic,
      round(run["epoch_seconds_median"], 3), round(cut, 3), mib(tensors)]))
PY
done
cat "$csv"
