#!/usr/bin/python3
"""Writes the PyTorch 1.13 fixtures for frontend/sequence_parity_test.cc and
frontend/losses*_test.cc: MultiheadAttention, GRUCell, LSTMCell, GRU, LSTM and the losses.

Run with Debian's Python (torch 1.13 + numpy), from the repository root:

    /usr/bin/python3 frontend/testdata/make_sequence_fixtures.py

Each case is a folder frontend/testdata/sequence/CASE/ holding
    input.npy         the stream input
    NAME.npy          each extra graph input (input({"NAME"}) in the test's flow)
    PARAM.npy         each parameter, named exactly as weft names it in the test's flow
                      (`0.in_proj_weight` for a module first in the chain, `1.weight_ih`
                      when an Identity() comes first to declare the extra inputs)
    output.npy        PyTorch's result
    seed.npy, grad.input.npy  (losses_parity's cases) d sum(output · seed) / d input
                      (for ctc, d / d the logits before log_softmax: see ctc_case)
All arrays are f32 (bool for masks, i64 for labels). The C++ tests build the same flows
and compare to 1e-5.
"""
import os
import shutil

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sequence")


def save(case, arrays):
    d = os.path.join(ROOT, case)
    os.makedirs(d, exist_ok=True)
    for name, a in arrays.items():
        if isinstance(a, torch.Tensor):
            a = a.detach().numpy()
        if a.dtype == np.float64:
            a = a.astype(np.float32)
        np.save(os.path.join(d, name + ".npy"), np.array(a, order="C"))  # keeps 0-d


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


# ---- MultiheadAttention ------------------------------------------------------------
def mha_case(case, dim, heads, batch, seq, prefix, causal=False, pad=None, packed=True,
             bias=True):
    """`pad`: per batch row, how many trailing keys are padding."""
    m = torch.nn.MultiheadAttention(dim, heads, bias=bias, batch_first=True)
    with torch.no_grad():
        # Non-zero biases exercise the bias paths (PyTorch initializes them to zero).
        if bias:
            m.in_proj_bias.copy_(0.1 * randn(3 * dim))
            m.out_proj.bias.copy_(0.1 * randn(dim))
    m.eval()
    x = randn(batch, seq, dim)
    kwargs = {}
    arrays = {"input": x}
    if causal:
        kwargs["attn_mask"] = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
    if pad is not None:
        mask = torch.zeros(batch, seq, dtype=torch.bool)
        for b, n in enumerate(pad):
            if n:
                mask[b, seq - n:] = True
        kwargs["key_padding_mask"] = mask
        arrays["mask"] = mask.numpy()
    # Parameters require grad, so PyTorch takes its composite (not the fused fast) path.
    y, _ = m(x, x, x, need_weights=False, **kwargs)
    arrays["output"] = y
    w, b = m.in_proj_weight, m.in_proj_bias
    if packed:
        arrays[prefix + "in_proj_weight"] = w
        if bias:
            arrays[prefix + "in_proj_bias"] = b
    else:
        for i, part in enumerate(["q_proj", "k_proj", "v_proj"]):
            arrays[prefix + part + ".weight"] = w[i * dim:(i + 1) * dim]
            if bias:
                arrays[prefix + part + ".bias"] = b[i * dim:(i + 1) * dim]
    arrays[prefix + "out_proj.weight"] = m.out_proj.weight
    if bias:
        arrays[prefix + "out_proj.bias"] = m.out_proj.bias
    save(case, arrays)


# ---- Recurrent cells -------------------------------------------------------------------
def cell_params(cell, prefix):
    return {prefix + n: p for n, p in cell.named_parameters()}


def gru_case():
    cell = torch.nn.GRUCell(3, 4)
    x, h = randn(2, 3), randn(2, 4)
    save("gru_cell", {"input": x, "h": h, "output": cell(x, h), **cell_params(cell, "1.")})


def lstm_step_case():
    cell = torch.nn.LSTMCell(3, 4)
    x, h, c = randn(2, 3), randn(2, 4), randn(2, 4)
    h1, c1 = cell(x, (h, c))
    save("lstm_cell", {"input": x, "h": h, "c": c, "output": torch.cat([h1, c1], -1),
                       **cell_params(cell, "1.")})


