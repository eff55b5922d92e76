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
//
// The composite ops (softmax, layer_norm, the losses, attention...) have one more table
// here, with a column per backend: which of them each backend's library runs on a kernel
// of its own, in which dtypes (library_composite_gap), and which the lowering prefers as
// primitives fused into row kernels (composite_prefers_rows). The CPU library
// (cpu_library_gap), the CUDA library (cuda::library_gap) and both lowerings'
// decompose-composites (codegen/lower.h, keep_library_composites) read it; a test per
// backend (runtime/cpu:composite_table_test, runtime/cuda:composite_table_test) fails
// when a backend's kernels and its column disagree.

#include <optional>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/shape.h"

namespace weft {

/// The code weft generates for fused elementwise and reduction kernels (codegen/): MLIR
/// lowered to LLVM for the host, and to PTX for NVIDIA GPUs. Also names the backend whose
/// library kernels a composite table column describes: cpu (runtime/cpu), gpu
/// (runtime/cuda).
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

/// Why the library of `target`'s backend (runtime/cpu, runtime/cuda) has no kernel of its
/// own for composite op `op` computing on `dtype` values (its first operand's dtype), or
/// nullopt when it has one; "not a composite op" for the rest. A kernel the table states
/// may still refuse a node's shapes or other operands (the CUDA attention kernel takes
/// head dims up to 128, plan_attention; cross_entropy's labels are i32, i64 or u8): the
/// backend's own gap says so. The CPU computes f16 and bf16 through its f32 kernels,
/// widened (cpu_library_gap asks in f32 for those calls).
std::optional<std::string_view> library_composite_gap(Op op, DType dtype, CodeTarget target);

/// Whether the lowering writes composite `op` as its primitives wherever
/// decompose-composites can (f32 and f64 over trailing axes), fused with their neighbours
/// into row kernels, even on a backend whose library has a kernel for it: softmax,
/// log_softmax and layer_norm (codegen/row_kernel_bench measures the row kernels against
/// the CPU's library kernels). False for every other op.
bool composite_prefers_rows(Op op);

}  // namespace weft
