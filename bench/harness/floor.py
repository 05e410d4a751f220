"""The floor of one training epoch, per stage: the time the kernels of an ideal implementation
cannot go below on this machine.

Ceilings are measured where the harness runs (`machine_ceilings`: STREAM triad bandwidth, GEMM
peak of a direct BLAS call, last-level cache size), before and after the runs, keeping the higher
of each (a ceiling measured while the machine was busy would lower the floor's bar: `ceilings_max`).
Each kernel costs its roofline time,
  max(bytes it must move / triad bandwidth, flops / GEMM peak),
and a stage's floor is the sum over its kernels.
Bytes: a GEMM reads both operands and writes its product once. An SpMM reads its CSR (8 B per
row offset, 4 B per column id, 4 B per weight when weighted), gathers one input row per entry and
writes its output rows. A gathered row costs whole cache lines unless it is resident in the
last-level cache. With the graph's column counts known, the ideal cache holds the most gathered
rows (as many as fit): those are read once, every other gather misses. Without them, gathers hit
in proportion to the cache's size over the input's, and every input row is read at least once.
Backward SpMMs gather with the transpose's column counts, taken as the same (undirected graphs).
A sparse input (under 10% non-zero, where FlexGraph multiplies it as a sparse matrix) costs its
CSR, one gathered weight row per non-zero and the output. Element-wise work (dropout with
counter-based masks, bias, activations, their gradients) is counted as fused into the kernel that
produces or consumes it, so it costs nothing here. When every operand fits in half the last-level
cache the floor does not apply (`cache_resident`): the data never leaves the cache.

Stages are FlexGraph's (`stage_seconds` of its summary): message, aggregation and update are the
forward pass, backward holds every gradient kernel, loss the soft-max over the logits, optimizer
Adam's read of parameter, gradient and both moments and its write of three (28 B per parameter).
"""
import json
import math
import os
import subprocess
import sys

STAGES = ("message", "aggregation", "update", "loss", "backward", "optimizer")


