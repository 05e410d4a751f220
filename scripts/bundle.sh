#!/usr/bin/env bash
# Makes a relocatable FlexGraph bundle for machines that have an NVIDIA driver and the CUDA runtime
# but none of the Debian libraries FlexGraph links: the `flexgraph` binary and the GPU test
# executables, stripped, with every non-system shared library they load beside them (rpath
# $ORIGIN/../lib, then the CUDA toolkit's lib64), packed as flexgraph.tar.xz, plus copies of the
# shared datasets the GPU checks read, and the PyG sampler wheels of bench/baselines/gpu_pyg_wheels.sh
# where they were built (FLEXGRAPH_GPU_WHEELS, default build/gpu_wheels). CUDA's own libraries
# (cudart, cuBLAS, cuSPARSE, NCCL) and glibc come from the target machine.
#
#   scripts/bundle.sh [BUILD_DIR] [OUT_DIR]     # defaults: build/release gpu_bundle
#   then, on the GPU machine: scripts/gpu_check.sh OUT_DIR   (see that script)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=${2:-gpu_bundle}
data=${FLEXGRAPH_SHARED_DATA:-../shared/data}
targets=(flexgraph minibatch_bench cuda_device_ops_test cuda_device_alloc_test cuda_shared_kernels_test core_instance_ops_test
         runtime_device_training_test
         runtime_nccl_test sampling_test)

if ! command -v patchelf > /dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq patchelf
fi
grep -q "FLEXGRAPH_HAVE_CUDA" "$build/build.ninja" || {
  echo "bundle: $build is not a CUDA build (configure with the release preset where nvcc exists)" >&2
  exit 1
}
cmake --build "$build" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/flexgraph/bin" "$stage/flexgraph/lib"
for t in "${targets[@]}"; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "bundle: $t not built in $build" >&2; exit 1; }
  cp "$f" "$stage/flexgraph/bin/"
done
# Libraries the target machine provides: glibc, the dynamic loader, the driver and CUDA's own.
system='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread|libdl\.|librt\.|libcuda\.|libcudart|libcublas|libcusparse|libnccl|libnvJitLink)'
for bin in "$stage"/flexgraph/bin/*; do
  ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if ! [[ "$name" =~ $system ]] && [ ! -e "$stage/flexgraph/lib/$name" ]; then
      cp -L "$path" "$stage/flexgraph/lib/$name"
    fi
  done
done
strip --strip-unneeded "$stage"/flexgraph/bin/* "$stage"/flexgraph/lib/* 2> /dev/null || true
for bin in "$stage"/flexgraph/bin/*; do
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib:/usr/local/cuda/lib64' "$bin"
done
for lib in "$stage"/flexgraph/lib/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done

rm -rf "$out"
mkdir -p "$out/data"
tar -C "$stage" -cJf "$out/flexgraph.tar.xz" flexgraph
for d in cora imdb lastfm; do
  [ -d "$data/$d" ] && cp -r "$data/$d" "$out/data/"
done
# PyG's sampler for the GPU machine's torch (bench/baselines/gpu_pyg_wheels.sh), where built.
wheels=${FLEXGRAPH_GPU_WHEELS:-$build/../gpu_wheels}
if compgen -G "$wheels/*.whl" > /dev/null; then
  mkdir -p "$out/wheels"
  cp "$wheels"/*.whl "$out/wheels/"
fi
# The commit the binaries come from (scripts/gpu_check.sh records it), and a second line when the
# tree they were built from differed from it.
if head=$(git rev-parse HEAD 2> /dev/null); then
  echo "$head" > "$out/COMMIT"
  git diff --quiet HEAD -- || echo "with uncommitted changes" >> "$out/COMMIT"
fi
# The bundle travels as an ignored folder (the device tool's `carry`), never as a commit.
if gitdir=$(git rev-parse --git-dir 2> /dev/null); then
  mkdir -p "$gitdir/info"
  grep -qxF "/$out/" "$gitdir/info/exclude" 2> /dev/null || echo "/$out/" >> "$gitdir/info/exclude"
fi
unpacked=$(du -sm "$stage/flexgraph" | cut -f1)
echo "bundle: $out/flexgraph.tar.xz ($(du -h "$out/flexgraph.tar.xz" | cut -f1), ${unpacked} MiB unpacked," \
     "$(ls "$stage/flexgraph/lib" | wc -l) libraries), $(ls "$out/data" | wc -l) datasets and" \
     "$(ls "$out/wheels" 2> /dev/null | wc -l) wheels; total $(du -sh "$out" | cut -f1)"
