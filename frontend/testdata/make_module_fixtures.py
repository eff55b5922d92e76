#!/usr/bin/python3
"""Makes the PyTorch parity fixtures of frontend/modules_parity_test.cc.

Run from the repository root with Debian's Python, which has torch 1.13 and NumPy:

    /usr/bin/python3 frontend/testdata/make_module_fixtures.py

For each case it builds the PyTorch module with a fixed seed, draws an input, runs the
forward and writes frontend/testdata/modules/CASE/:

    input.npy           the stream input (input_x2.npy: a second input, for Bilinear)
    <param>.npy         every parameter and buffer, named as weft names it in a
                        single-module flow (`0.weight`, `0.running_mean`, ...)
    output.npy          the forward's result
    <param>.out.npy     buffers the forward updated (BatchNorm2d in training)

The parameters are randomized where PyTorch's defaults are constant (norm weights and
biases, running statistics), so the affine parts are tested too. The C++ test builds
the same module for each CASE; the two lists must agree.
"""

import os
import shutil
import zlib

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "modules")


class LearnedParameter(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(shape))

    def forward(self, x):
        return x + self.weight


class RMSNorm(nn.Module):
    """PyTorch 1.13 has no nn.RMSNorm: x / sqrt(mean(x^2, trailing dims) + eps) * weight."""

    def __init__(self, shape, eps=1e-6):
        super().__init__()
        self.shape = list(shape)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(shape))

    def forward(self, x):
        dims = list(range(x.dim() - len(self.shape), x.dim()))
        return x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + self.eps) * self.weight


def activation_input():
    """Random values plus the points where activations switch branches."""
    special = torch.tensor([-30.0, -25.0, -3.0, -1e-3, 0.0, 1e-3, 2.5, 3.0, 10.0, 25.0, 30.0, -0.5])
    return torch.cat([torch.randn(56) * 4, special]).reshape(4, 17)


