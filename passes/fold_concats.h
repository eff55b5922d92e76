#pragma once
// fold-concats: a concat whose operands are each computed by an elementwise kernel has
// no copy: each kernel stores its operand straight into the operand's window of the
// concat's buffer (the mirror of fold-slices' loads, issue #31:
// a recurrent cell's gate gradients, written side by side for the GEMM of the backward
// step). The graph keeps its concat — the IR has no value for "a window of a buffer
// that several kernels write" — so this is a decision of the lowering, as
// updates_in_place is (passes/merge_updates.h), asked by the memory plan and by
// build_program on the graph they are given:
//
//   %a = fused(%x) : f32[4,8]      ({ ^body(%0: f32[4,8]): %t = tanh(%0)  return %t })
//   %b = fused(%y) : f32[4,8]      ({ ... })
//   %c = concat(%a, %b) {axis=1} : f32[4,16]
// is lowered as
//   k0  generated arena+0 f32[4,16] <- ..  body: %t = tanh(%0); %w = pad(%t) {low=[0,0], high=[0,8]}
//   k1  generated arena+0 f32[4,16] <- ..  body: ..;            %w = pad(..) {low=[0,8], high=[0,0]}
//   (no invocation for %c: %a, %b and %c are one buffer, live from %a's kernel on: the
//   memory plan's stored concat, PlanOptions::stored_concats)
//
// Several parts may come from one kernel (fuse-elementwise makes the parts of one
// iteration space one kernel, passes/fuse_elementwise.h: an LSTM's four gate gradients):
// its body then ends with one pad per part, each output stored into its window of the
// one buffer, and the stored concat has one writer.
//
// A kernel body whose output is a `pad` stores it through a *store window* (codegen's
// output_window): it writes the pad's operand into its window of the result buffer and
// leaves the padding as it is (another kernel's window). Run by the reference
// interpreter the body pads with zeros; only the code generator reads it as a window.
//
// Folded when: every operand is the result of a `fused` kernel of kind elementwise, not
// assigned, computed in the body (not one of its inputs passed through), of the concat's
// dtype, the operands distinct; the concat's result is not assigned (a carry written in
// place into its input would be written before the old value's last reads); and the
// kernel's innermost loop writes the window with stride 1 (codegen/operand_layout.h,
// innermost_contiguous: a column [n,1] of an [n,k] concat is not), and its kernel is not
// in a merged update (one invocation over flat ranges stores through no windows). An
// operand that stored concats alone read is a *part* of the last of them: its kernel
// stores it there in place of its own buffer, which it has none of, and in its window of
// each earlier one as an extra output (a GRU's r and z gradients, each in two concats:
// the one for dh·W_hh and the one stacked for the weight gradients). An operand read
// elsewhere too (a graph output, a matmul) is stored in its buffer and in each window.
//
// Requires: a type-inferred graph after fuse-elementwise, in its final node order.

#include <vector>

#include "ir/graph.h"
#include "passes/memory_plan.h"

namespace weft {

/// The concats of `g` (not of its loop bodies: each is lowered on its own) whose parts
/// are stored in place, in node order. `unstorable` (by node index, may be shorter than
/// the node count): kernels that store through no windows (merge-updates' members).
std::vector<StoredConcat> stored_concats(const Graph& g, const std::vector<bool>& unstorable = {});

/// Where part `k` of concat `concat` starts in the concat's result (element indices).
IntList part_start(const Graph& g, const Node& concat, size_t k);

/// A body output stored through a window: output `output` of a kernel's body goes to the
/// window of a `dest` buffer that starts at `start`.
struct StoreWindow {
  size_t output = 0;
  Type dest;
  IntList start;
  /// The output is stored in its own buffer too (it has other readers, or other windows):
  /// the window is an output of its own, after the body's.
  bool also = false;
};

/// `body` with each output of `windows` stored through its pad into the window's
/// destination type (the store windows codegen reads, output_window): in its place, or
/// (`also`) as an extra output, in the order of `windows`.
Graph with_store_windows(const Graph& body, const std::vector<StoreWindow>& windows);

}  // namespace weft
