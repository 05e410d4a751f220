#!/usr/bin/env bash
# The point of partitioned datasets, demonstrated: under one per-process memory limit (prlimit
# --data: heap and anonymous mappings, inherited by every process of a launch), GCN on an RMAT
# graph fails in a single process with a clean out-of-memory error, and trains with P workers on
# the partitioned dataset to the accuracy of an unlimited single-process run. Prints the three
# outcomes. (--as would also count the shared libraries' and threads' address space.)
#
#   bench/distributed/memory_limit.sh [--scale 18] [--limit_gib 1.4] [--parts 4] [--epochs 20]
#                                     [--build build/release]
set -uo pipefail
cd "$(dirname "$0")/../.."
scale=18; limit_gib=1.4; parts=4; epochs=20; build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --limit_gib) limit_gib=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --build) build=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
fg=$build/runtime/flexgraph
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_memlimit.XXXXXX")
trap 'rm -rf "$work"' EXIT
limit=$(python3 -c "print(int($limit_gib * 2**30))")
source_file=$work/rmat$scale.fgc
"$fg" convert "rmat:scale=$scale,edge_factor=16,features=128,classes=8" --cache "$source_file" > /dev/null 2>&1 || exit 1
train="--model gcn --hidden 256 --epochs $epochs --threads 1 --quiet"
"$fg" partition --quiet --dataset "$source_file" --parts "$parts" --method metis --model gcn \
  --hidden 256 --out "$work/parts" > /dev/null || exit 1
accuracy() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(s['test_accuracy'], s['final_loss'])" "$1"; }

"$fg" train --dataset "$source_file" $train --summary_json "$work/free.json" > /dev/null 2>&1
echo "single process, no limit:        exit $?, test accuracy and final loss $(accuracy "$work/free.json")"
prlimit --data="$limit" "$fg" train --dataset "$source_file" $train > "$work/limited.out" 2>&1
rc=$?
echo "single process, ${limit_gib} GiB limit:   exit $rc: $(tail -1 "$work/limited.out")"
prlimit --data="$limit" "$fg" launch --quiet --workers "$parts" --log_dir "$work/logs" -- train \
  --dataset "$work/parts" $train --summary_json "$work/parts.json" > "$work/parts.out" 2>&1
rc=$?
echo "$parts workers, ${limit_gib} GiB limit each: exit $rc, test accuracy and final loss $(accuracy "$work/parts.json" 2>/dev/null || tail -1 "$work/parts.out")"
