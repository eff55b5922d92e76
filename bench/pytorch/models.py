"""The ten models of the benchmark suite in idiomatic PyTorch (bench/PROTOCOL.md).

Each model is a `Spec`: the nn.Module, its inputs and target (shapes and dtypes), its loss
and learning rate, and an explicit mapping from every `state_dict()` key (parameters and
buffers: BatchNorm's running_mean / running_var / num_batches_tracked included) to the
name the weft side gives the same tensor.

weft names parameters by the structure of the FlowBuilder chain (frontend/flow.h): labels,
then the module's position in its chain (every module counts, GELU and ReLU included),
then the parameter name (`3.0.weight` is the weight of the first module of the block at
position 3). A module instance used several times is named after its first use. The
mappings below spell that out model by model; `run.py --names=...` checks them against
the weft worker's `--names-out` JSON.

Presets: `paper` is flodl's sizes; `cpu` divides widths, channels and batches by 4, the
vocabulary by 8, uses 32x32 images and sequence 64 for the transformer.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_NAMES = ["transformer", "mlp", "residual_tower", "feedback_fixed", "gated_routing",
               "iterative_refine", "gru_seq", "conv_autoenc", "lstm_seq", "convnet"]
PRESETS = ["cpu", "paper"]
STEPS_PER_EPOCH = 50


class Spec:
    """One benchmark model at one preset.

    inputs:  [(shape, dtype, kind)], kind "normal" (randn), "uniform" (U[-1, 1)) or
             ("tokens", vocab) for random integer tokens.
    target:  (shape, dtype, kind) with the same kinds, or "input" (the target is input 0).
    loss:    "mse" or "cross_entropy" (logits [..., V] against labels [...], mean).
    mapping: {state_dict key: weft name}, every key of module.state_dict() exactly once.
    """

    def __init__(self, name, module, inputs, target, loss, lr, mapping):
        self.name = name
        self.module = module
        self.inputs = inputs
        self.target = target
        self.loss = loss
        self.lr = lr
        self.mapping = mapping

    def loss_fn(self, output, target):
        if self.loss == "cross_entropy":
            return F.cross_entropy(output.reshape(-1, output.shape[-1]), target.reshape(-1))
        return F.mse_loss(output, target)

    def make_data(self, generator=None):
        """Random inputs and target, made once and reused every step."""
        def make(shape, dtype, kind):
            if isinstance(kind, tuple) and kind[0] == "tokens":
                return torch.randint(0, kind[1], shape, dtype=dtype, generator=generator)
            if kind == "uniform":
                return torch.rand(shape, dtype=dtype, generator=generator) * 2 - 1
            return torch.randn(shape, dtype=dtype, generator=generator)
        inputs = [make(*i) for i in self.inputs]
        target = inputs[0].clone() if self.target == "input" else make(*self.target)
        return inputs, target

    def param_count(self):
        return sum(p.numel() for p in self.module.parameters())


def _size(preset, cpu, paper):
    if preset not in PRESETS:
        raise ValueError(f"unknown preset '{preset}' (expected one of {PRESETS})")
    return cpu if preset == "cpu" else paper


def _seq_map(prefix_pt, prefix_weft, module):
    """state_dict keys of `module` (under prefix_pt) -> the same relative key under
    prefix_weft. Used where a PyTorch submodule and a weft sub-chain have the same layout
    (nn.Sequential positions = weft chain positions)."""
    return {f"{prefix_pt}{k}": f"{prefix_weft}{k}" for k in module.state_dict().keys()}


def _block(width):
    """Linear -> GELU -> LayerNorm: weft's `from(Linear).through(GELU).through(LayerNorm)`,
    positions 0, 1, 2 (params at 0 and 2)."""
    return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))


# ---------------------------------------------------------------------------------------
# transformer
# weft chain (bench/models.cc): 0 Embedding, 1 LearnedParameter (positions, added), then
# four encoder layers, flows labelled `layer0` .. `layer3` (a label replaces the position in
# names), each: 0 Identity, 1 also(MultiheadAttention), 2 LayerNorm (norm1), 3 also(FFN flow:
# 0 Linear, 1 GELU, 2 Linear), 4 LayerNorm (norm2); then 6 Linear to the vocabulary and
# Flatten(0, 1): logits [batch * seq, vocab] against i64 [batch * seq] targets.

class Transformer(nn.Module):
    def __init__(self, vocab, dim, seq, heads, ffn, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=ffn, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=False)
            for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        for layer in self.layers:  # self_attn is called with need_weights=False inside
            x = layer(x)
        return self.head(x)  # logits [batch, seq, vocab]; the loss flattens both sides


def transformer(preset):
    vocab, dim, seq, heads, ffn, batch = _size(preset, (1024, 128, 64, 4, 512, 8),
                                               (8192, 512, 128, 8, 2048, 32))
    layers = 4
    m = Transformer(vocab, dim, seq, heads, ffn, layers)
    mapping = {"embed.weight": "0.weight", "pos": "1.weight",
               "head.weight": f"{2 + layers}.weight", "head.bias": f"{2 + layers}.bias"}
    for i in range(layers):
        p, w = f"layers.{i}.", f"layer{i}."
        mapping.update({
            p + "self_attn.in_proj_weight": w + "1.in_proj_weight",
            p + "self_attn.in_proj_bias": w + "1.in_proj_bias",
            p + "self_attn.out_proj.weight": w + "1.out_proj.weight",
            p + "self_attn.out_proj.bias": w + "1.out_proj.bias",
            p + "norm1.weight": w + "2.weight", p + "norm1.bias": w + "2.bias",
            p + "linear1.weight": w + "3.0.weight", p + "linear1.bias": w + "3.0.bias",
            p + "linear2.weight": w + "3.2.weight", p + "linear2.bias": w + "3.2.bias",
            p + "norm2.weight": w + "4.weight", p + "norm2.bias": w + "4.bias",
        })
    return Spec("transformer", m, [((batch, seq), torch.int64, ("tokens", vocab))],
                ((batch * seq,), torch.int64, ("tokens", vocab)), "cross_entropy", 1e-4, mapping)


# ---------------------------------------------------------------------------------------
# mlp: one flat chain, 0 Linear, 1 GELU, 2 LN, 3 Linear, 4 GELU, 5 LN, ..., 12 Linear.

def mlp(preset):
    din, width, batch = _size(preset, (256, 512, 64), (1024, 2048, 256))
    layers = [nn.Linear(din, width), nn.GELU(), nn.LayerNorm(width)]
    for _ in range(3):
        layers += [nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width)]
    layers.append(nn.Linear(width, din))
    m = nn.Sequential(*layers)
    # nn.Sequential positions are weft's chain positions.
    mapping = _seq_map("", "", m)
    return Spec("mlp", m, [((batch, din), torch.float32, "normal")],
                ((batch, din), torch.float32, "normal"), "mse", 1e-3, mapping)


# ---------------------------------------------------------------------------------------
# residual_tower: 0 Linear, 1..12 also(Linear -> GELU -> LN), 13 Linear.

class ResidualTower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.blocks = nn.ModuleList(_block(width) for _ in range(depth))
        self.out = nn.Linear(width, width)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = x + block(x)
        return self.out(x)


def residual_tower(preset):
    width, batch = _size(preset, (256, 64), (1024, 256))
    depth = 12
    m = ResidualTower(width, depth)
    mapping = {"inp.weight": "0.weight", "inp.bias": "0.bias",
               "out.weight": f"{depth + 1}.weight", "out.bias": f"{depth + 1}.bias"}
    for i, block in enumerate(m.blocks):
        mapping.update(_seq_map(f"blocks.{i}.", f"{i + 1}.", block))
    return Spec("residual_tower", m, [((batch, width), torch.float32, "normal")],
                ((batch, width), torch.float32, "normal"), "mse", 1e-3, mapping)


# ---------------------------------------------------------------------------------------
# feedback_fixed / iterative_refine: 0 Linear, 1 GELU, 2 LN, 3 loop_body(Identity,
# also(block)).for_n(n), 4 Linear. The block's parameters are `3.1.*` (the loop at position
# 3, the block at position 1 of its body).

class SharedRefine(nn.Module):
    def __init__(self, width, repeats):
        super().__init__()
        self.inp = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
        self.block = _block(width)  # one module, called `repeats` times
        self.repeats = repeats
        self.out = nn.Linear(width, width)

    def forward(self, x):
        x = self.inp(x)
        for _ in range(self.repeats):
            x = x + self.block(x)
        return self.out(x)


def _shared_refine(name, width, batch, repeats):
    m = SharedRefine(width, repeats)
    mapping = _seq_map("inp.", "", m.inp)
    mapping.update(_seq_map("block.", "3.1.", m.block))
    mapping.update({"out.weight": "4.weight", "out.bias": "4.bias"})
    return Spec(name, m, [((batch, width), torch.float32, "normal")],
                ((batch, width), torch.float32, "normal"), "mse", 1e-3, mapping)


def feedback_fixed(preset):
    width, batch = _size(preset, (128, 32), (512, 128))
    return _shared_refine("feedback_fixed", width, batch, 10)


def iterative_refine(preset):
    width, batch = _size(preset, (256, 64), (1024, 256))
    return _shared_refine("iterative_refine", width, batch, 8)


# ---------------------------------------------------------------------------------------
# gated_routing: 0 Linear, 1 GELU, 2 gate (router Linear D->E with softmax; E experts
# Linear -> GELU -> LN; output sum_e softmax(router(x))[:, e] * expert_e(x)), 3 Linear.

class Gate(nn.Module):
    def __init__(self, width, experts):
        super().__init__()
        self.router = nn.Linear(width, experts)
        self.experts = nn.ModuleList(_block(width) for _ in range(experts))

    def forward(self, x):
        weights = torch.softmax(self.router(x), dim=-1)              # [B, E]
        outs = torch.stack([expert(x) for expert in self.experts], 1)  # [B, E, D]
        return (weights.unsqueeze(-1) * outs).sum(1)


class GatedRouting(nn.Module):
    def __init__(self, width, experts):
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.gate = Gate(width, experts)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        return self.out(self.gate(F.gelu(self.inp(x))))


def gated_routing(preset):
    width, batch = _size(preset, (128, 64), (512, 256))
    experts = 8
    m = GatedRouting(width, experts)
    mapping = {"inp.weight": "0.weight", "inp.bias": "0.bias",
               "gate.router.weight": "2.router.weight", "gate.router.bias": "2.router.bias",
               "out.weight": "3.weight", "out.bias": "3.bias"}
    for e, expert in enumerate(m.gate.experts):
        mapping.update(_seq_map(f"gate.experts.{e}.", f"2.experts.{e}.", expert))
    return Spec("gated_routing", m, [((batch, width), torch.float32, "normal")],
                ((batch, width), torch.float32, "normal"), "mse", 1e-3, mapping)


# ---------------------------------------------------------------------------------------
# gru_seq: GRUCell over `steps` steps from h = 0, final h -> Linear(hidden, input).

class GRUSeq(nn.Module):
    def __init__(self, din, hidden):
        super().__init__()
        self.cell = nn.GRUCell(din, hidden)
        self.head = nn.Linear(hidden, din)
        self.hidden = hidden

    def forward(self, x):  # x [batch, steps, din]
        h = x.new_zeros(x.shape[0], self.hidden)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.head(h)


def gru_seq(preset):
    din, hidden, batch = _size(preset, (64, 128, 32), (256, 512, 128))
    steps = 50
    m = GRUSeq(din, hidden)
    # weft: 0 GRU (frontend/modules.h: its layer's parameters `l0.*`), 1 Linear.
    mapping = {f"cell.{k}": f"0.l0.{k}" for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    mapping.update({"head.weight": "1.weight", "head.bias": "1.bias"})
    return Spec("gru_seq", m, [((batch, steps, din), torch.float32, "normal")],
                ((batch, din), torch.float32, "normal"), "mse", 1e-3, mapping)


# ---------------------------------------------------------------------------------------
# lstm_seq: nn.LSTM(din, hidden, num_layers=2, batch_first=True) over the steps, the last
# step's top-layer h -> Linear(hidden, din). weft: 0 LSTM (frontend/modules.h: layers
# `l0`, `l1`, PyTorch's gate layout i, f, g, o and per-layer weight shapes), 1 Linear.

class LSTMSeq(nn.Module):
    def __init__(self, din, hidden):
        super().__init__()
        self.lstm = nn.LSTM(din, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, din)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def lstm_seq(preset):
    din, hidden, batch = _size(preset, (64, 128, 32), (256, 512, 128))
    steps = 50
    m = LSTMSeq(din, hidden)
    mapping = {}
    for layer in range(2):
        for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            mapping[f"lstm.{k}_l{layer}"] = f"0.l{layer}.{k}"
    mapping.update({"head.weight": "1.weight", "head.bias": "1.bias"})
    return Spec("lstm_seq", m, [((batch, steps, din), torch.float32, "normal")],
                ((batch, din), torch.float32, "normal"), "mse", 1e-3, mapping)


# ---------------------------------------------------------------------------------------
# conv_autoenc: one flat chain. 4 x [Conv2d k4 s2 p1, BN, ReLU], 3 x [ConvTranspose2d k4 s2
# p1, BN, ReLU], ConvTranspose2d(c0 -> 3) and Tanh; positions 0..23.

def conv_autoenc(preset):
    c, batch, size = _size(preset, (16, 16, 32), (64, 64, 64))
    chans = [3, c, 2 * c, 4 * c, 8 * c]
    layers = []
    for i in range(4):
        layers += [nn.Conv2d(chans[i], chans[i + 1], 4, stride=2, padding=1),
                   nn.BatchNorm2d(chans[i + 1]), nn.ReLU()]
    for i in range(4, 1, -1):
        layers += [nn.ConvTranspose2d(chans[i], chans[i - 1], 4, stride=2, padding=1),
                   nn.BatchNorm2d(chans[i - 1]), nn.ReLU()]
    layers += [nn.ConvTranspose2d(chans[1], 3, 4, stride=2, padding=1), nn.Tanh()]
    m = nn.Sequential(*layers)
    mapping = _seq_map("", "", m)  # nn.Sequential positions are weft's chain positions
    return Spec("conv_autoenc", m, [((batch, 3, size, size), torch.float32, "uniform")],
                "input", "mse", 1e-3, mapping)


# ---------------------------------------------------------------------------------------
# convnet: one flat chain. 5 x [Conv2d k3 p1, BN, ReLU] with MaxPool2d(2) after the first
# four, global average pool (AdaptiveAvgPool2d(1) + Flatten), Linear(c_last, classes).

def convnet(preset):
    c, classes, batch, size = _size(preset, (16, 25, 32, 32), (64, 100, 128, 64))
    chans = [3, c, 2 * c, 4 * c, 8 * c, 8 * c]
    layers = []
    for i in range(5):
        layers += [nn.Conv2d(chans[i], chans[i + 1], 3, padding=1),
                   nn.BatchNorm2d(chans[i + 1]), nn.ReLU()]
        if i < 4:
            layers.append(nn.MaxPool2d(2))
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(chans[5], classes)]
    m = nn.Sequential(*layers)
    mapping = _seq_map("", "", m)  # nn.Sequential positions are weft's chain positions
    return Spec("convnet", m, [((batch, 3, size, size), torch.float32, "normal")],
                ((batch, classes), torch.float32, "normal"), "mse", 1e-3, mapping)


BUILDERS = {
    "transformer": transformer, "mlp": mlp, "residual_tower": residual_tower,
    "feedback_fixed": feedback_fixed, "gated_routing": gated_routing,
    "iterative_refine": iterative_refine, "gru_seq": gru_seq, "conv_autoenc": conv_autoenc,
    "lstm_seq": lstm_seq, "convnet": convnet,
}
assert list(BUILDERS) == MODEL_NAMES


def build(name, preset):
    if name not in BUILDERS:
        raise ValueError(f"unknown model '{name}' (expected one of {', '.join(MODEL_NAMES)})")
    spec = BUILDERS[name](preset)
    keys = set(spec.module.state_dict().keys())
    mapped = set(spec.mapping)
    if keys != mapped or len(set(spec.mapping.values())) != len(spec.mapping):
        raise AssertionError(
            f"{name}: mapping does not cover state_dict() exactly: unmapped "
            f"{sorted(keys - mapped)}, unknown {sorted(mapped - keys)}")
    return spec
