#!/usr/bin/env bash
# Distributed exchange benchmark (issue: pipelined partial aggregation). For an RMAT graph and
# P workers it reports, per worker and forward pass, the vectors received under the per-peer choice,
# row fetch only, partial aggregation only and naive (every neighbour row), the bytes actually sent
# per epoch, and the epoch time with and without pipelining on loopback and on a shaped link.
#
#   bench/distributed/run.sh [--scale 18] [--parts "2 4"] [--epochs 6] [--build build/release]
#
# Link shaping uses FG_LINK_BYTES_PER_SECOND (a per-peer rate limit inside the gRPC communicator,
# for benchmarks only): 1.25e9 ~ 10 Gbit/s, 1.25e8 ~ 1 Gbit/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=18; parts="2 4"; epochs=6; build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --build) build=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
fg=$build/runtime/flexgraph
out=bench/results/distributed
mkdir -p "$out"
dataset="rmat:scale=$scale,edge_factor=16,features=128,classes=8"
train="train --dataset $dataset --model gcn --hidden 256 --epochs $epochs --threads 1 --quiet"
csv=$out/distributed_scale$scale.csv
echo "parts,exchange,pipeline,link,epoch_seconds,vectors_chosen,vectors_rows_only,vectors_partial_only,vectors_naive,bytes_features_per_epoch,bytes_partials_per_epoch,bytes_gradients_per_epoch,overlap" > "$csv"
run() {  # parts exchange pipeline link_rate label
  local json=$out/run.json
  FG_LINK_BYTES_PER_SECOND=$4 "$fg" launch --quiet --workers "$1" --exchange "$2" $3 \
    --log_dir "$out/logs" -- $train --summary_json "$json" > /dev/null 2>&1
  python3 - "$json" "$1" "$2" "$3" "$5" >> "$csv" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = s["workers"]
tot = lambda k: sum(x["vectors_per_pass"][k] for x in w)
byt = lambda k: sum(x[k] for x in w)
print(",".join(str(v) for v in [sys.argv[2], sys.argv[3], sys.argv[4].replace("--", ""), sys.argv[5],
      round(s["epoch_seconds_median"], 4), tot("chosen"), tot("rows_only"), tot("partial_only"),
      tot("naive"), byt("bytes_features_per_epoch"), byt("bytes_partials_per_epoch"),
      byt("bytes_gradients_per_epoch"), round(sum(x["overlap"] for x in w) / len(w), 3)]))
PY
}
for p in $parts; do
  for ex in auto rows partial; do run "$p" "$ex" --pipeline 0 loopback; done
  for rate in 1.25e9 1.25e8; do
    for pipe in --pipeline --nopipeline; do run "$p" auto "$pipe" "$rate" "$rate"; done
  done
done
column -s, -t < "$csv"
echo "written: $csv"
