#include "ir/kernel_support.h"

namespace weft {

std::string_view code_target_name(CodeTarget target) {
  return target == CodeTarget::cpu ? "cpu" : "gpu";
}

std::optional<std::string_view> generated_code_gap(Op op, DType operand, DType result,
                                                   CodeTarget target) {
  const MathClass math = op_info(op).math;
  if (math == MathClass::None) return "not an elementwise op";
  if ((math == MathClass::Division || math == MathClass::Power) && !is_floating(operand)) {
    return "integer div and pow report division by zero and negative exponents at run "
           "time, which only the reference interpreter does";
  }
  if (target == CodeTarget::cpu) return std::nullopt;
  if (math == MathClass::Power) {
    return "MLIR's math.powf has no NVPTX lowering (the CUDA library's pow kernel runs it)";
  }
  if (math == MathClass::Transcendental && (operand == DType::f64 || result == DType::f64)) {
    return "f64 transcendental math needs libdevice, which the generated PTX does not link "
           "(the CUDA library's f64 kernels run the ops it has)";
  }
  return std::nullopt;
}

std::optional<std::string_view> generated_reduction_gap(DType dtype, CodeTarget /*target*/) {
  if (!is_floating(dtype)) {
    return "integer and bool reductions run on the library kernels (they accumulate in "
           "64-bit integers)";
  }
  return std::nullopt;
}

std::optional<std::string_view> generated_code_gap(Op op, const std::vector<Type>& operands,
                                                   DType result, CodeTarget target) {
  const Type& data = operands[op == Op::Select ? 1 : 0];
  return generated_code_gap(op, data.dtype, result, target);
}

namespace {

/// The dtypes a backend's composite kernel computes in, and why it has none for the rest.
struct CompositeColumn {
  std::vector<DType> kernels;  ///< Empty: no kernel of its own.
  std::string_view gap;        ///< For every dtype not in `kernels`.
};

/// One line per composite op: whether the lowering prefers its rows, then one column per
/// backend.
struct CompositeLine {
  Op op;
  bool rows;
  CompositeColumn cpu, gpu;
};

constexpr std::string_view kCpuFloats =
    "the CPU's composite kernels compute f32 and f64 (composite.cc); f16 and bf16 run "
    "through them widened (half.cc)";
constexpr std::string_view kCpuNoAttention =
    "no CPU attention kernel: the CPU lowering writes attention and attention_grad back as "
    "their primitives (passes/decompose_composites.h), and autocast keeps them f32";
constexpr std::string_view kGpuRows =
    "softmax, log_softmax and layer_norm run as generated row kernels over trailing axes in "
    "f32 and f64 (decompose-composites); the CUDA library has no kernel for other axes or "
    "dtypes";
constexpr std::string_view kGpuLosses =
    "the CUDA loss kernels take f32 or f64 values (and i32, i64 or u8 labels)";

const std::vector<CompositeLine>& composite_table() {
  static const std::vector<CompositeLine> table = {
      // op               rows   cpu                                    gpu (CUDA)
      {Op::Softmax,       true,  {{DType::f32, DType::f64}, kCpuFloats}, {{}, kGpuRows}},
      {Op::LogSoftmax,    true,  {{DType::f32, DType::f64}, kCpuFloats}, {{}, kGpuRows}},
      {Op::LayerNorm,     true,  {{DType::f32, DType::f64}, kCpuFloats}, {{}, kGpuRows}},
      {Op::CrossEntropy,  false, {{DType::f32, DType::f64}, kCpuFloats},
                                 {{DType::f32, DType::f64}, kGpuLosses}},
      {Op::Mse,           false, {{DType::f32, DType::f64}, kCpuFloats},
                                 {{DType::f32, DType::f64}, kGpuLosses}},
      {Op::Attention,     false, {{}, kCpuNoAttention},
                                 {{DType::f32},
                                  "the CUDA attention kernel takes f32 (plan_attention); the "
                                  "CUDA lowering decomposes the others"}},
      {Op::AttentionGrad, false, {{}, kCpuNoAttention},
                                 {{DType::f32},
                                  "the CUDA attention_grad kernel (FlashAttention-2's backward) "
                                  "takes f32 (plan_attention_grad); the CUDA lowering "
                                  "decomposes the others"}},
  };
  return table;
}

const CompositeLine* composite_line(Op op) {
  for (const CompositeLine& line : composite_table()) {
    if (line.op == op) return &line;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string_view> library_composite_gap(Op op, DType dtype, CodeTarget target) {
  const CompositeLine* line = composite_line(op);
  if (line == nullptr) return "not a composite op";
  const CompositeColumn& column = target == CodeTarget::cpu ? line->cpu : line->gpu;
  for (DType d : column.kernels) {
    if (d == dtype) return std::nullopt;
  }
  return column.gap;
}

bool composite_prefers_rows(Op op) {
  const CompositeLine* line = composite_line(op);
  return line != nullptr && line->rows;
}

}  // namespace weft
