"""Fixtures of interop/onnx/training_parity_test.cc: PyTorch models exported to ONNX with
the losses of their first training steps in PyTorch (issue #33).

For each model this writes interop/onnx/testdata/parity/NAME/:
  model.onnx    the model exported from PyTorch's own initial weights (fixed seed)
  input.npy     the one batch every step trains on
  target.npy    its class labels (i64)
  eval_logits.npy  the trained model's logits for the batch in model.eval() mode (batch
                norm normalizes with its running statistics, updated by the K steps)
  losses.json   {"lr": ..., "steps": K, "parameters": N, "losses": [step 1, ..., step K],
                 "float64_losses": [...]}
                from plain SGD (no momentum, no weight decay) on mean cross-entropy in
                model.train() mode (batch norm normalizes with the batch's statistics);
                N is the number of trained parameters (elements). float64_losses are
                the same steps in float64: the fixture is refused unless they agree
                with the float32 losses to 1e-5 relative, so that a run whose rounding
                differs from PyTorch's (weft's) can be held to a tight tolerance. (With
                batch 4 the ResNet's last stage normalizes over 4 values per channel,
                and PyTorch's own float32 and float64 losses part by 7e-4 at step 3.)

The models:
  resnet       torchvision.models.resnet.ResNet with BasicBlock and layers [2, 2, 2, 2]
               (ResNet-18's structure: 7x7 stem, max pool, four stages of two basic
               blocks, 1x1-conv downsampling shortcuts, global average pool, fc) at CIFAR
               size (input [16, 3, 32, 32], 10 classes), its widths divided by 4 (16, 32,
               64, 128 instead of 64 .. 512): ResNet-18's 11.2M parameters are 44 MB of
               model.onnx, too big to check in; this one is 0.7M (2.8 MB).
  transformer  the suite's transformer (bench/pytorch/models.py's Transformer: embedding,
               learned positions, post-norm GELU encoder layers, head) at a small size;
               its logits [batch, seq, vocab] are flattened to [batch * seq, vocab] by the
               loss, as in the suite (weft: a Flatten(0, 1) after the model).

  lstm, gru, rnn  PyTorch's recurrent layers, batch_first, each with a linear head over
               the mean of its outputs over time and its last layer's final states (h, and
               c for the LSTM): nn.LSTM (2 layers, bidirectional), nn.GRU (2 layers) and
               nn.RNN (relu, bidirectional), input [4, 6, 5], 4 classes. torch.onnx.export
               writes each layer as one ONNX LSTM / GRU (linear_before_reset=1) / RNN
               (activations=["Relu"]) node, its weights sliced and concatenated from
               PyTorch's parameters (which stay the initializers, so they train).
  upsampling   a strided 3x3 convolution, F.interpolate(scale_factor=2, mode="bilinear")
               (ONNX's Resize, linear, half_pixel), a 3x3 convolution and a
               linear head; input [4, 3, 8, 8], 4 classes.

Export: opset 17 (LayerNormalization is an ONNX op from 17), do_constant_folding=False so
every initializer keeps its PyTorch name. Both models are exported in training mode
(TrainingMode.PRESERVE on a model in train()), because an EVAL export is not the model
PyTorch trains: for the ResNet, PyTorch's eval peephole folds each BatchNorm into the Conv
before it, leaving nothing to train with batch statistics; for the transformer, the
export deduplicates initializers of equal value (every zero bias, every LayerNorm weight
of ones) into one initializer read through Identity nodes, so whoever trains the ONNX
model trains those parameters tied. In training mode the ResNet's BatchNormalization
nodes have training_mode=1 (and their running-statistics outputs), and the transformer's
dropouts (p = 0) are Dropout nodes with ratio 0 and training_mode true.

Run from the repository root with the system Python (PyTorch 1.13, torchvision 0.14, onnx):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 \
      interop/onnx/testdata/make_parity_fixtures.py
Names given on the command line (resnet transformer lstm gru rnn upsampling) write only those.
With `--resnet18 DIR` it writes instead the same fixture for torchvision's own
torchvision.models.resnet18(num_classes=10), full width (44 MB, not checked in), into DIR;
training_parity_test trains it too when WEFT_PARITY_RESNET18=DIR is set:
  bazel test //interop/onnx:training_parity_test --test_env=WEFT_PARITY_RESNET18=DIR
"""

import copy
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, ResNet

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "pytorch"))
from models import Transformer  # noqa: E402  (the suite's transformer, reused as is)

OPSET = 17
STEPS = 3


class NarrowResNet(ResNet):
    """torchvision's ResNet with every width divided by `divisor`. Its __init__ is
    ResNet.__init__ with the widths as parameters (torchvision hard-codes 64 .. 512);
    the blocks (BasicBlock), _make_layer, the weight initialization and forward are
    torchvision's own."""

    def __init__(self, layers, num_classes, divisor):
        nn.Module.__init__(self)
        widths = [64 // divisor, 128 // divisor, 256 // divisor, 512 // divisor]
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = widths[0]
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(BasicBlock, widths[0], layers[0])
        self.layer2 = self._make_layer(BasicBlock, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(BasicBlock, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(BasicBlock, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * BasicBlock.expansion, num_classes)
        for m in self.modules():  # as ResNet.__init__
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)


def resnet(full=False):
    torch.manual_seed(0)
    model = (torchvision.models.resnet18(num_classes=10) if full
             else NarrowResNet([2, 2, 2, 2], num_classes=10, divisor=4))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (16,), generator=g)
    return model, x, y, 0.01, torch.onnx.TrainingMode.PRESERVE, lambda out: out


def transformer():
    torch.manual_seed(0)
    vocab, dim, seq, heads, ffn, layers, batch = 64, 32, 8, 4, 64, 2, 4
    model = Transformer(vocab, dim, seq, heads, ffn, layers)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, vocab, (batch, seq), generator=g)
    y = torch.randint(0, vocab, (batch * seq,), generator=g)
    return (model, x, y, 0.1, torch.onnx.TrainingMode.PRESERVE,
            lambda out: out.reshape(-1, out.shape[-1]))


