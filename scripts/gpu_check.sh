#!/usr/bin/env bash
# The GPU validation in one call, on a machine with an NVIDIA GPU and the CUDA runtime but none of
# FlexGraph's Debian libraries, from a bundle made here by scripts/bundle.sh (carried in the
# ignored folder BUNDLE, default gpu_bundle): unpacks it, records the GPU and the libraries the
# binaries resolve, runs the CUDA op tests, the CPU op tests and the sampling tests (device sampling
# against the host's), compute-sanitizer (memcheck) on the CUDA op tests and device sampling, every
# model on `--device cuda` next to the same run on the CPU (one process, and two
# worker processes sharing the GPU), and the benchmark
# against PyG and torch.sparse on the same GPU (bench/gpu/run.py, with the system python3's torch
# and torch_geometric), then kernel time by name (bench/gpu/kernel_profile.py; GPU_PROFILE below).
# Writes 8 files to $OUT: summary.md (one line per step: status and seconds, then the tables),
# env.log, tests.log, sanitizer.log, train.log, gpu_bench.md, gpu_bench.json, profile.md. Exits
# non-zero when a step fails.
#
#   scripts/bundle.sh                  # here: builds, packs and excludes gpu_bundle/ from git
#   scripts/gpu_check.sh gpu_bundle    # there (the device tool, with carry: ["gpu_bundle"])
#   GPU_BENCH_BUDGET_S=120 GPU_BENCH_ARGS="--workloads cora,rmat20" GPU_PROFILE=magnn \
#     scripts/gpu_check.sh gpu_bundle
#   GPU_LARGEST="--memory_gib 8 --from_scale 19 --to_scale 23" scripts/gpu_check.sh gpu_bundle
#   GPU_MINIBATCH="--workloads cora,rmat" scripts/gpu_check.sh gpu_bundle
#   GPU_SAMPLING="2 8 16" scripts/gpu_check.sh gpu_bundle
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-gpu_bundle}
out=${OUT:-/tmp/flexgraph-gpu-check}
mkdir -p "$out"
summary="$out/summary.md"
status=0
root=$(mktemp -d /tmp/flexgraph-bundle-XXXXXX)
tar -C "$root" -xJf "$bundle/flexgraph.tar.xz" || { echo "cannot unpack $bundle/flexgraph.tar.xz" > "$summary"; exit 1; }
bin="$root/flexgraph/bin"
data="$bundle/data"
runs="$root/runs"  # run summaries stay out of $OUT (8 files at most come back)
mkdir -p "$runs"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}

{
  echo "# FlexGraph GPU check, $(date -u +%FT%TZ), commit $(cat "$bundle/COMMIT" 2> /dev/null || echo unknown)"
  echo
  echo "| step | status | seconds |"
  echo "|---|---|---|"
} > "$summary"
# step NAME LOG COMMAND...: runs COMMAND appending to LOG, records its status and time.
step() {
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  echo "=== $name: $*" >> "$log"
  "$@" >> "$log" 2>&1
  local rc=$?
  local word=ok
  [ $rc -ne 0 ] && word="FAILED ($rc)" && status=1
  echo "| $name | $word | $((SECONDS - t0)) |" >> "$summary"
  return $rc
}

step "GPU" "$out/env.log" nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
step "libraries resolve" "$out/env.log" bash -c "ldd $bin/* | tee /dev/stderr | (! grep 'not found')"
step "version" "$out/env.log" "$bin/flexgraph" version

for t in cuda_device_ops_test cuda_device_alloc_test cuda_shared_kernels_test core_instance_ops_test runtime_nccl_test \
         sampling_test; do
  step "$t" "$out/tests.log" "$bin/$t" --gtest_brief=1
done
# Every model for 5 epochs on the GPU against the CPU (losses within 1e-4 relative).
step "runtime_device_training_test" "$out/tests.log" env FLEXGRAPH_DATA="$data" \
  "$bin/runtime_device_training_test"
