#!/usr/bin/env bash
# Soak test of distributed runs under faults: N launches of GCN on Cora over two local workers
# with checkpoints every 5 of 40 epochs and --restart_on_failure, each hit by one random fault:
#   kill_worker, kill_coordinator     SIGKILL of a running process (at a random moment, or just
#                                     after the first checkpoint)
#   stop_worker, stop_coordinator     SIGSTOP of a running process, likewise
#   kill_writing_checkpoint           a kill inside a checkpoint write (FG_FAULT, flexgraph/base/fault.h)
#   kill_at_shutdown                  a kill after training, around the results and the summary
#   truncate_checkpoint               worker killed at a random epoch, its newest checkpoint cut
#                                     short, then a restart with --resume that must read it, refuse
#                                     it and resume from the previous one
#   none
# Every run is accounted for:
#   recovered    the fault struck (the signalled process was running and is gone or stopped after
#                the signal; the fault point left its mark; a checkpoint was cut), the launcher's
#                failure report names the struck process and why (after a cut checkpoint: the
#                restart read it and refused it, naming it, in worker 0's log), the run restarted
#                from the newest checkpoint it had written (`resumed from checkpoint at epoch N` in
#                the log and `resumed_from_epoch` in the summary agree, and lie between the last
#                `checkpoint at epoch N written` before the restart and one checkpoint later; after
#                a cut checkpoint, exactly the one before it) and ended with the uninterrupted losses
#   unfaulted    no fault; the uninterrupted losses
#   missed       the fault struck nothing (no such process at that moment, the fault point never
#                reached); the run must still end with the uninterrupted losses
#   clean_error  the fault struck and the run failed with the launcher's failure report naming
#                the failed process and why (`<process> (pid N) was killed by signal 9`, `exited with
#                status 1`, `has been stopped for more than`); counted by fault kind
#   hang         the launch outlived its time limit
#   unclear      a failure without that report, a report that does not name the struck process,
#                or a failure with no fault that struck
#   difference   exit 0 with other losses, no summary, or a restart from another epoch
#   leftover     a process of the run, a listening coordinator port or a temporary file afterwards
# The soak fails (exit 1) on any hang, unclear error, difference or leftover, and when the
# reference run (the same launch without a fault) fails or has not 40 losses. Prints one line per
# run, the counts, and with --summary_json writes them as JSON.
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
for tool in ss python3 pgrep timeout truncate; do
  command -v "$tool" > /dev/null || { echo "soak: '$tool' is needed (ss checks for ports left listening)" >&2; exit 2; }
done
fg=$(realpath "$build/runtime/flexgraph") || exit 2
[ -x "$fg" ] || { echo "soak: no flexgraph binary at $build/runtime/flexgraph" >&2; exit 2; }
data=$(realpath "${FLEXGRAPH_SHARED_DATA:-../shared/data}/cora") || exit 2
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_soak.XXXXXX")
# Ends the processes of `dir` (by pid) and continues stopped ones so that they take the signal.
end_processes() {
  local pids
  pids=$(pgrep -f "$1")
  [ -z "$pids" ] && return
  kill -9 $pids 2> /dev/null
  kill -CONT $pids 2> /dev/null
}
trap 'end_processes "$work"; rm -rf "$work"' EXIT
epochs=40
every=5
train="train --dataset $data --model gcn --epochs $epochs --threads 1"
RANDOM=$seed

# The losses of a summary as one JSON line; fails, saying why, on a missing or unreadable summary
# or one without `epochs` losses.
losses() {
  python3 - "$1" "$epochs" <<'PY'
import json, sys
try:
    losses = json.load(open(sys.argv[1]))["losses"]
except Exception as e:
    sys.exit(f"{sys.argv[1]}: {type(e).__name__}: {e}")
if len(losses) != int(sys.argv[2]):
    sys.exit(f"{sys.argv[1]}: {len(losses)} losses, expected {sys.argv[2]}")
print(json.dumps(losses))
PY
}
# A number field of a summary, or "none".
field() {
  python3 -c "import json,sys
try: print(int(json.load(open(sys.argv[1]))[sys.argv[2]]))
except Exception: print('none')" "$1" "$2"
}

