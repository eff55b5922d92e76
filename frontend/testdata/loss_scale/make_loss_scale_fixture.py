"""PyTorch 1.13 fixture for frontend/loss_scale_test.cc: an MLP trained with Adam under
dynamic loss scaling, with infs and a NaN injected into some batches.

torch.cuda.amp.GradScaler disables itself where CUDA is absent (this machine), so its
rules are written out here, operation for operation, from PyTorch 1.13's grad_scaler.py
and ATen's _amp_foreach_non_finite_check_and_unscale_ / _amp_update_scale_ kernels:
  - scale(loss) = loss * scale (an f32 tensor); backward;
  - unscale_: inv_scale = scale.double().reciprocal().float(); found_inf if any gradient
    element (before unscaling) is inf or NaN; every gradient *= inv_scale;
  - step: optimizer.step() only when found_inf is 0;
  - update: found_inf: scale = f32(scale * backoff_factor), tracker = 0; else
    successful = tracker + 1; at growth_interval scale = f32(scale * growth_factor) when
    that is finite, tracker = 0; else tracker = successful.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 \
       frontend/testdata/loss_scale/make_loss_scale_fixture.py
"""
import math
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "adam")
INIT_SCALE = 2.0 ** 10
GROWTH_FACTOR = 2.0
BACKOFF_FACTOR = 0.5
GROWTH_INTERVAL = 2
STEPS = 9
POISON = {2: math.inf, 5: -math.inf, 6: math.nan}  # step -> value put into x[1, 3]


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    for name, p in model.named_parameters():
        np.save(os.path.join(OUT, "init." + name + ".npy"), p.detach().numpy())
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scale = torch.tensor(INIT_SCALE, dtype=torch.float32)
    tracker, skipped = 0, 0
    losses, scales, skips = [], [], []
    for i in range(STEPS):
        x = torch.randn(5, 4)
        y = torch.randn(5, 2)
        if i in POISON:
            x[1, 3] = POISON[i]
        np.save(os.path.join(OUT, "x%d.npy" % i), x.numpy())
        np.save(os.path.join(OUT, "y%d.npy" % i), y.numpy())
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        (loss * scale).backward()
        inv_scale = scale.double().reciprocal().float()
        found_inf = any(not bool(torch.isfinite(p.grad).all()) for p in model.parameters())
        for p in model.parameters():
            p.grad.mul_(inv_scale)
        if not found_inf:
            opt.step()
        if found_inf:
            scale = (scale.double() * BACKOFF_FACTOR).float()
            tracker = 0
            skipped += 1
        else:
            successful = tracker + 1
            if successful == GROWTH_INTERVAL:
                grown = (scale.double() * GROWTH_FACTOR).float()
                if bool(torch.isfinite(grown)):
                    scale = grown
                tracker = 0
            else:
                tracker = successful
        losses.append(loss.item())
        scales.append(scale.item())
        skips.append(skipped)
    np.save(os.path.join(OUT, "losses.npy"), np.array(losses, dtype=np.float64))
    np.save(os.path.join(OUT, "scales.npy"), np.array(scales, dtype=np.float64))
    np.save(os.path.join(OUT, "skipped.npy"), np.array(skips, dtype=np.float64))
    for name, p in model.named_parameters():
        np.save(os.path.join(OUT, "final." + name + ".npy"), p.detach().numpy())
        state = opt.state[p]
        for slot in ("exp_avg", "exp_avg_sq"):
            np.save(os.path.join(OUT, "final.optimizer.%s.%s.npy" % (name, slot)), state[slot].numpy())
    print("steps taken:", STEPS - skipped, "scales:", scales)


if __name__ == "__main__":
    main()