# A GPU test that skipped ran nothing: count the skips.
echo "| CUDA tests skipped | $(grep -c '\[  SKIPPED \]' "$out/tests.log") | - |" >> "$summary"

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step "compute-sanitizer memcheck" "$out/sanitizer.log" "$sanitizer" --tool memcheck --error-exitcode 1 \
    "$bin/cuda_device_ops_test" --gtest_brief=1
  step "compute-sanitizer memcheck (sampling)" "$out/sanitizer.log" "$sanitizer" --tool memcheck \
    --error-exitcode 1 "$bin/sampling_test" --gtest_brief=1 --gtest_filter='DeviceSampler.*'

else
  echo "| compute-sanitizer | not found | - |" >> "$summary"
fi

# Larger graphs through the command line, on the GPU and on the CPU (losses within 1e-4 relative).
train() {  # NAME DEVICE ARGS...
  local name=$1 device=$2
  shift 2
  step "train $name ($device)" "$out/train.log" "$bin/flexgraph" train --device "$device" --epochs 5 \
    --epoch0_loss --quiet --summary_json "$runs/$name-$device.json" "$@"
}
# Two workers on the one GPU (`launch --workers 2`, real processes over gRPC) against the same
# launch on the CPU.
launch2() {  # NAME DEVICE ARGS...
  local name=$1 device=$2
  shift 2
  step "launch 2 workers $name ($device)" "$out/train.log" "$bin/flexgraph" launch --workers 2 -- train \
    --device "$device" --epochs 5 --epoch0_loss --quiet --summary_json "$runs/$name-2w-$device.json" "$@"
}
# A partitioned dataset (each worker reads only its part) for the two-worker runs on parts.
parts="$root/rmat16-2parts"
step "partition RMAT-16 in 2 parts" "$out/train.log" "$bin/flexgraph" partition \
  --dataset "rmat:scale=16,edge_factor=16,features=128,classes=8" --parts 2 --method metis --model sage \
  --out "$parts"
for device in cuda cpu; do
  for m in gcn sage; do
    train "$m-rmat18" "$device" --dataset "rmat:scale=18,edge_factor=16,features=128,classes=8" \
      --model "$m" --hidden 256
  done
  train "magnn-imdb" "$device" --dataset "$data/imdb" --model magnn --hidden 64 --layers 2
  train "sage-rmat18-batches" "$device" --dataset "rmat:scale=18,edge_factor=16,features=128,classes=8" \
    --model sage --hidden 256 --batch_size 1024 --fanouts 25,10 --eval_every 5
  launch2 "gcn-rmat16" "$device" --dataset "rmat:scale=16,edge_factor=16,features=128,classes=8" \
    --model gcn --hidden 256
  launch2 "magnn-imdb" "$device" --dataset "$data/imdb" --model magnn --hidden 64 --layers 2
  launch2 "sage-parts" "$device" --dataset "$parts" --model sage --hidden 256
  launch2 "sage-parts-batches" "$device" --dataset "$parts" --model sage --hidden 256 --batch_size 1024 \
    --fanouts 25,10 --eval_every 5
done
# FlexGraph against PyG and plain torch.sparse on this GPU; no run starts after the budget (seconds),
# so the whole check stays within one 10-minute command.
step "GPU bench vs PyG" "$out/train.log" python3 bench/gpu/run.py --device cuda --flexgraph "$bin/flexgraph" \
  --data_root "$data" --work_dir "$root/gpu_bench" --out "$out" --threads "$OMP_NUM_THREADS" \
  --time_budget "${GPU_BENCH_BUDGET_S:-300}" ${GPU_BENCH_ARGS:-}
