"""Makes training/testdata/schedules.json, the PyTorch 1.13 fixtures of
training/schedule_test.cc.

Run with Debian's Python, which has torch 1.13 (not the `python3` first on PATH):

    /usr/bin/python3 training/testdata/make_schedule_fixtures.py

Each case records the learning rate PyTorch's torch.optim.lr_scheduler gives after
0, 1, 2, ... calls of `scheduler.step()` (`lrs[t]` is the lr at t, weft's `lr_at(t)`), for
the arguments in `args` (PyTorch's names). ReduceLROnPlateau cases also record the metric
fed to each `step(metric)`: `lrs[0]` is the initial lr and `lrs[t]` the lr after the t-th
metric. The warmup-cosine case is SequentialLR(LinearLR, CosineAnnealingLR); WarmupLR
cases are SequentialLR(LinearLR or ConstantLR, the schedule in `args.after`), with the
optimizer's lr where that schedule starts. Every stateless case also records `momenta[t]`,
the momentum PyTorch's optimizer has at t (SGD's `momentum`, 0.9 unless the schedule
cycles it; for `optimizer: "Adam"` cases, betas[0], 0.9 unless cycled). New cases go at the
end of the list.
"""

import json
import os
import warnings

import numpy as np
import torch
from torch.optim import lr_scheduler as S

assert torch.__version__.startswith("1.13"), torch.__version__
warnings.filterwarnings("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))


def optimizer(lr, kind="SGD"):
    if kind == "Adam":
        return torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=lr, betas=(0.9, 0.999))
    return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr, momentum=0.9)


def lr_of(opt):
    return opt.param_groups[0]["lr"]


def momentum_of(opt):
    group = opt.param_groups[0]
    return group["betas"][0] if "betas" in group else group["momentum"]


def stateless(name, kind, lr, args, steps, make, opt_kind="SGD"):
    opt = optimizer(lr, opt_kind)
    sched = make(opt)
    lrs, momenta = [lr_of(opt)], [momentum_of(opt)]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(lr_of(opt))
        momenta.append(momentum_of(opt))
    case = dict(name=name, kind=kind, lr=lr, args=args, lrs=lrs, momenta=momenta)
    if opt_kind != "SGD":
        case["optimizer"] = opt_kind
    return case


def stateless_case(name, kind, lr, args, steps, opt_kind="SGD"):
    return stateless(name, kind, lr, args, steps, lambda opt: getattr(S, kind)(opt, **args), opt_kind)


def warmup_cosine(name, lr, warmup_steps, total_steps, warmup_start_factor, eta_min):
    def make(opt):
        warm = S.LinearLR(opt, start_factor=warmup_start_factor, total_iters=warmup_steps)
        cos = S.CosineAnnealingLR(opt, T_max=total_steps - warmup_steps, eta_min=eta_min)
        return S.SequentialLR(opt, [warm, cos], milestones=[warmup_steps])
    args = dict(warmup_steps=warmup_steps, total_steps=total_steps,
                warmup_start_factor=warmup_start_factor, eta_min=eta_min)
    return stateless(name, "WarmupCosineLR", lr, args, total_steps, make)


def warmup(name, lr, kind, warmup_steps, start_factor, after_kind, after_args, steps):
    def make(opt):
        if kind == "linear":
            warm = S.LinearLR(opt, start_factor=start_factor, total_iters=warmup_steps)
        else:
            warm = S.ConstantLR(opt, factor=start_factor, total_iters=warmup_steps)
        after = getattr(S, after_kind)(opt, **after_args)
        return S.SequentialLR(opt, [warm, after], milestones=[warmup_steps])
    args = dict(warmup=kind, warmup_steps=warmup_steps, start_factor=start_factor,
                after=dict(kind=after_kind, args=after_args))
    return stateless(name, "WarmupLR", lr, args, steps, make)


def plateau(name, lr, args, metrics):
    opt = optimizer(lr)
    sched = S.ReduceLROnPlateau(opt, **args)
    lrs = [lr_of(opt)]
    for m in metrics:
        opt.step()
        sched.step(m)
        lrs.append(lr_of(opt))
    return dict(name=name, kind="ReduceLROnPlateau", lr=lr, args=args, metrics=metrics, lrs=lrs)


