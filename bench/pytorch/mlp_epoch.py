#!/usr/bin/python3
"""PyTorch peer of examples/fashion_mnist/train_mlp.cc: the same 784-256-256-10 ReLU MLP,
SGD lr 0.1, batch 128, cross-entropy, one pass over Fashion-MNIST's 60000 training
images (468 full batches), then accuracy on the 10000 test images.

Run with Debian's Python: /usr/bin/python3 bench/pytorch/mlp_epoch.py [--epochs=N] [--threads=N]
It runs without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (peer_env.py) and prints the
kernel OpenBLAS chose first.
"""
import statistics
import sys
import time

import peer_env  # noqa: F401  (first: OpenBLAS reads its environment when torch loads it)
import torch

from fashion_mnist_io import DATA, read_idx



def main():
    args = dict(a.lstrip("-").split("=") for a in sys.argv[1:])
    epochs = int(args.get("epochs", 1))
    print(peer_env.describe(), flush=True)
    torch.set_num_threads(int(args.get("threads", 1)))
    torch.manual_seed(0)
    x_train = torch.tensor(read_idx(f"{DATA}/train-images-idx3-ubyte.gz").reshape(-1, 784) / 255.0,
                           dtype=torch.float32)
    y_train = torch.tensor(read_idx(f"{DATA}/train-labels-idx1-ubyte.gz"), dtype=torch.int64)
    x_test = torch.tensor(read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz").reshape(-1, 784) / 255.0,
                          dtype=torch.float32)
    y_test = torch.tensor(read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz"), dtype=torch.int64)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, epochs + 1):
        order = torch.randperm(60000)
        step_ms, losses = [], []
        start = time.perf_counter()
        for s in range(60000 // 128):
            idx = order[s * 128:(s + 1) * 128]
            xb, yb = x_train[idx], y_train[idx]
            t0 = time.perf_counter()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step_ms.append((time.perf_counter() - t0) * 1e3)
        epoch_s = time.perf_counter() - start
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch}: {len(step_ms)} steps, mean loss {statistics.mean(losses):.4f}, "
              f"median step {statistics.median(step_ms):.1f} ms, epoch {epoch_s:.1f} s, "
              f"test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
