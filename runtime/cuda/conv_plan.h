#pragma once
// The host-side decisions for the windowed ops on the GPU, kept apart from every CUDA
// call (as plan.h is for cuBLAS) so machines without a GPU test them: a convolution or
// one of its gradients as one cuDNN legacy-API call, the choice among the algorithms
// cuDNN's heuristics offer, and a pooling's window (pool_kernels.h).
//
// The three convolution ops are one cuDNN convolution (cross-correlation, NCHW, filter
// [O, C/groups, kh, kw]; NCDHW and [O, C/groups, kd, kh, kw] over three spatial dims)
// seen from three sides; the plan says which of the invocation's buffers is x, w and y:
//
//   op                           cuDNN call                      operand 0  operand 1  result
//   conv(x, w)                   cudnnConvolutionForward         x          w          y
//   conv_backward_input(gy, w)   cudnnConvolutionBackwardData    y (dy)     w          x (dx)
//   conv_backward_weight(x, gy)  cudnnConvolutionBackwardFilter  x          y (dy)     w (dw)
//
// (x's shape is input_shape for conv_backward_input, w's weight_shape for
// conv_backward_weight.) The geometry is runtime/conv_geometry.h's, as the reference's and
// the CPU's; a convolution over [W] is planned as one over [H, W] with H = 1, since cuDNN
// takes 4-D and 5-D tensors only.
//
// For f32[8,3,32,32] by f32[16,3,3,3], stride 2, padding 1: x [8,3,32,32], w [16,3,3,3],
// y [8,16,16,16] (cuDNN's output rule, 1 + (32 + 2·1 - 3) / 2 = 16, is the reference's).
//
// Precision: f32 and f64 in FMA math (the reference's arithmetic); f16 and bf16 on tensor
// cores with an f32 compute type ([Mixed precision]); f32 with TF32 when the executor
// asks (ExecutorOptions::tf32). The plan's `math` says which (plan.h, contraction_math).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/cuda/plan.h"
#include "runtime/cuda/pool_kernels.h"

namespace weft::cuda {

/// Which cuDNN call computes the op.
enum class ConvCall { forward, backward_data, backward_filter };

/// Where a tensor of the convolution lives among the invocation's buffers.
enum class ConvBuffer { operand0, operand1, result };

/// One cuDNN legacy-API convolution call. Dimensions fit cuDNN's int (plan_convolution
/// refuses larger ones).
struct ConvPlan {
  ConvCall call = ConvCall::forward;
  DType dtype = DType::f32;        ///< Data type (f32, f64, f16, bf16).
  /// pedantic (FMA math, compute type = dtype), tensor_f32 (f16/bf16 data, f32 compute
  /// type, tensor-op math) or tf32 (f32, cuDNN's default math); the plan sets
  /// contraction_math(dtype, false) and the executor asks for tf32.
  ContractionMath math = ContractionMath::pedantic;
  /// 4 (NCHW; cudnnSet*4dDescriptor and cudnnSetConvolution2dDescriptor) or 5 (NCDHW;
  /// the Nd descriptors). The arrays below hold `rank` and `rank - 2` entries.
  int rank = 4;
  int x[5] = {};                   ///< The convolution's input, N, C, [D,] H, W.
  int w[5] = {};                   ///< The filter: O, C/groups, [kd,] kh, kw.
  int y[5] = {};                   ///< The convolution's output, N, O, [D,] H, W.
  int pad[3] = {}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int groups = 1;
  ConvBuffer x_at = ConvBuffer::operand0, w_at = ConvBuffer::operand1,
             y_at = ConvBuffer::result;
  /// An empty tensor (cuDNN refuses zero dimensions): the result is all zeros (a sum over
  /// nothing) and no cuDNN call is made.
  bool zero_fill = false;

