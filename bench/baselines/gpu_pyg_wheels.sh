#!/usr/bin/env bash
# Builds torch-scatter and torch-sparse wheels (CPU ops only) for the GPU machine's Python and torch,
# so that PyG's NeighborLoader, which needs pyg-lib or torch-sparse, samples there: that machine has
# torch_geometric but neither, and no network; pyg-lib's wheels come from data.pyg.org only, and
# PyPI has torch-sparse's sources. The wheels go to OUT (default build/gpu_wheels), where
# scripts/bundle.sh picks them up into the bundle; scripts/gpu_check.sh puts them on PYTHONPATH for
# the mini-batch benchmark only (CUDA tensors never reach their CPU-only ops there: NeighborLoader
# samples on the host, and PyG's mean aggregation is torch's own). About 15 minutes on 2 cores; with
# scipy's wheel (torch-sparse imports it) about 38 MB.
#
#   bench/baselines/gpu_pyg_wheels.sh [OUT]
# Env: PYTHON (default python3.12), TORCH (default 2.11.0: the GPU machine's, with CUDA 13.0).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/gpu_wheels}
python=${PYTHON:-python3.12}
torch=${TORCH:-2.11.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "torch==$torch" numpy
mkdir -p "$out"
FORCE_CUDA=0 MAX_JOBS=${MAX_JOBS:-2} "$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$out" \
  torch-scatter torch-sparse
# torch-sparse imports scipy, which PyG no longer requires: gpu_check.sh adds it where it is missing.
"$work/venv/bin/pip" download -q --no-deps --only-binary=:all: -d "$out" scipy
ls -l "$out"
