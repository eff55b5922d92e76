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

}  // namespace weft
