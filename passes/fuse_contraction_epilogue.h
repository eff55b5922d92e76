#pragma once
// fuse-contraction-epilogue: a contraction (a GEMM) followed by an elementwise chain on
// its result — bias add, activation, scaling, residual add — becomes one `fused` node of
// kind "contraction" whose body is the contraction followed by that chain, its
// *epilogue*. The CPU backend runs it as one invocation: each thread computes a block of
// rows of the product and applies the epilogue to that block while it is in cache,
// instead of a second kernel re-reading the whole product from memory. The pass reads
// only the op table's categories (a Contraction root, Elementwise members), never op
// names, plus two predicates saying which nodes the backend can run this way.
//
//   graph @f(%x: f32[128,784], %w: f32[256,784], %b: f32[256]) {
//     %0 = matmul(%x, %w) {transpose_b=true} : f32[128,256]
//     %h = add(%0, %b) : f32[128,256]
//     %y = gelu(%h) : f32[128,256]
//     %u = mul(%h, %h) : f32[128,256]       // e.g. gelu's backward, reading %h
//     return %y, %u
//   }
// becomes
//   graph @f(%x: f32[128,784], %w: f32[256,784], %b: f32[256]) {
//     %y, %h = fused(%x, %w, %b) {kind="contraction"} : f32[128,256], f32[128,256] ({
//       ^body(%0: f32[128,784], %1: f32[256,784], %2: f32[256]):
//         %t0 = matmul(%0, %1) {transpose_b=true} : f32[128,256]
//         %t1 = add(%t0, %2) : f32[128,256]
//         %t2 = gelu(%t1) : f32[128,256]
//         return %t2, %t1
//     })
//     %u = mul(%h, %h) : f32[128,256]
//     return %y, %u
//   }
//
// Grouping. For each contraction the predicate accepts (in node order), the epilogue is
// grown as a chain: the *tail* starts as the contraction's result; walking forward, the
// first node that reads the tail joins when (1) it is elementwise and fusible, (2) its
// result has the contraction's shape (each member is computed once per element of the
// product) and a float dtype, not necessarily the product's (a bf16 product widened to
// f32, summed in f32 and rounded back, autodiff's sum of half cotangents, is an epilogue
// whose casts the generated kernel computes as written; `fusible` says which casts a
// backend compiles), (3) it is not in an earlier group, (4) each of its other operands
// is a member or does not depend on any member (so the fused node can stand where the
// chain ends without a cycle) and (5) no State-category node (an assign) reads its
// result: an optimizer's update stays whole for fuse-elementwise, one kernel written in
// place into the parameter and its state (ContractionEpilogueOptions::
// assigned_in_epilogues lifts it for a loop body's carries). It becomes the tail. A node
// that reads a member without joining makes that member an extra result. The chain ends
// after the tail's last reader; while its tail is read only by elementwise nodes of the
// product's shape and a float dtype or by fusible reductions, the tail is given back
// (fuse-elementwise can compute it inside its readers' kernel instead of writing it:
// softmax backward's dP·P feeding its row sums). A chain that has left the product's
// dtype then ends at its last member of that dtype, when it has one (a bf16 logits' bias
// add, not the cast widening it for the loss). Then the elementwise producers of the
// chain's other operands join when only the group reads their value and it has the
// product's shape and a float dtype (an optimizer's β·m beside the gradient's (1-β)·g),
// so they are not left behind as kernels of their own. A contraction whose chain stays
// empty is left alone (the plain library GEMM).
//
// Body layout (what codegen/lower.cc relies on): inputs 0 and 1 are the contraction's
// operands (the same value twice for x·xᵀ) and are read only by the contraction; the
// epilogue's other operands follow (a value read by both, such as the x of a residual
// x + x·W, is an operand twice). Outputs: the chain's last value first (the node keeps
// its name and location), then every member read outside the group, in node order — the
// contraction's own result first when it is one of them, or when the last value's type
// is not the product's (the runtime computes C in the first result's buffer only when
// they agree, runtime/program.h: a chain widened and not rounded back keeps C).
//
// Requires: a type-inferred graph after autodiff, before fuse-elementwise (which would
// otherwise take the chain). Guarantees: the graph computes the same values; the fused
// node's body contains one contraction, first, followed only by elementwise nodes of
// the contraction's shape and float dtypes, and its first result has the contraction's
// type unless the contraction's result is a result too; other nodes keep their relative
// order except that readers of an extra result move after the fused node.

#include <functional>

#include "passes/pass.h"

namespace weft {

struct ContractionEpilogueOptions {
  /// Whether the contraction `node` of `g` can run with an epilogue. Default: a
  /// contraction with two operands and one f32 or f64 result.
  std::function<bool(const Graph& g, const Node& node)> contraction;
  /// Whether `node` of `g` (elementwise or reduction: other categories are never asked)
  /// can be part of a generated kernel: an elementwise node may join an epilogue; a
  /// reduction is one fuse-elementwise can give a chain to (see "given back").
  /// Default: fuse-elementwise's default_fusible.
  std::function<bool(const Graph& g, const Node& node)> fusible;
  /// Rule (5) off: a value an assign reads may join an epilogue. For a loop body, whose
  /// assigns are its carries' next values, not optimizer updates (codegen/lower.h,
  /// LowerOptions::loop_body): a GRU's backward dh + dgates·W_hh becomes the GEMM's
  /// epilogue. Safe either way: updates_in_place writes the fused node's result over the
  /// assigned input only when no reader of that input follows it (passes/merge_updates.h;
  /// a contraction never takes over an operand).
  bool assigned_in_epilogues = false;
};

class FuseContractionEpiloguePass : public Pass {
 public:
  explicit FuseContractionEpiloguePass(ContractionEpilogueOptions options = {});
  std::string_view name() const override { return "fuse-contraction-epilogue"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  ContractionEpilogueOptions options_;
};

}  // namespace weft
