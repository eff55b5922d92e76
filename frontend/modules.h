#pragma once
// weft's module library. Each function returns a new module instance (a ModulePtr);
// using one instance in several places shares its parameters. Layouts and default
// initializations follow PyTorch 1.13 (a Linear weight is [out, in]), so weights move
// between the two unchanged; parameter names are PyTorch's (`weight`, `bias`,
// `running_mean`, ...).
//
//   auto block = FlowBuilder::from(Linear(512, 2048)).through(GELU()).through(Linear(2048, 512));

#include <cstdint>
#include <vector>

#include "frontend/module.h"

namespace weft {

// ---- Linear layers (frontend/modules/linear.cc)
/// y = x·Wᵀ + b over the last axis. W: [out, in], b: [out].
ModulePtr Linear(int64_t in_features, int64_t out_features, bool bias = true);
/// y = x1ᵀ·A·x2 + b, two inputs (the stream and one value from uses). A: [out, in1, in2].
ModulePtr Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features,
                   bool bias = true);
/// A learned tensor of `shape` added to the stream (learned positional embeddings):
/// y = x + p, broadcasting. Parameter `weight`, initialized N(0, 1) unless given.
ModulePtr LearnedParameter(std::vector<int64_t> shape, Initializer init = Initializer::normal(0, 1));

// ---- Convolutions (frontend/modules/conv.cc). Channels-first input: NCL, NCHW or NCDHW;
// weight [out, in/groups, *kernel] (transposed: [in, out/groups, *kernel]) as in PyTorch.
// All emit the one `conv` op (or `conv_backward_input`), over 1, 2 or 3 spatial dims.
struct ConvOptions {
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  int64_t output_padding = 0;  ///< Transposed convolutions only.
};
/// [N, C, L] -> [N, out, L'], weight [out, in/groups, k].
ModulePtr Conv1d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});
ModulePtr Conv2d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});
/// [N, C, D, H, W] -> [N, out, D', H', W'], weight [out, in/groups, k, k, k].
ModulePtr Conv3d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});
/// The gradient of a convolution w.r.t. its input; weight [in, out/groups, *kernel] as in
/// PyTorch.
ModulePtr ConvTranspose1d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});
ModulePtr ConvTranspose2d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});
ModulePtr ConvTranspose3d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});

// ---- Normalization (frontend/modules/norm.cc)
/// Training: normalizes with the batch statistics and writes running_mean/running_var
/// (state, momentum, unbiased variance) through assign. Eval: uses the running ones.
ModulePtr BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
/// BatchNorm2d's rule on [N, C] or [N, C, L] (statistics over N, or N and L).
ModulePtr BatchNorm1d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
/// BatchNorm2d's rule on [N, C, D, H, W].
ModulePtr BatchNorm3d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
/// Batch norm's options, for `BatchNorm2d(64, {.sync = true})`.
struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  /// SyncBatchNorm (PyTorch's nn.SyncBatchNorm): in training the batch statistics are
  /// those of the global batch of a data-parallel step (TrainOptions::bind.communicator), the
  /// rank's mean and biased variance averaged over the ranks by `all_reduce` ops in the
  /// step (every rank holds an equal share of the batch, as collective::shard_batch
  /// cuts it), so the normalization, its gradient and the running statistics are those
  /// of one process on the global batch; every rank's running statistics stay equal.
  /// In one process the all_reduce ops change nothing: the step is bitwise sync off's.
  /// Eval is unchanged (running statistics, no communication).
  bool sync = false;
};
ModulePtr BatchNorm1d(int64_t channels, BatchNormOptions options);
ModulePtr BatchNorm2d(int64_t channels, BatchNormOptions options);
ModulePtr BatchNorm3d(int64_t channels, BatchNormOptions options);
/// Each sample's channels normalized over their spatial dims (biased variance); with
/// `affine` a per-channel `weight` (ones) and `bias` (zeros). Input [N, C, L] (1d),
/// [N, C, H, W] (2d), [N, C, D, H, W] (3d). No running statistics (PyTorch's default).
ModulePtr InstanceNorm1d(int64_t channels, double eps = 1e-5, bool affine = false);
ModulePtr InstanceNorm2d(int64_t channels, double eps = 1e-5, bool affine = false);
ModulePtr InstanceNorm3d(int64_t channels, double eps = 1e-5, bool affine = false);
/// Over the trailing dims `normalized_shape`; weight ones, bias zeros.
ModulePtr LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                    bool elementwise_affine = true);
ModulePtr LayerNorm(int64_t normalized_size, double eps = 1e-5);
/// x / sqrt(mean(x², trailing dims) + eps) · weight.
ModulePtr RMSNorm(std::vector<int64_t> normalized_shape, double eps = 1e-6);
ModulePtr GroupNorm(int64_t groups, int64_t channels, double eps = 1e-5);

