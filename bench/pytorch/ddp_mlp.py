#!/usr/bin/python3
"""PyTorch's peer figure for weft's CPU data parallelism (tests/data_parallel/train_mlp):
the same MLP (16-H-H-4, ReLU, cross-entropy, Adam lr 1e-2) on a global batch split over
N ranks with DistributedDataParallel over gloo, or on one process (--ranks=1).

  /usr/bin/python3 bench/pytorch/ddp_mlp.py --ranks=2 --threads=1 --hidden=512 --batch=256 --steps=60

Prints rank 0's median step time over the steps after 5 warm-up steps, in the same
words as train_mlp --time, after the kernel OpenBLAS chose (peer_env.py removes
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE first). Standard library and torch only.
"""
import os
import statistics
import sys
import time

import peer_env  # noqa: F401  (first: OpenBLAS reads its environment when torch loads it)
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
RANKS = int(ARGS.get("ranks", 2))
THREADS = int(ARGS.get("threads", 1))
HIDDEN = int(ARGS.get("hidden", 512))
BATCH = int(ARGS.get("batch", 256))
STEPS = int(ARGS.get("steps", 60))
FEATURES, CLASSES, WARMUP = 16, 4, 5


def worker(rank):
    torch.set_num_threads(THREADS)
    torch.manual_seed(7)
    net = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, CLASSES))
    if RANKS > 1:
        dist.init_process_group("gloo", rank=rank, world_size=RANKS)
        net = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    rows = BATCH // RANKS
    g = torch.Generator().manual_seed(11)
    times = []
    for step in range(STEPS):
        x = torch.randn(BATCH, FEATURES, generator=g)[rank * rows:(rank + 1) * rows]
        y = torch.randint(0, CLASSES, (BATCH,), generator=g)[rank * rows:(rank + 1) * rows]
        start = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        if step >= WARMUP:
            times.append((time.perf_counter() - start) * 1e3)
    if rank == 0:
        print(f"pytorch rank 0 of {RANKS}: median step {statistics.median(times):.4f} ms over "
              f"{len(times)} steps (global batch {BATCH}, {THREADS} threads per rank)")
    if RANKS > 1:
        dist.destroy_process_group()


def main():
    print(peer_env.describe(), flush=True)  # the ranks inherit the environment
    if RANKS == 1:
        worker(0)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    mp.start_processes(worker_entry, args=(), nprocs=RANKS, start_method="fork")


def worker_entry(rank):
    worker(rank)


if __name__ == "__main__":
    main()
