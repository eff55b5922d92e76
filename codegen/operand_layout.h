#pragma once
// The one layout rule of weft's generated elementwise kernels that a pass must ask before
// it changes how a kernel reads an operand: the kernel's innermost loop loads consecutive
// elements of each operand (stride 1), or one element broadcast across the loop (stride
// 0) — collapse_space's rows (emit_elementwise.h), which the vector loads rely on.
// passes/fold_slices.cc asks it before it folds a window (input_window) into a kernel,
// passes/fold_concats.cc before a kernel stores its result into a window of a concat
// (output_window: the stores follow the same rows, `window` then being the result).
//
// This header is apart from emit_elementwise.h, and includes no MLIR and no other part of
// codegen, so that passes/ can read the rule without depending on the code generator
// (its library links MLIR; DESIGN.md decision 1: MLIR stays in codegen/).
//
//   // A column [4,1] of a [4,129] source:
//   innermost_contiguous({4, 1}, {4, 1}, {4, 129})     // false: an [4,1] kernel reads it
//                                                       // along its rows, stride 129
//   innermost_contiguous({4, 16}, {4, 1}, {4, 129})    // true: broadcast along the rows

#include "ir/shape.h"

namespace weft::codegen {

/// Whether a kernel iterating over `out` reads `window` (a window of `source`, broadcast
/// into `out`) with stride 0 or 1 along its innermost axis (its innermost dimension of
/// `out` that is not 1). A column of a wider matrix read along its rows ([n,1] of [n,k]
/// in an [n,1] kernel: stride k) is not; the same column broadcast along an [n,m]
/// kernel's rows is.
inline bool innermost_contiguous(const Shape& out, const Shape& window, const Shape& source) {
  int d = out.rank() - 1;
  while (d >= 0 && out[d] == 1) --d;
  const int a = d - (out.rank() - window.rank());
  if (d < 0 || a < 0 || window[a] == 1) return true;  // broadcast there (stride 0)
  for (int j = a + 1; j < source.rank(); ++j) {
    if (source[j] != 1) return false;
  }
  return true;
}

}  // namespace weft::codegen
