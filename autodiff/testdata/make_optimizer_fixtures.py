"""Makes the PyTorch 1.13 fixtures of autodiff/optimizer_test.cc.

Run with Debian's Python, which has torch 1.13 (not the `python3` first on PATH):

    /usr/bin/python3 autodiff/testdata/make_optimizer_fixtures.py

For each case below it takes two fixed parameters (`w` f[2,3] and `b` f[3]) and one
fixed gradient each per step, runs the case's `opt.step()`s (three, or the number the
case gives: RAdam's rectification starts at step 6) of torch.optim's single-tensor
implementation (foreach=False) — after `clip_grad_norm_` when the case clips — and
writes, under autodiff/testdata/optimizer/CASE/:

    init.P.npy             parameter P before the first step
    stepK.grad.P.npy       the gradient fed at step K (1-based), before any clipping
    stepK.P.npy            P after step K
    stepK.P.SLOT.npy       optimizer state SLOT of P after step K (PyTorch's names and
                           dtypes), from the first update on

and the list of cases with their hyper-parameters to autodiff/testdata/optimizer/cases.json.
A case with a schedule (OneCycleLR or CyclicLR, whose cycle_momentum is on by default)
steps it after every opt.step() and records in the manifest the lr and the momentum (SGD's
and RMSprop's `momentum`, the Adam family's betas[0]) each step ran with. PyTorch 1.13's
CyclicLR cycles only a `momentum`; for the Adam family a CyclicLR stepped on a stand-in
SGD optimizer gives the values, copied into the optimizer's lr and betas[0] before each
step, as PyTorch 2's CyclicLR does itself.
New cases go at the end of CASES: the cases draw from one random generator in order, so
appending keeps the earlier cases' files unchanged.
"""

import json
import os

import numpy as np
import torch

assert torch.__version__.startswith("1.13"), torch.__version__

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "optimizer")

