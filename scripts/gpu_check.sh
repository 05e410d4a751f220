#!/usr/bin/env bash
# The GPU check in one call, on a machine with an NVIDIA GPU and the CUDA runtime but none of
# FlexGraph's Debian libraries, from a bundle made by scripts/bundle.sh (carried in the ignored
# folder BUNDLE, default gpu_bundle). Two profiles, each made to end within a budget of
# GPU_CHECK_BUDGET_S seconds (default 480: 8 minutes, unpacking included):
#
#   validation (the default): the GPU and the libraries the binaries resolve; the gtest binaries
#     (CUDA op tests, CPU op tests, NCCL refusals, sampling_test with device sampling against the
#     host batch for batch, runtime_device_training_test: every model on the GPU against the CPU,
#     mini-batches sampled on the host and on the device, node-wise and LADIES, two workers on one
#     GPU); compute-sanitizer memcheck on the CUDA op tests' CUDA cases and on DeviceSampler.*; then
#     `flexgraph train` and `flexgraph launch --workers 2` on larger graphs on the GPU and on the CPU,
#     whose losses must agree (1e-4 relative, 1e-3 in mini-batches). Writes summary.md, summary.json,
#     env.log, tests.log, sanitizer.log and train.log to $OUT.
#   benchmark: the GPU and the libraries; FlexGraph against PyG and torch.sparse on this GPU
#     (bench/gpu/run.py, GPU_BENCH_BUDGET_S, default 200, after which no run starts; GPU_BENCH_ARGS);
#     kernel time by name (bench/gpu/kernel_profile.py: GPU_PROFILE=gcn, the default, GCN on RMAT-20
#     in FlexGraph and torch.sparse; magnn; 0 for none); and, when asked, mini-batch SAGE against
#     PyG's NeighborLoader (GPU_MINIBATCH="--workloads cora,rmat"), bulk sampling on the host and
#     on the device (GPU_SAMPLING="2 8 16"), the largest RMAT scale (GPU_LARGEST="--memory_gib 8
#     --from_scale 19 --to_scale 23"). The opt-in steps take minutes: shorten the rest alongside
#     (GPU_BENCH_BUDGET_S=1 GPU_PROFILE=0). Writes summary.md, summary.json, env.log, bench.log,
#     gpu_bench.md, gpu_bench.json and profile.md to $OUT.
#
# Every step runs under its own timeout (`timeout`), cut to what is left of the budget; a step that
# would start with under 5 s left is not run, and counts as failed. Gtest binaries write JSON reports
# (--gtest_output=json) that scripts/gpu_check_report.py counts: passed, failed, skipped, disabled.
# On a machine with a GPU a skipped test fails the check, except the tests that skip there by design:
# CudaAvailability* (the paths without a device) and the NCCL case the GPU count rules out (one GPU:
# Nccl.AllReduceOnDeviceSumsAcrossGpus; two or more: Nccl.NoGpuOrASharedGpuIsAClearError). A report
# that is missing (a crash, a timeout), a run of no test and a named GPU test that did not pass fail
# it too. Binaries are found by name anywhere under the bundle's bin/ folder. summary.json records
# the profile, the commit of the bundle's binaries and of these scripts, the GPUs (nvidia-smi), each
# step's status, exit code, seconds, timeout and test counts, and the budget used. Exits non-zero
# when a step fails. A limit on the whole command should leave a minute beyond the budget (a timed
# out step gets 10 s to end after TERM, and the records are written last).
#
#   scripts/bundle.sh                                      # here: builds, packs, excludes gpu_bundle/
#   scripts/gpu_check.sh gpu_bundle                        # there: validation
#   scripts/gpu_check.sh --profile benchmark gpu_bundle    # there: benchmark (or GPU_CHECK_PROFILE=benchmark)
#   GPU_BENCH_BUDGET_S=1 GPU_PROFILE=0 GPU_SAMPLING="2 8 16" \
#     GPU_MINIBATCH="--workloads cora,rmat --epochs 3" scripts/gpu_check.sh --profile benchmark gpu_bundle
#   scripts/gpu_check.sh --self_test [GTEST_BINARY]        # anywhere: the check's own logic (ctest)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
report_py="$PWD/scripts/gpu_check_report.py"

# ---------------------------------------------------------------------------------------------
# State and recording.

# init_state OUT_DIR WORK_DIR: empty records in OUT_DIR, scratch space in WORK_DIR.
init_state() {
  out=$1
  root=$2
  mkdir -p "$out" "$root"
  summary="$out/summary.md"
  summary_json="$out/summary.json"
  runs="$root/runs"        # run summaries and gtest reports stay out of $OUT (8 files come back)
  reports="$root/reports"
  steps_tsv="$root/steps.tsv"
  mkdir -p "$runs" "$reports"
  : > "$steps_tsv"
  status=0
  start=${start:-$SECONDS}
  budget=${budget:-${GPU_CHECK_BUDGET_S:-480}}
  gpus=${gpus:-0}
  gpu_names=()
  meta=()
}

elapsed() { echo $((SECONDS - start)); }