# Where the device time goes: kernel time by name (Nsight Compute). GPU_PROFILE=gcn (default): GCN on
# RMAT-20, FlexGraph and torch.sparse, 3 epochs each with their evaluations; GPU_PROFILE=magnn:
# FlexGraph's MAGNN on IMDB, 3 epochs; GPU_PROFILE=0 skips it.
rmat20="$root/gpu_bench/rmat20"
case "${GPU_PROFILE:-gcn}" in
  gcn)
    if [ -f "$rmat20/indptr.npy" ]; then
      step "kernel profile FlexGraph" "$out/train.log" python3 bench/gpu/kernel_profile.py \
        --label "FlexGraph GCN on RMAT-20, hidden 256, 3 epochs" --out "$out/profile.md" -- \
        "$bin/flexgraph" train --dataset "$rmat20" --model gcn --hidden 256 --epochs 3 --device cuda \
        --normalize_features false --quiet
      step "kernel profile torch.sparse" "$out/train.log" python3 bench/gpu/kernel_profile.py \
        --label "torch.sparse GCN on RMAT-20, hidden 256, 3 epochs" --out "$out/profile.md" -- \
        python3 bench/baselines/run_baseline.py --framework torch --model gcn --data "$rmat20" --epochs 3 \
        --warmup 1 --hidden 256 --layers 2 --device cuda --threads "$OMP_NUM_THREADS" --input_dropout
    fi
    ;;
  magnn)
    step "kernel profile FlexGraph MAGNN" "$out/train.log" python3 bench/gpu/kernel_profile.py \
      --label "FlexGraph MAGNN on IMDB, hidden 64, 8 heads, 3 epochs" --out "$out/profile.md" -- \
      "$bin/flexgraph" train --dataset "$data/imdb" --model magnn --hidden 64 --layers 2 --epochs 3 \
      --device cuda --quiet
    ;;
