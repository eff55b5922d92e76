#pragma once
// The math of the modules that other front ends emit too, as functions on emitter values
// (torch.nn.functional's role): batch and instance normalization, dropout, window pooling and the
// transposed convolution. The modules (modules/norm.cc, misc.cc, conv.cc) and the ONNX
// importer's converters (interop/onnx/ops/) both call these, so each is written once.
//
//   functional::BatchNormParams p{weight, bias, running_mean, running_var, 1e-5, 0.1};
//   ValueId y = functional::batch_norm(e, x, p, e.training()).y;
//
// The functions check nothing a caller already checks with its own message (ranks,
// channel counts); what they need of their arguments is stated on each.

#include <cstdint>
#include <vector>

#include "frontend/module.h"

namespace weft::functional {

/// Batch normalization over axis 1 of x [N, C, ...]: every parameter is [C].
struct BatchNormParams {
  ValueId weight = kNoValue, bias = kNoValue;
  ValueId running_mean = kNoValue, running_var = kNoValue;
  double eps = 1e-5;
  /// PyTorch's momentum: running = (1 - momentum)·running + momentum·batch. (ONNX's
  /// momentum m is PyTorch's 1 - m.)
  double momentum = 0.1;
  /// SyncBatchNorm: the batch statistics averaged over the ranks of a data-parallel step
  /// by all_reduce ops (BatchNormOptions::sync, frontend/modules.h).
  bool sync = false;
};

struct BatchNormResult {
  ValueId y = kNoValue;
  /// With batch statistics only: the batch mean and biased variance, [1, C, 1...]
  /// (x's rank, keepdims), and the running statistics' new values [C] as assigned.
  ValueId mean = kNoValue, var = kNoValue;
  ValueId new_running_mean = kNoValue, new_running_var = kNoValue;
};

/// The values per channel that batch statistics average over, for x of shape [N, C, ...]:
/// every dim but C's (so a batch of 0 channels has its count too, as in PyTorch).
int64_t batch_norm_count(const Shape& x);

/// `batch_stats`: y = (x - mean) / sqrt(var + eps)·weight + bias with the batch mean and
/// biased variance over every axis but 1, and (with `update_running`) the running
/// statistics assigned their PyTorch update, the variance's from the unbiased batch
/// variance (x must hold more than one value per channel). Otherwise the running
/// statistics normalize and nothing is assigned. With `p.sync` and batch statistics, the
/// mean and biased variance are all_reduce means over the ranks (each rank's x an equal
/// share of the global batch) and the unbiased correction counts the global batch (an
/// all_reduce sum of the rank's count); the gradient of all_reduce (autodiff/rules_nn.cc,
/// the same all_reduce of the cotangent) carries the statistics' gradient terms over the
/// ranks, so the backward is the global batch's too.
BatchNormResult batch_norm(Emitter& e, ValueId x, const BatchNormParams& p, bool batch_stats,
                           bool update_running = true);

/// (x - mean) / sqrt(var + eps), the mean and biased variance over `axes` (instance and
/// group normalization).
ValueId normalize(Emitter& e, ValueId x, const IntList& axes, double eps);

struct DropoutResult {
  ValueId y = kNoValue;
  /// The keep mask (x's dtype, 1 = kept); kNoValue when nothing is dropped.
  ValueId mask = kNoValue;
};

/// Training dropout: x·mask / (1 - p) with mask ~ Bernoulli(1 - p) from the graph's
/// Philox stream (a fresh key per call and per step). p in [0, 1); p = 0 is x.
DropoutResult dropout(Emitter& e, ValueId x, double p);

/// A pooling window over the spatial dims of x [N, C, *spatial] (1 to 3 of them), one
/// entry per spatial dim. `padding` is symmetric and at most half the kernel (max pads
/// with -inf, avg counts padding as zeros and divides by the full window); floor mode.
struct PoolWindow {
  bool max = true;
  std::vector<int64_t> kernel, stride, padding;
};

/// The 2-D pool ops on 1 to 3 spatial dims. 1-D: the 2-D pools on [N, C, 1, L] (a window
/// of height 1). 3-D: max and mean are separable, so [N, C, D, H, W] is pooled over (H, W)
/// as [N, C·D, H, W], then over D as [N, C, D, H'·W'] with a k×1 window; the first
/// maximum in (d, h, w) order wins, as in one 3-D window walked in that order.
ValueId pool(Emitter& e, ValueId x, const PoolWindow& w);

/// A transposed convolution (the gradient of a convolution with respect to its input) of
/// x [N, C_in, *spatial] with w [C_in, C_out/groups, *kernel] (PyTorch's and ONNX's
/// layout), one entry per spatial dim in each list. The output's size on each axis is
/// (in - 1)·stride + (kernel - 1)·dilation + 1 - pad_begin - pad_end + output_padding;
/// pads may be asymmetric or negative (a negative pad lengthens the output with zeros, as
/// an ONNX output_shape longer than the scatter does), output_padding any size >= 0 (the
/// extra positions are 0). Symmetric pads >= 0 with output_padding below the stride are
/// one conv_backward_input; otherwise the unpadded one, sliced and padded.
struct ConvTranspose {
  std::vector<int64_t> stride, dilation, pad_begin, pad_end, output_padding;
  int64_t groups = 1;
};
ValueId conv_transpose(Emitter& e, ValueId x, ValueId w, const ConvTranspose& c);

}  // namespace weft::functional