# record NAME STATUS RC SECONDS TIMEOUT LOG COUNTS DETAIL: one row in summary.md and steps.tsv,
# a line on stdout, and summary.json written again (so a check cut short still leaves one).
record() {
  local name=$1 word=$2 rc=$3 secs=$4 limit=$5 log=$6 counts=$7 detail=$8
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$word" "$rc" "$secs" "$limit" "$(basename "$log")" "$counts" \
    >> "$steps_tsv"
  echo "| $name | $word | $secs | $detail |" >> "$summary"
  printf '[%4d/%d s] %s: %s (%d s)%s\n' "$(elapsed)" "$budget" "$name" "$word" "$secs" "${detail:+, $detail}"
  [ "$rc" = - ] || write_json  # a step not run changes nothing the final summary.json will not hold
}

write_json() {  # [--final]
  local args=()
  for kv in "${meta[@]}"; do args+=(--meta "$kv"); done
  for g in "${gpu_names[@]}"; do args+=(--gpu "$g"); done
  python3 "$report_py" summary "$steps_tsv" --out "$summary_json" "${args[@]}" \
    --meta "budget_s=$budget" --meta "elapsed_s=$(elapsed)" --meta "exit_status=$status" "$@" \
    || echo "summary.json: could not be written" >&2
}

# run_limited LOG LIMIT COMMAND...: runs COMMAND under `timeout`, appending to LOG, within what is
# left of the budget. Sets step_rc, step_secs, step_limit and step_word (ok, FAILED (rc),
# TIMED OUT, not run); returns 1 unless COMMAND ran and exited 0.
run_limited() {
  local log=$1 limit=$2
  shift 2
  local left=$((budget - $(elapsed)))
  step_secs=0
  step_limit=$limit
  if ((left < 5)); then
    step_rc=-
    step_word="not run (budget spent)"
    echo "=== not run, ${left} s of the budget left: $*" >> "$log"
    return 1
  fi
  ((step_limit > left)) && step_limit=$left
  local t0=$SECONDS
  echo "=== $* (timeout ${step_limit} s)" >> "$log"
  # The command leads its own process group under `timeout`, which ends all of it (workers too):
  # TERM at the limit, KILL 10 s later.
  timeout -k 10 "$step_limit" "$@" >> "$log" 2>&1
  step_rc=$?
  step_secs=$((SECONDS - t0))
  case $step_rc in
    0) step_word=ok ;;
    124 | 137) step_word="TIMED OUT (${step_limit} s)" ;;
    126 | 127) step_word="FAILED ($step_rc: not found or not executable)" ;;
    *) step_word="FAILED ($step_rc)" ;;
  esac
  echo "=== $step_word after ${step_secs} s" >> "$log"
  [ "$step_rc" = 0 ]
}

# step NAME LOG TIMEOUT COMMAND...: one step, recorded with its status and seconds.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  run_limited "$log" "$limit" "$@"
  local rc=$?
  [ $rc -ne 0 ] && status=1
  record "$name" "$step_word" "$step_rc" "$step_secs" "$step_limit" "$log" - ""
  return $rc
}

# gtest_step NAME LOG TIMEOUT COMMAND...: a gtest binary (COMMAND ends with it and its arguments),
# with a JSON report whose test cases are counted. Fails when the binary fails, when its report
# is missing or ran no test, when a test failed, when a test skipped on a machine with a GPU (other
# than the expected skips, see expected_skips), or when a pattern of REQUIRE (space-separated,
# Suite.Test with * and ?) matches no passed test on such a machine.
gtest_step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local file
  file=$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_')
  local report="$reports/$file.json" counts="$reports/$file.counts.json"
  rm -f "$report"
  run_limited "$log" "$limit" "$@" --gtest_output="json:$report"
  local rc=$?
  local word=$step_word detail=""
  if [ "$step_rc" != - ]; then
    local args=(--gpus "$gpus" "${allow_skips[@]}")
    if ((gpus > 0)); then
      local patterns=()
      read -r -d '' -a patterns <<< "${REQUIRE:-}"  # split on blanks and newlines, never globbed
      for p in "${patterns[@]}"; do args+=(--require "$p"); done
    fi
    detail=$(python3 "$report_py" count "$report" "${args[@]}" --out "$counts" 2>&1 | tee -a "$log")
    local crc=$?  # python3's status (pipefail)
    detail=$(echo "$detail" | head -1)
    if [ "$crc" -ne 0 ]; then
      [ $rc -eq 0 ] && word="FAILED ($(counts_problem "$counts"))"
      rc=1
    fi
  else
    counts=-
  fi
  [ $rc -ne 0 ] && status=1
  record "$name" "$word" "$step_rc" "$step_secs" "$step_limit" "$log" "$counts" "$detail"
  return $rc
}

# counts_problem COUNTS: the reason a counted report failed, in a few words.
counts_problem() {
  python3 - "$1" << 'PY' 2> /dev/null || echo "report not counted"
import json, sys
c = json.load(open(sys.argv[1]))
if c["errors"]:
    print("no report" if c["errors"][0].startswith("no report") else c["errors"][0].split(" (")[0])
elif c["failed"]:
    print(f"{c['failed']} failed in the report")
elif c["skipped_unexpected"]:
    print(f"{c['skipped_unexpected']} skipped on a GPU")
else:
    print(f"required did not pass: {', '.join(c['required_missing'])}")
PY
}

