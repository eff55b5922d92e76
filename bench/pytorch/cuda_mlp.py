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
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_env  # noqa: E402  (first: OpenBLAS reads its environment when torch loads it)
import torch  # noqa: E402

from cuda_suite import time_config  # noqa: E402


def make():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                               torch.nn.ReLU(), torch.nn.Linear(256, 10))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--configs", default="eager,fused,compile,cuda_graph")
    a = p.parse_args()
    print(peer_env.describe(), file=sys.stderr, flush=True)
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
            med, low, loss, _ = time_config(make(), torch.nn.CrossEntropyLoss(), [x], y, 1e-3, name,
                                            a.steps, a.warmup, dev)
        except Exception as e:  # torch.compile needs a working Triton; report, go on
            print(f"pytorch {torch.__version__} cuda ({name})  failed: {type(e).__name__}: {e}")
            continue
        print(f"pytorch {torch.__version__} cuda ({name})  mlp784_adam_step  median {med:.3f} "
              f"ms/step  (min {low:.3f}, {a.steps} steps; first loss {loss:.4f})", flush=True)
        if best is None or med < best[1]:
            best = (name, med)
    if best:
        print(f"pytorch best: {best[0]} {best[1]:.3f} ms/step")


if __name__ == "__main__":
    main()
