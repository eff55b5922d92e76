#pragma once
// A generated elementwise kernel's body (runtime/program.h, GeneratedKernel::body) as an
// elementwise phase of a persistent loop (recurrent_program.h): its iteration space in two
// dimensions and its register program. recurrent_plan.h's planner asks both for each
// generated kernel and each contraction's epilogue in a loop body.
//
//   graph @k(%g: f32[4,32], %c: f32[4,8]) {      // the gates [4, 4H] read through a window
//     %i = slice(%g) {start=[0,0], stop=[4,8]}
//     %s = sigmoid(%i)
//     %y = mul(%s, %c)
//     return %y
//   }
//   cell_space:   4 rows x 8 cols; operand 0 at offset 0, row stride 32, col stride 1;
//                 operand 1 and the result row stride 8, col stride 1
//   cell_program: r0 = load operand 0; r1 = sigmoid r0; r0 = load operand 1;
//                 r2 = mul r1 r0; store result 0 = r2
//
// The space is ir/kernel_space.h's collapse_space, the one codegen's emitters read: size-1
// dimensions dropped, adjacent ones merged where every operand and result is contiguous or
// broadcast across both; a body input read through a leading `slice` (an input window,
// passes/fold_slices.h) starts at the window in its source; a result stored through a
// trailing `pad` (a store window, passes/fold_concats.h) is stored into its window. The program loads each operand where it is first read, reuses a
// register once its value is dead, and stores the results last (a result may overwrite an
// operand in place). Operands and results may be f32, bf16 or f16 (registers are f32:
// loaded exactly, rounded where stored); a cast to f32 is its operand in registers, and so
// is a cast to bf16 or f16 whose result is only stored (the store rounds it, as the cast
// would). A bf16 or f16 value that another op reads (autocast's cast of an f32 carry for
// a bf16 product, a bf16 op's result) is rounded in its register (kRoundOp), where the
// reference interpreter rounds it:
//   %b = cast(%h) {dtype=bf16}; %m = mul(%b, %w)      r1 = round r0 to bf16; r3 = mul r1 r2
// gelu is an instruction of its own per form (kGeluOp: "none", erf's; kGeluTanhOp: "tanh").
// Errors say why the body cannot be a cell: a space of more than two dimensions, an
// operand or result neither f32, bf16 nor f16, a value neither those nor bool between
// the ops, an op with attributes (but gelu's form and a row kernel's reductions) or
// outside recurrent_op_supported, a cast to another type, more than kMaxCellRegisters
// registers.

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/cuda/recurrent_program.h"

namespace weft::cuda {

/// An ElementMap without its buffer: the first element and the strides, in f32 elements.
struct CellLayout {
  int64_t offset = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// A body's elements as rows × cols, and where each operand and result is read and written.
struct CellSpace {
  int64_t rows = 1, cols = 1;
  std::vector<CellLayout> operands, results;
};

/// The two-dimensional space of `body` (see the top of this file), or why it has none.
StatusOr<CellSpace> cell_space(const Graph& body);

/// The space of a row kernel's `body` (a fused row group: a layer norm, its gradient):
/// rows × cols where cols is the last axis its sums and means reduce, each operand read
/// as it broadcasts to [rows..., cols] (all of it, one value per row, per column, or one),
/// every result all of it; or why not (a window, an operand broadcast otherwise, a result
/// of another shape).
StatusOr<CellSpace> row_space(const Graph& body);

/// The register program of `body` (see the top of this file), or why it has none; with
/// `row`, a row phase's (recurrent_program.h): its sums and means over the last axis,
/// kept, become kRowReduceOp (at most kMaxRowReductions).
StatusOr<std::vector<CellInstr>> cell_program(const Graph& body, bool row = false);

}  // namespace weft::cuda