// ---- Embedding, dropout, pooling, reshaping (frontend/modules/misc.cc)
/// i64 indices [...] -> [..., dim]; weight [num, dim] ~ N(0, 1).
ModulePtr Embedding(int64_t num_embeddings, int64_t embedding_dim);
/// Training: zeroes each element with probability p and scales the rest by 1/(1-p),
/// from the graph's Philox stream. Eval: identity.
ModulePtr Dropout(double p = 0.5);
ModulePtr MaxPool2d(int64_t kernel, int64_t stride = 0 /* = kernel */, int64_t padding = 0);
ModulePtr AvgPool2d(int64_t kernel, int64_t stride = 0 /* = kernel */, int64_t padding = 0);
/// The 2-D pools on [N, C, L] read as [N, C, 1, L] (a window of height 1).
ModulePtr MaxPool1d(int64_t kernel, int64_t stride = 0 /* = kernel */, int64_t padding = 0);
ModulePtr AvgPool1d(int64_t kernel, int64_t stride = 0 /* = kernel */, int64_t padding = 0);
/// [N, C, D, H, W] with a k×k×k window: the 2-D pools over (H, W), then over D (max and
/// mean are separable), equal to PyTorch's MaxPool3d/AvgPool3d (count_include_pad).
ModulePtr MaxPool3d(int64_t kernel, int64_t stride = 0 /* = kernel */, int64_t padding = 0);
ModulePtr AvgPool3d(int64_t kernel, int64_t stride = 0 /* = kernel */, int64_t padding = 0);
/// Output [N, C, out_h, out_w]; the input's spatial dims must divide evenly.
ModulePtr AdaptiveAvgPool2d(int64_t out_h, int64_t out_w);
/// Fixed-size bags: i64/i32 indices [B, L] -> [B, dim], the bag's rows of `weight`
/// [num, dim] ~ N(0, 1) reduced by `mode` (PyTorch's nn.EmbeddingBag on 2-D input).
enum class BagMode { sum, mean, max };
ModulePtr EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, BagMode mode = BagMode::mean);
/// Flattens dims start_dim..end_dim into one (PyTorch's nn.Flatten defaults: 1, -1).
ModulePtr Flatten(int64_t start_dim = 1, int64_t end_dim = -1);

// ---- Resampling and patches (frontend/modules/resample.cc)
/// [N, C·r², H, W] -> [N, C, H·r, W·r], as torch.nn.PixelShuffle.
ModulePtr PixelShuffle(int64_t upscale_factor);
/// [N, C, H·r, W·r] -> [N, C·r², H, W], the inverse.
ModulePtr PixelUnshuffle(int64_t downscale_factor);
enum class UpsampleMode { nearest, bilinear };
struct UpsampleOptions {
  int64_t scale_factor = 2;  ///< An integer factor, the same on every spatial axis.
  UpsampleMode mode = UpsampleMode::nearest;
  bool align_corners = false;  ///< Bilinear only, as in PyTorch.
};
/// torch.nn.Upsample(scale_factor=s, mode=...): nearest on [N, C, L], [N, C, H, W] or
/// [N, C, D, H, W]; bilinear on [N, C, H, W].
ModulePtr Upsample(UpsampleOptions options = {});
/// Square patches, as torch.nn.Unfold / Fold with int arguments.
struct UnfoldOptions {
  int64_t kernel = 2;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
};
/// im2col: [N, C, H, W] -> [N, C·k², L], L patch positions in row-major order.
ModulePtr Unfold(UnfoldOptions options = {});
/// col2im: [N, C·k², L] -> [N, C, height, width], overlapping values summed.
ModulePtr Fold(int64_t height, int64_t width, UnfoldOptions options = {});

