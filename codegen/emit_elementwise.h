#pragma once
// The MLIR text of a fused elementwise kernel (kernel_compiler.h describes bodies and
// the ABI). Plain strings: no MLIR headers are needed to emit, only to compile
// (jit.h), so this file is cheap to build and its output is what `emit_mlir` shows.
//
// For `add(%x: f32[128,256], %b: f32[256])` the module reads, abridged:
//
//   func.func @k(%bufs: !llvm.ptr, %row_begin: i64, %row_end: i64) {
//     %p0 = llvm.load (gep %bufs[0]) ...              // operand and result pointers
//     scf.for %r = %row_begin to %row_end step %c1 : i64 {
//       %x_row = gep %p0[%r * 256]; %b_row = %p1 (offset 0 for every row)
//       scf.for %i = 0 to 256 step 16 : i64 {         // vector<16xf32> body
//         %x = llvm.load (gep %x_row[%i]) : vector<16xf32>
//         %y = arith.addf %x, %b : vector<16xf32>
//         llvm.store %y, (gep %out_row[%i])
//       }
//       scf.for %i = 256 to 256 step 1 : i64 { ... }  // scalar tail (left out when empty)
//     }
//   }

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::codegen {

/// A body's iteration space after collapsing: `dims` from outermost to the row (at
/// least one), and for each operand (graph input) its element stride along each of
/// them (0 where it is broadcast). Along the row every stride is 0 or 1.
struct CollapsedSpace {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  ///< [operand][dim]

  int64_t row_length() const { return dims.back(); }
  int64_t rows() const;
};

/// Collapses the iteration space of `body` (the shape of its first output): size-1
/// dimensions are dropped, and adjacent dimensions merge when every operand is
/// contiguous (or broadcast) across both. A rank-0 output is one row of one element.
CollapsedSpace collapse_space(const Graph& body);

/// True when the emitter implements `node`'s op on its operand and result dtypes.
bool emit_supports(const Graph& g, const Node& node);

/// The MLIR module (func, arith, math, scf, vector and llvm dialects) defining
/// `symbol` with the GeneratedFn ABI. Every node must pass `emit_supports`, and every
/// output must have the shape of the first.
std::string emit_elementwise(const Graph& body, const std::string& symbol);

}  // namespace weft::codegen