def measure_ceilings(binary, threads):
    """{'triad_bytes_per_s', 'gemm_flops_per_s', 'llc_bytes', 'threads'} from `machine_ceilings`."""
    if not os.access(binary, os.X_OK):
        sys.exit(f"--ceilings {binary}: no such executable (build it: cmake --build build/bench "
                 "--target machine_ceilings, or run bench/run.sh)")
    out = subprocess.run([binary, "--threads", str(threads)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"--ceilings {binary} failed (exit {out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def device_ceilings(device, log=print):
    """The ceilings of a CUDA `device` ("cuda", "cuda:N") measured with torch, as measure_ceilings
    gives a CPU's: a 1 GiB device-to-device copy (bytes read plus written per second), a float32
    8192^3 matrix product without TF32 (FLOP/s), and the L2 cache's size. None where torch cannot
    measure them (`log` says why)."""
    try:
        import torch
        if not device.startswith("cuda"):
            return None
        dev = torch.device(device)
        x = torch.rand(1 << 28, device=dev)
        y = torch.empty_like(x)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def timed(fn, reps):
            for _ in range(3):
                fn()
            torch.cuda.synchronize(dev)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            torch.cuda.synchronize(dev)
            return start.elapsed_time(end) / 1e3 / reps

        copy_s = timed(lambda: y.copy_(x), 20)
        del x, y
        torch.backends.cuda.matmul.allow_tf32 = False
        a = torch.rand(8192, 8192, device=dev)
        b = torch.rand(8192, 8192, device=dev)
        gemm_s = timed(lambda: a @ b, 10)
        del a, b
        torch.cuda.empty_cache()
        return {"triad_bytes_per_s": 2 * 4 * (1 << 28) / copy_s, "gemm_flops_per_s": 2 * 8192 ** 3 / gemm_s,
                "llc_bytes": torch.cuda.get_device_properties(dev).L2_cache_size}
    except Exception as e:  # noqa: BLE001 (without ceilings the floor column stays empty)
        log(f"device ceilings not measured: {e}")
        return None


def gathered_bytes(rows, width, entries, llc_bytes, hot=None):
    """DRAM bytes of `entries` row gathers from a [rows, width] float table. hot[k - 1]: the
    gathers of the k most gathered rows (a cumulative sum over column counts sorted in decreasing
    order, summing to entries), when known."""
    table = 4.0 * rows * width
    if table == 0:
        return 0.0
    line = 64.0 * math.ceil(4.0 * width / 64)
    if hot is not None and len(hot) == rows and rows > 0:
        resident = int(min(rows, llc_bytes // line))
        hits = float(hot[resident - 1]) if resident > 0 else 0.0
        return resident * line + (entries - hits) * line
    resident = min(1.0, llc_bytes / table)
    return max(table, entries * line * (1.0 - resident))


def ceilings_max(a, b):
    """The higher of two measurements of each ceiling (the lower floor)."""
    out = dict(a)
    for key in ("triad_bytes_per_s", "gemm_flops_per_s"):
        out[key] = max(a[key], b[key])
    return out


def kernel_seconds(bytes_moved, flops, ceilings):
    """A kernel's roofline time: the larger of its memory time and its compute time."""
    return max(bytes_moved / ceilings["triad_bytes_per_s"], flops / ceilings["gemm_flops_per_s"])


class Epoch:
    """Accumulates kernels per stage; seconds(stage) is that stage's floor (the sum of its kernels'
    roofline times)."""

    def __init__(self, ceilings, hot=None):
        self.c = ceilings
        self.hot = hot  # {entries: cumulative sorted column counts} of the graph's SpMMs
        self.kernels = []  # (stage, bytes, flops) per kernel
        self.largest_operand = 0.0

    @property
    def bytes(self):
        return {st: sum(b for k, b, _ in self.kernels if k == st) for st in STAGES}

    @property
    def flops(self):
        return {st: sum(f for k, _, f in self.kernels if k == st) for st in STAGES}

    def kernel(self, stage, bytes_moved, flops):
        self.kernels.append((stage, float(bytes_moved), float(flops)))

    def cache_resident(self):
        return self.largest_operand <= self.c["llc_bytes"] / 2

    def gemm(self, stage, m, k, n, sparse_nnz=None):
        """[m, k] x [k, n]; with sparse_nnz, the [m, k] operand is sparse."""
        if sparse_nnz is not None:
            return self.spmm(stage, m, k, sparse_nnz, n, True)
        self.kernel(stage, 4.0 * (m * k + k * n + m * n), 2.0 * m * k * n)
        self.largest_operand = max(self.largest_operand, 4.0 * m * k, 4.0 * m * n)

    def linear_backward(self, m, k, n, input_grad, sparse_nnz=None):
        """Gradients of y = x W ([m, k] x [k, n]): dW = x^T dy, and dx = dy W^T if asked."""
        if sparse_nnz is not None:
            self.spmm("backward", k, m, sparse_nnz, n, True)
        else:
            self.gemm("backward", k, m, n)
        if input_grad:
            self.gemm("backward", m, n, k)

    def spmm(self, stage, rows, cols, entries, width, weighted):
        """[rows, cols] sparse with `entries` x [cols, width] dense: 2 flops per entry and column."""
        csr = 8.0 * (rows + 1) + entries * (8.0 if weighted else 4.0)
        hot = (self.hot or {}).get(entries)
        self.kernel(stage, csr + gathered_bytes(cols, width, entries, self.c["llc_bytes"], hot) + 4.0 * rows * width,
                    2.0 * entries * width)
        self.largest_operand = max(self.largest_operand, csr, 4.0 * cols * width, 4.0 * rows * width)

    def add_bytes(self, stage, b):
        """A memory-bound kernel (loss, optimizer) moving `b` bytes."""
        self.kernel(stage, b, 0.0)

    def seconds(self, stage):
        return sum(kernel_seconds(b, f, self.c) for k, b, f in self.kernels if k == stage)

    def total(self):
        return sum(self.seconds(s) for s in STAGES)


def hot_rows(column_counts):
    """Cumulative gathers of the most gathered rows: {entries: cumsum} for the graph's own
    entries and for the graph with a self loop per vertex (GCN's Â)."""
    import numpy as np
    counts = np.sort(np.asarray(column_counts, dtype=np.int64))[::-1]
    plain = np.cumsum(counts)
    loops = plain + np.arange(1, len(counts) + 1)
    return {int(plain[-1]): plain, int(loops[-1]): loops} if len(counts) else {}


def aggregated_projection(e, n, i, o, entries, weighted, input_grad, sp):
    """(A h) W, or A (h W) when W narrows (projecting first), with their gradients: A [n, n] with
    `entries`, h [n, i] (sp: its non-zeros when sparse), W [i, o]."""
    if o < i:
        e.gemm("message", n, i, o, sp)
        e.spmm("aggregation", n, n, entries, o, weighted)
        e.spmm("backward", n, n, entries, o, weighted)
        e.linear_backward(n, i, o, input_grad, sp)
    else:
        e.spmm("aggregation", n, n, entries, i, weighted)
        e.gemm("update", n, i, o)
        e.linear_backward(n, i, o, input_grad)
        if input_grad:
            e.spmm("backward", n, n, entries, i, weighted)


def epoch_floor(model, n, nnz, f, c, hidden, layers, ceilings, feature_nnz=None, column_counts=None):
    """The Epoch of a full-batch training step of `model` (gcn, sage or pinsage; None otherwise)
    on n vertices: nnz in-edges (PinSage: its selected entries), f features (feature_nnz of the
    n * f non-zero), c classes; column_counts[u]: the in-edges from u, when known."""
    if n is None or model not in ("gcn", "sage", "pinsage"):
        return None
    e = Epoch(ceilings, hot_rows(column_counts) if column_counts is not None and model != "pinsage" else None)
    dims = [f] + [hidden] * (layers - 1) + [c]
    params = 0
    sparse_input = feature_nnz if feature_nnz is not None and feature_nnz < 0.1 * n * f else None
    for l in range(layers):
        i, o = dims[l], dims[l + 1]
        needs_input_grad = l > 0  # the features are constant
        sp = sparse_input if l == 0 else None  # the input's own projections
        if model == "gcn":  # Â h W + b, self loops in Â
            params += i * o + o
            aggregated_projection(e, n, i, o, nnz + n, True, needs_input_grad, sp)
        elif model == "sage":  # h W_self + mean(h) W_neigh + b
            params += 2 * i * o + o
            e.gemm("update", n, i, o, sp)
            e.linear_backward(n, i, o, needs_input_grad, sp)
            aggregated_projection(e, n, i, o, nnz, False, needs_input_grad, sp)
        else:  # PinSage: q = ReLU(h Q + b) per row; weighted sum over the selection; [h || n] W + w
            params += i * hidden + hidden + (i + hidden) * o + o
            e.gemm("message", n, i, hidden, sp)
            e.spmm("aggregation", n, n, nnz, hidden, True)
            e.gemm("update", n, i, o, sp)
            e.gemm("update", n, hidden, o)
            e.linear_backward(n, hidden, o, True)  # the pooled rows' gradient feeds Q's
            e.spmm("backward", n, n, nnz, hidden, True)
            e.linear_backward(n, i, hidden, needs_input_grad, sp)
            e.linear_backward(n, i, o, needs_input_grad, sp)
    e.add_bytes("loss", 8.0 * n * c)  # read the logits, write their gradient
    e.add_bytes("optimizer", 28.0 * params)
    return e
