#pragma once
// fold-slices: a slice read by an elementwise kernel is read in place by it: the kernel
// takes the sliced value itself as its operand and its body starts with the slice (a
// *window* of that input: codegen folds it into the operand's index map, an element
// offset and the source's strides), so no copy is made. A recurrent cell's gates, the
// column slices of one GEMM output (issue #31), become one kernel reading that output:
//
//   %i = slice(%gates) {start=[0,0], stop=[4,8]} : f32[4,8]
//   %f = slice(%gates) {start=[0,8], stop=[4,16]} : f32[4,8]
//   %h = fused(%i, %f) : f32[4,8] ({
//     ^body(%0: f32[4,8], %1: f32[4,8]):
//       %t0 = mul(%0, %1) : f32[4,8]
//       return %t0
//   })
// becomes
//   %h = fused(%gates, %gates) : f32[4,8] ({
//     ^body(%0: f32[4,16], %1: f32[4,16]):
//       %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
//       %3 = slice(%1) {start=[0, 8], stop=[4, 16]} : f32[4,8]
//       %t0 = mul(%2, %3) : f32[4,8]
//       return %t0
//   })
//
// Only slices with unit steps, into kernels of kind elementwise, and only when the
// slice's source has none of the kernel's result shapes (the memory plan writes a result
// in place only over an operand of its shape, and the kernel reads its window's elements
// from elsewhere in the source); the window may broadcast (a gate column [B,1] of
// [B,k] scaling a [B,H] value). Each folded slice gets a body input of its own, read only
// by that slice (codegen's `input_window`). A slice left with no user is removed.
//
// A kernel whose result is read only through such windows is then computed inside its
// readers (passes/fold_window_producers.h, the next pass).
//
// Requires: a type-inferred graph after fuse-elementwise. Guarantees: the same values
// (the interpreter runs the body's slice as it ran the node).

#include "passes/pass.h"

namespace weft {

class FoldSlicesPass : public Pass {
 public:
  std::string_view name() const override { return "fold-slices"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft
