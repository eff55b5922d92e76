#pragma once
// Which dtypes weft's generated kernels compute each elementwise op in: the op table's
// facts per backend, read from an op's math class (ops.def's last column, MathClass) and
// never from a list of op names. codegen's CPU and GPU emitters ask it before they emit
// an op, and the CUDA library (runtime/cuda/library.h) asks it which ops its own kernels
// must cover (what the GPU's generated code lacks).
//
//   // codegen/emit_gpu.cc: may a fused GPU kernel compute this exp?
//   if (auto gap = generated_code_gap(Op::Exp, DType::f64, DType::f64, CodeTarget::gpu))
//     ...  // *gap: "f64 transcendental math needs libdevice ..."; the library runs it
//
// A gap always says why, so the per-backend completeness test
// (codegen:kernel_coverage_test) can tell a stated limitation from a kernel someone forgot.

#include <optional>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/shape.h"

namespace weft {

/// The code weft generates for fused elementwise and reduction kernels (codegen/): MLIR
/// lowered to LLVM for the host, and to PTX for NVIDIA GPUs.
enum class CodeTarget { cpu, gpu };

/// "cpu", "gpu".
std::string_view code_target_name(CodeTarget target);

/// Why the code weft generates for `target` does not compute elementwise op `op` whose
/// (first data) operand has dtype `operand` and whose result has dtype `result` — for
/// select the branches' dtype, for cast the source dtype — or nullopt when it does. The
/// types are a well-typed node's: its shape rule accepted them.
std::optional<std::string_view> generated_code_gap(Op op, DType operand, DType result,
                                                   CodeTarget target);

/// Why the code weft generates for `target` does not compute a float reduction (sum,
/// mean, max, min) of a `dtype` operand into a `dtype` result — one that ends a fused
/// reduction or row body — or nullopt when it does (f32, f64, f16 and bf16 on both
/// targets; halves accumulated as the f32 kernels do and rounded once at the end).
std::optional<std::string_view> generated_reduction_gap(DType dtype, CodeTarget target);

/// generated_code_gap for a node of `op` on operands of `operands` types giving `result`:
/// the data operand is select's second (its first is the bool condition), else the first.
std::optional<std::string_view> generated_code_gap(Op op, const std::vector<Type>& operands,
                                                   DType result, CodeTarget target);

}  // namespace weft