def lstm_unrolled_case():
    """Three steps of one shared cell; the state travels packed as concat([h, c], -1)."""
    cell = torch.nn.LSTMCell(3, 4)
    xs = [randn(2, 3) for _ in range(3)]
    h, c = randn(2, 4), randn(2, 4)
    s0 = torch.cat([h, c], -1)
    for x in xs:
        h, c = cell(x, (h, c))
    save("lstm_unrolled", {"input": xs[0], "x1": xs[1], "x2": xs[2], "s0": s0,
                           "output": torch.cat([h, c], -1), **cell_params(cell, "1.")})


def sequence_case(case, kind, layers, initial, last=False):
    """torch.nn.GRU / LSTM (batch_first) over a [2, 5, 3] sequence, hidden 4, at chain
    position 1; with `initial`, h0 (and c0) [layers, 2, 4] as extra inputs. Also the
    gradients of sum(output * seed) w.r.t. the input and every parameter."""
    m = (torch.nn.GRU if kind == "gru" else torch.nn.LSTM)(3, 4, num_layers=layers,
                                                            batch_first=True)
    x = randn(2, 5, 3).requires_grad_()
    arrays = {"input": x}
    state = None
    if initial:
        h0 = randn(layers, 2, 4)
        arrays["h0"] = h0
        state = h0
        if kind == "lstm":
            c0 = randn(layers, 2, 4)
            arrays["c0"] = c0
            state = (h0, c0)
    out, _ = m(x, state)
    if last:
        out = out[:, -1]
    seed = randn(*out.shape)
    (out * seed).sum().backward()
    arrays.update({"output": out, "seed": seed, "grad.input": x.grad})
    for name, p in m.named_parameters():
        # torch's weight_ih_l0 is weft's l0.weight_ih.
        base, layer = name.rsplit("_", 1)
        arrays["1." + layer + "." + base] = p
        arrays["grad.1." + layer + "." + base] = p.grad
    save(case, arrays)


# ---- Losses ----------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


def loss_case(case, prediction, target, output):
    save(case, {"input": prediction, "target": target, "output": output})


def losses():
    p, t = randn(3, 4), randn(3, 4)
    # Differences on both sides of beta.
    for r in REDUCTIONS:
        loss_case("loss_mse_" + r, p, t, F.mse_loss(p, t, reduction=r))
        loss_case("loss_l1_" + r, p, t, F.l1_loss(p, t, reduction=r))
        loss_case("loss_smooth_l1_" + r, p, t, F.smooth_l1_loss(p, t, reduction=r, beta=1.0))
    loss_case("loss_smooth_l1_beta0.5_mean", p, t, F.smooth_l1_loss(p, t, beta=0.5))
    loss_case("loss_smooth_l1_beta0_sum", p, t, F.smooth_l1_loss(p, t, beta=0.0, reduction="sum"))

    logits = 2 * randn(4, 5)
    labels = torch.tensor([0, 3, 4, 3], dtype=torch.int64)
    log_probs = F.log_softmax(randn(4, 5), dim=1)
    for r in REDUCTIONS:
        loss_case("loss_cross_entropy_" + r, logits, labels,
                  F.cross_entropy(logits, labels, reduction=r))
        loss_case("loss_cross_entropy_smooth_" + r, logits, labels,
                  F.cross_entropy(logits, labels, reduction=r, label_smoothing=0.1))
        loss_case("loss_nll_" + r, log_probs, labels, F.nll_loss(log_probs, labels, reduction=r))

    probs = torch.rand(3, 4)
    probs[0, 0], probs[0, 1], probs[1, 0] = 0.0, 1.0, 1e-30  # the -100 clamp
    y = (torch.rand(3, 4) > 0.5).float()
    y[0, 0], y[0, 1], y[1, 0] = 1.0, 0.0, 1.0
    big = 30 * randn(3, 4)  # large logits: the stable form must not overflow
    soft_y = torch.rand(3, 4)
    for r in REDUCTIONS:
        loss_case("loss_bce_" + r, probs, y, F.binary_cross_entropy(probs, y, reduction=r))
        loss_case("loss_bce_with_logits_" + r, big, soft_y,
                  F.binary_cross_entropy_with_logits(big, soft_y, reduction=r))

    kl_input = F.log_softmax(randn(3, 4), dim=1)
    kl_target = F.softmax(randn(3, 4), dim=1)
    kl_target[1, 2] = 0.0  # 0·log 0 = 0
    for r in REDUCTIONS + ["batchmean"]:
        loss_case("loss_kl_div_" + r, kl_input, kl_target,
                  F.kl_div(kl_input, kl_target, reduction=r))
    log_t = F.log_softmax(randn(3, 4), dim=1)
    loss_case("loss_kl_div_log_target_batchmean", kl_input, log_t,
              F.kl_div(kl_input, log_t, reduction="batchmean", log_target=True))


def loss_grad_case(case, fn, prediction, target):
    """A loss with its gradient: grad.input = d sum(output · seed) / d input."""
    x = prediction.clone().requires_grad_()
    out = fn(x, target)
    seed = torch.rand(out.shape)
    (out * seed).sum().backward()
    save(case, {"input": prediction, "target": target, "output": out, "seed": seed,
                "grad.input": x.grad})


def losses_parity():
    """Huber, class-weighted nll / cross_entropy and Poisson nll (issue #19), with
    gradients; drawn after every earlier case so their draws are unchanged."""
    p, t = 2 * randn(3, 4), randn(3, 4)  # differences on both sides of delta
    for r in REDUCTIONS:
        loss_grad_case("loss_huber_" + r, lambda x, y: F.huber_loss(x, y, reduction=r), p, t)
    loss_grad_case("loss_huber_delta0.5_mean",
                   lambda x, y: F.huber_loss(x, y, delta=0.5), p, t)
    loss_grad_case("loss_huber_delta2_sum",
                   lambda x, y: F.huber_loss(x, y, delta=2.0, reduction="sum"), p, t)

    logits = 2 * randn(5, 4)
    labels = torch.tensor([0, 3, 1, 3, 2], dtype=torch.int64)
    weight = torch.tensor([0.5, 2.0, 1.0, 3.0])
    log_probs = F.log_softmax(randn(5, 4), dim=1)
    for r in REDUCTIONS:
        loss_grad_case("loss_nll_weight_" + r,
                       lambda x, y: F.nll_loss(x, y, weight=weight, reduction=r), log_probs, labels)
        loss_grad_case("loss_cross_entropy_weight_" + r,
                       lambda x, y: F.cross_entropy(x, y, weight=weight, reduction=r), logits, labels)
        loss_grad_case("loss_cross_entropy_weight_smooth_" + r,
                       lambda x, y: F.cross_entropy(x, y, weight=weight, reduction=r,
                                                    label_smoothing=0.1), logits, labels)

    log_rate = randn(3, 4)
    rate = torch.rand(3, 4) + 0.1
    counts = torch.poisson(3 * torch.rand(3, 4))  # zeros, ones and counts above one
    counts[0, 0], counts[0, 1], counts[0, 2] = 0.0, 1.0, 4.0
    for r in REDUCTIONS:
        loss_grad_case("loss_poisson_nll_" + r,
                       lambda x, y: F.poisson_nll_loss(x, y, reduction=r), log_rate, counts)
    loss_grad_case("loss_poisson_nll_rate_mean",
                   lambda x, y: F.poisson_nll_loss(x, y, log_input=False), rate, counts)
    loss_grad_case("loss_poisson_nll_full_sum",
                   lambda x, y: F.poisson_nll_loss(x, y, full=True, reduction="sum"),
                   log_rate, counts)
    loss_grad_case("loss_poisson_nll_rate_full_eps_none",
                   lambda x, y: F.poisson_nll_loss(x, y, log_input=False, full=True, eps=1e-3,
                                                   reduction="none"), rate, counts)


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    """torchvision.ops.sigmoid_focal_loss's formula, written out in torch (torchvision
    is not installed here)."""
    p = torch.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def losses_focal_hinge():
    """Focal (torchvision's sigmoid_focal_loss) and HingeEmbeddingLoss, with gradients;
    drawn after losses_parity so every earlier draw is unchanged."""
    logits = 2 * randn(3, 4)
    targets = (torch.rand(3, 4) > 0.5).float()
    targets[0, 0], targets[0, 1] = 0.0, 1.0
    for r in REDUCTIONS:
        loss_grad_case("loss_focal_" + r,
                       lambda x, y: sigmoid_focal_loss(x, y, reduction=r), logits, targets)
    loss_grad_case("loss_focal_alpha0.5_gamma1_mean",
                   lambda x, y: sigmoid_focal_loss(x, y, alpha=0.5, gamma=1.0,
                                                   reduction="mean"), logits, targets)
    loss_grad_case("loss_focal_noalpha_gamma0_sum",
                   lambda x, y: sigmoid_focal_loss(x, y, alpha=-1, gamma=0.0,
                                                   reduction="sum"), logits, targets)

    x = 2 * torch.rand(3, 4)  # distances on both sides of the margin
    y = torch.where(torch.rand(3, 4) > 0.5, 1.0, -1.0)
    y[0, 0], y[0, 1] = 1.0, -1.0
    for r in REDUCTIONS:
        loss_grad_case("loss_hinge_embedding_" + r,
                       lambda a, b: F.hinge_embedding_loss(a, b, reduction=r), x, y)
    loss_grad_case("loss_hinge_embedding_margin0.5_mean",
                   lambda a, b: F.hinge_embedding_loss(a, b, margin=0.5), x, y)


