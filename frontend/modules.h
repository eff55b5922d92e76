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

// ---- Convolutions (frontend/modules/conv.cc). NCHW input, OIHW weight.
struct ConvOptions {
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  int64_t output_padding = 0;  ///< ConvTranspose2d only.
};
ModulePtr Conv2d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});
/// The gradient of a convolution w.r.t. its input; weight [in, out/groups, kh, kw] as in
/// PyTorch.
ModulePtr ConvTranspose2d(int64_t in_channels, int64_t out_channels, ConvOptions options = {});

// ---- Normalization (frontend/modules/norm.cc)
/// Training: normalizes with the batch statistics and writes running_mean/running_var
/// (state, momentum, unbiased variance) through assign. Eval: uses the running ones.
ModulePtr BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
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
/// Output [N, C, out_h, out_w]; the input's spatial dims must divide evenly.
ModulePtr AdaptiveAvgPool2d(int64_t out_h, int64_t out_w);
/// Flattens dims start_dim..end_dim into one (PyTorch's nn.Flatten defaults: 1, -1).
ModulePtr Flatten(int64_t start_dim = 1, int64_t end_dim = -1);

// ---- Attention and recurrent cells (frontend/modules/attention.cc, recurrent.cc)
struct AttentionOptions {
  bool bias = true;
  bool causal = false;           ///< Mask future positions.
  bool key_padding_mask = false; ///< A bool [batch, seq] input (true = padding) via uses.
  bool packed_qkv = true;        ///< One in_proj [3·dim, dim] (PyTorch's layout) or q/k/v_proj.
  double dropout = 0;            ///< On the attention weights, in training.
};
/// Batch-first self-attention: [batch, seq, dim] -> [batch, seq, dim].
ModulePtr MultiheadAttention(int64_t embed_dim, int64_t num_heads, AttentionOptions options = {});
/// One step: inputs (x [batch, in], h [batch, hidden]) -> h'. PyTorch's gate layout.
ModulePtr GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
/// One step: inputs (x, h, c) -> concat([h', c'], axis -1) ([batch, 2·hidden]); split
/// it with LSTMState / LSTMCellState helpers. PyTorch's gate layout (i, f, g, o).
ModulePtr LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);

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