# expected_skips: the tests that skip by design on a machine with $gpus GPUs.
expected_skips() {
  allow_skips=(--allow_skip 'CudaAvailability.*' --allow_skip 'CudaAvailabilityDeathTest.*')
  if ((gpus == 1)); then
    allow_skips+=(--allow_skip 'Nccl.AllReduceOnDeviceSumsAcrossGpus')
  elif ((gpus >= 2)); then
    allow_skips+=(--allow_skip 'Nccl.NoGpuOrASharedGpuIsAClearError')
  fi
}

# binary NAME: the executable NAME anywhere under the bundle's bin/ folder (the path it would have
# there when it is missing, so that its step fails naming it).
binary() {
  local f
  f=$(find "$bin" -type f -name "$1" -perm -u+x 2> /dev/null | sort | head -1)
  echo "${f:-$bin/$1}"
}

# ---------------------------------------------------------------------------------------------
# The profiles.

validation() {
  local tests="$out/tests.log" sanitizer_log="$out/sanitizer.log" log="$out/train.log"
  env_steps
  REQUIRE='Devices/DeviceOpsTest.*/cuda' gtest_step cuda_device_ops_test "$tests" 120 \
    "$(binary cuda_device_ops_test)"
  REQUIRE='CudaAllocator.*' gtest_step cuda_device_alloc_test "$tests" 60 "$(binary cuda_device_alloc_test)"
  gtest_step cuda_shared_kernels_test "$tests" 60 "$(binary cuda_shared_kernels_test)"
  gtest_step runtime_nccl_test "$tests" 60 "$(binary runtime_nccl_test)"
  # Device sampling against the host's, batch for batch (node-wise and LADIES).
  REQUIRE='DeviceSampler.SameBatchesAsTheHost DeviceSampler.ErrorsNameTheVertexAsTheHostDoes' \
    gtest_step sampling_test "$tests" 240 "$(binary sampling_test)"
  # Every model for 5 epochs on the GPU against the CPU (losses within 1e-4 relative), two workers
  # on one GPU, mini-batches sampled on the host and on the device, node-wise and LADIES, and
  # batches of whole graphs (the Interaction Network and the edge filter on tracking events).
  REQUIRE='Models/DeviceTraining.LossesEqualTheCpuRun/* Models/DeviceTraining.TwoWorkersOnOneGpuEqualTheCpuRun/*
           DeviceMiniBatches.LossesEqualTheCpuRun DeviceGraphSets.*' \
    gtest_step runtime_device_training_test "$tests" 300 env FLEXGRAPH_DATA="$data" \
    "$(binary runtime_device_training_test)"
  gtest_step core_instance_ops_test "$tests" 120 "$(binary core_instance_ops_test)"

  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$sanitizer" ]; then
    REQUIRE='Devices/DeviceOpsTest.*/cuda' gtest_step "memcheck cuda_device_ops_test (CUDA cases)" \
      "$sanitizer_log" 180 "$sanitizer" --tool memcheck --error-exitcode 1 "$(binary cuda_device_ops_test)" \
      --gtest_filter='Devices/DeviceOpsTest.*/cuda'
    REQUIRE='DeviceSampler.SameBatchesAsTheHost' gtest_step "memcheck sampling_test (DeviceSampler)" \
      "$sanitizer_log" 120 "$sanitizer" --tool memcheck --error-exitcode 1 "$(binary sampling_test)" \
      --gtest_filter='DeviceSampler.*'
  else
    echo "=== compute-sanitizer: not found" >> "$sanitizer_log"
    status=1
    record "compute-sanitizer memcheck" "FAILED (compute-sanitizer not found)" - 0 0 "$sanitizer_log" - ""
  fi

  # Larger graphs through the command line, each on the GPU and then on the CPU, so that a check cut
  # short by the budget still holds whole pairs. Mini-batches on the GPU are sampled on the host and,
  # where the device samples (a whole graph; LADIES in one process), on the device too.
  local flexgraph rmat18="rmat:scale=18,edge_factor=16,features=128,classes=8"
  local rmat16="rmat:scale=16,edge_factor=16,features=128,classes=8" parts="$root/rmat16-2parts"
  flexgraph=$(binary flexgraph)
  # shellcheck disable=SC2054  # (commas inside one argument)
  local batches=(--batch_size 1024 --fanouts 25,10 --eval_every 5)
  local ladies=(--batch_size 1024 --sampler ladies --layer_size 512 --eval_every 5)
  pair train gcn-rmat18 --dataset "$rmat18" --model gcn --hidden 256
  pair train sage-rmat18 --dataset "$rmat18" --model sage --hidden 256
  pair train magnn-imdb --dataset "$data/imdb" --model magnn --hidden 64 --layers 2
  pair train sage-rmat18-batches @sample_on --dataset "$rmat18" --model sage --hidden 256 "${batches[@]}"
  pair train sage-rmat16-ladies-batches @sample_on --dataset "$rmat16" --model sage --hidden 256 "${ladies[@]}"
  # Two worker processes on the one GPU (`launch --workers 2`, over gRPC) against the same launch on
  # the CPU; a partitioned dataset (each worker reads only its part) for the runs on parts.
  step "partition RMAT-16 in 2 parts" "$log" 60 "$flexgraph" partition --dataset "$rmat16" --parts 2 \
    --method metis --model sage --out "$parts"
  pair launch2 gcn-rmat16 --dataset "$rmat16" --model gcn --hidden 256
  pair launch2 magnn-imdb --dataset "$data/imdb" --model magnn --hidden 64 --layers 2
  pair launch2 sage-rmat16-batches @sample_on --dataset "$rmat16" --model sage --hidden 256 "${batches[@]}"
  pair launch2 sage-parts --dataset "$parts" --model sage --hidden 256
  pair launch2 sage-parts-batches --dataset "$parts" --model sage --hidden 256 "${batches[@]}"
  pair launch2 sage-parts-ladies-batches --dataset "$parts" --model sage --hidden 256 "${ladies[@]}"
  if python3 "$report_py" losses "$runs" > "$root/losses.md" 2>> "$log"; then
    record "losses GPU against CPU" ok 0 0 0 "$log" - "every pair within its tolerance"
  else
    status=1
    record "losses GPU against CPU" FAILED 1 0 0 "$log" - "see the table below"
  fi
  tables+=("$root/losses.md")
}