def multi_loss_case(case, fn, inputs, grad_names):
    """A loss of several named inputs (the first is the stream, `input`), with its
    gradients: grad.NAME = d sum(output · seed) / d NAME for each NAME in grad_names."""
    leaves = {n: (t.clone().requires_grad_() if n in grad_names else t)
              for n, t in inputs.items()}
    out = fn(**leaves)
    seed = torch.rand(out.shape)
    (out * seed).sum().backward()
    arrays = dict(inputs)
    arrays.update({"output": out, "seed": seed})
    arrays.update({"grad." + n: leaves[n].grad for n in grad_names})
    save(case, arrays)


def losses_multi_input():
    """MarginRanking, CosineEmbedding and TripletMargin: losses of three inputs, with
    gradients w.r.t. every float input; drawn after losses_focal_hinge."""
    x1, x2 = randn(6), randn(6)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    for r in REDUCTIONS:
        multi_loss_case("loss_margin_ranking_" + r,
                        lambda input, x2, y: F.margin_ranking_loss(input, x2, y, reduction=r),
                        {"input": x1, "x2": x2, "y": y}, ["input", "x2"])
    multi_loss_case("loss_margin_ranking_margin0.5_mean",
                    lambda input, x2, y: F.margin_ranking_loss(input, x2, y, margin=0.5),
                    {"input": x1, "x2": x2, "y": y}, ["input", "x2"])

    a, b = randn(5, 4), randn(5, 4)
    b[0] = a[0] + 0.1 * b[0]  # one similar pair, cosine near 1
    cy = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0])
    for r in REDUCTIONS:
        multi_loss_case("loss_cosine_embedding_" + r,
                        lambda input, x2, y: F.cosine_embedding_loss(input, x2, y, reduction=r),
                        {"input": a, "x2": b, "y": cy}, ["input", "x2"])
    multi_loss_case("loss_cosine_embedding_margin0.2_sum",
                    lambda input, x2, y: F.cosine_embedding_loss(input, x2, y, margin=0.2,
                                                                 reduction="sum"),
                    {"input": a, "x2": b, "y": cy}, ["input", "x2"])

    anchor, pos, neg = randn(5, 4), randn(5, 4), randn(5, 4)
    pos[0] = anchor[0] + 0.1 * pos[0]  # a positive close enough to fall under the margin
    trip = {"input": anchor, "positive": pos, "negative": neg}
    names = ["input", "positive", "negative"]
    for r in REDUCTIONS:
        multi_loss_case("loss_triplet_" + r,
                        lambda input, positive, negative: F.triplet_margin_loss(
                            input, positive, negative, reduction=r), trip, names)
    multi_loss_case("loss_triplet_swap_margin2_mean",
                    lambda input, positive, negative: F.triplet_margin_loss(
                        input, positive, negative, margin=2.0, swap=True), trip, names)
    multi_loss_case("loss_triplet_p1_sum",
                    lambda input, positive, negative: F.triplet_margin_loss(
                        input, positive, negative, p=1, reduction="sum"), trip, names)


def ctc_case(case, logits, targets, input_lengths, target_lengths, **options):
    """CTC on log_softmax(logits), the logits the stream: grad.input = d sum(output · seed)
    / d logits. Not d / d log_probs: PyTorch's ctc_loss backward returns the gradient
    w.r.t. log_probs plus exp(log_probs) (it assumes a log_softmax before it, whose
    backward cancels the extra term), so only the gradient through log_softmax is
    comparable."""
    x = logits.clone().requires_grad_()
    out = F.ctc_loss(x.log_softmax(2), targets, input_lengths, target_lengths, **options)
    seed = torch.rand(out.shape)
    (out * seed).sum().backward()
    save(case, {"input": logits, "targets": targets, "input_lengths": input_lengths,
                "target_lengths": target_lengths, "output": out, "seed": seed,
                "grad.input": x.grad})


