#!/usr/bin/env bash
# FlexGraph vs DGL (and PyG) in one command: builds `flexgraph` (Release, CPU) in build/bench,
# installs or checks the baseline venv (bench/baselines/setup_venv.sh), prepares the workloads,
# runs both systems with the same model, weights and 2 threads, checks the epoch-0 loss and prints
# the table (also bench/results/latest.{csv,json}). Arguments go to bench/harness/run_bench.py:
#   bench/run.sh                  # GCN, SAGE, PinSage on Cora and RMAT-17 (~2M edges); MAGNN on IMDB
#   bench/run.sh --large          # also RMAT scale 22 (~100M edges; ~41 GiB at hidden 256, else skipped)
#   bench/run.sh --pyg --only gcn:cora
#   bench/run.sh --workload rmat:scale=18,edge_factor=8,a=0.45 --only sage   # any generator spec
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FLEXGRAPH_BUILD:-$ROOT/build/bench}"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLEXGRAPH_CUDA=OFF >/dev/null
fi
cmake --build "$BUILD" --target flexgraph machine_ceilings
bash "$ROOT/bench/baselines/setup_venv.sh"
exec "$ROOT/bench/.venv/bin/python" "$ROOT/bench/harness/run_bench.py" \
  --flexgraph "$BUILD/runtime/flexgraph" --ceilings "$BUILD/bench/machine_ceilings" --skip_setup "$@"