def main():
    rng = np.random.RandomState(2023)
    # A loss that falls, stalls with noise, falls again, then stalls for good.
    loss = np.concatenate([np.linspace(1.0, 0.5, 15), 0.5 + 0.004 * rng.randn(15),
                           np.linspace(0.5, 0.3, 10), 0.3 + 0.01 * rng.randn(20)])
    accuracy = np.concatenate([np.linspace(0.1, 0.8, 20), 0.8 + 0.03 * rng.randn(40)])
    cases = [
        stateless_case("step", "StepLR", 0.1, dict(step_size=7, gamma=0.5), 60),
        stateless_case("step_default_gamma", "StepLR", 1.0, dict(step_size=10), 50),
        stateless_case("multistep", "MultiStepLR", 0.1,
                       dict(milestones=[5, 20, 20, 45], gamma=0.3), 60),
        stateless_case("exponential", "ExponentialLR", 0.05, dict(gamma=0.95), 80),
        stateless_case("cosine", "CosineAnnealingLR", 0.1, dict(T_max=30, eta_min=0.001), 100),
        stateless_case("cosine_zero_min", "CosineAnnealingLR", 0.2, dict(T_max=50), 50),
        warmup_cosine("warmup_cosine", 0.1, warmup_steps=10, total_steps=60,
                      warmup_start_factor=0.01, eta_min=1e-4),
        warmup_cosine("warmup_cosine_zero_min", 3e-4, warmup_steps=25, total_steps=100,
                      warmup_start_factor=0.1, eta_min=0.0),
        # The optimizer's own lr is ignored: OneCycleLR starts at max_lr / div_factor.
        stateless_case("onecycle", "OneCycleLR", 0.1, dict(max_lr=0.1, total_steps=100), 99),
        stateless_case("onecycle_linear_three_phase", "OneCycleLR", 0.1,
                       dict(max_lr=0.5, total_steps=80, pct_start=0.25,
                            anneal_strategy="linear", div_factor=10.0,
                            final_div_factor=100.0, three_phase=True), 79),
        stateless_case("onecycle_cos_three_phase", "OneCycleLR", 0.1,
                       dict(max_lr=0.01, total_steps=64, pct_start=0.4, three_phase=True), 64),
        plateau("plateau_min_rel", 0.1,
                dict(mode="min", factor=0.5, patience=2, threshold=0.01, threshold_mode="rel",
                     cooldown=1, min_lr=0.01), [float(x) for x in loss]),
        plateau("plateau_max_abs", 0.1,
                dict(mode="max", factor=0.2, patience=3, threshold=0.05, threshold_mode="abs",
                     min_lr=1e-3), [float(x) for x in accuracy]),
        plateau("plateau_defaults", 0.1, dict(), [float(x) for x in loss]),
        # Reductions smaller than eps (1e-8) are skipped: the lr stops at 1e-8, since 1e-8 -
    # 1e-9 < eps.
        plateau("plateau_eps", 1e-7, dict(patience=0), [1.0] * 50),
        # CyclicLR sets the lr to its base_lr: the optimizer's lr is ignored.
        stateless_case("cyclic_triangular", "CyclicLR", 0.1,
                       dict(base_lr=0.001, max_lr=0.006, step_size_up=10), 60),
        stateless_case("cyclic_triangular2_asymmetric", "CyclicLR", 0.1,
                       dict(base_lr=0.01, max_lr=0.1, step_size_up=5, step_size_down=15,
                            mode="triangular2"), 80),
        stateless_case("cyclic_exp_range", "CyclicLR", 0.1,
                       dict(base_lr=0.001, max_lr=0.01, step_size_up=8, mode="exp_range",
                            gamma=0.98), 70),
        warmup("warmup_linear_step", 0.1, "linear", 5, 0.25, "StepLR",
               dict(step_size=10, gamma=0.5), 60),
        warmup("warmup_linear_cosine", 0.05, "linear", 10, 1.0 / 3, "CosineAnnealingLR",
               dict(T_max=40, eta_min=0.001), 70),
        warmup("warmup_constant_exponential", 0.1, "constant", 4, 0.1, "ExponentialLR",
               dict(gamma=0.95), 50),
        warmup("warmup_linear_cyclic", 0.001, "linear", 5, 0.1, "CyclicLR",
               dict(base_lr=0.001, max_lr=0.01, step_size_up=6), 50),
        warmup("warmup_linear_onecycle", 0.1, "linear", 5, 0.5, "OneCycleLR",
               dict(max_lr=0.1, total_steps=50), 54),
        # Momentum cycling (cycle_momentum): explicit bounds, β1 of Adam, and off.
        stateless_case("onecycle_momentum_bounds", "OneCycleLR", 0.1,
                       dict(max_lr=0.2, total_steps=60, base_momentum=0.7, max_momentum=0.99,
                            anneal_strategy="linear"), 60),
        stateless_case("onecycle_adam_beta1", "OneCycleLR", 0.1,
                       dict(max_lr=0.01, total_steps=50, three_phase=True), 50, opt_kind="Adam"),
        stateless_case("onecycle_no_momentum_cycling", "OneCycleLR", 0.1,
                       dict(max_lr=0.1, total_steps=50, cycle_momentum=False), 50),
        stateless_case("cyclic_momentum_bounds", "CyclicLR", 0.1,
                       dict(base_lr=0.01, max_lr=0.1, step_size_up=7, step_size_down=3,
                            mode="triangular2", base_momentum=0.6, max_momentum=0.95), 60),
        stateless_case("cyclic_no_momentum_cycling", "CyclicLR", 0.1,
                       dict(base_lr=0.01, max_lr=0.1, step_size_up=5, cycle_momentum=False), 50),
    ]
    with open(os.path.join(HERE, "schedules.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