# pair train|launch2 NAME [@sample_on] ARGS...: NAME on the GPU (sampled on the host and on the
# device with @sample_on) and then on the CPU, 5 epochs each, summaries in $runs.
pair() {
  local how=$1 name=$2
  shift 2
  local variants=("")
  if [ "${1:-}" = @sample_on ]; then
    variants=(host device)
    shift
  fi
  for v in "${variants[@]}"; do
    if [ -n "$v" ]; then
      $how "$name" cuda "-${v}_sampling" --sample_on "$v" "$@"
    else
      $how "$name" cuda "" "$@"
    fi
  done
  $how "$name" cpu "" "$@"
}

train() {  # NAME DEVICE VARIANT ARGS...
  local name=$1 device=$2 variant=$3
  shift 3
  step "train $name ($device${variant:+, ${variant#-}})" "$out/train.log" 90 "$(binary flexgraph)" train \
    --device "$device" --epochs 5 --epoch0_loss --quiet --summary_json "$runs/$name-$device$variant.json" "$@"
}

launch2() {  # NAME DEVICE VARIANT ARGS...
  local name=$1 device=$2 variant=$3
  shift 3
  step "launch 2 workers $name ($device${variant:+, ${variant#-}})" "$out/train.log" 120 \
    "$(binary flexgraph)" launch --workers 2 -- train --device "$device" --epochs 5 --epoch0_loss --quiet \
    --summary_json "$runs/$name-2w-$device$variant.json" "$@"
}