def randomize(module):
    """Replaces constant default parameters and buffers with random values."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name in ("weight", "bias") and isinstance(
                    module, (nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm, RMSNorm, nn.PReLU)):
                center = 1.0 if name == "weight" and not isinstance(module, nn.PReLU) else 0.0
                p.copy_(torch.randn_like(p) * 0.5 + center)
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.copy_(torch.randn_like(module.running_mean) * 0.3)
            module.running_var.copy_(torch.rand_like(module.running_var) + 0.5)
            module.num_batches_tracked.fill_(3)


CASES = []


def case(name, make, shape=None, x=None, train=False, prefix="0.", x2_shape=None):
    CASES.append(dict(name=name, make=make, shape=shape, x=x, train=train, prefix=prefix,
                      x2_shape=x2_shape))


def conv(name, cin, cout, shape, **kw):
    case(name, lambda: nn.Conv2d(cin, cout, **kw), shape)


def convt(name, cin, cout, shape, **kw):
    case(name, lambda: nn.ConvTranspose2d(cin, cout, **kw), shape)


# Convolutions.
conv("conv2d_basic", 3, 4, [2, 3, 6, 6], kernel_size=3)
conv("conv2d_stride2_pad1", 3, 4, [2, 3, 7, 7], kernel_size=3, stride=2, padding=1)
conv("conv2d_dilation2", 2, 3, [1, 2, 8, 8], kernel_size=3, dilation=2, padding=2)
conv("conv2d_groups2", 4, 6, [2, 4, 5, 5], kernel_size=3, padding=1, groups=2)
conv("conv2d_depthwise_nobias", 4, 4, [1, 4, 6, 6], kernel_size=3, stride=2, groups=4, bias=False)
conv("conv2d_k1_stride2", 3, 5, [2, 3, 5, 5], kernel_size=1, stride=2)
convt("conv_transpose2d_s2_p1", 4, 3, [2, 4, 4, 4], kernel_size=3, stride=2, padding=1)
convt("conv_transpose2d_output_padding", 4, 3, [1, 4, 3, 3], kernel_size=3, stride=2, padding=1,
      output_padding=1)
convt("conv_transpose2d_groups2", 4, 6, [2, 4, 3, 3], kernel_size=3, stride=2, padding=1,
      output_padding=1, groups=2)
convt("conv_transpose2d_dilation_groups", 4, 2, [1, 4, 4, 4], kernel_size=3, dilation=2, groups=2)
convt("conv_transpose2d_k4_nobias", 2, 3, [1, 2, 3, 3], kernel_size=4, stride=2, padding=1,
      bias=False)

# Normalization.
case("batch_norm2d_train", lambda: nn.BatchNorm2d(3), [4, 3, 5, 5], train=True)
case("batch_norm2d_eval", lambda: nn.BatchNorm2d(3), [4, 3, 5, 5])
case("layer_norm", lambda: nn.LayerNorm(8), [3, 5, 8])
case("layer_norm_2d", lambda: nn.LayerNorm([4, 5]), [2, 4, 5])
case("rms_norm", lambda: RMSNorm([8]), [3, 5, 8])
case("rms_norm_2d", lambda: RMSNorm([4, 5], eps=1e-5), [2, 4, 5])
case("group_norm", lambda: nn.GroupNorm(2, 6), [2, 6, 3, 3])
case("group_norm_1d", lambda: nn.GroupNorm(3, 6), [2, 6, 4])

# Embedding, linear layers, pooling, reshaping, dropout.
case("embedding", lambda: nn.Embedding(10, 4), x=lambda: torch.randint(0, 10, (3, 5)))
case("bilinear", lambda: nn.Bilinear(3, 4, 5), [6, 3], prefix="1.", x2_shape=[6, 4])
case("bilinear_3d", lambda: nn.Bilinear(3, 4, 2), [2, 3, 3], prefix="1.", x2_shape=[2, 3, 4])
case("learned_parameter", lambda: LearnedParameter([5, 8]), [2, 5, 8])
case("max_pool2d", lambda: nn.MaxPool2d(2), [2, 3, 6, 6])
case("max_pool2d_k3_s2_p1", lambda: nn.MaxPool2d(3, 2, 1), [2, 3, 7, 7])
case("avg_pool2d", lambda: nn.AvgPool2d(2), [2, 3, 6, 6])
case("avg_pool2d_k3_s2_p1", lambda: nn.AvgPool2d(3, 2, 1), [2, 3, 7, 7])
case("avg_pool2d_k3_s1_p1", lambda: nn.AvgPool2d(3, 1, 1), [1, 2, 5, 5])
case("adaptive_avg_pool2d_1x1", lambda: nn.AdaptiveAvgPool2d((1, 1)), [2, 3, 4, 6])
case("adaptive_avg_pool2d_2x3", lambda: nn.AdaptiveAvgPool2d((2, 3)), [2, 3, 4, 6])
case("flatten", lambda: nn.Flatten(), [2, 3, 4, 5])
case("flatten_1_2", lambda: nn.Flatten(1, 2), [2, 3, 4, 5])
case("dropout_eval", lambda: nn.Dropout(0.5), [4, 5])

# Activations.
for name, make in [
    ("identity", nn.Identity), ("relu", nn.ReLU),
    ("leaky_relu", nn.LeakyReLU), ("leaky_relu_0.2", lambda: nn.LeakyReLU(0.2)),
    ("elu", nn.ELU), ("elu_0.5", lambda: nn.ELU(0.5)),
    ("gelu", nn.GELU), ("gelu_tanh", lambda: nn.GELU(approximate="tanh")),
    ("silu", nn.SiLU), ("mish", nn.Mish), ("selu", nn.SELU),
    ("softplus", nn.Softplus), ("softplus_beta2_threshold5", lambda: nn.Softplus(2, 5)),
    ("hardswish", nn.Hardswish), ("hardsigmoid", nn.Hardsigmoid),
    ("prelu", nn.PReLU), ("sigmoid", nn.Sigmoid), ("tanh", nn.Tanh),
    ("softmax", lambda: nn.Softmax(-1)), ("softmax_axis0", lambda: nn.Softmax(0)),
    ("log_softmax", lambda: nn.LogSoftmax(-1)),
]:
    case(name, make, x=activation_input)
case("prelu_channels", lambda: nn.PReLU(3), [2, 3, 4])


def save(path, t):
    a = t.detach().numpy()
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    np.save(path, a.copy(order="C"))  # ascontiguousarray would make a 0-d array 1-d.


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for c in CASES:
        torch.manual_seed(zlib.crc32(c["name"].encode()))
        m = c["make"]()
        randomize(m)
        x = c["x"]() if c["x"] else torch.randn(c["shape"])
        inputs = [x]
        if c["x2_shape"]:
            inputs.append(torch.randn(c["x2_shape"]))
        m.train(c["train"])
        before = {k: v.clone() for k, v in m.state_dict().items()}
        with torch.no_grad():
            y = m(*inputs)
        d = os.path.join(OUT, c["name"])
        os.makedirs(d)
        save(os.path.join(d, "input.npy"), inputs[0])
        if len(inputs) > 1:
            save(os.path.join(d, "input_x2.npy"), inputs[1])
        for k, v in before.items():
            save(os.path.join(d, c["prefix"] + k + ".npy"), v)
        for k, v in m.state_dict().items():
            if not torch.equal(v, before[k]):
                save(os.path.join(d, c["prefix"] + k + ".out.npy"), v)
        save(os.path.join(d, "output.npy"), y)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT) for f in fs)
    print(f"{len(CASES)} cases, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
