"""Writes mlp.onnx: a 784-128-128-10 MLP exported from PyTorch with seeded weights, the
model of //examples/fashion_mnist:train_onnx (a weft_binary whose model is an ONNX file).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 examples/fashion_mnist/make_onnx_mlp.py
"""
import os

import torch

torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Linear(784, 128), torch.nn.ReLU(),
    torch.nn.Linear(128, 128), torch.nn.ReLU(),
    torch.nn.Linear(128, 10))
net.eval()
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp.onnx")
torch.onnx.export(net, torch.zeros(1, 784), out, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13,
                  do_constant_folding=False)
print("wrote", out, os.path.getsize(out), "bytes")
