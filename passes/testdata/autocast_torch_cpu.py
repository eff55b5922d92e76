"""Records PyTorch 1.13's CPU autocast output dtypes for weft's ops (passes/autocast_test).

For each weft op with a torch counterpart and each case of its float operands ("f32": all
f32, "bf16": all bf16, "mixed": the first bf16 and the others f32, "scalar": a bf16 tensor
and a 0-d f32 tensor), the dtype of the op's result ("error" where torch refuses the operands) under
torch.autocast("cpu", dtype=torch.bfloat16). Writes autocast_torch_cpu.txt beside this
file, one `op case dtype` line each; passes/autocast_torch_test.cc compares weft's
autocast pass against it.

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 passes/testdata/autocast_torch_cpu.py
"""
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
IDX = torch.tensor([0, 2, 1, 3])
COND = torch.rand(4, 6) > 0.5

# op: (operand shapes, function of the operands). Integer operands are made inside.
OPS = {
    "neg": ([(4, 6)], torch.neg),
    "abs": ([(4, 6)], torch.abs),
    "exp": ([(4, 6)], torch.exp),
    "log": ([(4, 6)], lambda a: torch.log(a.abs() + 1)),
    "log1p": ([(4, 6)], lambda a: torch.log1p(a.abs())),
    "sqrt": ([(4, 6)], lambda a: torch.sqrt(a.abs())),
    "rsqrt": ([(4, 6)], lambda a: torch.rsqrt(a.abs() + 1)),
    "tanh": ([(4, 6)], torch.tanh),
    "sigmoid": ([(4, 6)], torch.sigmoid),
    "relu": ([(4, 6)], torch.relu),
    "sin": ([(4, 6)], torch.sin),
    "cos": ([(4, 6)], torch.cos),
    "erf": ([(4, 6)], torch.erf),
    "sign": ([(4, 6)], torch.sign),
    "floor": ([(4, 6)], torch.floor),
    "gelu": ([(4, 6)], F.gelu),
    "softplus": ([(4, 6)], F.softplus),
    "add": ([(4, 6), (4, 6)], torch.add),
    "sub": ([(4, 6), (4, 6)], torch.sub),
    "mul": ([(4, 6), (4, 6)], torch.mul),
    "div": ([(4, 6), (4, 6)], torch.div),
    "pow": ([(4, 6), (4, 6)], lambda a, b: torch.pow(a.abs(), b)),
    "maximum": ([(4, 6), (4, 6)], torch.maximum),
    "minimum": ([(4, 6), (4, 6)], torch.minimum),
    "select": ([(4, 6), (4, 6)], lambda a, b: torch.where(COND, a, b)),
    "sum": ([(4, 6)], torch.sum),
    "mean": ([(4, 6)], torch.mean),
    "max": ([(4, 6)], torch.amax),
    "min": ([(4, 6)], torch.amin),
    "reshape": ([(4, 6)], lambda a: a.reshape(6, 4)),
    "transpose": ([(4, 6)], lambda a: a.t()),
    "broadcast_to": ([(4, 6)], lambda a: a.expand(2, 4, 6)),
    "slice": ([(4, 6)], lambda a: a[1:3]),
    "concat": ([(4, 6), (4, 6)], lambda a, b: torch.cat([a, b], 0)),
    "pad": ([(4, 6)], lambda a: F.pad(a, (1, 1, 1, 1))),
    "gather": ([(4, 6)], lambda a: torch.index_select(a, 0, IDX)),
    "matmul": ([(4, 6), (6, 5)], torch.matmul),
    "conv": ([(2, 3, 8, 8), (4, 3, 3, 3)], F.conv2d),
    "conv_backward_input": ([(2, 4, 6, 6), (4, 3, 3, 3)], F.conv_transpose2d),
    "max_pool2d": ([(2, 3, 8, 8)], lambda a: F.max_pool2d(a, 2)),
    "avg_pool2d": ([(2, 3, 8, 8)], lambda a: F.avg_pool2d(a, 2)),
    "softmax": ([(4, 6)], lambda a: F.softmax(a, -1)),
    "log_softmax": ([(4, 6)], lambda a: F.log_softmax(a, -1)),
    "layer_norm": ([(4, 6), (6,), (6,)], lambda a, w, b: F.layer_norm(a, (6,), w, b)),
    "cross_entropy": ([(4, 6)], lambda a: F.cross_entropy(a, IDX)),
    "mse": ([(4, 6), (4, 6)], F.mse_loss),
}


def result_dtype(fn, shapes, dtypes):
    args = [torch.randn(s).to(d) for s, d in zip(shapes, dtypes)]
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return NAMES[fn(*args).dtype]
    except RuntimeError:  # torch refuses the operands' dtypes
        return "error"


NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float64: "f64"}


def main():
    lines = [f"# torch {torch.__version__}, torch.autocast('cpu', dtype=torch.bfloat16)"]
    for op, (shapes, fn) in OPS.items():
        n = len(shapes)
        cases = {"f32": [torch.float32] * n, "bf16": [torch.bfloat16] * n}
        if n > 1:
            cases["mixed"] = [torch.bfloat16] + [torch.float32] * (n - 1)
        for case, dtypes in cases.items():
            lines.append(f"{op} {case} {result_dtype(fn, shapes, dtypes)}")
    # A bf16 tensor times a 0-d f32 tensor (PyTorch's scalar rule).
    scalar = lambda a, b: a * b
    lines.append(f"mul scalar {result_dtype(scalar, [(4, 6), ()], [torch.bfloat16, torch.float32])}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autocast_torch_cpu.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines) - 1} results to {path}")


if __name__ == "__main__":
    main()
