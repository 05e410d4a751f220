#!/usr/bin/env bash
# Epoch time and bytes over real links against the in-process link model. For an RMAT graph and P
# workers it runs GCN (a) over a cluster of network namespaces (scripts/netns_cluster.sh: workers
# started over ssh, each host's link shaped by tbf to RATE in each direction), and (b) as local
# processes on loopback with the in-process model FG_LINK_BYTES_PER_SECOND (a per-peer rate limit
# inside the gRPC communicator) at the same rate, and (c) on loopback unshaped, and reports the
# median epoch time, the bytes the workers counted as sent (per epoch and over the run) and, on the
# namespace links, the bytes tc saw leave the hosts over the run. Needs root.
#
#   bench/distributed/netns.sh [--scale 14] [--parts 4] [--epochs 5] [--rates "1gbit 10gbit"]
#                              [--build build/release]
#
# tbf limits a host's whole link; the in-process model limits each peer separately (a worker with
# P-1 peers may send up to P-1 times the rate), so on an exchange-bound epoch the model is the
# optimistic one.
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=14; parts=4; epochs=5; rates="1gbit 10gbit"; build=build/release
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2;;
    --parts) parts=$2; shift 2;;
    --epochs) epochs=$2; shift 2;;
    --rates) rates=$2; shift 2;;
    --build) build=$2; shift 2;;
    *) echo "netns.sh: unknown argument $1" >&2; exit 2;;
  esac
done
fg=$(realpath "$build/runtime/flexgraph")
out=$(realpath -m bench/results/distributed)
mkdir -p "$out"
work=$(mktemp -d /tmp/fg_netns_bench.XXXXXX)
export FG_NETNS_DIR=$work/cluster
cleanup() { scripts/netns_cluster.sh down >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$fg" generate "rmat:scale=$scale,edge_factor=16,features=128,classes=8" --out "$work/rmat" --threads 1 >/dev/null
train=(-- train --dataset "$work/rmat" --model gcn --hidden 256 --epochs "$epochs" --threads 1 --quiet)
csv=$out/netns_scale${scale}_p${parts}.csv
echo "link,rate,epoch_seconds_median,bytes_sent_per_epoch,bytes_total,wire_bytes_sent_by_hosts" >"$csv"
report() {  # json link rate [wire bytes]
  python3 - "$@" >>"$csv" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = s["workers"]
kinds = ("features", "partials", "gradients", "allreduce", "control")
per_epoch = sum(x.get(f"bytes_{k}_per_epoch", 0) for x in w for k in kinds)
wire = sys.argv[4] if len(sys.argv) > 4 else ""
print(",".join(str(v) for v in [sys.argv[2], sys.argv[3], round(s["epoch_seconds_median"], 4), per_epoch, s.get("bytes_total", ""), wire]))
PY
}
"$fg" launch --quiet --workers "$parts" --log_dir "$work/logs-loopback" "${train[@]}" \
  --summary_json "$work/loopback.json" >/dev/null 2>&1
report "$work/loopback.json" loopback none
for rate in $rates; do
  case "$rate" in
    *gbit) bps=$(( ${rate%gbit} * 125000000 ));;
    *mbit) bps=$(( ${rate%mbit} * 125000 ));;
    *) echo "netns.sh: --rates takes gbit or mbit rates, got $rate" >&2; exit 2;;
  esac
  FG_LINK_BYTES_PER_SECOND=$bps "$fg" launch --quiet --workers "$parts" --log_dir "$work/logs-model-$rate" \
    "${train[@]}" --summary_json "$work/model-$rate.json" >/dev/null 2>&1
  report "$work/model-$rate.json" "in-process model (per peer)" "$rate"
  scripts/netns_cluster.sh up "$parts" "$work/hosts" --rate "$rate" >/dev/null
  "$fg" launch --quiet --workers "$parts" --hosts "$work/hosts" --ssh "ssh -F $FG_NETNS_DIR/ssh_config" \
    --coordinator_host 10.77.0.254 --log_dir "$work/logs-netns-$rate" "${train[@]}" \
    --summary_json "$work/netns-$rate.json" >/dev/null 2>&1
  # What left the hosts on their links over the whole run (ssh, gRPC and TCP/IP framing included).
  wire=0
  for i in $(seq 0 $((parts - 1))); do
    wire=$((wire + $(ip netns exec "fgns$i" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}')))
  done
  report "$work/netns-$rate.json" "netns tbf (per host)" "$rate" "$wire"
  scripts/netns_cluster.sh down >/dev/null
done
column -s, -t <"$csv"
echo "written: $csv"
