#!/usr/bin/env bash
# Scale-out memory benchmark: GCN (hidden 256 by default) on an RMAT graph, one process on the whole dataset
# against P workers on a partitioned dataset (each loads only its part, the coordinator only the
# metadata). Per P: the largest worker peak RSS and its ratio to the single-process peak, the
# coordinator's peak RSS and its ratio, bytes exchanged per epoch (all workers) and the median
# epoch time; also the edge cut and the largest worker's peak of tensor memory (peak_tensor_bytes).
# Writes bench/results/distributed/memory_scale<S>.csv (or --csv FILE).
#
#   bench/distributed/memory.sh [--scale 20] [--parts "1 2 4 8"] [--epochs 3] [--method metis]
#                               [--build build/release] [--threads 1] [--features 128] [--hidden 256]
#                               [--csv FILE] [--max_ratio R] [--repeat N] [--exchange E]
#
# --exchange E trains the P workers with `--exchange E`; a process grid with its shape
# (2d:PRxPC, 3d:PRxPCxPF, 1.5d:c=C) gets a dataset of one part per row block (PR, or P / C).
#
# --repeat N launches each P N times and keeps the run whose largest worker peaked lowest: the
# message timing of a run only ever adds to a peak (at RMAT-16, a worker's peak varied by up to
# 8 MiB), while a regression raises every run's.
# --max_ratio R makes it a check: it exits 1 when, for any P > 1, the largest worker's peak RSS is
# above R times the single process's (CI runs it at a small scale, .ci/run; the bound and what it
# was measured at: bench/results/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=20; parts="1 2 4 8"; epochs=3; method=metis; build=build/release; threads=1; features=128; hidden=256
csv=""; max_ratio=""; repeat=1; exchange=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --method) method=$2; shift 2;;
    --build) build=$2; shift 2;;
    --threads) threads=$2; shift 2;;
    --features) features=$2; shift 2;;
    --hidden) hidden=$2; shift 2;;
    --csv) csv=$2; shift 2;;
    --repeat) repeat=$2; shift 2;;
    --max_ratio) max_ratio=$2; shift 2;;
    --exchange) exchange=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
if ! [[ "$repeat" =~ ^[1-9][0-9]*$ ]]; then
  echo "memory: --repeat takes a positive integer, got '$repeat'" >&2
  exit 2
fi
if [ -n "$max_ratio" ] && ! python3 -c "import sys; r = float(sys.argv[1]); assert 0 < r" "$max_ratio" 2> /dev/null; then
  echo "memory: --max_ratio takes a positive number, got '$max_ratio'" >&2
  exit 2