# The reference: the same launch without a fault (two workers are deterministic run to run).
if ! "$fg" launch --quiet --workers 2 --log_dir "$work/reference" -- $train --quiet \
    --summary_json "$work/reference.json" > "$work/reference.out" 2>&1; then
  echo "soak: the reference run failed:" >&2
  tail -n 20 "$work/reference.out" >&2
  exit 1
fi
reference=$(losses "$work/reference.json") || { echo "soak: the reference run has no usable losses" >&2; exit 1; }

faults=(none kill_worker kill_coordinator stop_worker stop_coordinator truncate_checkpoint
        kill_writing_checkpoint kill_at_shutdown)
# Where kill_writing_checkpoint and kill_at_shutdown strike (FG_FAULT=<process>:<point>[:<n>]).
write_points=(file.partial_write file.before_rename file.after_rename)
shutdown_points=(worker0:worker.trained worker1:worker.trained worker0:worker.reported
                 worker1:worker.reported coordinator:coordinator.finished coordinator:file.partial_write
                 coordinator:coordinator.summary_written)
# The launcher's failure report: a process, its pid and what happened to it.
report_re='flexgraph launch: (the )?(coordinator|worker [0-9]+) \(pid [0-9]+\) (was killed by signal [0-9]+|exited with status [0-9]+|has been stopped for more than)'

# The state letter of process $1 (R, S, T, Z, ...), or nothing when there is no such process.
proc_state() { sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2> /dev/null; }

# Signals the first process matching pattern $1 with $2 (KILL or STOP) and checks that it took
# it: the process existed (not a zombie) before, and is gone, a zombie, or stopped after. Sets
# `struck` (1 or 0), `target_pid` and `why_missed`.
strike() {
  local pattern=$1 sig=$2 state i
  struck=0; target_pid=""; why_missed=""
  target_pid=$(pgrep -f "$pattern" | head -n 1)
  if [ -z "$target_pid" ]; then
    why_missed="no such process at that moment ($(pgrep -f "$d" | wc -l) processes of the run)"; return
  fi
  state=$(proc_state "$target_pid")
  if [ -z "$state" ] || [ "$state" = Z ]; then why_missed="pid $target_pid already exited"; return; fi
  if ! kill -s "$sig" "$target_pid" 2> /dev/null; then why_missed="pid $target_pid exited before the signal"; return; fi
  for ((i = 0; i < 40; ++i)); do
    state=$(proc_state "$target_pid")
    if [ "$sig" = KILL ] && { [ -z "$state" ] || [ "$state" = Z ]; }; then struck=1; return; fi
    if [ "$sig" = STOP ] && { [ "$state" = T ] || [ "$state" = t ]; }; then struck=1; return; fi
    if [ "$sig" = STOP ] && { [ -z "$state" ] || [ "$state" = Z ]; }; then
      why_missed="pid $target_pid exited before it stopped"; return
    fi
    sleep 0.05
  done
  why_missed="pid $target_pid still in state $state after SIG$sig"
}

