"""Where PyTorch's GPU time goes in a suite model's training step ([GPU]), to set beside
weft's `suite_bench --case=NAME --profile=TOP`: the step in the `fused` configuration of
cuda_suite.py (eager, Adam(fused=True), fp32 with TF32 off) timed with cuDNN's settings
as they come (benchmark off, nondeterministic algorithms allowed), with
cudnn.benchmark on, and with cudnn.deterministic on; then torch.profiler's table of the
CUDA kernels of --profile-steps steps, costliest first.

    python3 bench/pytorch/cuda_profile.py [--models=convnet,conv_autoenc] [--preset=paper]
        [--steps=30] [--warmup=5] [--top=25] [--profile-steps=5]
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_env  # noqa: E402  (first: OpenBLAS reads its environment when torch loads it)
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import cuda_suite  # noqa: E402
import models  # noqa: E402


def cudnn_settings(benchmark, deterministic):
    torch.backends.cudnn.benchmark = benchmark
    torch.backends.cudnn.deterministic = deterministic


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="paper")
    p.add_argument("--models", default="convnet,conv_autoenc,lstm_seq,transformer")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--profile-steps", type=int, default=5)
    a = p.parse_args()
    print(peer_env.describe(), file=sys.stderr, flush=True)
    if not torch.cuda.is_available():
        print("cuda_profile: no GPU")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    for name in a.models.split(","):
        for label, bench, det in (("default", False, False), ("benchmark", True, False),
                                  ("deterministic", False, True)):
            cudnn_settings(bench, det)
            med, low, first, peak = cuda_suite.run_config(name, a.preset, "fused", a.steps,
                                                          a.warmup, dev)
            print(f"pytorch {name:17} fused, cudnn {label:13} median {med:8.3f} ms/step "
                  f"(min {low:.3f}), first loss {first:.5f}, peak {peak / 2**20:8.1f} MiB",
                  flush=True)
        cudnn_settings(False, False)
        torch.manual_seed(0)
        spec = models.build(name, a.preset)
        inputs, target = spec.make_data()
        inputs = [x.to(dev) for x in inputs]
        target = inputs[0] if spec.target == "input" else target.to(dev)
        model = spec.module.to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=spec.lr, fused=True)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = spec.loss_fn(model(*inputs), target)
            loss.backward()
            opt.step()

        for _ in range(a.warmup):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(a.profile_steps):
                step()
            torch.cuda.synchronize()
        print(f"== {name}: CUDA kernels over {a.profile_steps} steps (fused, cudnn default)")
        table = None
        for key in ("device_time_total", "cuda_time_total"):  # the name changed in 2.x
            try:
                table = prof.key_averages().table(sort_by=key, row_limit=a.top,
                                                  max_name_column_width=90)
                break
            except (AttributeError, KeyError, ValueError):
                continue
        print(table)


if __name__ == "__main__":
    main()
