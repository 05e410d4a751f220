#!/usr/bin/env bash
# Collectives and training per communicator backend on loopback, P = 2 and 4: all-reduce and
# all-to-all-v seconds per buffer size for FlexGraph's gRPC and MPI backends (collectives_bench),
# torch.distributed's gloo on the same buffers (bench/baselines/run_collectives.py, in the benchmark
# venv), MPI_Allreduce/MPI_Alltoallv called directly; then GCN's epoch time on RMAT per backend.
# Prints one table with the ratios (gRPC / gloo, MPI / direct MPI) and writes them as JSON.
#
#   bench/distributed/collectives.sh [--parts "2 4"] [--sizes_mib 1,16,64] [--iters 10] [--scale 18]
#                                    [--build build/release] [--summary_json FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
parts="2 4"; sizes=1,16,64; iters=10; scale=18; build=build/release
summary=bench/results/distributed/collectives.json
while [ $# -gt 0 ]; do
  case "$1" in
    --parts) parts=$2; shift 2;;
    --sizes_mib) sizes=$2; shift 2;;
    --iters) iters=$2; shift 2;;
    --scale) scale=$2; shift 2;;
    --build) build=$2; shift 2;;
    --summary_json) summary=$2; shift 2;;
    *) echo "collectives.sh: unknown argument $1" >&2; exit 2;;
  esac
done
bench=$build/bench/collectives_bench
fg=$build/runtime/flexgraph
py=bench/.venv/bin/python
[ -x "$py" ] || { echo "collectives.sh: run bench/baselines/setup_venv.sh first (gloo comes with torch)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_collectives.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$summary")"
have_mpi=0
command -v mpirun > /dev/null && mpirun --oversubscribe -np 1 "$bench" --backend mpi --sizes_mib 1 --iters 1 \
  > /dev/null 2>&1 && have_mpi=1
train="train --dataset rmat:scale=$scale,edge_factor=16,features=128,classes=8 --model gcn --hidden 256 --epochs 6 --threads 1 --quiet"
for p in $parts; do
  echo "== P = $p" >&2
  mkdir -p "$work/rdv$p"
  for ((r = 1; r < p; ++r)); do
    "$bench" --backend grpc --world "$p" --rank "$r" --rendezvous "$work/rdv$p" --sizes_mib "$sizes" --iters "$iters" \
      > /dev/null &
  done
  "$bench" --backend grpc --world "$p" --rank 0 --rendezvous "$work/rdv$p" --sizes_mib "$sizes" --iters "$iters" \
    --summary_json "$work/grpc$p.json" >&2
  wait
  "$py" bench/baselines/run_collectives.py --world "$p" --sizes_mib "$sizes" --iters "$iters" \
    --summary_json "$work/gloo$p.json" > /dev/null
  "$fg" launch --quiet --workers "$p" --log_dir "$work/launch$p" -- $train --summary_json "$work/epoch_grpc$p.json" \
    > /dev/null 2>&1
  if [ $have_mpi = 1 ]; then
    mpirun --oversubscribe -np "$p" "$bench" --backend mpi --sizes_mib "$sizes" --iters "$iters" \
      --summary_json "$work/mpi$p.json" >&2
    mpirun --oversubscribe -np "$p" "$fg" worker --comm mpi -- $train --summary_json "$work/epoch_mpi$p.json" \
      > /dev/null 2>&1
  fi
done
python3 - "$work" "$summary" "$parts" <<'PY'
import json, os, sys
work, out, parts = sys.argv[1], sys.argv[2], sys.argv[3].split()
def load(name):
    path = os.path.join(work, name)
    return json.load(open(path)) if os.path.exists(path) else None
rows = []
print(f"{'P':>2} {'MiB':>5} {'gRPC allr s':>12} {'gloo allr s':>12} {'gRPC/gloo':>10} {'MPI allr s':>11} "
      f"{'MPI/direct':>10} {'gRPC a2a s':>11} {'gloo a2a s':>11} {'MPI a2a s':>10} {'MPI/direct':>10}")
for p in parts:
    g, gl, m = load(f"grpc{p}.json"), load(f"gloo{p}.json"), load(f"mpi{p}.json")
    for k, row in enumerate(g["sizes"]):
        glr = gl["sizes"][k]
        mr = m["sizes"][k] if m else {}
        r = {"world": int(p), "bytes": row["bytes"], "grpc_allreduce_seconds": row["allreduce_seconds"],
             "gloo_allreduce_seconds": glr["allreduce_seconds"],
             "grpc_over_gloo_allreduce": row["allreduce_seconds"] / glr["allreduce_seconds"],
             "grpc_alltoallv_seconds": row["alltoallv_seconds"], "gloo_alltoallv_seconds": glr["alltoallv_seconds"]}
        if mr:
            r.update({"mpi_allreduce_seconds": mr["allreduce_interleaved_seconds"],
                      "direct_mpi_allreduce_seconds": mr["direct_allreduce_seconds"],
                      "mpi_over_direct_allreduce": mr["allreduce_interleaved_seconds"] / mr["direct_allreduce_seconds"],
                      "mpi_alltoallv_seconds": mr["alltoallv_seconds"],
                      "direct_mpi_alltoallv_seconds": mr["direct_alltoallv_seconds"],
                      "mpi_over_direct_alltoallv": mr["alltoallv_seconds"] / mr["direct_alltoallv_seconds"]})
        rows.append(r)
        f = lambda key, fmt: format(r[key], fmt) if r.get(key) is not None else "n/a"
        print(f"{p:>2} {row['bytes'] / 2**20:>5.0f} {f('grpc_allreduce_seconds', '12.5f')} "
              f"{f('gloo_allreduce_seconds', '12.5f')} {f('grpc_over_gloo_allreduce', '9.2f')}x "
              f"{f('mpi_allreduce_seconds', '11.5f')} {f('mpi_over_direct_allreduce', '9.2f')}x "
              f"{f('grpc_alltoallv_seconds', '11.5f')} {f('gloo_alltoallv_seconds', '11.5f')} "
              f"{f('mpi_alltoallv_seconds', '10.5f')} {f('mpi_over_direct_alltoallv', '9.2f')}x")
epochs = []
for p in parts:
    for backend in ("grpc", "mpi"):
        s = load(f"epoch_{backend}{p}.json")
        if s:
            epochs.append({"world": int(p), "backend": backend, "epoch_seconds_median": s["epoch_seconds_median"],
                           "test_accuracy": s["test_accuracy"], "bytes_total": s.get("bytes_total")})
            print(f"GCN epoch, P = {p}, {backend}: {s['epoch_seconds_median']:.3f} s (test accuracy {s['test_accuracy']:.4f})")
json.dump({"collectives": rows, "epochs": epochs, "triad_bytes_per_second": load(f"grpc{parts[0]}.json")["triad_bytes_per_second"]},
          open(out, "w"), indent=1)
print(f"written to {out}")
PY