# The newest "checkpoint at epoch N written" among worker 0's logs $@ (0 when none).
last_written() {
  [ $# -eq 0 ] && { echo 0; return; }
  cat "$@" 2> /dev/null | sed -n 's/^checkpoint at epoch \([0-9]*\) written.*/\1/p' | sort -n | tail -n 1 |
    { read -r n; echo "${n:-0}"; }
}
# The epoch a log says its run resumed from (0 when it started afresh).
resumed_in() {
  sed -n 's/^resumed from checkpoint at epoch \([0-9]*\) .*/\1/p' "$1" 2> /dev/null | tail -n 1 |
    { read -r n; echo "${n:-0}"; }
}

# Checks how the run in log directory $1 resumed: the last attempt's log line and the summary's
# `resumed_from_epoch` agree and lie in [$2, $3]. Sets `resume_note`; returns 1 on a mismatch.
check_resume() {
  local dir=$1 low=$2 high=$3 logs last said reported
  logs=$(ls "$dir"/worker-0.log "$dir"/worker-0.restart*.log 2> /dev/null | sort -V)
  last=$(echo "$logs" | tail -n 1)
  said=$(resumed_in "$last")
  reported=$(field "$d/summary.json" resumed_from_epoch)
  resume_note="resumed from $said (summary: $reported; expected $low..$high)"
  [ "$reported" = "$said" ] && [ "$said" -ge "$low" ] && [ "$said" -le "$high" ]
}

echo "soak: $runs runs, seed $seed (scripts/soak.sh --seed $seed repeats them)"
declare -A by_fault clean_by_kind
recovered=0; unfaulted=0; missed=0; clean=0; hung=0; unclear=0; difference=0
left_procs=0; left_ports=0; left_files=0
for ((i = 1; i <= runs; ++i)); do
  fault=${faults[RANDOM % ${#faults[@]}]}
  rank=$((RANDOM % 2))
  delay=$(python3 -c "import random; random.seed($seed * 100003 + $i); print(round(random.uniform(0.3, 1.7), 2))")
  after_checkpoint=$((RANDOM % 2))  # signals: half just after the first checkpoint
  d="$work/run$i"
  mkdir -p "$d"
  launch_flags=(--quiet --workers 2 --heartbeat_timeout 3 --restart_on_failure --log_dir "$d/logs")
  run_flags=(--checkpoint_every $every --checkpoint_dir "$d/ckpt" --summary_json "$d/summary.json")
  injected=(); where=""; struck=0; why_missed=""; target=""; target_pid=""; resume_note=""
  low=0; high=0  # the epochs the last attempt may resume from
  case $fault in
    kill_writing_checkpoint)  # rank 0 writes the checkpoints: 8 in 40 epochs
      where="worker0:${write_points[RANDOM % 3]}:$((1 + RANDOM % 8))"; target="worker 0" ;;
    kill_at_shutdown)
      where=${shutdown_points[RANDOM % ${#shutdown_points[@]}]}
      target=${where%%:*}; target=${target/worker/worker } ;;
    truncate_checkpoint)  # killed as it starts epoch 7..40: the newest checkpoint is at 5..35
      kill_at=$((7 + RANDOM % 34))
      where="worker$rank:epoch.start:$kill_at"; target="worker $rank" ;;
  esac
  [ -n "$where" ] && injected=(FG_FAULT="$where" FG_FAULT_MARK="$d/fired")
  start=$(date +%s.%N)
  if [ "$fault" = truncate_checkpoint ]; then
    # The first launch, killed by the fault and not restarted.
    env "${injected[@]}" timeout -k 5 120 "$fg" launch --quiet --workers 2 --heartbeat_timeout 3 \
      --log_dir "$d/first" -- $train "${run_flags[@]}" > "$d/first.out" 2>&1
    first_rc=$?
    ckpt="$d/ckpt/checkpoint.pb"
    # Killed as epoch $kill_at began: the newest checkpoint is the one after the epoch before.
    written=$(( (kill_at - 1) / every * every ))
    if [ ! -f "$d/fired" ] || [ ! -f "$ckpt" ]; then
      why_missed="the first launch was not killed after a checkpoint (exit $first_rc)"
      launch_rc=$first_rc; cp "$d/first.out" "$d/launch.out"
      [ -f "$d/summary.json" ] || launch_rc=1
    elif [ "$(last_written "$d/first/worker-0.log")" != "$written" ]; then
      launch_rc=1; cp "$d/first.out" "$d/launch.out"
      struck=1; resume_note="worker 0's log does not say the checkpoint at epoch $written was written"
    else
      size=$(stat -c %s "$ckpt")
      cut=$(((RANDOM * 32768 + RANDOM) % size))
      truncate -s $cut "$ckpt"
      low=$((written - every)); high=$low
      timeout -k 5 120 "$fg" launch "${launch_flags[@]}" -- $train "${run_flags[@]}" --resume \
        > "$d/launch.out" 2>&1
      launch_rc=$?
      struck=1  # the restart must read the cut file and refuse it
      where="$where, checkpoint at epoch $written cut to $cut of $size bytes"
    fi
  else
    env "${injected[@]}" timeout -k 5 120 "$fg" launch "${launch_flags[@]}" -- $train "${run_flags[@]}" \
      > "$d/launch.out" 2>&1 &
    launch=$!
    case $fault in
      kill_worker|stop_worker) target="worker $rank"; pattern="flexgraph worker .*--rank $rank .*$d" ;;
      kill_coordinator|stop_coordinator) target="coordinator"; pattern="flexgraph coordinator .*$d" ;;
    esac
    case $fault in
      kill_*|stop_*)
        if [ -z "$where" ]; then
          if [ $after_checkpoint -eq 1 ]; then
            # The rest of the run is short (35 epochs of a few ms each): nothing slow after the wait.
            delay=$(python3 -c "import random; random.seed($seed * 7919 + $i); print(round(random.uniform(0, 0.15), 2))")
            for ((t = 0; t < 600; ++t)); do [ -f "$d/ckpt/checkpoint.pb" ] && break; sleep 0.01; done
            where="first checkpoint + ${delay}s"
          else
            where="at ${delay}s"
          fi
          sleep "$delay"
          sig=KILL; [ "${fault%%_*}" = stop ] && sig=STOP
          strike "$pattern" $sig
          where="$where, $target pid ${target_pid:-none}"
        fi ;;
    esac
    wait $launch
    launch_rc=$?
    [ ${#injected[@]} -gt 0 ] && { [ -f "$d/fired" ] && struck=1 || why_missed="the fault point was never reached"; }
  fi
  # What remains once the launch has ended (the launcher reaps its children, or they die with it).
  sleep 0.3
  procs=$(pgrep -f "$d" | wc -l)
  ports=0
  for pf in "$d"/logs/coordinator.port* "$d"/first/coordinator.port*; do
    [ -f "$pf" ] || continue
    port=$(cat "$pf")
    [ -n "$(ss -ltnH "sport = :$port")" ] && ports=$((ports + 1))
  done
  # A write cut short leaves `<file>.tmp.<pid>`, which the next write of that file removes.
  files=$(find "$d" \( -path "$d/logs" -o -path "$d/first" \) -prune -o -name "*.tmp*" -print | wc -l)
  end_processes "$d"
  # The outcome.
  out="$d/launch.out"
  [ "$fault" = none ] && struck=0
  if [ $launch_rc -eq 124 ] || [ $launch_rc -eq 137 ]; then
    outcome=hang
  elif [ $struck -eq 1 ]; then
    # The report must name the struck process: "worker 1 (pid 123) was killed by signal 9".
    named="$target \\(pid ${target_pid:-[0-9]+}\\) (was killed by signal 9|has been stopped)"
    if [ "$fault" = truncate_checkpoint ] && ! grep -qE "flexgraph launch: $named" "$d/first.out"; then
      outcome=unclear; resume_note="the first launch's report does not name the killed $target"
    elif [ $launch_rc -eq 0 ]; then
      got=$(losses "$d/summary.json" 2>&1)
      if [ "$fault" != truncate_checkpoint ]; then
        logs=$(ls "$d"/logs/worker-0.log "$d"/logs/worker-0.restart*.log 2> /dev/null | sort -V)
        low=$(last_written $(echo "$logs" | head -n -1)); high=$((low + every))
      fi
      if [ "$got" != "$reference" ]; then
        outcome=difference; resume_note="losses: $got"
      elif ! check_resume "$d/logs" $low $high; then
        outcome=difference
      elif [ "$fault" = truncate_checkpoint ] && ! grep -qE \
          "checkpoint\.pb: (truncated checkpoint|not a FlexGraph checkpoint).*: passed over" "$d"/logs/worker-0*.log; then
        outcome=difference; resume_note="$resume_note; the restart did not read and refuse the cut checkpoint"
      elif [ "$fault" != truncate_checkpoint ] && ! grep -qE "flexgraph launch: (the )?$named" "$out"; then
        outcome=unclear; resume_note="$resume_note; no failure report names the $target"
      elif [ "$fault" != truncate_checkpoint ] && ! grep -q "restarting from the last checkpoint" "$out"; then
        outcome=unclear; resume_note="$resume_note; recovered without a restart"
      else
        outcome=recovered
      fi
    elif grep -qE "$report_re" "$out"; then
      outcome=clean_error
      # A cut checkpoint with none before it: the refusal must name it.
      if [ "$fault" = truncate_checkpoint ] && { [ "$low" -gt 0 ] ||
          ! grep -qE "checkpoint\.pb: (truncated checkpoint|not a FlexGraph checkpoint)" "$out"; }; then
        outcome=unclear
      fi
    else
      outcome=unclear
    fi
  elif [ $launch_rc -ne 0 ]; then
    outcome=unclear; resume_note="failed, and no fault struck"
  else
    got=$(losses "$d/summary.json" 2>&1)
    if [ "$got" != "$reference" ]; then
      outcome=difference; resume_note="losses: $got"
    elif [ "$fault" = none ]; then
      outcome=unfaulted
    else
      outcome=missed; resume_note=$why_missed
    fi
  fi
  case $outcome in
    recovered) recovered=$((recovered + 1));;
    unfaulted) unfaulted=$((unfaulted + 1));;
    missed) missed=$((missed + 1));;
    clean_error) clean=$((clean + 1)); clean_by_kind[$fault]=$(( ${clean_by_kind[$fault]:-0} + 1 ));;
    hang) hung=$((hung + 1));;
    unclear) unclear=$((unclear + 1));;
    difference) difference=$((difference + 1));;
  esac
  by_fault[$fault.$outcome]=$(( ${by_fault[$fault.$outcome]:-0} + 1 ))
  left_procs=$((left_procs + procs)); left_ports=$((left_ports + ports)); left_files=$((left_files + files))
  seconds=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
  printf "soak %3d/%d  %-24s %-12s exit %3d  %5.1fs  left: processes %d ports %d files %d  %s\n" \
    "$i" "$runs" "$fault" "$outcome" "$launch_rc" "$seconds" "$procs" "$ports" "$files" "${where:-}"
  [ -n "$resume_note" ] && echo "      $resume_note"
  # What the launch said, for every run that is not plainly good.
  case $outcome in
    recovered|unfaulted) ;;
    *) tail -n 12 "$out" | sed 's/^/      | /' ;;
  esac
