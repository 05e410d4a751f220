#!/usr/bin/env python3
"""bench/harness/floor.py is a roofline: each kernel costs the larger of its memory and compute
times (never their sum), a stage the sum over its kernels, and of two measurements of the ceilings
the higher is kept.

    floor_test.py SOURCE_DIR
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "bench", "harness"))
import floor  # noqa: E402

C = {"triad_bytes_per_s": 40e9, "gemm_flops_per_s": 160e9, "llc_bytes": 32 << 20}
failures = []


def check(what, got, want):
    if not math.isclose(got, want, rel_tol=1e-12, abs_tol=0.0):
        failures.append(f"{what}: got {got!r}, want {want!r}")


# A balanced kernel: 40 GB at 40 GB/s and 160 GFLOP at 160 GFLOP/s take one second, not two.
check("balanced kernel", floor.kernel_seconds(40e9, 160e9, C), 1.0)
check("memory-bound kernel", floor.kernel_seconds(80e9, 160e9, C), 2.0)
check("compute-bound kernel", floor.kernel_seconds(40e9, 480e9, C), 3.0)

# A GEMM [m, k] x [k, n]: 2mkn flops against 4(mk + kn + mn) bytes; a stage sums its kernels.
e = floor.Epoch(C)
m, k, n = 65536, 256, 256
e.gemm("update", m, k, n)
gemm_s = max(4.0 * (m * k + k * n + m * n) / 40e9, 2.0 * m * k * n / 160e9)
check("one GEMM", e.seconds("update"), gemm_s)
e.gemm("update", m, k, n)
check("two GEMMs in a stage", e.seconds("update"), 2 * gemm_s)
check("flops per stage", e.flops["update"], 2 * 2.0 * m * k * n)
e.add_bytes("optimizer", 28e9)
check("a memory-only kernel", e.seconds("optimizer"), 28e9 / 40e9)
check("total", e.total(), 2 * gemm_s + 28e9 / 40e9)
# An SpMM is memory-bound: its 2 flops per entry and column never set its time here.
e.spmm("aggregation", 1 << 20, 1 << 20, 16 << 20, 128, True)
check("SpMM", e.seconds("aggregation"), e.bytes["aggregation"] / 40e9)

# The floor never exceeds the old additive one and is at least half of it.
for stage in floor.STAGES:
    additive = e.bytes[stage] / 40e9 + e.flops[stage] / 160e9
    if not (additive / 2 - 1e-15 <= e.seconds(stage) <= additive + 1e-15):
        failures.append(f"{stage}: roofline {e.seconds(stage)} outside [{additive / 2}, {additive}]")

busy = {"triad_bytes_per_s": 20e9, "gemm_flops_per_s": 170e9, "llc_bytes": 32 << 20}
best = floor.ceilings_max(C, busy)
check("higher bandwidth kept", best["triad_bytes_per_s"], 40e9)
check("higher GEMM peak kept", best["gemm_flops_per_s"], 170e9)

for f in failures:
    print("FAIL:", f)
print(f"floor_test: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
