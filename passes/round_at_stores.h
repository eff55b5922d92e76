#pragma once
// round-at-stores: a fused kernel whose body computes f16/bf16 intermediates computes
// them in f32 instead, and rounds to the half dtype only where it stores: its outputs.
// Every op on half values already computes in f32 (ir/ops.def, HalfRule Widen) but rounds
// its own result; in a fused body nothing is stored between two ops, so those roundings
// cost instructions (about six integer ops per bf16 value) and precision, and buy
// nothing. PyTorch's fused CPU kernels and torch.compile's do the same: load half,
// compute in f32, round once at the store. The body itself is rewritten to say f32, so
// the reference interpreter (which runs a body node by node) and the generated kernels
// (CPU and CUDA) still agree bit for bit:
//
//   %y = fused(%x, %b) : bf16[8,4] ({
//     ^body(%0: bf16[8,4], %1: bf16[4]):
//       %t0 = add(%0, %1) : bf16[8,4]
//       %t1 = gelu(%t0) : bf16[8,4]
//       return %t1
//   })
// becomes
//   %y = fused(%x, %b) : bf16[8,4] ({
//     ^body(%0: bf16[8,4], %1: bf16[4]):
//       %2 = cast(%0) {dtype=f32} : f32[8,4]
//       %3 = cast(%1) {dtype=f32} : f32[4]
//       %t0 = add(%2, %3) : f32[8,4]
//       %t1 = gelu(%t0) : f32[8,4]
//       %4 = cast(%t1) {dtype=bf16} : bf16[8,4]
//       return %4
//   })
//
// The rules, per body node, by its op's half rule (ir/ops.def, HalfRule; the body's inputs
// are loaded as they are, widened once where a node needs them wide):
//  - Widen, an op that computes half values in f32 (arithmetic, math, compares,
//    reductions), takes its half operands wide and gives an f32 result where it gave a
//    half one. A reduction's accumulator is what it was (the kernels accumulate
//    wide in every dtype); its result is no longer rounded before its readers in the body
//    use it (softmax's and layer norm's row sums, their backward's row sums).
//  - Follow (select) picks among its operands wide.
//  - Convert, a cast, converts as it did: a cast to f32 of a value now held wide is that value (the
//    rounding it followed is gone); a cast to a half dtype still rounds (an explicit
//    conversion: autocast's cast of an f32 activation for a bf16 product keeps its
//    meaning), and its readers widen the rounded value.
//  - Kept in their dtypes: a kind="contraction" body's contraction (the library GEMM
//    writes its half product, rounded once from its f32 accumulator; the epilogue — bias,
//    GELU, residual — widens it and computes in f32), the one reduction of a
//    kind="reduction" body (its result is the kernel's store; its operand chain computes
//    in f32 and is rounded once where the reduction reads it), and Exact ops, which take
//    bits as they are (a window's slice).
//  - Each half output is rounded once, by a cast at the end of the body.
//  - A half scalar constant (a `full` of rank 0) whose value its dtype cannot hold, read
//    only by fused kernels and by them only wide, is made in f32 instead (the node's
//    dtype becomes f32, and so do those bodies' inputs): its rounding to the half dtype is
//    one more that the kernels skip. Autodiff's rules make their constants in the
//    gradient's dtype (GELU's 1/√(2π) is 0.3984375 in bf16, 0.13% low); PyTorch keeps
//    such scalars in f32 (its opmath). A kernel that reads one is rewritten even if it
//    rounds nothing else. A constant the dtype holds (0.5, 1), or that another op reads
//    too, stays as it is.
// A body none of whose ops rounds a half value that another body op reads, and that reads
// no such constant, is left as it was (an f32 step's kernels, a bias-gradient column sum,
// an optimizer update that casts its weight's copy at its store): the rewrite would
// compute the same bits.
//
// Numerics: a half model's fused kernels now round each value once where the per-op rule
// rounded every op, so their results differ from the unfused graph's by the roundings
// skipped (the reference interpreter on the unfused graph still rounds per op); the
// lowered graph says which roundings remain. Both lowerings (CPU and CUDA) run it after
// fusion (codegen/lower.h, LowerOptions::round_half_at_stores).
//
// Requires: a type-inferred graph after fuse-elementwise. Guarantees: every fused node
// keeps its operands, results, types and kind, except that a constant made in f32 is an
// f32 operand; in a rewritten body no op rounds a half value that another op reads,
// except explicit casts and the kept ops above.

#include "ir/fused_kind.h"
#include "passes/pass.h"

namespace weft {

class RoundAtStoresPass : public Pass {
 public:
  std::string_view name() const override { return "round-at-stores"; }
  StatusOr<bool> run(Graph& g) override;
};

/// Whether `body` (a `fused` node's body of kind `kind`) holds an op that rounds a half
/// value another body op reads: what round-at-stores rewrites.
bool rounds_half_intermediates(const Graph& body, FusedKind kind);

/// `body` (a `fused` node's body of kind `kind`) as round-at-stores rewrites it; a copy
/// of `body` when it does not hold such an op.
StatusOr<Graph> round_body_at_stores(const Graph& body, FusedKind kind);

}  // namespace weft