  /// "forward f32 x[8,3,32,32] w[16,3,3,3] y[8,16,16,16] stride 2x2 pad 1x1 dilation 1x1
  /// groups 1" (three numbers in stride, pad and dilation for rank 5), then " (tensor
  /// cores, f32 accumulation)" or " (tf32 tensor cores)" by `math`.
  std::string describe() const;
};

/// The cuDNN call of `node` (conv, conv_backward_input or conv_backward_weight over 1-3
/// spatial dims, semantics of runtime/reference/contraction.cc) on operands of `operands` types giving
/// `result`. Errors (naming the op and the types): shapes or attributes the reference
/// rejects, a dtype other than f32, f64, f16 or bf16, a dimension or tensor beyond cuDNN's int — for
/// those library.h's library_kind says `host`.
StatusOr<ConvPlan> plan_convolution(const Node& node, const std::vector<Type>& operands,
                                    const Type& result);

/// An algorithm cuDNN's heuristics (cudnnGet*Algorithm_v7) offer, as the choice sees it.
struct ConvAlgorithm {
  int algo = 0;                ///< cuDNN's enum value (for the caller).
  bool supported = false;      ///< Status CUDNN_STATUS_SUCCESS.
  bool deterministic = false;  ///< CUDNN_DETERMINISTIC.
  bool tensor_ops = false;     ///< Tensor-op math (cuDNN's TENSOR_OP math types).
  bool approximate = false;    ///< FFT or Winograd: not the reference's f32 arithmetic.
  size_t workspace = 0;        ///< Bytes.
};

/// The most workspace a chosen algorithm may take while one within it exists.
inline constexpr size_t kConvWorkspaceLimit = size_t{256} << 20;

/// Which of cuDNN's algorithms a convolution may take (cuda::ExecutorOptions::convolutions).
enum class ConvPolicy {
  /// Deterministic and exact first (choose_conv_algorithm's classes): every step of an
  /// executor computes the same bits, within 2e-5 of the reference's f32 (the GPU tests'
  /// tolerance).
  exact,
  /// The fastest deterministic one, FFT and Winograd included (their transforms round
  /// differently from the reference's sums of products, well within training's needs):
  /// every step of an executor still computes the same bits.
  deterministic,
  /// The fastest, nondeterministic ones included (atomic sums: the last bits differ from
  /// step to step and run to run): what PyTorch's cuDNN settings allow by default.
  fastest,
};

/// Index in `offered` (cuDNN's order: fastest first) of the algorithm to use, -1 when
/// none is usable. Tensor-op algorithms only with `tensor_ops` (a plan whose math is not
/// pedantic: f16/bf16, or f32 with TF32); for f32 and f64 never (TF32 would miss the
/// reference's f32 by far more).
/// With ConvPolicy::exact, preferred in turn: deterministic, exact and within `limit`;
/// exact within `limit` (a nondeterministic sum differs between runs in its last bits
/// only, while an FFT or Winograd result can miss the 2e-5 tolerance); deterministic
/// within `limit`; then the same classes ignoring the limit. cuDNN offers a
/// deterministic exact algorithm for each call (forward: all but FFT/Winograd; backward
/// data and filter: ALGO_1), so the later classes are for shapes those do not support.
/// ConvPolicy::deterministic: the first deterministic one within `limit`, then any
/// within it, then the same ignoring the limit. ConvPolicy::fastest: the first within
/// `limit`, else the first.
int choose_conv_algorithm(const std::vector<ConvAlgorithm>& offered,
                          size_t limit = kConvWorkspaceLimit,
                          ConvPolicy policy = ConvPolicy::exact, bool tensor_ops = false);

/// The window of `node` (max_pool2d, avg_pool2d, max_pool2d_backward,
/// avg_pool2d_backward, max_pool2d_select) on operands of `operands` types giving
/// `result`, with reference semantics (kernel, stride defaulting to kernel, padding;
/// floor mode). Errors (naming the op and types): what the reference rejects, a dtype
/// other than f32/f64.
StatusOr<PoolWindow> plan_pooling(const Node& node, const std::vector<Type>& operands,
                                  const Type& result);

/// The PoolOp of a pooling op (internal error for another op).
PoolOp pool_op(Op op);

}  // namespace weft::cuda
