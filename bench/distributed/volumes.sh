#!/usr/bin/env bash
# Bytes per worker and epoch of every training scheme at P = 4 ... 64, from the performance model
# (`flexgraph plan`, runtime/plan): 1D under a hash partition (its exact cut) and the
# sparsity-oblivious 1D all-gather; 1.5D, 2D and 3D (CAGNET), aware and oblivious, from expected
# block counts. The model's byte counts equal the bytes in-process workers count, exactly, for 1D
# (tests/runtime/plan/plan_traffic_test.cc) and for the grid products (tests/runtime/grid/).
# Checks the issue's target: at the largest P, the better of 2D and 3D moves at most half the bytes
# of oblivious 1D on the power-law graph.
#
#   bench/distributed/volumes.sh [--scale 20] [--parts "4 8 16 32 64"] [--build build/release]
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=20; parts="4 8 16 32 64"; build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --build) build=$2; shift 2;;
    *) echo "volumes: unknown argument $1" >&2; exit 2;;
  esac
done
fg=$build/runtime/flexgraph
[ -x "$fg" ] || { echo "volumes: no flexgraph binary at $fg" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fg_volumes.XXXXXX")
trap 'rm -rf "$work"' EXIT
nodes=$((1 << scale))
declare -A graphs=(
  [rmat]="rmat:scale=$scale,edge_factor=16,features=128,classes=8,seed=1"
  [sbm]="sbm:nodes=$nodes,classes=8,features=128,avg_degree=32,seed=1"
)
for g in rmat sbm; do
  for p in $parts; do
    echo "[volumes] $g P=$p" >&2
    "$fg" plan --dataset "${graphs[$g]}" --model gcn --hidden 256 --workers "$p" --partitions hash \
      --summary_json "$work/$g-$p.json" > "$work/$g-$p.txt" 2> "$work/$g-$p.err" ||
      { cat "$work/$g-$p.err" >&2; exit 1; }
  done
done
python3 - "$work" "$parts" <<'PY'
import json, sys
work, parts = sys.argv[1], [int(p) for p in sys.argv[2].split()]
def mb(x): return "—" if x != x else f"{x / 1e6:.2f}"
ok = True
for g in ("rmat", "sbm"):
    print(f"\n{g}: MB received per worker per epoch (busiest worker), GCN hidden 256, 2 layers")
    print("| P | 1D oblivious | 1D partial/hash | best 1.5D | 2D oblivious | 2D aware | 3D oblivious | 3D aware | chosen |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for p in parts:
        d = json.load(open(f"{work}/{g}-{p}.json"))
        s = {x["name"]: x["bytes_received_max"] for x in d["strategies"]}
        pick = lambda pre, suf="": min((v for k, v in s.items() if k.startswith(pre) and k.endswith(suf)), default=float("nan"))
        one_d = s["1d-oblivious"]
        row = [one_d, s.get("1d-partial/hash", float("nan")), pick("1.5d"), pick("2d", "oblivious"),
               pick("2d", "aware"), pick("3d", "oblivious"), pick("3d", "aware")]
        best = d["best"] or "none fits"
        print(f"| {p} | " + " | ".join(mb(x) for x in row) + f" | {best} |")
        if g == "rmat" and p == max(parts):
            grid = min(row[3:])
            ratio = grid / one_d
            verdict = "met" if ratio <= 0.5 else "NOT met"
            print(f"\ntarget (P={p}, rmat, hash): best 2D/3D {mb(grid)} MB / oblivious 1D {mb(one_d)} MB = {ratio:.3f} (<= 0.5: {verdict})")
            ok = ok and ratio <= 0.5
sys.exit(0 if ok else 1)
PY
