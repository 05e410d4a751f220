#!/usr/bin/env bash
# A cluster of real hosts on one machine: network namespaces joined by a bridge, each with its own
# address, an sshd and a bandwidth-shaped link, for `flexgraph launch --hosts` and `mpirun`.
#
#   scripts/netns_cluster.sh up N HOSTS_FILE [--rate RATE]   N hosts (1..200); RATE a tc rate (10gbit)
#   scripts/netns_cluster.sh link I up|down                  host I's link (0-based), as a cable pulled
#   scripts/netns_cluster.sh down                            removes everything `up` made; idempotent
#
# Host i is namespace fgns<i> at 10.77.0.<i+1>/24; the bridge fgbr0 holds 10.77.0.254 in the root
# namespace, where the launcher and the coordinator run. Each link (veth fgv<i> <-> the namespace's
# eth0) is shaped with tbf in both directions. Namespaces have no default route: traffic reaches
# only their own loopback and the 10.77.0.0/24 addresses. Each namespace runs its own sshd, listening
# only on its address, with a throwaway host key and a throwaway client key that it alone accepts.
# State lives in $FG_NETNS_DIR (default /tmp/fg-netns): ssh_config (for `ssh -F`), known_hosts,
# keys, sshd configs, pids and logs. HOSTS_FILE lists the addresses one per line ("ADDRESS slots=1":
# `launch --hosts` reads the first word, mpirun's --hostfile the slots), and its comment lines give
# the flags that reach them:
#   flexgraph launch --hosts HOSTS_FILE --ssh "ssh -F $FG_NETNS_DIR/ssh_config" \
#     --coordinator_host 10.77.0.254 --workers N -- train ...
#   mpirun --allow-run-as-root -np N --hostfile HOSTS_FILE --mca plm_rsh_agent "ssh -F ..." \
#     --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
#     flexgraph worker --comm mpi -- train ...
# Needs root, iproute2 (ip, tc) and openssh-server (scripts/install_deps.sh).
set -euo pipefail

readonly DIR="${FG_NETNS_DIR:-/tmp/fg-netns}"
readonly NET=10.77.0
readonly BRIDGE=fgbr0
readonly BRIDGE_IP="$NET.254"
readonly PREFIX=fgns

die() {
  echo "netns_cluster: $*" >&2
  exit 1
}

# Namespaces this script made: those named $PREFIX<digits>.
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+$" || true
}

# Stops every process inside namespace $1 (sshd and whatever its sessions started), then removes it.
remove_namespace() {
  local ns="$1" pids
  pids="$(ip netns pids "$ns" 2>/dev/null || true)"
  if [ -n "$pids" ]; then
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 50); do
      pids="$(ip netns pids "$ns" 2>/dev/null || true)"
      [ -z "$pids" ] && break
      sleep 0.1
    done
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
  fi
  ip netns del "$ns" 2>/dev/null || true
}

down() {
  local ns link
  for ns in $(our_namespaces); do remove_namespace "$ns"; done
  # sshd processes recorded by `up` (they live in namespaces already removed; a leftover is killed).
  if [ -d "$DIR" ]; then
    for f in "$DIR"/sshd.*.pid; do
      [ -e "$f" ] || continue
      kill -KILL "$(cat "$f")" 2>/dev/null || true
    done
  fi
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^fgv[0-9]+$' || true); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$DIR"
}

# Rate in bits per second from a tc rate (10gbit, 1gbit, 500mbit, ...).
rate_bits() {
  local r="${1,,}" n unit
  n="${r%%[a-z]*}"
  unit="${r#"$n"}"
  [[ "$n" =~ ^[0-9]+$ ]] || die "--rate $1: expected a number and a unit (e.g. 10gbit)"
  case "$unit" in
    gbit) echo $((n * 1000000000)) ;;
    mbit) echo $((n * 1000000)) ;;
    kbit) echo $((n * 1000)) ;;
    bit | "") echo "$n" ;;
    *) die "--rate $1: unit must be gbit, mbit, kbit or bit" ;;
  esac
}

# tbf on device $2 (in namespace $1, "" = root): rate $3, a burst of 10 ms at that rate (at least
# 256 KiB: veths hand over 64 KiB segments).
shape() {
  local ns="$1" dev="$2" rate="$3" burst
  burst=$(($(rate_bits "$rate") / 8 / 100))
  [ "$burst" -lt 262144 ] && burst=262144
  if [ -n "$ns" ]; then
    ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms
  else
    tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms
  fi
}