// ---- Attention and recurrent cells (frontend/modules/attention.cc, recurrent.cc)
struct AttentionOptions {
  bool bias = true;              ///< in_proj_bias and out_proj.bias (PyTorch: both or none).
  bool causal = false;           ///< Query i sees keys 0..i only (-inf above the diagonal).
  bool key_padding_mask = false; ///< A second input, bool [batch, seq] (true = padding) via uses.
  bool packed_qkv = true;        ///< One in_proj [3·dim, dim] (PyTorch's layout) or q/k/v_proj.
  double dropout = 0;            ///< On the attention weights, in training; off in eval.
};
/// Batch-first self-attention: [batch, seq, dim] -> [batch, seq, dim], PyTorch's
/// nn.MultiheadAttention(dim, heads, batch_first=True) called as attn(x, x, x).
/// Parameters (PyTorch's names, so state dicts map directly):
///   packed_qkv: `in_proj_weight` [3·dim, dim] (q, k, v rows), `in_proj_bias` [3·dim];
///   separate:   `q_proj.weight`, `k_proj.weight`, `v_proj.weight` [dim, dim] and
///               `q_proj.bias`, ... [dim] (PyTorch's `q_proj_weight` etc. exist only for
///               kdim != dim; these are the rows of in_proj_weight, split);
///   both:       `out_proj.weight` [dim, dim], `out_proj.bias` [dim].
/// Init as PyTorch: projections xavier_uniform (each matrix on its own when separate),
/// out_proj.weight as Linear's, biases zero. embed_dim must divide by num_heads. With
/// `key_padding_mask` the module takes the stream and the mask:
///   FlowBuilder::from(Identity()).input({"mask"})
///       .through(MultiheadAttention(64, 4, {.key_padding_mask = true})).uses({"mask"})
/// A query whose keys are all masked gets NaN, as in PyTorch.
ModulePtr MultiheadAttention(int64_t embed_dim, int64_t num_heads, AttentionOptions options = {});
/// One GRU step, torch.nn.GRUCell: inputs (x [batch, in], h [batch, hidden] from uses)
/// -> h'. Gates r, z, n; parameters `weight_ih` [3·hidden, in], `weight_hh` [3·hidden,
/// hidden], `bias_ih`, `bias_hh` [3·hidden], all U(±1/sqrt(hidden)).
ModulePtr GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
/// One LSTM step, torch.nn.LSTMCell (gates i, f, g, o; `weight_ih` [4·hidden, in],
/// `weight_hh` [4·hidden, hidden], `bias_ih`, `bias_hh`, all U(±1/sqrt(hidden))).
/// A module has one output, so the cell returns the packed state
/// s' = concat([h', c'], -1) [batch, 2·hidden]. It takes x as the stream and, from uses,
/// either the packed state s [batch, 2·hidden] or h and c [batch, hidden] each. Taking
/// and returning s makes the cell a state -> state map: one instance chains step after
/// step (sharing its parameters) with a single carried value. LSTMHidden / LSTMCellState
/// extract h and c from s:
///   auto cell = LSTMCell(8, 16);
///   FlowBuilder::from(Identity()).input({"s0"})      // stream x [batch, 8], s0 [batch, 32]
///       .through(cell).uses({"s0"})                  // s1 = concat([h1, c1], -1)
///       .through(LSTMHidden(16));                    // h1
ModulePtr LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
/// Options of the sequence modules GRU and LSTM.
struct RecurrentOptions {
  int64_t layers = 1;
  bool bias = true;
  /// Only the top layer's state after the last step [batch, hidden] instead of the whole
  /// output sequence [batch, T, hidden].
  bool last = false;
};
/// torch.nn.GRU(batch_first=True): x [batch, T, input_size] -> the top layer's hidden
/// state at every step [batch, T, hidden_size] (or, with `last`, after the last step).
/// Layer l reads layer l-1's outputs. The initial state h0 [layers, batch, hidden] comes
/// from uses(...), else zeros. Each layer is one loop over time (a `scan` node, whose
/// gradient is a reverse loop), with x·W_ihᵀ for every step computed before it as one
/// matrix product. Parameters per layer `l0.weight_ih`, `l0.weight_hh`, `l0.bias_ih`,
/// `l0.bias_hh`, ... (PyTorch's `weight_ih_l0`), U(±1/sqrt(hidden)) as in PyTorch.
ModulePtr GRU(int64_t input_size, int64_t hidden_size, RecurrentOptions options = {});
/// torch.nn.LSTM(batch_first=True), as GRU; the initial states h0 and c0 [layers, batch,
/// hidden] come from uses(...) (both or neither), else zeros.
ModulePtr LSTM(int64_t input_size, int64_t hidden_size, RecurrentOptions options = {});
/// h from a packed LSTM state [..., 2·hidden]: its first `hidden_size` features.
ModulePtr LSTMHidden(int64_t hidden_size);
/// c from a packed LSTM state [..., 2·hidden]: its last `hidden_size` features.
ModulePtr LSTMCellState(int64_t hidden_size);

// ---- Activations (frontend/modules/activation.cc)
ModulePtr Identity();
ModulePtr ReLU();
ModulePtr LeakyReLU(double negative_slope = 0.01);
ModulePtr ELU(double alpha = 1.0);
ModulePtr GELU(bool tanh_approximation = false);
ModulePtr SiLU();
ModulePtr Mish();
ModulePtr SELU();
ModulePtr Softplus(double beta = 1.0, double threshold = 20.0);
ModulePtr Hardswish();
ModulePtr Hardsigmoid();
/// Learned slope, `num_parameters` of them (1, or one per channel on axis 1), init 0.25.
ModulePtr PReLU(int64_t num_parameters = 1, double init = 0.25);
ModulePtr Sigmoid();
ModulePtr Tanh();
ModulePtr Softmax(int64_t axis = -1);
ModulePtr LogSoftmax(int64_t axis = -1);

}  // namespace weft