done
clean_text=""
for k in "${!clean_by_kind[@]}"; do clean_text="$clean_text $k=${clean_by_kind[$k]}"; done
echo "soak: $runs runs (seed $seed): recovered $recovered, unfaulted $unfaulted, missed $missed," \
     "clean error $clean (${clean_text# }), hang $hung, unclear $unclear, difference $difference;" \
     "left behind: processes $left_procs, ports $left_ports, temporary files $left_files"
passed=1
[ $((hung + unclear + difference + left_procs + left_ports + left_files)) -eq 0 ] || passed=0
if [ -n "$summary" ]; then
  {
    for k in "${!by_fault[@]}"; do echo "by_fault $k ${by_fault[$k]}"; done
    for k in "${!clean_by_kind[@]}"; do echo "clean $k ${clean_by_kind[$k]}"; done
  } | python3 -c "
import json, sys
keys = ['runs', 'seed', 'recovered', 'unfaulted', 'missed', 'clean_error', 'hang', 'unclear', 'difference',
        'processes_left', 'ports_left', 'temporary_files_left', 'passed']
out = dict(zip(keys, map(int, sys.argv[2:])))
out['passed'] = bool(out['passed'])
out['clean_error_by_fault'] = {}
out['by_fault'] = {}
for line in sys.stdin:
    what, key, n = line.split()
    if what == 'clean':
        out['clean_error_by_fault'][key] = int(n)
    else:
        fault, outcome = key.split('.')
        out['by_fault'].setdefault(fault, {})[outcome] = int(n)
json.dump(out, open(sys.argv[1], 'w'), indent=1, sort_keys=True)
" "$summary" "$runs" "$seed" "$recovered" "$unfaulted" "$missed" "$clean" "$hung" "$unclear" "$difference" \
    "$left_procs" "$left_ports" "$left_files" "$passed" || { echo "soak: cannot write $summary" >&2; exit 1; }
fi
[ $passed -eq 1 ]