up() {
  local n="${1:-}" hosts_file="${2:-}" rate=10gbit
  shift 2 || true
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) rate="${2:?--rate needs a value}"; shift 2 ;;
      *) die "up: unknown argument $1" ;;
    esac
  done
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up: N must lie in [1, 200], got '$n'"
  [ -n "$hosts_file" ] || die "up: HOSTS_FILE is missing (usage: up N HOSTS_FILE [--rate RATE])"
  rate_bits "$rate" >/dev/null
  [ "$(id -u)" -eq 0 ] || die "up: needs root (network namespaces, a bridge and sshd), running as uid $(id -u)"
  command -v ip >/dev/null && command -v tc >/dev/null || die "up: ip and tc (iproute2) are missing"
  [ -x /usr/sbin/sshd ] || die "up: /usr/sbin/sshd is missing (openssh-server; scripts/install_deps.sh)"
  command -v ssh-keygen >/dev/null || die "up: ssh-keygen is missing (openssh-client)"
  if [ -n "$(our_namespaces)" ] || ip link show "$BRIDGE" >/dev/null 2>&1 || [ -e "$DIR" ]; then
    die "up: a cluster is up already (namespaces ${PREFIX}*, bridge $BRIDGE or $DIR): run '$0 down' first"
  fi
  trap 'echo "netns_cluster: up failed; removing what it made" >&2; down' EXIT
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  ip netns add "${PREFIX}probe" 2>"$DIR/probe.err" ||
    die "up: cannot create a network namespace: $(cat "$DIR/probe.err")"
  ip netns del "${PREFIX}probe"
  ssh-keygen -q -t ed25519 -N '' -C fg-netns-host -f "$DIR/host_key"
  ssh-keygen -q -t ed25519 -N '' -C fg-netns-client -f "$DIR/id_ed25519"
  cp "$DIR/id_ed25519.pub" "$DIR/authorized_keys"
  mkdir -p /run/sshd  # sshd's privilege-separation directory
  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local addrs=() i ns ip_addr
  for i in $(seq 0 $((n - 1))); do
    ns="$PREFIX$i"
    ip_addr="$NET.$((i + 1))"
    addrs+=("$ip_addr")
    ip netns add "$ns"
    ip link add "fgv$i" type veth peer name "fgp$i"
    ip link set "fgp$i" netns "$ns"
    ip netns exec "$ns" ip link set "fgp$i" name eth0
    ip netns exec "$ns" ip addr add "$ip_addr/24" dev eth0
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set eth0 up
    ip link set "fgv$i" master "$BRIDGE"
    ip link set "fgv$i" up
    shape "$ns" eth0 "$rate"
    shape "" "fgv$i" "$rate"
    cat >"$DIR/sshd.$i.conf" <<EOF
ListenAddress $ip_addr:22
HostKey $DIR/host_key
AuthorizedKeysFile $DIR/authorized_keys
PidFile none
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxStartups 200
MaxSessions 200
LogLevel ERROR
EOF
    # -D: sshd stays in the foreground of its own session, so its pid is known.
    setsid ip netns exec "$ns" /usr/sbin/sshd -D -f "$DIR/sshd.$i.conf" -E "$DIR/sshd.$i.log" \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$DIR/sshd.$i.pid"
  done
  {
    echo "Host ${NET}.*"
    echo "  User root"
    echo "  IdentityFile $DIR/id_ed25519"
    echo "  IdentitiesOnly yes"
    echo "  UserKnownHostsFile $DIR/known_hosts"
    echo "  GlobalKnownHostsFile /dev/null"
    echo "  StrictHostKeyChecking yes"
    echo "  ConnectTimeout 5"
    echo "  ServerAliveInterval 2"
    echo "  ServerAliveCountMax 3"
    echo "  LogLevel ERROR"
  } >"$DIR/ssh_config"
  echo "$(IFS=,; echo "${addrs[*]}") $(cut -d' ' -f1-2 "$DIR/host_key.pub")" >"$DIR/known_hosts"
  # Every sshd answers before `up` returns.
  for i in $(seq 0 $((n - 1))); do
    local ok=0
    for _ in $(seq 1 100); do
      if ssh -F "$DIR/ssh_config" -o BatchMode=yes "${addrs[$i]}" true 2>"$DIR/ssh.err"; then
        ok=1
        break
      fi
      sleep 0.1
    done
    [ "$ok" -eq 1 ] || die "up: the sshd of host $i (${addrs[$i]}, namespace $PREFIX$i) does not answer: $(cat "$DIR/ssh.err"); log: $(cat "$DIR/sshd.$i.log" 2>/dev/null)"
  done
  {
    echo "# $n hosts in network namespaces ${PREFIX}0..${PREFIX}$((n - 1)) (scripts/netns_cluster.sh), links at $rate"
    echo "# flexgraph launch --hosts $hosts_file --ssh \"ssh -F $DIR/ssh_config\" --coordinator_host $BRIDGE_IP --workers $n -- train ..."
    echo "# mpirun --allow-run-as-root -np $n --hostfile $hosts_file --mca plm_rsh_agent \"ssh -F $DIR/ssh_config\" --mca btl tcp,self --mca btl_tcp_if_include $NET.0/24 --mca oob_tcp_if_include $NET.0/24 flexgraph worker --comm mpi -- train ..."
    printf '%s slots=1\n' "${addrs[@]}"
  } >"$hosts_file"
  trap - EXIT
  echo "netns_cluster: $n hosts up (${addrs[0]}..${addrs[$((n - 1))]}, links at $rate); hosts in $hosts_file; ssh -F $DIR/ssh_config"
}

link() {
  local i="${1:-}" state="${2:-}"
  [[ "$i" =~ ^[0-9]+$ ]] || die "link: host index expected, got '$i'"
  [ "$state" = up ] || [ "$state" = down ] || die "link: up or down expected, got '$state'"
  ip link show "fgv$i" >/dev/null 2>&1 || die "link: host $i has no link (fgv$i): is the cluster up?"
  ip link set "fgv$i" "$state"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  link) shift; link "$@" ;;
  *) die "usage: $0 up N HOSTS_FILE [--rate RATE] | link I up|down | down" ;;
esac
