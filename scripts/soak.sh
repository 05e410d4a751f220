#!/usr/bin/env bash
# Soak test of distributed runs under faults: N launches of GCN on Cora over two local workers
# with checkpoints and --restart_on_failure, each hit by one random fault at a random moment —
# SIGKILL or SIGSTOP of a worker or of the coordinator, a truncated checkpoint, a kill inside a
# checkpoint or summary write or during shutdown (fault points, flexgraph/base/fault.h), or none.
# Each run must end (no hang), either with the uninterrupted losses exactly or with a clear error
# naming a process, and leave no process, listening port or temporary file behind. Prints a summary line per run, then the
# totals, and writes them as JSON.
#
#   scripts/soak.sh [--runs 100] [--build build/release] [--seed 1] [--summary_json FILE]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=100; build=build/release; seed=1; summary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2;;
    --build) build=$2; shift 2;;
    --seed) seed=$2; shift 2;;
    --summary_json) summary=$2; shift 2;;
    *) echo "soak: unknown argument $1" >&2; exit 2;;
  esac
done
fg=$(realpath "$build/runtime/flexgraph")
data=$(realpath "${FLEXGRAPH_SHARED_DATA:-../shared/data}/cora")
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_soak.XXXXXX")
trap 'pkill -9 -f "$work" 2>/dev/null; rm -rf "$work"' EXIT
epochs=40
train="train --dataset $data --model gcn --epochs $epochs --threads 1 --quiet"
RANDOM=$seed

# The reference: the same launch without a fault (two workers are deterministic run to run).
"$fg" launch --workers 2 --log_dir "$work/reference" -- $train --summary_json "$work/reference.json" \
  > /dev/null 2>&1 || { echo "soak: reference run failed" >&2; exit 1; }
losses() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['losses'])" "$1" 2>/dev/null; }
reference=$(losses "$work/reference.json")

faults=(none kill_worker kill_coordinator stop_worker stop_coordinator truncate_checkpoint
        kill_writing_checkpoint kill_at_shutdown)
# Where kill_writing_checkpoint and kill_at_shutdown strike (FG_FAULT=<process>:<point>[:<n>]).
write_points=(file.partial_write file.before_rename file.after_rename)
shutdown_points=(worker0:worker.trained worker1:worker.trained worker0:worker.reported
                 worker1:worker.reported coordinator:coordinator.finished coordinator:file.partial_write
                 coordinator:coordinator.summary_written)
echo "soak: $runs runs, seed $seed (scripts/soak.sh --seed $seed repeats them)"
declare -A count
identical=0; clean=0; wrong=0; hung=0; leftover_procs=0; leftover_ports=0; leftover_files=0
for ((i = 1; i <= runs; ++i)); do
  fault=${faults[RANDOM % ${#faults[@]}]}
  delay=$(python3 -c "import random; random.seed($seed * 100003 + $i); print(round(random.uniform(0.2, 2.5), 2))")
  d="$work/run$i"
  mkdir -p "$d"
  injected=()
  case $fault in
    kill_writing_checkpoint)  # rank 0 writes the checkpoints, every 5 of 40 epochs
      injected=(FG_FAULT="worker0:${write_points[RANDOM % 3]}:$((1 + RANDOM % 8))" FG_FAULT_MARK="$d/fired")
      delay=0 ;;
    kill_at_shutdown)
      injected=(FG_FAULT="${shutdown_points[RANDOM % ${#shutdown_points[@]}]}" FG_FAULT_MARK="$d/fired")
      delay=0 ;;
  esac
  env "${injected[@]}" timeout -k 5 120 "$fg" launch --workers 2 --heartbeat_timeout 3 --restart_on_failure --log_dir "$d/logs" \
    -- $train --checkpoint_every 5 --checkpoint_dir "$d/ckpt" --summary_json "$d/summary.json" \
    > "$d/launch.out" 2>&1 &
  launch=$!
  sleep "$delay"
  case $fault in
    kill_worker) pkill -9 -f "flexgraph worker .*--rank $((RANDOM % 2)) .*$d" ;;
    stop_worker) pkill -STOP -f "flexgraph worker .*--rank $((RANDOM % 2)) .*$d" ;;
    kill_coordinator) pkill -9 -f "flexgraph coordinator .*$d" ;;
    stop_coordinator) pkill -STOP -f "flexgraph coordinator .*$d" ;;
    truncate_checkpoint) for f in "$d"/ckpt/*; do [ -f "$f" ] && truncate -s 100 "$f"; done ;;
  esac
  wait $launch
  rc=$?
  pkill -CONT -f "$d" 2>/dev/null
  sleep 0.3
  procs=$(pgrep -f "$d" | wc -l)
  ports=0
  if [ -f "$d/logs/coordinator.port" ]; then
    port=$(cat "$d/logs/coordinator.port")
    ss -ltn 2>/dev/null | grep -q ":$port " && ports=1
  fi
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    outcome=hung; hung=$((hung + 1))
  elif [ ${#injected[@]} -gt 0 ] && [ ! -f "$d/fired" ]; then  # the fault point was never reached
    outcome=fault_missed; wrong=$((wrong + 1))
  elif [ $rc -eq 0 ]; then
    if [ "$(losses "$d/summary.json")" = "$reference" ]; then
      outcome=identical; identical=$((identical + 1))
    else
      outcome=wrong; wrong=$((wrong + 1))
    fi
  elif grep -q "flexgraph launch: .*\(worker\|coordinator\)" "$d/launch.out"; then
    outcome=clean_error; clean=$((clean + 1))
  else
    outcome=unclear_error; wrong=$((wrong + 1))
  fi
  # A write cut short leaves `<file>.tmp.<pid>`, which the next write of that file removes.
  files=$(find "$d" -path "$d/logs" -prune -o -name "*.tmp.*" -print | wc -l)
  leftover_procs=$((leftover_procs + procs))
  leftover_files=$((leftover_files + files))
  leftover_ports=$((leftover_ports + ports))
  count[$fault]=$(( ${count[$fault]:-0} + 1 ))
  where=${injected[0]:-}
  where=${where#FG_FAULT=}
  printf "soak %3d/%d  %-24s %-40s exit %3d  %-13s  left: processes %d ports %d files %d\n" \
    "$i" "$runs" "$fault" "${where:-at ${delay}s}" "$rc" "$outcome" "$procs" "$ports" "$files"
  # What the launch said, for every run that did not end identical to the uninterrupted one.
  [ "$outcome" != identical ] && tail -n 12 "$d/launch.out" | sed 's/^/      | /'
  pkill -9 -f "$d" 2>/dev/null
done
echo "soak: $runs runs: $identical identical to the uninterrupted run, $clean failed with a clear error," \
     "$wrong wrong or unclear, $hung hung; left behind: $leftover_procs processes," \
     "$leftover_ports ports, $leftover_files temporary files"
if [ -n "$summary" ]; then
  python3 - "$summary" "$runs" "$identical" "$clean" "$wrong" "$hung" "$leftover_procs" "$leftover_ports" \
    "$leftover_files" <<'PY'
import json, sys
keys = ["runs", "identical", "clean_error", "wrong_or_unclear", "hung", "processes_left", "ports_left",
        "temporary_files_left"]
json.dump(dict(zip(keys, map(int, sys.argv[2:]))), open(sys.argv[1], "w"), indent=1)
PY
fi
[ $wrong -eq 0 ] && [ $hung -eq 0 ] && [ $leftover_procs -eq 0 ] && [ $leftover_ports -eq 0 ] &&
  [ $leftover_files -eq 0 ]