class Recurrent(nn.Module):
    """A recurrent layer (batch_first) and a linear head over the mean of its outputs over
    time and its last layer's final states."""

    def __init__(self, rnn, classes):
        super().__init__()
        self.rnn = rnn
        directions = 2 if rnn.bidirectional else 1
        states = 2 if isinstance(rnn, nn.LSTM) else 1
        self.last = rnn.num_layers * directions - 1  # a non-negative index: a plain Gather
        self.fc = nn.Linear(rnn.hidden_size * (directions + states), classes)

    def forward(self, x):
        out, state = self.rnn(x)
        states = state if isinstance(state, tuple) else (state,)
        return self.fc(torch.cat([out.mean(1)] + [s[self.last] for s in states], 1))


def recurrent(kind):
    torch.manual_seed(0)
    features, hidden, classes = 5, 8, 4
    layer = {"lstm": lambda: nn.LSTM(features, hidden, num_layers=2, bidirectional=True, batch_first=True),
             "gru": lambda: nn.GRU(features, hidden, num_layers=2, batch_first=True),
             "rnn": lambda: nn.RNN(features, hidden, nonlinearity="relu", bidirectional=True,
                                   batch_first=True)}[kind]()
    model = Recurrent(layer, classes)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 6, features, generator=g)
    y = torch.randint(0, classes, (4,), generator=g)
    return model, x, y, 0.1, torch.onnx.TrainingMode.PRESERVE, lambda out: out


class Upsampling(nn.Module):
    """A strided convolution, bilinear upsampling back to the input's size (as U-Nets' and
    FPNs' decoders do), a convolution and a linear head."""

    def __init__(self, classes):
        super().__init__()
        self.down = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.mix = nn.Conv2d(4, 2, 3, padding=1)
        self.fc = nn.Linear(2 * 8 * 8, classes)

    def forward(self, x):
        h = F.interpolate(F.relu(self.down(x)), scale_factor=2, mode="bilinear",
                          align_corners=False)
        return self.fc(torch.flatten(F.relu(self.mix(h)), 1))


def upsampling():
    torch.manual_seed(0)
    model = Upsampling(4)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 8, 8, generator=g)
    y = torch.randint(0, 4, (4,), generator=g)
    return model, x, y, 0.1, torch.onnx.TrainingMode.PRESERVE, lambda out: out


def train(model, x, y, lr, flatten):
    """STEPS steps of plain SGD on mean cross-entropy; the loss of each. `model` is
    trained in place."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(flatten(model(x)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def write(out, model, x, y, lr, mode, flatten):
    name = os.path.basename(out)
    os.makedirs(out, exist_ok=True)
    model.train()
    # Exporting traces a forward pass, which in train mode moves batch norm's running
    # statistics, and the file holds the moved ones: the model trained below starts from
    # the exported copy, so that its running statistics start as the file's.
    exported = copy.deepcopy(model)
    torch.onnx.export(exported, (x,), os.path.join(out, "model.onnx"), opset_version=OPSET,
                      training=mode, do_constant_folding=False, input_names=["input"],
                      output_names=["logits"])
    np.save(os.path.join(out, "input.npy"), x.numpy())
    np.save(os.path.join(out, "target.npy"), y.numpy())

    params = sum(p.numel() for p in model.parameters())
    model = exported
    trained = copy.deepcopy(model)
    losses = train(trained, x, y, lr, flatten)
    trained.eval()
    with torch.no_grad():
        np.save(os.path.join(out, "eval_logits.npy"), flatten(trained(x)).numpy())
    float64_losses = train(copy.deepcopy(model).double(), x.double() if x.is_floating_point() else x,
                           y, lr, flatten)
    for k, (a, b) in enumerate(zip(losses, float64_losses)):
        if abs(a - b) > 1e-5 * abs(b):
            sys.exit(f"{name}: step {k + 1}: float32 loss {a} and float64 loss {b} part by more "
                     "than 1e-5 relative: the fixture is too ill-conditioned to compare with")
    with open(os.path.join(out, "losses.json"), "w") as f:
        json.dump({"lr": lr, "steps": STEPS, "parameters": params, "losses": losses,
                   "float64_losses": float64_losses}, f, indent=2)
        f.write("\n")
    size = os.path.getsize(os.path.join(out, "model.onnx"))
    print(f"{name}: {params} parameters, model.onnx {size} bytes, losses {losses}")


def main():
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}")
    if len(sys.argv) == 3 and sys.argv[1] == "--resnet18":
        write(sys.argv[2], *resnet(full=True))
        return
    models = {"resnet": resnet, "transformer": transformer, "lstm": lambda: recurrent("lstm"),
              "gru": lambda: recurrent("gru"), "rnn": lambda: recurrent("rnn"),
              "upsampling": upsampling}
    names = sys.argv[1:] or list(models)
    if any(name not in models for name in names):
        sys.exit("usage: make_parity_fixtures.py [--resnet18 DIR | NAME...], NAME among " + " ".join(models))
    for name in names:
        write(os.path.join(HERE, "parity", name), *models[name]())


if __name__ == "__main__":
    main()
