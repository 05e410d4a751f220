"""torch.distributed's gloo backend on the buffers of bench/distributed/collectives_bench.cc:
all_reduce of a float32 buffer and all_to_all_single with buffer/P bytes per peer, median seconds
per call after two warm-ups, every call after a barrier. Prints one JSON object (rank 0).

    python run_collectives.py --world 2 --sizes_mib 1,16,64 --iters 10 [--summary_json F]
"""
import argparse
import json
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def timed(op, iters):
    times = []
    for i in range(-2, iters):
        dist.barrier()
        t0 = time.perf_counter()
        op()
        if i >= 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(rank, world, port, sizes, iters, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    rows = []
    for mib in sizes:
        n = mib << 18
        buf = torch.ones(n, dtype=torch.float32)
        allreduce = timed(lambda: dist.all_reduce(buf), iters)
        send = torch.zeros(n * 4 // world // 4 * world, dtype=torch.float32)
        recv = torch.empty_like(send)
        try:
            alltoall = timed(lambda: dist.all_to_all_single(recv, send), iters)
        except RuntimeError:  # not every gloo build has all-to-all
            alltoall = None
        rows.append({"bytes": 4.0 * n, "allreduce_seconds": allreduce, "alltoallv_seconds": alltoall})
    if rank == 0:
        result = {"backend": "gloo", "world": world, "torch": torch.__version__, "sizes": rows}
        print(json.dumps(result))
        if out:
            with open(out, "w") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--sizes_mib", default="1,16,64")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--summary_json", default="")
    a = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sizes = [int(x) for x in a.sizes_mib.split(",")]
    mp.spawn(worker, args=(a.world, port, sizes, a.iters, a.summary_json), nprocs=a.world)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
