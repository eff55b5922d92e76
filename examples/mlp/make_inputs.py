#!/usr/bin/python3
"""Makes the inputs of examples/mlp/mlp.wir and the expected results, computed
independently of weft with PyTorch (autograd gives the bias gradient).

Run with Debian's Python (which has numpy and torch): /usr/bin/python3 make_inputs.py
"""
import os

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def save(name, array):
    np.save(os.path.join(here, name), array)


x = rng.standard_normal((8, 16)).astype(np.float32)
labels = rng.integers(0, 10, size=(8,)).astype(np.int64)
w1 = (rng.standard_normal((16, 32)) / 4).astype(np.float32)
b1 = (rng.standard_normal((32,)) / 10).astype(np.float32)
w2 = (rng.standard_normal((32, 10)) / np.sqrt(32)).astype(np.float32)
b2 = (rng.standard_normal((10,)) / 10).astype(np.float32)
lr = np.array(0.5, dtype=np.float32)
for name, value in [("x", x), ("labels", labels), ("w1", w1), ("b1", b1), ("w2", w2),
                    ("b2", b2), ("lr", lr)]:
    save(name + ".npy", value)

t = {k: torch.tensor(v) for k, v in [("x", x), ("w1", w1), ("b1", b1), ("w2", w2)]}
tb2 = torch.tensor(b2, requires_grad=True)
a = torch.nn.functional.gelu(t["x"] @ t["w1"] + t["b1"], approximate="tanh")
logits = a @ t["w2"] + tb2
loss = torch.nn.functional.cross_entropy(logits, torch.tensor(labels))
loss.backward()
os.makedirs(os.path.join(here, "expected"), exist_ok=True)
save("expected/out_0.npy", loss.detach().numpy())
save("expected/out_1.npy", torch.softmax(logits, dim=1).detach().numpy())
save("expected/b2.npy", (tb2 - float(lr) * tb2.grad).detach().numpy())
