#!/usr/bin/env bash
# Create bench/.venv with the pinned DGL + PyG CPU baseline stack. Idempotent:
# does nothing if the venv already imports the pinned dgl and torch_geometric.
#   bash bench/baselines/setup_venv.sh          # create / verify
#   FORCE=1 bash bench/baselines/setup_venv.sh  # recreate from scratch
#   WITH_TORCH_SPARSE=1 bash bench/baselines/setup_venv.sh
#       # also builds torch-scatter and torch-sparse from PyPI's sources (no wheels there for torch
#       # 2.1.2; about 40 minutes on 2 cores): PyG's NeighborLoader and sparse adj_t need them
# Env: PYTHON (default python3), VENV (default bench/.venv),
#      TORCH_INDEX_URL (default: the PyTorch CPU wheel index if reachable, else PyPI).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH="$(dirname "$HERE")"
VENV="${VENV:-$BENCH/.venv}"
PYTHON="${PYTHON:-python3}"
REQ="$HERE/requirements.txt"
CPU_INDEX="https://download.pytorch.org/whl/cpu"

# Smoke test: import both frameworks, build a graph, run a GraphConv / GCNConv forward.
check() {
  OMP_NUM_THREADS=1 "$VENV/bin/python" - <<'PY'
import torch, dgl, torch_geometric
from dgl.nn import GraphConv
from torch_geometric.nn import GCNConv
assert torch.__version__.split("+")[0] == "2.1.2", torch.__version__
assert dgl.__version__ == "2.1.0", dgl.__version__
assert torch_geometric.__version__ == "2.5.3", torch_geometric.__version__
g = dgl.add_self_loop(dgl.graph(([0, 1, 2], [1, 2, 0]), num_nodes=3))
x = torch.randn(3, 4)
assert GraphConv(4, 2, norm="both")(g, x).shape == (3, 2)
assert GCNConv(4, 2)(x, torch.tensor([[0, 1, 2], [1, 2, 0]])).shape == (3, 2)
print(f"baseline venv ok: torch {torch.__version__}, dgl {dgl.__version__}, torch_geometric {torch_geometric.__version__}")
PY
}

with_sparse() {
  [[ "${WITH_TORCH_SPARSE:-0}" != "1" ]] && return 0
  "$VENV/bin/python" -c "import torch_sparse" 2>/dev/null && return 0
  echo "setup_venv: building torch-scatter and torch-sparse from source (MAX_JOBS=${MAX_JOBS:-2})"
  "$VENV/bin/python" -m pip --disable-pip-version-check install -q wheel==0.48.0
  MAX_JOBS="${MAX_JOBS:-2}" "$VENV/bin/python" -m pip --disable-pip-version-check install -q \
    --no-build-isolation torch-scatter==2.1.2 torch-sparse==0.6.18
  "$VENV/bin/python" -c "import torch_geometric.typing as t; assert t.WITH_TORCH_SPARSE; print('torch_sparse ok')"
}

if [[ "${FORCE:-0}" != "1" && -x "$VENV/bin/python" ]] && check 2>/dev/null; then
  with_sparse
  exit 0
fi

if [[ "${FORCE:-0}" == "1" ]]; then rm -rf "$VENV"; fi
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q "pip==24.0"

TORCH_PIN="$(grep -E '^torch==' "$REQ")"
if [[ -z "${TORCH_INDEX_URL:-}" ]]; then
  if "$PYTHON" -c "import urllib.request,sys; urllib.request.urlopen('$CPU_INDEX/torch/', timeout=8)" 2>/dev/null; then
    TORCH_INDEX_URL="$CPU_INDEX"
  else
    TORCH_INDEX_URL="pypi"
  fi
fi
if [[ "$TORCH_INDEX_URL" == "pypi" ]]; then
  # PyPI's Linux torch wheel is the CUDA 12.1 build (pulls ~2.5 GB of nvidia-* wheels); it runs on CPU.
  echo "setup_venv: installing $TORCH_PIN from PyPI (CPU index not reachable)"
  "${PIP[@]}" install -q "$TORCH_PIN"
else
  echo "setup_venv: installing $TORCH_PIN from $TORCH_INDEX_URL"
  "${PIP[@]}" install -q "$TORCH_PIN" --index-url "$TORCH_INDEX_URL"
fi
"${PIP[@]}" install -q -r "$REQ"
check
with_sparse