esac
# Mini-batch GraphSAGE on the GPU against PyG's NeighborLoader on the GPU (bench/minibatch/run.py),
# when GPU_MINIBATCH gives its arguments, e.g. GPU_MINIBATCH="--workloads cora,rmat"; its table
# joins summary.md.
if [ -n "${GPU_MINIBATCH:-}" ]; then
  # NeighborLoader needs pyg-lib or torch-sparse: the bundle's wheels (CPU ops), for this step only.
  pylib="$root/pylib"
  mkdir -p "$pylib"
  for w in "$bundle"/wheels/*.whl; do
    case "$(basename "$w")" in
      scipy-*) python3 -c "import scipy" 2> /dev/null && continue ;;  # the machine's own, where it has one
    esac
    [ -f "$w" ] && python3 -m zipfile -e "$w" "$pylib"
  done
  step "PyG's sampler imports" "$out/env.log" env PYTHONPATH="$pylib" python3 -c \
    "import torch, torch_sparse, torch_geometric; print(torch.__version__, torch_sparse.__version__, torch_geometric.__version__)"
  step "mini-batch bench vs PyG" "$out/train.log" env PYTHONPATH="$pylib" python3 bench/minibatch/run.py --device cuda --frameworks pyg \
    --reference pyg --flexgraph "$bin/flexgraph" --minibatch_bench "$bin/minibatch_bench" \
    --data_root "$data" --work_dir "$root/minibatch" --out_dir "$root/minibatch" --threads "$OMP_NUM_THREADS" ${GPU_MINIBATCH}
fi
# Bulk sampling at each thread count GPU_SAMPLING lists (e.g. "2 8 16"), with the rows drawn on the
# machine's CPU and on the GPU (the blocks are built on the CPU either way): minibatch_bench on
# RMAT-20, bulks of 1, 8 and 32, node-wise; LADIES at the last thread count only (its rows hold
# millions of entries per batch: seconds per epoch on the CPU). Its table joins summary.md.
for t in ${GPU_SAMPLING:-}; do
  for sampler in neighbor ladies; do
    [ "$sampler" = ladies ] && [ "$t" != "${GPU_SAMPLING##* }" ] && continue
    epochs=3
    [ "$sampler" = ladies ] && epochs=1
    for where in host device; do
      step "$sampler sampling on the $where, $t threads" "$out/train.log" "$bin/minibatch_bench" \
        --dataset rmat:scale=20,edge_factor=16,features=16,classes=8,seed=1 --bulk_sizes 1,8,32 \
        --epochs "$epochs" --threads "$t" --sampler "$sampler" --sample_on "$where" \
        --summary_json "$runs/sampling-$sampler-$where-$t.json"
    done
  done
done
# The largest RMAT scale each system trains (bench/gpu/largest.py), when GPU_LARGEST gives its
# arguments, e.g. GPU_LARGEST="--memory_gib 8 --from_scale 19 --to_scale 23" (both systems capped
# alike, as a smaller GPU); its table joins summary.md.
if [ -n "${GPU_LARGEST:-}" ]; then
  step "largest RMAT scale" "$out/train.log" python3 bench/gpu/largest.py --device cuda --flexgraph "$bin/flexgraph" \
    --work_dir "$root/largest" --out "$root/largest" --threads "$OMP_NUM_THREADS" ${GPU_LARGEST}
fi
python3 - "$runs" >> "$summary" << 'PY' || status=1
import glob, json, os, sys
runs = sys.argv[1]
rows = []
for gpu in sorted(glob.glob(os.path.join(runs, "*-cuda.json"))):
    cpu = gpu.replace("-cuda.json", "-cpu.json")
    if not os.path.exists(cpu):
        continue
    g, c = json.load(open(gpu)), json.load(open(cpu))
    rel = max(abs(a - b) / abs(b) for a, b in zip(g["losses"], c["losses"])) if c["losses"] else 0
    waits = sorted(g.get("epoch_host_syncs", [])[1:]) or [float("nan")]
    rows.append(f"| {os.path.basename(gpu)[:-10]} | {g['epoch_seconds_median']:.4f} | "
                f"{c['epoch_seconds_median']:.4f} | {rel:.2e} | {waits[len(waits) // 2]:.0f} |")
print("\n| run | GPU s/epoch | CPU s/epoch | max loss rel. diff | GPU host waits/step |\n|---|---|---|---|---|")
print("\n".join(rows) if rows else "| (no run trained on both devices) | | | |")
PY
[ -f "$out/gpu_bench.md" ] && { echo; cat "$out/gpu_bench.md"; } >> "$summary"
[ -f "$out/profile.md" ] && { echo; cat "$out/profile.md"; } >> "$summary"
[ -f "$root/largest/largest.md" ] && { echo; cat "$root/largest/largest.md"; } >> "$summary"
[ -f "$root/minibatch/minibatch.md" ] && { echo; cat "$root/minibatch/minibatch.md"; } >> "$summary"
if [ -n "${GPU_SAMPLING:-}" ]; then
  python3 - "$runs" >> "$summary" << 'PY' || status=1
import glob, json, os, sys
print("\n| sampler | rows drawn on | threads | bulk 1 s | bulk 8 s | bulk 32 s | bulk 32 ÷ bulk 1 |\n"
      "|---|---|---|---|---|---|---|")
runs = [(os.path.basename(p)[:-5].split("-")[1:], p) for p in glob.glob(os.path.join(sys.argv[1], "sampling-*.json"))]
for (sampler, where, t), path in sorted(runs, key=lambda r: (r[0][0], r[0][1], int(r[0][2]))):
    s = {int(b["bulk"]): b for b in json.load(open(path))["bulks"]}
    print(f"| {sampler} | {where} | {t} | {s[1]['epoch_seconds']:.3f} | "
          f"{s[8]['epoch_seconds']:.3f} | {s[32]['epoch_seconds']:.3f} | {s[32]['speedup_over_bulk_1']:.2f}× |")
PY
fi
rm -rf "$root"
exit $status
