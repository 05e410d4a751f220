#!/usr/bin/env bash
# Epoch time and bytes over real links against the in-process link model. For an RMAT graph and P
# workers it runs GCN (a) over a cluster of network namespaces (scripts/netns_cluster.sh: workers
# started over ssh, each host's link shaped by tbf to RATE in each direction), and (b) as local
# processes on loopback with the in-process model FG_LINK_BYTES_PER_SECOND (a per-peer rate limit
# inside the gRPC communicator) at the same rate, and (c) on loopback unshaped, and reports the
# median epoch time, the bytes the workers counted as sent (per epoch and over the run) and, on the
# namespace links, the bytes tc saw leave the hosts over the run, and beside each the performance
# model's epoch time (`flexgraph plan --explain` for the run's partition). The model's inputs are
# measured here first, never fitted to the runs: its compute rates by bench/machine_ceilings on all
# cores, shared by the P workers (--workers_per_device P); its link per P by collectives_bench's
# all-to-all-v between P processes on loopback at 1 and 8 MiB (bandwidth from the slope, latency per
# message from the intercept: what gRPC's own CPU costs on this machine), the bandwidth capped at
# the shaped rate. Needs root.
#
#   bench/distributed/netns.sh [--scale 14] [--parts "2 4 8"] [--epochs 5] [--rates "1gbit 10gbit"]
#                              [--build build/release]
#
# tbf limits a host's whole link; the in-process model limits each peer separately (a worker with
# P-1 peers may send up to P-1 times the rate), so on an exchange-bound epoch the model is the
# optimistic one.
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=14; parts="4"; epochs=5; rates="1gbit 10gbit"; build=build/release
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
ceilings=$work/ceilings.json
"$build/bench/machine_ceilings" --threads "$(nproc)" >"$ceilings"
declare -A link_gbps link_us
calibrate_link() {  # P: loopback all-to-all-v between P processes -> link_gbps[P], link_us[P]
  local p=$1 r
  rm -rf "$work/rdv$p" && mkdir -p "$work/rdv$p"
  for ((r = 1; r < p; ++r)); do
    "$build/bench/collectives_bench" --backend grpc --world "$p" --rank "$r" --rendezvous "$work/rdv$p" \
      --sizes_mib 1,8 --iters 10 >/dev/null 2>&1 &
  done
  "$build/bench/collectives_bench" --backend grpc --world "$p" --rank 0 --rendezvous "$work/rdv$p" --sizes_mib 1,8 \
    --iters 10 --summary_json "$work/link$p.json" >"$work/link$p.out" 2>&1 ||
    { echo "netns.sh: collectives_bench at P = $p failed:" >&2; tail -5 "$work/link$p.out" >&2; exit 1; }
  wait
  read -r link_gbps[$p] link_us[$p] < <(python3 - "$work/link$p.json" "$p" <<'PY'
import json, sys
rows, p = json.load(open(sys.argv[1]))["sizes"], int(sys.argv[2])
(b1, t1), (b2, t2) = [(r["bytes"] * (p - 1) / p, r["alltoallv_seconds"]) for r in rows]  # bytes each worker sends
slope = (t2 - t1) / (b2 - b1)
print(8 / slope / 1e9, max(0.0, (t1 - slope * b1) / (p - 1)) * 1e6)  # Gbit/s; us per message
PY
)
}
train=(-- train --dataset "$work/rmat" --model gcn --hidden 256 --epochs "$epochs" --threads 1 --quiet)
csv=$out/netns_scale${scale}_p${parts// /-}.csv
echo "workers,link,rate,epoch_seconds_median,bytes_sent_per_epoch,bytes_total,wire_bytes_sent_by_hosts,model_bandwidth_gbps,model_latency_us,model_epoch_seconds,model_compute_seconds,model_link_seconds,measured_over_model" >"$csv"
report() {  # json workers link rate [wire bytes]
  # The model at the loopback link measured for P, capped at the shaped rate (tbf limits a host's
  # whole link).
  local gbps=${link_gbps[$2]} model
  [ "$4" != none ] && gbps=$(awk "BEGIN { r = $(rate_bps "$4") * 8 / 1e9; print (r < $gbps ? r : $gbps) }")
  model=$("$fg" plan --dataset "$work/rmat" --model gcn --hidden 256 --workers "$2" --partitions metis --seed 0 \
    --ceilings_json "$ceilings" --workers_per_device "$2" --bandwidth_gbps "$gbps" --latency_us "${link_us[$2]}" \
    --explain "$1" 2>/dev/null |
    sed -n 's/.*predicted \([0-9.e+-]*\) (compute \([0-9.e+-]*\), link \([0-9.e+-]*\)), measured [0-9.e+-]* (\([0-9.]*\)x).*/\1,\2,\3,\4/p')
  model="$gbps,${link_us[$2]},$model"
  python3 - "$@" "$model" >>"$csv" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = s["workers"]
kinds = ("features", "partials", "gradients", "allreduce", "control")
per_epoch = sum(x.get(f"bytes_{k}_per_epoch", 0) for x in w for k in kinds)
wire = sys.argv[5] if len(sys.argv) > 6 else ""
print(",".join(str(v) for v in [sys.argv[2], sys.argv[3], sys.argv[4], round(s["epoch_seconds_median"], 4), per_epoch,
                                s.get("bytes_total", ""), wire, sys.argv[-1]]))
PY
}
launch() {  # name, then launch's flags: a failed run is reported with its output and skipped
  local name=$1
  shift
  if ! "$fg" launch --quiet "$@" --summary_json "$work/$name.json" >"$work/$name.out" 2>&1; then
    echo "netns.sh: run $name failed:" >&2
    tail -20 "$work/$name.out" >&2
    return 1
  fi
}
rate_bps() {
  case "$1" in
    *gbit) echo $(( ${1%gbit} * 125000000 ));;
    *mbit) echo $(( ${1%mbit} * 125000 ));;
    *) echo "netns.sh: --rates takes gbit or mbit rates, got $1" >&2; exit 2;;
  esac
}
for p in $parts; do
  calibrate_link "$p"
  launch "loopback-$p" --workers "$p" --log_dir "$work/logs-loopback-$p" "${train[@]}" &&
    report "$work/loopback-$p.json" "$p" loopback none
  for rate in $rates; do
    bps=$(rate_bps "$rate")
    FG_LINK_BYTES_PER_SECOND=$bps launch "model-$rate-$p" --workers "$p" --log_dir "$work/logs-model-$rate-$p" \
      "${train[@]}" && report "$work/model-$rate-$p.json" "$p" "in-process model (per peer)" "$rate"
    scripts/netns_cluster.sh up "$p" "$work/hosts" --rate "$rate" >/dev/null
    if launch "netns-$rate-$p" --workers "$p" --hosts "$work/hosts" --ssh "ssh -F $FG_NETNS_DIR/ssh_config" \
      --coordinator_host 10.77.0.254 --log_dir "$work/logs-netns-$rate-$p" "${train[@]}"; then
      # What left the hosts on their links over the whole run (ssh, gRPC and TCP/IP framing included).
      wire=0
      for i in $(seq 0 $((p - 1))); do
        wire=$((wire + $(ip netns exec "fgns$i" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}')))
      done
      report "$work/netns-$rate-$p.json" "$p" "netns tbf (per host)" "$rate" "$wire"
    fi
    scripts/netns_cluster.sh down >/dev/null
  done
done
column -s, -t <"$csv"
echo "written: $csv"
