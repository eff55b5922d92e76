"""PyTorch peer of tests/cuda/step_bench's mlp784_adam_step on the same GPU.

784-256-256-10 MLP (ReLU), batch 128, Adam(lr=1e-3), cross-entropy; median wall time of
one training step (forward, backward, optimizer step, torch.cuda.synchronize) over
--steps after --warmup. TF32 is off, as weft's cuBLAS calls use pedantic fp32.

    python3 bench/pytorch/cuda_mlp.py [--steps=50] [--warmup=5]
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("cuda_mlp: no GPU")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = (torch.rand(128, 784, device=dev) * 4 - 2)
    y = torch.randint(0, 3, (128,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    for fused, label in ((False, "default"), (True, "fused Adam")):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused)
        ms = []
        for s in range(a.warmup + a.steps):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            if s >= a.warmup:
                ms.append((time.perf_counter() - t0) * 1e3)
        ms.sort()
        print(f"pytorch {torch.__version__} cuda ({label})  mlp784_adam_step  median {ms[len(ms) // 2]:.3f} "
              f"ms/step  (min {ms[0]:.3f}, {a.steps} steps; loss {loss.item():.4f})")


if __name__ == "__main__":
    main()
