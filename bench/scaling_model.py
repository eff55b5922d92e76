#!/usr/bin/env python3
"""A scaling model for weft's data parallelism on GPUs (issue #32): predicted step time
against ranks for 8 GPUs on one node (NVLink 4 through NVSwitch) and 2 nodes of 8 over
InfiniBand, from measured single-GPU step times, the models' gradient bucket sizes and
assumed NCCL bus bandwidths, with the overlap of communication with the backward pass
modelled explicitly (a timeline per bucket). A model, not a measurement: run with no
arguments to print the tables recorded in bench/RESULTS.md.

    python3 bench/scaling_model.py [--first-bucket-mib=1] [--bucket-mib=25]

Weak scaling, as PyTorch DDP is used: every rank keeps the single-GPU batch (the paper
preset's), so each rank's compute time is the single-GPU step's and efficiency is
T(1) / T(N).

Inputs and where they come from:
- T(1): weft's median ms per step on one H200, whole step as one CUDA graph, f32 (the
  verification run of 2026-11-28, bench/RESULTS.md "Verification run on an H200").
- Gradient bytes: 4 x the parameter count at the paper preset (bench/RESULTS.md's suite
  table, "params weft ..."); f32 gradients, one all_reduce each.
- Buckets: runtime/collective/bucket_plan.h's rules with PyTorch DDP's sizes: the first
  bucket closes at 1 MiB, the others at 25 MiB; gradients fill them in the order they are
  produced (reverse layer order). Split here at byte granularity; the plan closes a
  bucket after the gradient that reaches the limit, so with a few large gradients it
  has fewer buckets than here (the "no overlap" column is then the bound).

Assumptions (stated, not measured here; the one-GPU NCCL figures come from
tests/cuda/nccl_check.sh on a later GPU session):
- Split of T(1): forward 1/3 and backward 2/3 of the compute (backward costs about twice
  the forward: two GEMMs per forward GEMM), the optimizer update 5% of the step after
  both. Gradients are produced at a uniform rate in bytes over the backward pass.
- All-reduce time of b bytes over n ranks (NCCL's ring; NCCL-tests' busbw definition):
  t(b) = L(n) + 2(n-1)/n * b / busbw, with L(n) = 2(n-1) * hop latency.
  * One node, NVLink 4 / NVSwitch (HGX H100/H200: 900 GB/s per GPU, 450 GB/s each way):
    busbw 360 GB/s (assumed: 80% of one direction; large all-reduces on such nodes are
    commonly reported at 350-480 GB/s busbw by NCCL-tests), hop latency 1 us.
  * Two nodes, NDR InfiniBand 400 Gb/s (50 GB/s) per GPU, one NIC per GPU: the ring's
    inter-node hops bound it: busbw 40 GB/s (80% of the NIC), hop latency 4 us. NCCL's
    tree/NVLS algorithms and SHARP do better; this is the pessimistic case.
- Overlap: one communication stream (runtime/cuda/step_schedule.h): bucket k starts at
  max(its last gradient's time, the end of bucket k-1) and runs for t(b_k); the
  optimizer waits for every bucket. NCCL's kernels share the SMs with the backward pass:
  modelled as the overlapped compute slowing by `--contention` (default 5%) of the
  communication time it hides.
"""

import argparse

# name: (weft ms per step on one H200, parameters at the paper preset)
MODELS = {
    "transformer": (13.070, 1_064_448),
    "mlp": (1.127, 1_054_976),
    "residual_tower": (1.642, 927_232),
    "feedback_fixed": (0.635, 50_048),
    "gated_routing": (0.737, 168_200),
    "iterative_refine": (1.223, 198_400),
    "gru_seq": (5.943, 82_752),
    "conv_autoenc": (6.935, 346_659),
    "lstm_seq": (12.029, 239_680),
    "convnet": (6.135, 248_985),
}

# (description, busbw bytes/s, hop latency s); ranks within each.
NVLINK = ("one node, NVLink 4 / NVSwitch", 360e9, 1e-6)
INFINIBAND = ("2 nodes x 8 over NDR InfiniBand", 40e9, 4e-6)

FORWARD, BACKWARD, OPTIMIZER = 0.95 / 3, 0.95 * 2 / 3, 0.05


def buckets(grad_bytes, first, rest):
    """Bucket sizes in the order they fill: the first closes at `first`, the rest at `rest`."""
    out, left, limit = [], grad_bytes, first
    while left > 0:
        b = min(limit, left)
        out.append(b)
        left -= b
        limit = rest
    return out


def all_reduce_s(b, n, busbw, hop):
    if n == 1:
        return 0.0
    return 2 * (n - 1) * hop + 2 * (n - 1) / n * b / busbw


def step_s(t1, grad_bytes, n, link, first, rest, contention, overlap=True):
    """Predicted step time on n ranks: the bucket timeline against the backward pass."""
    _, busbw, hop = link
    fwd, bwd, opt = FORWARD * t1, BACKWARD * t1, OPTIMIZER * t1
    end_backward = fwd + bwd
    comm_end, filled, hidden = 0.0, 0, 0.0
    for b in buckets(grad_bytes, first, rest):
        filled += b
        ready = fwd + bwd * filled / grad_bytes if overlap else end_backward
        start = max(ready, comm_end)
        comm_end = start + all_reduce_s(b, n, busbw, hop)
        hidden += max(0.0, min(comm_end, end_backward) - start)
    end_backward += contention * hidden
    return max(end_backward, comm_end) + opt


def table(title, columns, args):
    """One row per model; `columns`: (ranks, link) pairs, the last the efficiency's."""
    first, rest = args.first_bucket_mib * 2**20, args.bucket_mib * 2**20
    print(f"\n{title}")
    last_n, last_link = columns[-1]
    head = "| model | grads MB | buckets | T(1) ms | " + " | ".join(f"T({n}) ms" for n, _ in columns)
    head += f" | efficiency at {last_n} | at {last_n}, no overlap |"
    print(head)
    print("|:--|--:|--:|--:|" + "--:|" * len(columns) + "--:|--:|")
    for name, (ms, params) in MODELS.items():
        t1, g = ms / 1e3, 4 * params
        times = [step_s(t1, g, n, link, first, rest, args.contention) for n, link in columns]
        blocking = step_s(t1, g, last_n, last_link, first, rest, args.contention, overlap=False)
        cells = " | ".join(f"{t * 1e3:.3f}" for t in times)
        print(f"| {name} | {g / 1e6:.2f} | {len(buckets(g, first, rest))} | {ms:.3f} | {cells} | "
              f"{t1 / times[-1]:.1%} | {t1 / blocking:.1%} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--first-bucket-mib", type=float, default=1.0)
    p.add_argument("--bucket-mib", type=float, default=25.0)
    p.add_argument("--contention", type=float, default=0.05,
                   help="compute slowdown per second of communication hidden under it")
    args = p.parse_args()
    for name, busbw, hop in (NVLINK, INFINIBAND):
        print(f"{name}: busbw {busbw / 1e9:.0f} GB/s, hop latency {hop * 1e6:.0f} us")
    print(f"buckets: first {args.first_bucket_mib:g} MiB, then {args.bucket_mib:g} MiB; "
          f"contention {args.contention:.0%}")
    table("8 GPUs on one node (NVLink):", [(n, NVLINK) for n in (2, 4, 8)], args)
    table("2 x 8 GPUs (8 on one node over NVLink; 16 over InfiniBand):", [(8, NVLINK), (16, INFINIBAND)], args)


if __name__ == "__main__":
    main()
