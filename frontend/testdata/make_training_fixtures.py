#!/usr/bin/python3
"""Fixtures for frontend/training_test.cc: three training steps of a small network in
PyTorch 1.13, from fixed weights and batches, with the loss after each step and the
final weights. weft's parameter names are used for the files.

Run with Debian's Python: /usr/bin/python3 frontend/testdata/make_training_fixtures.py
"""
import os

import numpy as np
import torch

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "training")
torch.manual_seed(0)
rng = np.random.default_rng(3)


def save(case, name, array):
    os.makedirs(os.path.join(here, case), exist_ok=True)
    np.save(os.path.join(here, case, name + ".npy"), np.ascontiguousarray(array))


def run(case, model, names, opt, loss_fn, batches):
    for name, p in zip(names, model.parameters()):
        save(case, "init." + name, p.detach().numpy())
    losses = []
    for i, (x, y) in enumerate(batches):
        save(case, f"x{i}", x.numpy())
        save(case, f"y{i}", y.numpy())
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    save(case, "losses", np.array(losses, dtype=np.float64))
    for name, p in zip(names, model.parameters()):
        save(case, "final." + name, p.detach().numpy())


# An MLP classifier: Linear(4, 8) -> Tanh -> Linear(8, 3), cross-entropy, Adam.
mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
batches = [(torch.tensor(rng.standard_normal((5, 4)), dtype=torch.float32),
            torch.tensor(rng.integers(0, 3, 5), dtype=torch.int64)) for _ in range(3)]
run("mlp_adam", mlp, ["0.weight", "0.bias", "2.weight", "2.bias"],
    torch.optim.Adam(mlp.parameters(), lr=0.01), torch.nn.functional.cross_entropy, batches)

# A regression net with momentum SGD and weight decay, MSE.
reg = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
batches = [(torch.tensor(rng.standard_normal((4, 3)), dtype=torch.float32),
            torch.tensor(rng.standard_normal((4, 2)), dtype=torch.float32)) for _ in range(3)]
run("reg_sgd", reg, ["0.weight", "0.bias", "2.weight", "2.bias"],
    torch.optim.SGD(reg.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3),
    torch.nn.functional.mse_loss, batches)
