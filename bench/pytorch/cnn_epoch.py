#!/usr/bin/python3
"""PyTorch peer of `//examples/fashion_mnist:cnn -- --bn`: the same network (two stages of
3x3 conv pad 1 -> BatchNorm2d -> ReLU -> 2x2 max-pool, 1->32->64 channels, then
Linear(3136, 128) -> ReLU -> Dropout(0.25) -> Linear(128, 10)), Adam lr 1e-3, batch 64,
cross-entropy, 937 full batches per epoch over Fashion-MNIST normalized as the example
does ((x/255 - 0.2860) / 0.3530), then test accuracy in eval mode.

Run with Debian's Python (PyTorch 1.13):
  /usr/bin/python3 bench/pytorch/cnn_epoch.py [--epochs=N] [--threads=N] [--steps=N]
On a GPU (PyTorch 2.x; the data on the device, TF32 off, fused Adam with --fused=1):
  python3 bench/pytorch/cnn_epoch.py --device=cuda --fused=1 [--data=DIR] [--epochs=N]
For PyTorch's best setting on this machine (ENVIRONMENT.md) also set
  OMP_WAIT_POLICY=PASSIVE GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296
It runs without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (peer_env.py) and prints the kernel
OpenBLAS chose first.
"""
import statistics
import sys
import time

import peer_env  # noqa: F401  (first: OpenBLAS reads its environment when torch loads it)
import torch

import fashion_mnist_io
from fashion_mnist_io import read_idx

MEAN, STD = 0.2860, 0.3530


def images(name):
    x = read_idx(f"{fashion_mnist_io.DATA}/{name}-images-idx3-ubyte.gz").reshape(-1, 1, 28, 28) / 255.0
    return torch.tensor((x - MEAN) / STD, dtype=torch.float32)


def stage(cin, cout):
    return [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2)]


def main():
    args = dict(a.lstrip("-").split("=") for a in sys.argv[1:])
    epochs = int(args.get("epochs", 1))
    print(peer_env.describe(), flush=True)
    torch.set_num_threads(int(args.get("threads", 2)))
    dev = torch.device(args.get("device", "cpu"))
    if "data" in args:
        fashion_mnist_io.DATA = args["data"]
    data = fashion_mnist_io.DATA
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    x_train, x_test = images("train").to(dev), images("t10k").to(dev)
    y_train = torch.tensor(read_idx(f"{data}/train-labels-idx1-ubyte.gz"), dtype=torch.int64).to(dev)
    y_test = torch.tensor(read_idx(f"{data}/t10k-labels-idx1-ubyte.gz"), dtype=torch.int64).to(dev)
    model = torch.nn.Sequential(*stage(1, 32), *stage(32, 64), torch.nn.Flatten(),
                                torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(),
                                torch.nn.Dropout(0.25), torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, **({"fused": True} if args.get("fused") == "1" else {}))
    steps = int(args.get("steps", 60000 // 64))
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(60000, device=dev)
        step_ms, losses = [], []
        start = time.perf_counter()
        for s in range(steps):
            idx = order[s * 64:(s + 1) * 64]
            xb, yb = x_train[idx], y_train[idx]
            t0 = time.perf_counter()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step_ms.append((time.perf_counter() - t0) * 1e3)
        epoch_s = time.perf_counter() - start
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch}: {len(step_ms)} steps, mean loss {statistics.mean(losses):.4f}, "
              f"median step {statistics.median(step_ms):.1f} ms, epoch {epoch_s:.1f} s, "
              f"test accuracy: {acc:.4f}", flush=True)


if __name__ == "__main__":
    main()
