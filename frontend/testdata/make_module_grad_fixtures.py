#!/usr/bin/python3
"""Makes the PyTorch parity fixtures, with gradients, of frontend/modules_grad_parity_test.cc.

Run from the repository root with Debian's Python, which has torch 1.13 and NumPy:

    /usr/bin/python3 frontend/testdata/make_module_grad_fixtures.py

For each case it builds the PyTorch module with a fixed seed, draws an input and a seed
tensor shaped like the output, runs the forward and the backward of sum(output * seed)
and writes frontend/testdata/modules_grad/CASE/:

    input.npy              the input (integer indices for EmbeddingBag)
    <param>.npy            every parameter and buffer, named as weft names it in a
                           single-module flow (`0.weight`, `0.running_mean`, ...)
    output.npy             the forward's result
    <param>.out.npy        buffers the forward updated (BatchNorm in training)
    seed.npy               the seed
    grad.input.npy         d sum(output * seed) / d input (float inputs only)
    grad.<param>.npy       d sum(output * seed) / d each parameter

Norm weights, biases and running statistics are randomized so the affine parts are
tested too. The C++ test builds the same module for each CASE; the two lists must agree.
"""

import os
import shutil
import zlib

import torch
from torch import nn

from make_module_fixtures import save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "modules_grad")

NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.InstanceNorm1d, nn.InstanceNorm2d,
         nn.InstanceNorm3d)


def randomize(module):
    """Replaces constant default parameters and buffers with random values."""
    if not isinstance(module, NORMS):
        return
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if name == "weight" else 0.0))
        if module.track_running_stats:
            module.running_mean.copy_(torch.randn_like(module.running_mean) * 0.3)
            module.running_var.copy_(torch.rand_like(module.running_var) + 0.5)
            module.num_batches_tracked.fill_(3)


CASES = []


def case(name, make, shape=None, x=None, train=False):
    CASES.append(dict(name=name, make=make, shape=shape, x=x, train=train))


# Normalization.
case("batch_norm1d_nc_train", lambda: nn.BatchNorm1d(3), [6, 3], train=True)
case("batch_norm1d_ncl_train", lambda: nn.BatchNorm1d(3), [4, 3, 5], train=True)
case("batch_norm1d_ncl_eval", lambda: nn.BatchNorm1d(3), [4, 3, 5])
case("batch_norm3d_train", lambda: nn.BatchNorm3d(3), [2, 3, 3, 4, 4], train=True)
case("batch_norm3d_eval", lambda: nn.BatchNorm3d(3), [2, 3, 3, 4, 4])
case("instance_norm1d", lambda: nn.InstanceNorm1d(3), [2, 3, 6])
case("instance_norm1d_affine", lambda: nn.InstanceNorm1d(3, affine=True), [2, 3, 6])
case("instance_norm2d_affine", lambda: nn.InstanceNorm2d(3, affine=True), [2, 3, 4, 5])
case("instance_norm3d", lambda: nn.InstanceNorm3d(2), [2, 2, 3, 4, 4])

# Resampling and patches.
case("pixel_shuffle2", lambda: nn.PixelShuffle(2), [2, 8, 3, 3])
case("pixel_shuffle3", lambda: nn.PixelShuffle(3), [1, 9, 2, 2])
case("pixel_unshuffle2", lambda: nn.PixelUnshuffle(2), [2, 2, 4, 6])
case("upsample_nearest1d", lambda: nn.Upsample(scale_factor=2, mode="nearest"), [2, 3, 5])
case("upsample_nearest2d_x3", lambda: nn.Upsample(scale_factor=3, mode="nearest"), [1, 2, 3, 4])
case("upsample_nearest3d", lambda: nn.Upsample(scale_factor=2, mode="nearest"), [1, 2, 2, 3, 2])
case("upsample_bilinear", lambda: nn.Upsample(scale_factor=2, mode="bilinear"), [1, 2, 3, 4])
case("upsample_bilinear_x3", lambda: nn.Upsample(scale_factor=3, mode="bilinear"), [2, 1, 4, 3])
case("upsample_bilinear_align_corners",
     lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), [1, 2, 3, 4])