# name, optimizer kind, keyword arguments of torch.optim.KIND (lr included), dtype,
# max_grad_norm (0: no clipping), gradient scale (large to make clipping bite), and
# optionally the number of steps (3 when left out).
CASES = [
    ("sgd_plain", "SGD", dict(lr=0.1), "f64", 0.0, 1.0),
    ("sgd_momentum", "SGD", dict(lr=0.1, momentum=0.9), "f64", 0.0, 1.0),
    ("sgd_dampening", "SGD", dict(lr=0.1, momentum=0.9, dampening=0.3), "f64", 0.0, 1.0),
    ("sgd_nesterov", "SGD", dict(lr=0.1, momentum=0.9, nesterov=True), "f64", 0.0, 1.0),
    ("sgd_weight_decay", "SGD", dict(lr=0.1, momentum=0.5, weight_decay=0.01), "f64", 0.0, 1.0),
    ("sgd_maximize_f32", "SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True),
     "f32", 0.0, 1.0),
    ("adam", "Adam", dict(lr=0.01), "f64", 0.0, 1.0),
    ("adam_weight_decay_f32", "Adam", dict(lr=0.01, weight_decay=0.1), "f32", 0.0, 1.0),
    ("adam_amsgrad", "Adam", dict(lr=0.01, betas=(0.8, 0.99), amsgrad=True, weight_decay=0.05),
     "f64", 0.0, 1.0),
    ("adamw", "AdamW", dict(lr=0.01), "f64", 0.0, 1.0),
    ("adamw_amsgrad_f32", "AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True, eps=1e-6),
     "f32", 0.0, 1.0),
    ("adamw_maximize", "AdamW", dict(lr=0.02, maximize=True), "f64", 0.0, 1.0),
    ("rmsprop", "RMSprop", dict(lr=0.01), "f64", 0.0, 1.0),
    ("rmsprop_centered", "RMSprop", dict(lr=0.01, centered=True, weight_decay=0.1), "f64", 0.0,
     1.0),
    ("rmsprop_momentum", "RMSprop", dict(lr=0.01, momentum=0.9, alpha=0.9), "f64", 0.0, 1.0),
    ("rmsprop_centered_momentum_f32", "RMSprop", dict(lr=0.01, momentum=0.5, centered=True),
     "f32", 0.0, 1.0),
    ("adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1), "f64",
     0.0, 1.0),
    ("adagrad_weight_decay_f32", "Adagrad", dict(lr=0.1, weight_decay=0.1, eps=1e-6), "f32",
     0.0, 1.0),
    ("clip_sgd_momentum", "SGD", dict(lr=0.1, momentum=0.9), "f64", 1.0, 10.0),
    ("clip_adam_f32", "Adam", dict(lr=0.01), "f32", 0.5, 3.0),
    ("clip_inactive_rmsprop", "RMSprop", dict(lr=0.01), "f64", 100.0, 1.0),
    # Eight steps: unrectified for steps 1-5, rectified (rho_t > 5) from step 6.
    ("radam", "RAdam", dict(lr=0.01), "f64", 0.0, 1.0, 8),
    ("radam_weight_decay_f32", "RAdam",
     dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), "f32", 0.0, 1.0, 8),
    # rho_inf = 3: never rectified.
    ("radam_unrectified", "RAdam", dict(lr=0.01, betas=(0.9, 0.5)), "f64", 0.0, 1.0, 8),
    ("nadam", "NAdam", dict(lr=0.01), "f64", 0.0, 1.0, 8),
    ("nadam_momentum_decay_weight_decay_f32", "NAdam",
     dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.05), "f32", 0.0, 1.0,
     8),
    ("clip_nadam", "NAdam", dict(lr=0.01, momentum_decay=0.01), "f64", 1.0, 10.0, 8),
    # Parameter groups: one parameter in a group of its own with these options, the other
    # in the default group (the keyword arguments); one case per kind.
    ("groups_sgd_momentum", "SGD", dict(lr=0.1, momentum=0.9), "f64", 0.0, 1.0, 3,
     {"b": dict(lr=0.01, weight_decay=0.1)}),
    ("groups_adam_f32", "Adam", dict(lr=0.01), "f32", 0.0, 1.0, 3,
     {"w": dict(lr=0.05, weight_decay=0.1)}),
    ("groups_adamw_clip", "AdamW", dict(lr=0.01), "f64", 1.0, 10.0, 3,
     {"w": dict(weight_decay=0.0)}),
    ("groups_rmsprop", "RMSprop", dict(lr=0.01, momentum=0.5), "f64", 0.0, 1.0, 3,
     {"w": dict(lr=0.001)}),
    ("groups_adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.01), "f64", 0.0, 1.0, 3,
     {"w": dict(lr=0.2, weight_decay=0.05)}),
    ("groups_radam", "RAdam", dict(lr=0.01), "f64", 0.0, 1.0, 8,
     {"b": dict(lr=0.003, weight_decay=0.1)}),
    ("groups_nadam", "NAdam", dict(lr=0.01), "f64", 0.0, 1.0, 8,
     {"b": dict(lr=0.002, weight_decay=0.01)}),
    # Gradient accumulation over K micro-batches: each micro-batch adds grad / K (its
    # loss divided by K) and every K-th takes the step (clipping the accumulated
    # gradient) and zeroes the gradients. Steps count micro-batches.
    ("accumulate_adam", "Adam", dict(lr=0.01), "f64", 0.0, 1.0, 6, None, 3),
    ("accumulate_groups_sgd_momentum_clip_f32", "SGD", dict(lr=0.1, momentum=0.9), "f32",
     1.0, 10.0, 6, {"w": dict(lr=0.05)}, 2),
    ("accumulate_nadam", "NAdam", dict(lr=0.01), "f64", 0.0, 1.0, 8, None, 4),
    # Momentum (β1) cycled by a schedule: a runtime input of the step.
    ("onecycle_sgd_momentum", "SGD", dict(lr=0.1, momentum=0.9), "f64", 0.0, 1.0, 8, None, 1,
     dict(kind="OneCycleLR", args=dict(max_lr=0.1, total_steps=8))),
    ("onecycle_adam_f32", "Adam", dict(lr=0.01), "f32", 0.0, 1.0, 8, None, 1,
     dict(kind="OneCycleLR", args=dict(max_lr=0.01, total_steps=8, base_momentum=0.8,
                                       max_momentum=0.95))),
    ("onecycle_rmsprop_momentum", "RMSprop", dict(lr=0.01, momentum=0.5), "f64", 0.0, 1.0, 8,
     None, 1, dict(kind="OneCycleLR", args=dict(max_lr=0.01, total_steps=10, three_phase=True))),
    ("onecycle_radam", "RAdam", dict(lr=0.01), "f64", 0.0, 1.0, 8, None, 1,
     dict(kind="OneCycleLR", args=dict(max_lr=0.01, total_steps=8, anneal_strategy="linear"))),
    ("cyclic_sgd_nesterov", "SGD", dict(lr=0.1, momentum=0.9, nesterov=True), "f64", 0.0, 1.0,
     8, None, 1, dict(kind="CyclicLR", args=dict(base_lr=0.01, max_lr=0.1, step_size_up=3))),
    ("cyclic_adam", "Adam", dict(lr=0.01), "f64", 0.0, 1.0, 8, None, 1,
     dict(kind="CyclicLR", args=dict(base_lr=0.001, max_lr=0.01, step_size_up=2,
                                     step_size_down=4, mode="triangular2"))),
    ("cyclic_adamw_f32", "AdamW", dict(lr=0.01), "f32", 0.0, 1.0, 8, None, 1,
     dict(kind="CyclicLR", args=dict(base_lr=0.001, max_lr=0.01, step_size_up=3,
                                     base_momentum=0.7, max_momentum=0.95))),
    # Gradient accumulation for the four kinds the cases above leave out, so that every
    # kind is pinned with accumulation too.
    ("accumulate_adamw_amsgrad_clip_f32", "AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True),
     "f32", 1.0, 10.0, 6, None, 3),
    ("accumulate_rmsprop_centered_momentum", "RMSprop",
     dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.05), "f64", 0.0, 1.0, 6, None, 2),
    # lr_decay counts optimizer steps, not micro-batches.
    ("accumulate_groups_adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.05), "f64", 0.0, 1.0, 9,
     {"w": dict(lr=0.2, weight_decay=0.05)}, 3),
    # Fourteen micro-batches, seven steps: rectified from the sixth step on.
    ("accumulate_radam", "RAdam", dict(lr=0.01), "f64", 0.0, 1.0, 14, None, 2),
]

SHAPES = {"w": (2, 3), "b": (3,)}


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def set_momentum(group, value):
    if "betas" in group:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def run_case(name, kind, kwargs, dtype, max_grad_norm, grad_scale, rng, steps=3, groups=None,
             accumulate=1, schedule=None):
    torch_dtype = {"f32": torch.float32, "f64": torch.float64}[dtype]
    np_dtype = {"f32": np.float32, "f64": np.float64}[dtype]
    out = os.path.join(OUT, name)
    os.makedirs(out, exist_ok=True)

    def save(fname, t, as_is=False):
        a = t.detach().numpy()
        np.save(os.path.join(out, fname), a if as_is else a.astype(np_dtype))

    params = {}
    for pname, shape in SHAPES.items():
        params[pname] = torch.tensor(rng.uniform(-1, 1, shape), dtype=torch_dtype,
                                     requires_grad=True)
        save("init.%s.npy" % pname, params[pname])
    groups = groups or {}
    param_groups = [dict(params=[p], **groups.get(pname, {})) for pname, p in params.items()]
    opt = getattr(torch.optim, kind)(param_groups, foreach=False, **kwargs)
    sched, stand_in, lrs, momenta = None, None, [], []
    if schedule:
        make = getattr(torch.optim.lr_scheduler, schedule["kind"])
        if schedule["kind"] == "CyclicLR" and "betas" in opt.defaults:
            stand_in = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=kwargs["lr"],
                                       momentum=0.9)
            sched = make(stand_in, **schedule["args"])
        else:
            sched = make(opt, **schedule["args"])
    slots = set()
    for k in range(1, steps + 1):
        if stand_in is not None:
            for group in opt.param_groups:
                group["lr"] = stand_in.param_groups[0]["lr"]
                set_momentum(group, stand_in.param_groups[0]["momentum"])
        if sched is not None:
            lrs.append(opt.param_groups[0]["lr"])
            momenta.append(momentum_of(opt.param_groups[0]))
        for pname, p in params.items():
            # Gradients shrink over the steps so that amsgrad's maximum matters.
            g = rng.uniform(-1, 1, SHAPES[pname]) * grad_scale / k
            grad = torch.tensor(g, dtype=torch_dtype)
            save("step%d.grad.%s.npy" % (k, pname), grad)
            p.grad = grad / accumulate if p.grad is None else p.grad + grad / accumulate
        if k % accumulate != 0:
            for pname, p in params.items():  # no update yet: the parameters as they were
                save("step%d.%s.npy" % (k, pname), p)
            continue
        if max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(list(params.values()), max_grad_norm)
        opt.step()
        if sched is not None:
            if stand_in is not None:
                stand_in.step()  # a step before the scheduler's, as PyTorch expects
            sched.step()
        for p in params.values():
            p.grad = None
        for pname, p in params.items():
            save("step%d.%s.npy" % (k, pname), p)
            for slot, value in opt.state[p].items():
                if slot == "step" or value is None:
                    continue
                slots.add(slot)
                # In its own dtype: NAdam's mu_product is f32 whatever the parameters'.
                save("step%d.%s.%s.npy" % (k, pname, slot), value, as_is=True)
    hyper = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs.items()}
    case = dict(name=name, kind=kind, dtype=dtype, hyper=hyper, max_grad_norm=max_grad_norm,
                params={p: list(s) for p, s in SHAPES.items()}, slots=sorted(slots),
                steps=steps)
    if groups:
        case["groups"] = groups
    if accumulate != 1:
        case["accumulate"] = accumulate
    if schedule:
        case["schedule"] = dict(schedule, lrs=lrs, momenta=momenta)
    return case


def main():
    rng = np.random.RandomState(1913)
    manifest = [run_case(*case[:6], rng, *case[6:]) for case in CASES]
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
