#!/usr/bin/env bash
# Installs FlexGraph's build dependencies from Debian packages; skips what is already installed.
set -euo pipefail
# python3 reads the GPU check's reports (scripts/gpu_check_report.py; ctest's gpu_check_self_test).
# python3-dev, pybind11-dev: the Python package's extension module (FLEXGRAPH_PYTHON; pip install . takes pybind11 from pip).
# openssh-server: scripts/netns_cluster.sh runs an sshd per network namespace (the netns cluster tests).
pkgs=(build-essential cmake libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libmetis-dev
      libabsl-dev libopenblas-dev libgtest-dev libgmock-dev libbenchmark-dev pkg-config ninja-build ccache
      zlib1g-dev libssl-dev iproute2 procps libopenmpi-dev openmpi-bin openssl python3 python3-dev pybind11-dev openssh-server)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