case("unfold_k2", lambda: nn.Unfold(2), [2, 3, 4, 5])
case("unfold_k3_s2_p1", lambda: nn.Unfold(3, stride=2, padding=1), [1, 2, 6, 7])
case("unfold_k2_d2_p1", lambda: nn.Unfold(2, dilation=2, padding=1), [1, 2, 5, 5])
case("fold_k2", lambda: nn.Fold((4, 5), 2), [2, 12, 12])
case("fold_k3_s2_p1", lambda: nn.Fold((6, 7), 3, stride=2, padding=1), [1, 18, 12])
case("fold_k2_d2_p1", lambda: nn.Fold((5, 5), 2, dilation=2, padding=1), [1, 8, 25])

# 1-D convolutions and pools (weft's conv takes [N, C, L]; the 1-D pools are the 2-D ones on
# a unit height).
case("conv1d_basic", lambda: nn.Conv1d(3, 4, 3), [2, 3, 8])
case("conv1d_s2_p1_d2", lambda: nn.Conv1d(2, 3, 3, stride=2, padding=1, dilation=2), [2, 2, 9])
case("conv1d_groups2_nobias", lambda: nn.Conv1d(4, 6, 3, padding=1, groups=2, bias=False), [1, 4, 5])
case("conv_transpose1d_s2_p1_op1",
     lambda: nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1), [2, 4, 5])
case("conv_transpose1d_dilation_groups",
     lambda: nn.ConvTranspose1d(4, 2, 3, dilation=2, groups=2), [1, 4, 4])
case("max_pool1d", lambda: nn.MaxPool1d(2), [2, 3, 8])
case("max_pool1d_k3_s2_p1", lambda: nn.MaxPool1d(3, 2, 1), [2, 3, 9])
case("avg_pool1d", lambda: nn.AvgPool1d(2), [2, 3, 8])
case("avg_pool1d_k3_s2_p1", lambda: nn.AvgPool1d(3, 2, 1), [2, 3, 9])

# 3-D convolutions (conv over [D, H, W]) and pools (the 2-D pools over (H, W), then D).
case("conv3d_basic", lambda: nn.Conv3d(2, 3, 3), [2, 2, 4, 5, 5])
case("conv3d_s2_p1_d2_groups2",
     lambda: nn.Conv3d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), [1, 4, 6, 7, 6])
case("conv_transpose3d_s2_p1_op1",
     lambda: nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1, output_padding=1), [1, 4, 2, 3, 3])
case("conv_transpose3d_groups2_nobias",
     lambda: nn.ConvTranspose3d(4, 6, 2, groups=2, bias=False), [1, 4, 3, 2, 3])
case("max_pool3d", lambda: nn.MaxPool3d(2), [2, 2, 4, 4, 6])
case("max_pool3d_k3_s2_p1", lambda: nn.MaxPool3d(3, 2, 1), [1, 2, 5, 6, 5])
case("avg_pool3d", lambda: nn.AvgPool3d(2), [2, 2, 4, 4, 6])
case("avg_pool3d_k3_s2_p1", lambda: nn.AvgPool3d(3, 2, 1), [1, 2, 5, 6, 5])

# Embedding bags.
for mode in ("sum", "mean", "max"):
    case("embedding_bag_" + mode, lambda mode=mode: nn.EmbeddingBag(10, 4, mode=mode),
         x=lambda: torch.randint(0, 10, (3, 4)))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for c in CASES:
        torch.manual_seed(zlib.crc32(c["name"].encode()))
        m = c["make"]()
        randomize(m)
        x = c["x"]() if c["x"] else torch.randn(c["shape"])
        if x.is_floating_point():
            x.requires_grad_(True)
        m.train(c["train"])
        before = {k: v.clone() for k, v in m.state_dict().items()}
        y = m(x)
        seed = torch.randn_like(y)
        (y * seed).sum().backward()
        d = os.path.join(OUT, c["name"])
        os.makedirs(d)
        save(os.path.join(d, "input.npy"), x)
        for k, v in before.items():
            save(os.path.join(d, "0." + k + ".npy"), v)
        for k, v in m.state_dict().items():
            if not torch.equal(v, before[k]):
                save(os.path.join(d, "0." + k + ".out.npy"), v)
        save(os.path.join(d, "output.npy"), y)
        save(os.path.join(d, "seed.npy"), seed)
        if x.is_floating_point():
            save(os.path.join(d, "grad.input.npy"), x.grad)
        for k, p in m.named_parameters():
            save(os.path.join(d, "grad.0." + k + ".npy"), p.grad)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT) for f in fs)
    print(f"{len(CASES)} cases, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