fi
fg=$build/runtime/flexgraph
out=bench/results/distributed
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
source_file=$work/rmat$scale.fgc
echo "memory: generating rmat scale $scale" >&2
"$fg" convert "rmat:scale=$scale,edge_factor=16,features=$features,classes=8" --cache "$source_file" > /dev/null 2>&1
train="--model gcn --hidden $hidden --epochs $epochs --threads $threads --quiet"
"$fg" train --dataset "$source_file" $train --summary_json "$work/single.json" > /dev/null 2>&1
[ -n "$csv" ] || csv=$out/memory_scale$scale.csv
mkdir -p "$(dirname "$csv")"
echo "parts,method,worker_peak_rss_mib,worker_ratio,coordinator_peak_rss_mib,coordinator_ratio,single_peak_rss_mib,bytes_exchanged_per_epoch,epoch_seconds,edge_cut_fraction,worker_peak_tensor_mib,exchange,dataset_parts" > "$csv"
for p in $parts; do
  # The parts to write: one per worker, or one per row block of the grid's shape.
  blocks=$(python3 - "$exchange" "$p" <<'PY'
import re, sys
e, p = sys.argv[1], int(sys.argv[2])
m = re.match(r"(2d|3d):(\d+)x", e) or re.match(r"1\.5d:c=(\d+)", e)
if e.split(":")[0] in ("2d", "3d") and not m or e.startswith("1.5d") and not m:
    sys.exit(f"memory: --exchange {e}: give the grid's shape (2d:PRxPC, 3d:PRxPCxPF, 1.5d:c=C)")
print(p if not m else (int(m.group(2)) if e[0] in "23" else p // int(m.group(1))))
PY
  )
  echo "memory: $p workers, $blocks parts" >&2
  rm -rf "$work/parts"
  "$fg" partition --quiet --dataset "$source_file" --parts "$blocks" --method "$method" --model gcn \
    --hidden "$hidden" --out "$work/parts" --summary_json "$work/partition.json" > /dev/null
  "$fg" info "$work/parts" --summary_json "$work/info.json" > /dev/null
  runs=()
  for i in $(seq "$repeat"); do
    "$fg" launch --quiet --workers "$p" --exchange "$exchange" --log_dir "$work/logs$p.$i" -- train --dataset "$work/parts" \
      $train --summary_json "$work/run$i.json" > /dev/null 2>&1
    runs+=("$work/run$i.json")
  done
  python3 - "$work/single.json" "$work/info.json" "$p" "$method" "$exchange" "$blocks" "${runs[@]}" >> "$csv" <<'PY'
import json, sys
single = json.load(open(sys.argv[1]))["peak_rss_bytes"]
info = json.load(open(sys.argv[2]))
mib = lambda b: round(b / 2**20, 1)
def largest(run):
    return max([w["peak_rss_bytes"] for w in run.get("workers", [])] or [run["peak_rss_bytes"]])
# With --repeat, the run whose largest worker peaked lowest (timing only ever adds to a peak).
runs = sorted((json.load(open(f)) for f in sys.argv[7:]), key=largest)
if len(runs) > 1:
    print(f"memory: P = {sys.argv[3]}: largest worker over {len(runs)} runs " +
          ", ".join(f"{largest(r) / single:.3f}x" for r in runs) + "; the lowest counts", file=sys.stderr)
run = runs[0]
workers = run.get("workers", [])
worker = largest(run)
tensors = max([w.get("peak_tensor_bytes", 0) for w in workers] or [run.get("peak_tensor_bytes", 0)])
coord = run.get("coordinator_peak_rss_bytes", 0)
traffic = sum(w["bytes_features_per_epoch"] + w["bytes_partials_per_epoch"] +
              w["bytes_gradients_per_epoch"] + w["bytes_allreduce_per_epoch"] for w in workers)
cut = sum(int(x) for x in info["partCutInEdges"]) / max(1, sum(int(x) for x in info["partInEdges"]))
print(",".join(str(v) for v in [sys.argv[3], sys.argv[4], mib(worker), round(worker / single, 3),
      mib(coord), round(coord / single, 3), mib(single), traffic,
      round(run["epoch_seconds_median"], 3), round(cut, 3), mib(tensors), sys.argv[5], sys.argv[6]]))
PY
done
cat "$csv"
if [ -n "$max_ratio" ]; then
  # The check: every P > 1 row's largest worker against the bound.
  python3 - "$csv" "$max_ratio" <<'PY'
import csv, sys
bound = float(sys.argv[2])
rows = [r for r in csv.DictReader(open(sys.argv[1])) if int(r["parts"]) > 1]
if not rows:
    sys.exit("memory: --max_ratio needs a run with more than one part (--parts)")
over = [r for r in rows if float(r["worker_ratio"]) > bound]
for r in rows:
    print(f"memory: P = {r['parts']}: largest worker {r['worker_peak_rss_mib']} MiB, {float(r['worker_ratio']):.3f}x "
          f"the single process ({r['single_peak_rss_mib']} MiB); bound {bound}x: {'ABOVE' if r in over else 'ok'}",
          file=sys.stderr)
sys.exit(1 if over else 0)
PY
fi
