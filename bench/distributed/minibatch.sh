#!/usr/bin/env bash
# Distributed mini-batch benchmark (issue: mini-batch training across workers). For an RMAT graph it
# trains GraphSAGE in mini-batches (node-wise fanouts 25,10 and LADIES) in one process, then over P
# worker processes on the whole dataset (every worker loads it) and on P parts (each worker holds
# its own; frontier rows and input rows come from their owners). Per run: the epoch median, the
# ratio of the single-process epoch to it (measured in the same run of this script), the final loss,
# worker 0's sampled HDG entries, the bytes per epoch summed over the workers, and the time worker
# 0's training waited for samples. The processes share this machine's cores: on one host the ratio shows what
# distribution costs; across hosts (launch --hosts), what it gains.
#
#   bench/distributed/minibatch.sh [--scale 20] [--parts 2] [--epochs 4] [--threads 2] [--build build/release]
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=20; parts=2; epochs=4; threads=2; build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --build) build=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
fg=$build/runtime/flexgraph
out=bench/results/distributed
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dataset="rmat:scale=$scale,edge_factor=16,features=128,classes=8"
per_worker=$(( threads / parts > 0 ? threads / parts : 1 ))
echo "partitioning $dataset into $parts parts" >&2
"$fg" partition --quiet --dataset "$dataset" --parts "$parts" --method balanced --model sage --out "$work/parts"
csv=$out/minibatch_scale${scale}_p${parts}.csv
echo "sampler,run,workers,threads_each,epoch_seconds_median,single_over_this,final_loss,sampled_entries_per_epoch_worker0,bytes_control_per_epoch,bytes_features_per_epoch,bytes_allreduce_per_epoch,sampling_wait_seconds" > "$csv"
for sampler in "--fanouts 25,10" "--sampler ladies --layer_size 512"; do
  name=$([[ $sampler == *ladies* ]] && echo ladies || echo neighbor)
  train="--model sage --hidden 256 --batch_size 1024 $sampler --epochs $epochs --quiet"
  echo "$name: one process" >&2
  "$fg" train --dataset "$dataset" $train --threads "$threads" --summary_json "$work/single.json" > /dev/null
  for run in whole parts; do
    data=$dataset
    [ "$run" = parts ] && data=$work/parts
    echo "$name: $parts workers, $run" >&2
    "$fg" launch --quiet --workers "$parts" --log_dir "$work/logs" -- train --dataset "$data" $train \
      --threads "$per_worker" --summary_json "$work/$run.json" > /dev/null 2>&1
  done
  python3 - "$work" "$name" "$threads" "$per_worker" >> "$csv" <<'PY'
import json, sys
work, name, threads, per_worker = sys.argv[1:]
single = json.load(open(f"{work}/single.json"))
base = single["epoch_seconds_median"]
def row(run, s, workers, each):
    w = s.get("workers", [])
    total = lambda k: sum(x[k] for x in w)
    mb = s["minibatch"]
    print(",".join(str(v) for v in [name, run, workers, each, round(s["epoch_seconds_median"], 4),
          round(base / s["epoch_seconds_median"], 3), round(s["final_loss"], 5), mb["sampled_edges_per_epoch"],
          total("bytes_control_per_epoch") if w else 0, total("bytes_features_per_epoch") if w else 0,
          total("bytes_allreduce_per_epoch") if w else 0, round(mb["sampling_wait_seconds"], 3)]))
row("single", single, 1, threads)
for run in ("whole", "parts"):
    s = json.load(open(f"{work}/{run}.json"))
    row(run, s, s["world_size"], per_worker)
PY
done
column -s, -t < "$csv"
echo "written: $csv"
