#!/usr/bin/env bash
# Builds the libFuzzer targets (one per parser: datasets, run configurations, checkpoints, workers' messages) with clang in build/fuzz and runs each for
# a short while (FUZZ_SECONDS, default 20) on a copy of its seed corpus in tests/fuzz/corpus.
# Installs clang, its runtimes and libomp when missing (idempotent). Exits non-zero when a target
# crashes, leaks or trips a sanitizer; the reproducer is left in build/fuzz/artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
targets=(fuzz_csv fuzz_edge_list fuzz_npy fuzz_cache fuzz_gzip fuzz_trackml_csv fuzz_config fuzz_flags fuzz_checkpoint fuzz_partition_meta fuzz_saved_model
         fuzz_sampling_messages fuzz_grid_messages)

pkgs=(clang libclang-rt-dev libomp-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "run_fuzz: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DFLEXGRAPH_FUZZ=ON -DFLEXGRAPH_CUDA=OFF -DFLEXGRAPH_BUILD_TESTS=OFF \
  -DFLEXGRAPH_BUILD_BENCH=OFF > build/fuzz.configure.log 2>&1 || { cat build/fuzz.configure.log; exit 1; }
cmake --build build/fuzz --target "${targets[@]}"

mkdir -p build/fuzz/artifacts
status=0
for t in "${targets[@]}"; do
  corpus=tests/fuzz/corpus/${t#fuzz_}
  work=$(mktemp -d)
  echo "run_fuzz: $t for ${seconds}s (seeds: $corpus)"
  if ! OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 ./build/fuzz/tests/fuzz/"$t" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix=build/fuzz/artifacts/"$t"- "$work" "$corpus" > build/fuzz/"$t".log 2>&1; then
    echo "run_fuzz: $t FAILED"; tail -40 build/fuzz/"$t".log; status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build/fuzz/"$t".log | tr '\n' ' '; echo
  fi
  rm -rf "$work"
done
exit $status
