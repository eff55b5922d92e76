"""PyTorch peer of tests/cuda/step_bench's mlp784_adam_step on the same GPU.

784-256-256-10 MLP (ReLU), batch 128, Adam(lr=1e-3), cross-entropy; median wall time of
one training step (forward, backward, optimizer step, torch.cuda.synchronize) over
--steps after --warmup, in PyTorch's four configurations:

  eager            default Adam
  fused            Adam(fused=True)
  compile          torch.compile(model) (default mode) with fused Adam
  cuda_graph       the whole step (forward, backward, capturable fused Adam) captured
                   once as one CUDA graph and replayed (PyTorch's fastest on small,
                   dispatch-bound models)

TF32 is off, as weft's cuBLAS calls use pedantic fp32. The best is printed last.

    python3 bench/pytorch/cuda_mlp.py [--steps=200] [--warmup=20] [--configs=eager,fused,...]
"""
import argparse
import time

import torch


def make(dev):
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                               torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)


def timed(step, steps, warmup):
    ms = []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if s >= warmup:
            ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms


def run_config(name, dev, x, y, steps, warmup):
    model = make(dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    if name == "eager":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    elif name in ("fused", "compile"):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-3, device=dev), fused=True,
                               capturable=True)
    fwd = torch.compile(model) if name == "compile" else model
    out = {}

    def step():
        opt.zero_grad(set_to_none=(name != "cuda_graph"))
        loss = loss_fn(fwd(x), y)
        loss.backward()
        opt.step()
        out["loss"] = loss

    if name != "cuda_graph":
        ms = timed(step, steps, warmup)
        return ms, out["loss"].item()
    # Warm up on a side stream (allocates grads and optimizer state), then capture.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(g):
        step()
    ms = timed(g.replay, steps, warmup)
    return ms, out["loss"].item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--configs", default="eager,fused,compile,cuda_graph")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("cuda_mlp: no GPU")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    x = (torch.rand(128, 784, device=dev) * 4 - 2)
    y = torch.randint(0, 3, (128,), device=dev)
    best = None
    for name in a.configs.split(","):
        try:
            ms, loss = run_config(name, dev, x, y, a.steps, a.warmup)
        except Exception as e:  # torch.compile needs a working Triton; report, go on
            print(f"pytorch {torch.__version__} cuda ({name})  failed: {type(e).__name__}: {e}")
            continue
        med = ms[len(ms) // 2]
        print(f"pytorch {torch.__version__} cuda ({name})  mlp784_adam_step  median {med:.3f} "
              f"ms/step  (min {ms[0]:.3f}, {a.steps} steps; loss {loss:.4f})", flush=True)
        if best is None or med < best[1]:
            best = (name, med)
    if best:
        print(f"pytorch best: {best[0]} {best[1]:.3f} ms/step")


if __name__ == "__main__":
    main()