benchmark() {
  local log="$out/bench.log" flexgraph
  flexgraph=$(binary flexgraph)
  env_steps
  # FlexGraph against PyG and plain torch.sparse on this GPU; no run starts after GPU_BENCH_BUDGET_S.
  local bench_budget=${GPU_BENCH_BUDGET_S:-200}
  step "GPU bench vs PyG" "$log" $((bench_budget + 150)) python3 bench/gpu/run.py --device cuda \
    --flexgraph "$flexgraph" --data_root "$data" --work_dir "$root/gpu_bench" --out "$out" \
    --threads "$OMP_NUM_THREADS" --time_budget "$bench_budget" ${GPU_BENCH_ARGS:-}
  tables+=("$out/gpu_bench.md")
  # Where the device time goes: kernel time by name (Nsight Compute).
  local rmat20="$root/gpu_bench/rmat20"
  case "${GPU_PROFILE:-gcn}" in
    gcn)
      if [ -f "$rmat20/indptr.npy" ]; then
        step "kernel profile FlexGraph" "$log" 120 python3 bench/gpu/kernel_profile.py \
          --label "FlexGraph GCN on RMAT-20, hidden 256, 3 epochs" --out "$out/profile.md" -- \
          "$flexgraph" train --dataset "$rmat20" --model gcn --hidden 256 --epochs 3 --device cuda \
          --normalize_features false --quiet
        step "kernel profile torch.sparse" "$log" 120 python3 bench/gpu/kernel_profile.py \
          --label "torch.sparse GCN on RMAT-20, hidden 256, 3 epochs" --out "$out/profile.md" -- \
          python3 bench/baselines/run_baseline.py --framework torch --model gcn --data "$rmat20" --epochs 3 \
          --warmup 1 --hidden 256 --layers 2 --device cuda --threads "$OMP_NUM_THREADS" --input_dropout
      else
        status=1
        record "kernel profile" "FAILED (no RMAT-20: the bench did not write it; GPU_PROFILE=0 skips)" - 0 0 \
          "$log" - ""
      fi
      ;;
    magnn)
      step "kernel profile FlexGraph MAGNN" "$log" 120 python3 bench/gpu/kernel_profile.py \
        --label "FlexGraph MAGNN on IMDB, hidden 64, 8 heads, 3 epochs" --out "$out/profile.md" -- \
        "$flexgraph" train --dataset "$data/imdb" --model magnn --hidden 64 --layers 2 --epochs 3 \
        --device cuda --quiet
      ;;
  esac
  tables+=("$out/profile.md")
  # Mini-batch GraphSAGE on the GPU against PyG's NeighborLoader on the GPU (bench/minibatch/run.py).
  if [ -n "${GPU_MINIBATCH:-}" ]; then
    # NeighborLoader needs pyg-lib or torch-sparse: the bundle's wheels (CPU ops), for this step only.
    local pylib="$root/pylib"
    mkdir -p "$pylib"
    for w in "$bundle"/wheels/*.whl; do
      case "$(basename "$w")" in
        scipy-*) python3 -c "import scipy" 2> /dev/null && continue ;;  # the machine's own, where it has one
      esac
      [ -f "$w" ] && python3 -m zipfile -e "$w" "$pylib"
    done
    step "PyG's sampler imports" "$out/env.log" 60 env PYTHONPATH="$pylib" python3 -c \
      "import torch, torch_sparse, torch_geometric; print(torch.__version__, torch_sparse.__version__, torch_geometric.__version__)"
    step "mini-batch bench vs PyG" "$log" 240 env PYTHONPATH="$pylib" python3 bench/minibatch/run.py \
      --device cuda --frameworks pyg --reference pyg --flexgraph "$flexgraph" \
      --minibatch_bench "$(binary minibatch_bench)" --data_root "$data" --work_dir "$root/minibatch" \
      --out_dir "$root/minibatch" --threads "$OMP_NUM_THREADS" ${GPU_MINIBATCH}
    tables+=("$root/minibatch/minibatch.md")
  fi
  # Bulk sampling at each thread count GPU_SAMPLING lists, rows drawn on the host and on the GPU
  # (blocks built on the host either way): minibatch_bench on RMAT-20, bulks of 1, 8 and 32,
  # node-wise; LADIES at the last thread count only (millions of entries per batch).
  for t in ${GPU_SAMPLING:-}; do
    for sampler in neighbor ladies; do
      [ "$sampler" = ladies ] && [ "$t" != "${GPU_SAMPLING##* }" ] && continue
      local epochs=3
      [ "$sampler" = ladies ] && epochs=1
      for where in host device; do
        step "$sampler sampling on the $where, $t threads" "$log" 120 "$(binary minibatch_bench)" \
          --dataset rmat:scale=20,edge_factor=16,features=16,classes=8,seed=1 --bulk_sizes 1,8,32 \
          --epochs "$epochs" --threads "$t" --sampler "$sampler" --sample_on "$where" \
          --summary_json "$runs/sampling-$sampler-$where-$t.json"
      done
    done
  done
  if [ -n "${GPU_SAMPLING:-}" ]; then
    python3 "$report_py" sampling "$runs" > "$root/sampling.md" 2>> "$log" || status=1
    tables+=("$root/sampling.md")
  fi
  # The Interaction Network against PyTorch + PyG on this GPU (bench/tracking/run_tracking.py), at
  # each mean particle count GPU_TRACKING lists (empty: not run): s/epoch, peak device memory, the
  # floor from this GPU's ceilings, the epoch-0 losses compared.
  if [ -n "${GPU_TRACKING-300 1000}" ]; then
    step "tracking bench vs PyG" "$log" 240 python3 bench/tracking/run_tracking.py --device cuda \
      --flexgraph "$flexgraph" --python "$(command -v python3)" --particles "${GPU_TRACKING-300 1000}" \
      --events 5 --epochs 3 --threads "$OMP_NUM_THREADS" --work "$root/tracking" \
      --out "$root/tracking/tracking.json" --table "$root/tracking/tracking.md"
    tables+=("$root/tracking/tracking.md")
  fi
  # The largest RMAT scale each system trains (bench/gpu/largest.py), both capped alike.
  if [ -n "${GPU_LARGEST:-}" ]; then
    step "largest RMAT scale" "$log" 300 python3 bench/gpu/largest.py --device cuda --flexgraph "$flexgraph" \
      --work_dir "$root/largest" --out "$root/largest" --threads "$OMP_NUM_THREADS" ${GPU_LARGEST}
    tables+=("$root/largest/largest.md")
  fi
}

# The GPU, the driver and the libraries every binary resolves (the bundle's, the CUDA runtime's).
env_steps() {
  step "GPU" "$out/env.log" 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  step "libraries resolve" "$out/env.log" 60 bash -c \
    'find "$1" -type f -perm -u+x -exec ldd {} + | tee /dev/stderr | (! grep "not found")' _ "$bin"
  step "version" "$out/env.log" 30 "$(binary flexgraph)" version
}

# ---------------------------------------------------------------------------------------------
# The check.

main() {
  local profile=${GPU_CHECK_PROFILE:-validation}
  while [ $# -gt 0 ]; do
    case $1 in
      --profile) profile=$2; shift 2 ;;
      --profile=*) profile=${1#--profile=}; shift ;;
      --self_test) shift; self_test "$@"; exit $? ;;
      -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      -*) echo "gpu_check: unknown option $1" >&2; exit 2 ;;
      *) break ;;
    esac
  done
  case $profile in
    validation | benchmark) ;;
    *) echo "gpu_check: unknown profile '$profile' (validation or benchmark)" >&2; exit 2 ;;
  esac
  bundle=${1:-gpu_bundle}
  start=$SECONDS
  init_state "${OUT:-/tmp/flexgraph-gpu-check}" "$(mktemp -d /tmp/flexgraph-bundle-XXXXXX)"
  trap 'rm -rf "$root"' EXIT
  # Logs and tables of an earlier check in the same $OUT would be appended to.
  rm -f "$out"/{env,tests,sanitizer,train,bench}.log "$out"/{profile.md,gpu_bench.md,gpu_bench.json}
  bin="$root/flexgraph/bin"
  data="$(cd "$bundle" 2> /dev/null && pwd)/data"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
  tables=()

  local names
  names=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null)
  while IFS= read -r g; do
    [ -n "$g" ] && gpu_names+=("$g")
  done <<< "$names"
  gpus=${#gpu_names[@]}
  expected_skips
  local commit tree scripts_commit scripts_sha
  commit=$(head -1 "$bundle/COMMIT" 2> /dev/null || echo unknown)
  tree=$(sed -n 2p "$bundle/COMMIT" 2> /dev/null)
  scripts_commit=$(git rev-parse HEAD 2> /dev/null || echo unknown)
  # These two scripts as they ran (a copy of a working tree may carry no git history).
  scripts_sha=$(cat scripts/gpu_check.sh "$report_py" | sha256sum | cut -c1-16)
  meta=("profile=$profile" "started=$(date -u +%FT%TZ)" "commit=$commit" "commit_tree=${tree:-clean}"
        "scripts_commit=$scripts_commit" "scripts_sha256=$scripts_sha" "host=$(hostname)"
        "omp_threads=$OMP_NUM_THREADS")
  {
    echo "# FlexGraph GPU check ($profile), $(date -u +%FT%TZ)"
    echo
    echo "Bundle commit $commit${tree:+ ($tree)}; scripts commit $scripts_commit; GPU: ${gpu_names[*]:-none found}" \
         "($gpus); budget $budget s."
    echo
    echo "| step | status | seconds | tests |"
    echo "|---|---|---|---|"
  } > "$summary"
  echo "gpu_check: profile $profile, budget $budget s, bundle $bundle (commit $commit), GPUs: ${gpu_names[*]:-none}"

  if ! step "unpack the bundle" "$out/env.log" 120 tar -C "$root" -xJf "$bundle/flexgraph.tar.xz"; then
    write_json --final
    exit 1
  fi
  $profile

  for t in "${tables[@]}"; do
    [ -f "$t" ] && { echo; cat "$t"; } >> "$summary"
  done
  local used
  used=$(elapsed)
  local verdict=passed
  [ $status -ne 0 ] && verdict=FAILED
  { echo; echo "**$verdict.** Budget used: $used of $budget s."; } >> "$summary"
  echo "gpu_check: $verdict; budget used: $used of $budget s; records in $out"
  write_json --final
  exit $status
}

# ---------------------------------------------------------------------------------------------
# The self-test: the step, counting and budget logic against fake gtest binaries that write
# synthetic reports in gtest's JSON format, and against GTEST_BINARY's real report where given.

# A gtest JSON report (gtest 1.12's layout) of the cases given as Suite.Test=OUTCOME
# (passed, failed, skipped).
fake_report() {
  python3 - "$@" << 'PY'
import json, sys
suites = {}
for arg in sys.argv[1:]:
    name, outcome = arg.split("=")
    suite, test = name.split(".", 1)
    case = {"name": test, "file": "fake_test.cc", "line": 1, "status": "RUN",
            "result": "SKIPPED" if outcome == "skipped" else "COMPLETED",
            "timestamp": "2026-01-01T00:00:00Z", "time": "0s", "classname": suite}
    if outcome == "failed":
        case["failures"] = [{"failure": "fake_test.cc:1\nExpected equality", "type": ""}]
    suites.setdefault(suite, []).append(case)
print(json.dumps({"tests": len(sys.argv) - 1, "failures": sum(a.endswith("=failed") for a in sys.argv[1:]),
                  "disabled": 0, "errors": 0, "timestamp": "2026-01-01T00:00:00Z", "time": "0s",
                  "name": "AllTests",
                  "testsuites": [{"name": s, "tests": len(c), "failures": 0, "disabled": 0, "errors": 0,
                                  "timestamp": "2026-01-01T00:00:00Z", "time": "0s", "testsuite": c}
                                 for s, c in suites.items()]}, indent=2))
PY
}

self_test() {
  local real=${1:-}
  self_test_dir=$(mktemp -d /tmp/flexgraph-gpu-check-self-test-XXXXXX)
  trap 'rm -rf "$self_test_dir"' EXIT
  local dir=$self_test_dir
  local failures=0
  # A fake gtest binary, nested under bin/ (binaries are found by name): writes $FAKE_REPORT to the
  # --gtest_output path (none when empty), sleeps $FAKE_SLEEP, exits $FAKE_RC.
  mkdir -p "$dir/bin/tests"
  cat > "$dir/bin/tests/fake_test" << 'SH'
#!/usr/bin/env bash
for a; do
  case $a in --gtest_output=json:*) [ -n "${FAKE_REPORT:-}" ] && cp "$FAKE_REPORT" "${a#--gtest_output=json:}" ;; esac
done
sleep "${FAKE_SLEEP:-0}"
exit "${FAKE_RC:-0}"
SH
  chmod +x "$dir/bin/tests/fake_test"
  fake_report Ops.Add=passed Ops.Mul=passed DeviceSampler.SameBatchesAsTheHost=passed > "$dir/all_passed.json"
  fake_report Ops.Add=passed Ops.Mul=passed DeviceSampler.SameBatchesAsTheHost=skipped > "$dir/gpu_skipped.json"
  fake_report Ops.Add=passed CudaAvailability.HostHelpersWorkWithoutDevice=skipped \
    Nccl.AllReduceOnDeviceSumsAcrossGpus=skipped > "$dir/expected_skips.json"
  fake_report Ops.Add=passed Ops.Mul=failed > "$dir/one_failed.json"
  echo '{"tests": 3, "testsuites": [' > "$dir/truncated.json"

  # expect NAME WANT_STATUS CHECK_PY GPUS BUDGET FAKE_ENV... -- [REQUIRE]: one gtest step in a fresh
  # state; WANT_STATUS is the check's exit status, CHECK_PY a Python expression over summary.json (s)
  # and its step's test counts (t) that must hold.
  expect() {
    local name=$1 want=$2 check=$3 g=$4 b=$5
    shift 5
    local fake=()
    while [ "$1" != -- ]; do fake+=("$1"); shift; done
    shift
    local req=${1:-}
    local case_dir="$dir/case-$name"
    local t0=$SECONDS
    (
      gpus=$g budget=$b start=$SECONDS
      init_state "$case_dir/out" "$case_dir/work"
      bin="$dir/bin"
      expected_skips
      REQUIRE=$req gtest_step "$name" "$out/tests.log" 3 env "${fake[@]}" "$(binary fake_test)"
      write_json --final
      exit $status
    ) > "$case_dir.stdout" 2>&1
    local got=$?
    local ok=1
    [ "$got" = "$want" ] || ok=0
    if [ $ok = 1 ] && [ -n "$check" ]; then
      python3 -c "import json, sys; s = json.load(open(sys.argv[1])); t = s['steps'][0]['tests'] or {}
sys.exit(0 if ($check) else 1)" \
        "$case_dir/out/summary.json" || ok=0
    fi
    if [ $ok = 1 ]; then
      echo "self-test ok: $name (status $got, $((SECONDS - t0)) s)"
    else
      echo "self-test FAILED: $name: status $got, wanted $want; check: $check"
      sed 's/^/    /' "$case_dir.stdout" "$case_dir/out/tests.log" 2> /dev/null
      failures=$((failures + 1))
    fi
  }
  expect all_passed_on_a_gpu 0 "t['passed'] == 3 and t['skipped'] == 0 and s['status'] == 'passed'" \
    1 60 FAKE_REPORT="$dir/all_passed.json" -- 'DeviceSampler.SameBatchesAsTheHost'
  expect a_gpu_test_skipped_on_a_gpu 1 \
    "t['skipped_unexpected'] == 1 and s['status'] == 'failed' and 'skipped on a GPU' in s['steps'][0]['status']" \
    1 60 FAKE_REPORT="$dir/gpu_skipped.json" --
  expect a_gpu_test_skipped_on_two_gpus 1 "t['skipped_unexpected'] == 1" 2 60 FAKE_REPORT="$dir/gpu_skipped.json" --
  expect a_gpu_test_skipped_without_a_gpu 0 "t['skipped_expected'] == 1" 0 60 FAKE_REPORT="$dir/gpu_skipped.json" --
  expect expected_skips_on_one_gpu 0 "t['skipped_expected'] == 2 and t['passed'] == 1" \
    1 60 FAKE_REPORT="$dir/expected_skips.json" --
  expect the_nccl_skip_is_unexpected_on_two_gpus 1 \
    "t['skipped_unexpected_names'] == ['Nccl.AllReduceOnDeviceSumsAcrossGpus']" \
    2 60 FAKE_REPORT="$dir/expected_skips.json" --
  expect a_required_test_missing 1 "t['required_missing'] == ['DeviceSampler.Other*']" \
    1 60 FAKE_REPORT="$dir/all_passed.json" -- 'DeviceSampler.Same* DeviceSampler.Other*'
  expect a_failure_in_the_report_with_exit_0 1 "t['failed_names'] == ['Ops.Mul']" \
    1 60 FAKE_REPORT="$dir/one_failed.json" --
  expect a_failing_binary 1 "s['steps'][0]['status'] == 'FAILED (1)' and s['steps'][0]['rc'] == 1" \
    1 60 FAKE_REPORT="$dir/one_failed.json" FAKE_RC=1 --
  expect exit_0_without_a_report 1 "t['errors'][0].startswith('no report')" 1 60 FAKE_REPORT= --
  expect a_truncated_report 1 "t['errors'][0].startswith('unreadable')" 1 60 FAKE_REPORT="$dir/truncated.json" --
  expect a_hang_ends_at_its_timeout 1 "s['steps'][0]['status'].startswith('TIMED OUT') and s['elapsed_s'] < 20" \
    1 60 FAKE_REPORT="$dir/all_passed.json" FAKE_SLEEP=60 --
  expect a_spent_budget_runs_nothing 1 "s['steps'][0]['status'] == 'not run (budget spent)'" \
    1 3 FAKE_REPORT="$dir/all_passed.json" --

  # A binary missing from the bundle fails its step by name.
  (
    gpus=1 budget=60 start=$SECONDS
    init_state "$dir/missing/out" "$dir/missing/work"
    bin="$dir/bin"
    expected_skips
    gtest_step missing_test "$out/tests.log" 5 "$(binary missing_test)"
    exit $status
  ) > "$dir/missing.stdout" 2>&1 && { echo "self-test FAILED: a missing binary passed"; failures=$((failures + 1)); } \
    || echo "self-test ok: a missing binary fails its step"

  # Losses: GPU runs against the CPU's, within the tolerance or not.
  mkdir -p "$dir/losses_ok" "$dir/losses_bad"
  local run='{"losses": [%s], "epoch_seconds_median": 0.1, "epoch_host_syncs": [2, 2, 2]}'
  printf "$run" "1.0, 0.5" > "$dir/losses_ok/gcn-cpu.json"
  printf "$run" "1.00000001, 0.5" > "$dir/losses_ok/gcn-cuda.json"
  printf "$run" "1.0, 0.5" > "$dir/losses_ok/sage-batches-cpu.json"
  printf "$run" "1.0002, 0.5" > "$dir/losses_ok/sage-batches-cuda-device_sampling.json"
  cp "$dir/losses_ok/"* "$dir/losses_bad/"
  printf "$run" "1.01, 0.5" > "$dir/losses_bad/gcn-cuda.json"
  if python3 "$report_py" losses "$dir/losses_ok" > /dev/null && ! python3 "$report_py" losses "$dir/losses_bad" \
    > "$dir/losses_bad.md"; then
    echo "self-test ok: losses within and beyond the tolerance"
  else
    echo "self-test FAILED: losses"
    failures=$((failures + 1))
  fi

  # A real gtest binary's report: counted in full (as many cases as --gtest_list_tests lists), and,
  # where its GPU cases skip (no GPU here), a failure when the machine is said to have a GPU.
  if [ -n "$real" ]; then
    local listed
    listed=$("$real" --gtest_list_tests | grep -c '^  ')
    "$real" --gtest_output="json:$dir/real.json" > "$dir/real.stdout" 2>&1
    local rc=$?
    local line0 line1
    line0=$(python3 "$report_py" count "$dir/real.json" --gpus 0 --out "$dir/real0.json")
    local c0=$?
    line0=${line0%%$'\n'*}
    line1=$(python3 "$report_py" count "$dir/real.json" --gpus 1 --allow_skip 'CudaAvailability*' \
      --out "$dir/real1.json")
    local c1=$?
    line1=${line1%%$'\n'*}
    # The skips counted against those read from the report here, independently of the counter.
    local counted skipped skips
    counted=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['total'])" "$dir/real0.json")
    skipped=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['skipped_unexpected'])" \
      "$dir/real1.json")
    skips=$(python3 -c "import json, sys; print(sum(c.get('result') == 'SKIPPED'
      and not c.get('classname', '').startswith('CudaAvailability')
      for s in json.load(open(sys.argv[1]))['testsuites'] for c in s['testsuite']))" "$dir/real.json")
    if [ "$rc" = 0 ] && [ "$c0" = 0 ] && [ "$counted" = "$listed" ] && [ "$skipped" = "$skips" ] \
      && [ "$c1" = "$((skips > 0 ? 1 : 0))" ]; then
      echo "self-test ok: $(basename "$real"): $line0; said to run on a GPU: $((skipped)) unexpected skips," \
           "exit $c1"
    else
      echo "self-test FAILED: $(basename "$real"): exit $rc, $listed listed, $counted counted; no GPU: $line0" \
           "(exit $c0); a GPU: $line1 (exit $c1), $skipped unexpected skips counted of $skips"
      failures=$((failures + 1))
    fi
  fi
  if ((failures)); then
    echo "gpu_check self-test: $failures FAILED"
    return 1
  fi
  echo "gpu_check self-test: all passed"
}

main "$@"
