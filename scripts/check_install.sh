#!/usr/bin/env bash
# Installs FlexGraph from a build directory into a temporary prefix, builds the out-of-tree model
# in udf_examples/external_model against it with find_package(flexgraph), and trains it through
# the installed binary with --udf_library.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
prefix=$(mktemp -d /tmp/flexgraph-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
cmake -S udf_examples/external_model -B "$prefix/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$prefix/build" > /dev/null
"$prefix/bin/flexgraph" train --udf_library "$prefix/build/libsgc_model.so" --model sgc \
  --dataset sbm:nodes=2000,classes=4,features=16 --epochs 20 --quiet
echo "check_install: installed package builds and runs an out-of-tree model"
