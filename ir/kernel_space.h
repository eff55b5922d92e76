#pragma once
// A fused kernel body's iteration space, as every backend that runs such a body reads it:
// codegen's emitters (codegen/emit_elementwise.h) and the persistent loop's register
// programs (runtime/cuda/recurrent_cell.h), so the two cannot disagree on where an
// element lies. The body's first output (or what a store window of it stores) gives the
// space; size-1 dimensions are dropped and adjacent ones merge where every operand and
// windowed result is contiguous or broadcast across both; an operand read through a
// window (passes/fold_slices.h) has its source's strides and starts at the window's first
// element, a result stored through a window (passes/fold_concats.h) its destination's.
//
//   CollapsedSpace s = collapse_space(body);   // dims {4, 8}; strides[k] per operand

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft {

/// A body's iteration space after collapsing: `dims` from outermost to the row (at
/// least one), and for each operand (graph input) its element stride along each of
/// them (0 where it is broadcast). Along the row every stride is 0 or 1. An operand
/// read through a window (input_window) has its source's strides and starts `offsets`
/// elements into it.
struct CollapsedSpace {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  ///< [operand][dim]
  std::vector<int64_t> offsets;               ///< [operand] first element read (0 unless a window)
  /// [result] for a result stored through a window (output_window): its destination's
  /// element strides along `dims` (1 along the row); empty for a result stored row-major.
  std::vector<std::vector<int64_t>> out_strides;
  std::vector<int64_t> out_offsets;            ///< [result] first element written (0 unless a window)

  int64_t row_length() const { return dims.back(); }
  int64_t rows() const;
};

/// The slice through which body input `k` is read when it is a *window* (passes/
/// fold_slices.h: a slice with unit steps, the input's only use, in place of a copy):
/// the kernel reads the slice's elements straight from the input's buffer. nullptr
/// otherwise. A window is folded only where the kernel's innermost loop reads it with
/// stride 0 or 1 (innermost_contiguous, operand_layout.h: the rule the pass asks).
const Node* input_window(const Graph& body, size_t k);

/// The pad through which body output `o` is stored when it is a *store window* (passes/
/// fold_concats.h: the kernel writes the pad's operand into its window of the result's
/// buffer and leaves the padding to the kernels of the other windows), else nullptr.
const Node* output_window(const Graph& body, size_t o);

/// Collapses the iteration space of `body` (the shape of its first output, or of what a
/// store window of it stores): size-1
/// dimensions are dropped, and adjacent dimensions merge when every operand is
/// contiguous (or broadcast) across both. A rank-0 output is one row of one element.
CollapsedSpace collapse_space(const Graph& body);

/// collapse_space's merge over output shape `out`: dimensions of one kind (`kind[d]`, or
/// all one kind when `kind` is empty) merge; with `kinds_out`, the kind of each merged
/// dimension is appended there (codegen's reduction spaces: reduced or kept).
CollapsedSpace merge_dims(const Graph& body, const Shape& out, const std::vector<bool>& kind,
                          std::vector<bool>* kinds_out);

}  // namespace weft