def losses_ctc():
    """ctc_loss: lengths varied within a batch (an empty target too), repeated labels that
    need the skip rule's extra blank, a blank other than 0, each reduction, and a target
    with no alignment in its frames (inf, or 0 with zero_infinity); drawn after
    losses_multi_input."""
    # Rows padded past their lengths with labels, not blanks, to show padding is ignored.
    targets = torch.tensor([[1, 1, 2, 3], [4, 5, 3, 3], [2, 2, 2, 1], [3, 4, 4, 4], [5, 1, 2, 3]])
    input_lengths = torch.tensor([8, 6, 5, 3, 4])
    target_lengths = torch.tensor([4, 2, 3, 1, 0])
    logits = randn(8, 5, 6)
    for r in REDUCTIONS:
        ctc_case("loss_ctc_" + r, logits, targets, input_lengths, target_lengths, reduction=r)
    # blank = 5 (the last class) and blank = 2: the labels avoid it.
    ctc_case("loss_ctc_blank5_mean", logits, targets.remainder(5), input_lengths,
             target_lengths, blank=5)
    mid = torch.tensor([[1, 1, 3, 4], [0, 5, 3, 3], [4, 4, 0, 1], [3, 4, 4, 4], [5, 1, 0, 3]])
    ctc_case("loss_ctc_blank2_sum", logits, mid, input_lengths, target_lengths, blank=2,
             reduction="sum")
    # Sample 1's 1, 1, 1 needs 5 frames (a blank between repeats) but has 4.
    short = torch.tensor([[2, 3, 1], [1, 1, 1], [4, 4, 2]])
    few = randn(6, 3, 5)
    short_inputs, short_lengths = torch.tensor([6, 4, 6]), torch.tensor([3, 3, 3])
    ctc_case("loss_ctc_no_alignment_none", few, short, short_inputs, short_lengths,
             reduction="none")
    ctc_case("loss_ctc_no_alignment_zero_infinity_mean", few, short, short_inputs,
             short_lengths, zero_infinity=True)
    # Longer: 60 frames, targets of up to 20 labels (runs of repeats among them).
    long_targets = torch.randint(1, 12, (3, 20))
    long_targets[:, 5:8] = long_targets[:, 4:5]
    ctc_case("loss_ctc_long_mean", randn(60, 3, 12), long_targets, torch.tensor([60, 51, 40]),
             torch.tensor([20, 17, 9]))


def main():
    torch.manual_seed(0)
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    mha_case("mha_plain", dim=8, heads=2, batch=2, seq=5, prefix="0.")
    mha_case("mha_one_head", dim=6, heads=1, batch=2, seq=4, prefix="0.")
    mha_case("mha_four_heads", dim=16, heads=4, batch=3, seq=6, prefix="0.")
    mha_case("mha_causal", dim=8, heads=2, batch=2, seq=5, prefix="0.", causal=True)
    mha_case("mha_padding", dim=8, heads=2, batch=3, seq=5, prefix="1.", pad=[0, 2, 4])
    mha_case("mha_causal_padding", dim=8, heads=4, batch=2, seq=5, prefix="1.", causal=True,
             pad=[1, 3])
    mha_case("mha_separate", dim=8, heads=2, batch=2, seq=5, prefix="0.", packed=False)
    mha_case("mha_no_bias", dim=8, heads=2, batch=2, seq=3, prefix="0.", bias=False)
    gru_case()
    lstm_step_case()
    lstm_unrolled_case()
    losses()
    # Last, so that adding them left the earlier cases' random draws as they were.
    sequence_case("gru_seq", "gru", layers=2, initial=True)
    sequence_case("gru_seq_last", "gru", layers=1, initial=False, last=True)
    sequence_case("lstm_seq", "lstm", layers=2, initial=True)
    sequence_case("lstm_seq_last", "lstm", layers=3, initial=False, last=True)
    losses_parity()
    losses_focal_hinge()
    losses_multi_input()
    losses_ctc()


if __name__ == "__main__":
    main()
