#pragma once
// fold-window-producers: an elementwise kernel whose result is read only through
// windows (passes/fold_slices.h) by elementwise kernels is computed inside them, window
// by window, from windows of its own operands (slice(add(a, b)) = add(slice(a),
// slice(b))): its result is neither written nor read. A recurrent cell's gate
// pre-activations C + bias + x·W_ihᵀ ([B,4H]), read through four column windows by the
// cell's kernel ([B,H]), become four sums inside the cell (issue #31):
//
//   %pre = fused(%c, %b) : f32[4,16] ({
//     ^body(%0: f32[4,16], %1: f32[16]):
//       %t0 = add(%0, %1) : f32[4,16]
//       return %t0
//   })
//   %h = fused(%pre, %pre) : f32[4,8] ({
//     ^body(%0: f32[4,16], %1: f32[4,16]):
//       %2 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
//       %3 = slice(%1) {start=[0, 8], stop=[4, 16]} : f32[4,8]
//       %t0 = mul(%2, %3) : f32[4,8]
//       return %t0
//   })
// becomes
//   %h = fused(%c, %b, %c, %b) : f32[4,8] ({
//     ^body(%0: f32[4,16], %1: f32[16], %2: f32[4,16], %3: f32[16]):
//       %4 = slice(%0) {start=[0, 0], stop=[4, 8]} : f32[4,8]
//       %5 = slice(%1) {start=[0], stop=[8]} : f32[8]
//       %6 = add(%4, %5) : f32[4,8]
//       %7 = slice(%2) {start=[0, 8], stop=[4, 16]} : f32[4,8]
//       %8 = slice(%3) {start=[8], stop=[16]} : f32[8]
//       %9 = add(%7, %8) : f32[4,8]
//       %t0 = mul(%6, %9) : f32[4,8]
//       return %t0
//   })
//
// The producer K is folded when: (1) it is a `fused` kernel of kind elementwise with one
// result, or of kind contraction whose only results are its epilogue's last value and
// perhaps the GEMM's own result C (then the GEMM stays, as a plain contraction node, and
// its epilogue moves into the readers, which read C through windows); (2) every reader
// is an elementwise kernel reading it through an input window (codegen's input_window)
// whose shape is the reader's result shape (not broadcast: each element is computed once)
// — or K is *stored*: its result is a graph output (a loop body's ys: an LSTM's
// pre-activations saved for the backward, autodiff/scan_grad.cc) or has other readers, and
// then the window readers' windows tile it exactly along one axis (each whole along the
// others, side by side from 0 to the end), every other reader comes after the last window
// reader, and none is an assign (a carry's next value); (3) no two windows overlap (an
// element read twice would be computed twice); (4) each
// window of K's operands (a bias [4H] gives a window of the bias, a dimension of 1 or a
// scalar stays whole) keeps fold-slices' rules in its reader: the source has none of the
// reader's result shapes, and the innermost loop reads it with stride 0 or 1
// (codegen/operand_layout.h). K's own input windows compose with the readers' windows.
// Each operand window gets a body input of its own, read only by its slice.
//
// A stored K: each reader also returns K's value in each of its windows (an extra result
// per window), and K's result is remade as their concat along the tiled axis, placed after
// the last reader, which the outputs and the other readers read. fold-concats (passes/
// fold_concats.h) then has each reader store its windows straight into the concat's
// buffer — in a loop body, the ys's slot — so K is computed once, inside its readers, and
// stored once, with no kernel of its own (on the GPU: no launch). The example above with
// `return %h, %pre`:
//
//   %h, %0, %1 = fused(%c, %b, %c, %b) : f32[4,8], f32[4,8], f32[4,8] (body as above,
//                                                      returning %t0, %6, %9)
//   %2 = concat(%0, %1) {axis=1} : f32[4,16]
//   return %h, %2
//
// Requires: a type-inferred graph after fold-slices. Guarantees: the same values (the
// interpreter runs the windows and K's body per window); K is gone (a stored K: a concat
// of its readers' windows stands for it).

#include "passes/pass.h"

namespace weft {

class FoldWindowProducersPass : public Pass {
 public:
  std::string_view name() const override { return "fold-window-producers"; }
  StatusOr<bool> run(Graph& g) override;
};

}  // namespace weft
