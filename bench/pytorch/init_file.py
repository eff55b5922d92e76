"""INIT.safetensors on PyTorch's side (bench/PROTOCOL.md, "Sharing the model"): the
weights under weft's names, `input.K` and `target`, loaded into a model of models.py.
run.py's timed runs (CPU) and cuda_suite.py (GPU) both load through it, so both sides of
a comparison start from the same values.
"""
import torch

import safetensors_io


class InitError(Exception):
    """What is wrong with an INIT file, for the caller to report."""


def load_init(spec, path):
    """Copies the weights under weft's names into spec.module; returns (inputs, target)
    on the CPU."""
    by_weft = {w: k for k, w in spec.mapping.items()}
    state = spec.module.state_dict()  # references the module's tensors
    seen, data = set(), {}
    for name, t in safetensors_io.iterate(path):
        if name in by_weft:
            dst = state[by_weft[name]]
            if list(dst.shape) != list(t.shape) or dst.dtype != t.dtype:
                raise InitError(f"{path}: {name}: {list(t.shape)} {t.dtype}, the model wants "
                                f"{list(dst.shape)} {dst.dtype}")
            with torch.no_grad():
                dst.copy_(t)
            seen.add(name)
        elif name.startswith("input.") or name == "target":
            data[name] = t
        else:
            raise InitError(f"{path}: unknown tensor {name} for {spec.name}")
    missing = sorted(set(by_weft) - seen)
    if missing:
        raise InitError(f"{path}: missing weights for {spec.name}: {', '.join(missing)}")
    inputs = []
    for i in range(len(spec.inputs)):
        if f"input.{i}" not in data:
            raise InitError(f"{path}: no input.{i}")
        inputs.append(data[f"input.{i}"])
    target = data.get("target")
    if target is None:
        if spec.target != "input":
            raise InitError(f"{path}: no target")
        target = inputs[0]
    return inputs, target
