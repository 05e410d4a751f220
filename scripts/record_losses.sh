#!/usr/bin/env bash
# Records the per-epoch losses and final metrics of the reference workloads (Cora GCN, SAGE, GIN
# and PinSage; LastFM link prediction; IMDB MAGNN; two worker processes; a partitioned dataset),
# one line per workload, at full precision. A change that must not alter results (a refactoring, a
# move of files) leaves the output byte-identical:
#
#   scripts/record_losses.sh build/release/runtime/flexgraph > before.txt   # on the old commit
#   scripts/record_losses.sh build/release/runtime/flexgraph > after.txt
#   diff before.txt after.txt
#
# Needs ../shared/data (or FG_DATA). EPOCHS (default 10) sets the epochs of every workload.
set -euo pipefail
bin=$(realpath "${1:?usage: record_losses.sh FLEXGRAPH_BINARY}")
data=$(realpath "${FG_DATA:-$(dirname "$0")/../../shared/data}")
epochs=${EPOCHS:-10}
tmp=$(mktemp -d /tmp/flexgraph-losses-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# line NAME SUMMARY: the workload's losses and metrics from its summary JSON.
line() {
  python3 - "$1" "$2" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
s = json.load(open(path))
if not s.get("losses"):
    sys.exit(f"record_losses: {name}: no losses in {path}")
keys = sorted(k for k in s if k.startswith(("test_", "valid_")) and isinstance(s[k], (int, float)))
print(name, "losses", " ".join(repr(float(x)) for x in s["losses"]),
      "|", " ".join(f"{k}={s[k]!r}" for k in keys))
PY
}
run() {  # run NAME ARGS...: a train run (or a launch, when ARGS start with `launch`)
  local name=$1
  shift
  if [ "$1" = launch ]; then
    "$bin" "$@" --summary_json "$tmp/$name.json" --quiet > "$tmp/$name.log" 2>&1 ||
      { cat "$tmp/$name.log" >&2; echo "record_losses: $name failed" >&2; exit 1; }
  else
    "$bin" train "$@" --epochs "$epochs" --seed 7 --summary_json "$tmp/$name.json" --quiet > "$tmp/$name.log" 2>&1 ||
      { cat "$tmp/$name.log" >&2; echo "record_losses: $name failed" >&2; exit 1; }
  fi
  line "$name" "$tmp/$name.json"
}
run cora_gcn --dataset "$data/cora" --model gcn
run cora_sage --dataset "$data/cora" --model sage
run cora_gin --dataset "$data/cora" --model gin
run cora_pinsage --dataset "$data/cora" --model pinsage
run lastfm_pinsage --dataset "$data/lastfm" --model pinsage
run imdb_magnn --dataset "$data/imdb" --model magnn
run cora_gcn_2workers launch --workers 2 -- train --dataset "$data/cora" --model gcn --epochs "$epochs" --seed 7
"$bin" partition --dataset "$data/cora" --model gcn --parts 2 --method metis --out "$tmp/cora_parts" > /dev/null 2>&1 ||
  { echo "record_losses: partition failed" >&2; exit 1; }
run cora_gcn_parts launch --workers 2 -- train --dataset "$tmp/cora_parts" --model gcn --epochs "$epochs" --seed 7
