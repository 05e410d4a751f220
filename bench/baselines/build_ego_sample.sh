#!/usr/bin/env bash
# Builds torch_sparse's ShaDow op (torch_sparse::ego_k_hop_sample_adj, which PyG's ShaDowKHopSampler calls)
# from the torch-sparse 0.6.18 source release as one library against the venv's torch, for
# run_shadow.py --ego_library where torch_sparse itself is not installed (its whole source build takes
# most of an hour on 2 cores; this op's two files a few minutes).
#
#   bash bench/baselines/build_ego_sample.sh [OUT_DIR]   # default build/bench_work/ego
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$ROOT/bench/.venv/bin/python}
OUT=${1:-$ROOT/build/bench_work/ego}
mkdir -p "$OUT/src"
"$PY" -m pip download --no-deps --no-binary :all: torch-sparse==0.6.18 -d "$OUT/src" >/dev/null
tar -xzf "$OUT/src"/torch_sparse-0.6.18.tar.gz -C "$OUT/src"
SRC="$OUT/src/torch_sparse-0.6.18/csrc"
TORCH=$("$PY" -c "import torch, os; print(os.path.dirname(torch.__file__))")
PYINC=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
g++ -O3 -std=c++17 -fPIC -shared -D_GLIBCXX_USE_CXX11_ABI=0 -DTORCH_EXTENSION_NAME=_ego_sample_cpu \
  -I"$SRC" -I"$OUT/src/torch_sparse-0.6.18/third_party/parallel-hashmap" -I"$TORCH/include" -I"$TORCH/include/torch/csrc/api/include" -I"$PYINC" \
  "$SRC/ego_sample.cpp" "$SRC/cpu/ego_sample_cpu.cpp" \
  -L"$TORCH/lib" -ltorch -ltorch_cpu -lc10 -Wl,-rpath,"$TORCH/lib" -o "$OUT/_ego_sample_cpu.so"
echo "$OUT/_ego_sample_cpu.so"
