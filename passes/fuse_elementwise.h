#pragma once
// fuse-elementwise: groups chains of elementwise nodes into `fused` nodes, each one
// kernel whose body (Node::body) is the group as a small graph, and lets a reduction
// absorb the elementwise chain that computes its input (kind="reduction"). The fuser
// reads only the op table's categories (OpCategory::Elementwise, ::Reduction), never op
// names, plus a predicate saying which nodes the code generator can compile.
//
//   graph @f(%x: f32[4,5], %b: f32[5]) {
//     %h = add(%x, %b) : f32[4,5]
//     %g = gelu(%h) : f32[4,5]
//     %y = mul(%g, %x) : f32[4,5]
//     %s = sum(%y) : f32[]
//     return %s, %h
//   }
// becomes
//   graph @f(%x: f32[4,5], %b: f32[5]) {
//     %h = fused(%x, %b) : f32[4,5] ({ ^body(%0: f32[4,5], %1: f32[5]): add ... })
//     %s = fused(%h, %x) {kind="reduction"} : f32[] ({
//       ^body(%0: f32[4,5], %1: f32[4,5]): gelu, mul, sum })
//     return %s, %h
//   }
// (%h is used outside its consumer's group, so it stays a kernel result of its own; the
// reduction `sum` is the root of the second kernel, which never writes %y to memory.)
//
// Grouping: nodes are visited from the last to the first. A fusible node not yet in a
// group starts one (it is the group's root, its first result); then the producers of
// the group's operands join it while (1) they are fusible, (2) every use of their
// result is inside the group (exceptions: assigns, and the row groups' rule below, make
// a member one more result), and (3) their result has
// the root's shape, so each is computed once per element (a smaller producer broadcast
// into the group would be recomputed for every element; it stays a kernel of its own).
// A reduction the predicate accepts is a root too (a producer only in a row group,
// below): its producers have the reduction's *input* shape, and a reduction that absorbs
// nothing stays the node it was (the library's reduction kernel; with
// FuseOptions::lone_reductions, a group of one). With FuseOptions::lone_half_reductions
// (the CPU pipeline's), a lone reduction of an f16 or bf16 operand that the predicate
// accepts is a group of one too: the CPU library reduces 16-bit floats through a
// converted f32 copy of the whole operand (runtime/cpu/half.cc),
// a generated kernel loads the 16-bit values once and accumulates them wide (a
// mixed-precision step's bias gradients, column sums of a bf16 gradient). Its fused
// node has kind="reduction", so the memory planner never computes it in place of an
// operand.
//
// Row groups: a reduction with keepdims=true whose result `row` is its input `full` with
// trailing axes set to 1 (is_row_shape: softmax's max and sum, layer norm's means) may
// also join a group as a producer, when its input has the group's shape; the group then
// also takes elementwise producers of shape `row` (per-row values such as rsqrt(var+eps),
// computed once per row), and a group whose root has shape `row` takes its full-shape
// producers once a reduction of that shape joins. Its consumers broadcast the per-row
// values along the row by NumPy broadcasting (as autodiff's rules emit them). In a row
// group a member may also be used outside it, by nodes after the root or by nodes
// before it that do not lead back to it: its value is one more result (layer-norm
// backward's x̂, also summed over the batch for the gain). If the groups formed so
// would, contracted, make the graph cyclic, grouping is redone allowing only the former.
//
//   %m = max(%x) {axes=[-1], keepdims=true} : f32[8,1]
//   %d = sub(%x, %m) : f32[8,16]
//   %e = exp(%d) : f32[8,16]
//   %s = sum(%e) {axes=[-1], keepdims=true} : f32[8,1]
//   %y = div(%e, %s) : f32[8,16]
// becomes one kernel, `%y = fused(%x) {kind="row"}` with those five nodes as its body:
// per row, one pass computes the max, one the sum, one writes %y (codegen/README.md).
// A producer that fails only because a user has not joined yet is tried again when the
// group grows (%e joins once %s has). A per-row producer (log-softmax's log of the sum)
// opens a row group when a row reduction computes it. Not fused: siblings (a softmax and
// a log-softmax of one %x both returned: only producers join, so the second group reads
// the values the first returns), and a member whose value is used outside the group
// before its root (it stays a kernel result of its own group).
//
// Widening casts: a cast to a wider float dtype (bf16 → f32, exact) read only by several
// fusible nodes is replaced by one copy per user before grouping, so that each user's
// kernel loads the narrow value and widens it as it loads, rather than one kernel storing the
// wide copy as one more result for the others to read (a mixed-precision step's f32 view
// of a bf16 activation: layer norm's input, read again by its backward). The values are
// the same; a kernel reads half the bytes and nothing writes the wide copy:
//
//   %w = cast(%h) {dtype=f32} : f32[8,16]          (%h: bf16)
//   %a = exp(%w) : f32[8,16]
//   %b = mul(%w, %w) : f32[8,16]
//   return %a, %b
// becomes two kernels, each `fused(%h)` with its own cast. A cast also read by a library
// op, an assign or the graph's outputs is left as it was (stored once, which costs no
// more than the copy a lone cast kernel would write).
//
// Parts of one concat (FuseOptions::merge_parts): the elementwise nodes whose results
// are operands (*parts*) of one concat, or of concats sharing a part, and that compute
// one iteration space (the same result shape) start one group together: the last of them
// is its root, the others are more results, and the producers they share (a recurrent
// cell's dc, its gates' activations) join it as they would join one root's group, each
// computed once. fold-concats then has the one kernel store every part in its window of
// the concat's buffer (passes/fold_concats.h). An LSTM's backward time step:
//
//   %dc = add(%dc_in, mul(mul(%dh, %o), tanh'(%c)))    (the cell's gradient)
//   %di = mul(mul(%dc, %g), σ'(%i))   %df = mul(mul(%dc, %c_prev), σ'(%f))
//   %dg = mul(mul(%dc, %i), tanh'(%g))   %do = mul(mul(%dh, tanh(%c)), σ'(%o))
//   %dgates = concat(%di, %df, %dg, %do) {axis=1}      (for dh·W_hh's GEMM)
//   %dc_next = mul(%dc, %f)
// was four kernels for the parts, the first storing six values that the other three and
// a fifth, for %dc_next, read back; it is one kernel storing the four parts and %dc_next,
// and no other value. A part stays out when it computes another shape (another
// iteration space), or when a node before the root that is not a part reads it and leads
// to a part (the kernel would need its own result: a GEMM between them); such a part is
// a group of its own, as before. A group of parts takes no reductions (it stays an
// elementwise kernel, which fold-concats can store in place). If the groups formed so
// would, contracted, make the graph cyclic, grouping is redone without parts first.
//
// Readers (also FuseOptions::merge_parts): once the groups are formed, an elementwise
// group whose outside operands are results of one other elementwise group of its shape,
// inputs, or nodes outside any group before that group's first member, joins that group
// when every value it reads from it is read by the two groups alone. The joined kernel
// computes the reader's values too and stores none of the values it read (above:
// %dc_next reads %dc and σ(%f), which only the gates' gradients read besides). A reader
// of a value that a library op, an output or a third kernel reads too stays apart (an
// optimizer's update of a gradient that is also summed: merge-updates wants the update
// kernel alone), and so does one reading anything computed later (a GRU's dh sum reading
// the GEMM of the concat its producer stores).
//
// The groups are checked to be acyclic when contracted (the strict rules guarantee it:
// every user of a member is in its group or after its root; the relaxed ones — a row
// group's or a part's earlier users, a reader joining — are checked, and undone), and
// the graph is sorted topologically after the replacement (users of an escaped value,
// assigns included, move after the kernel that now computes it).
// Every fusible node ends up in exactly one `fused` node, a group of one included: the
// CPU backend runs every elementwise op as a generated kernel.
//
// Kinds: "reduction" when a reduction is the root and the one result, "row" when a
// group holds a reduction whose value other members consume (or several reductions).
//
// Requires: a type-inferred graph after autodiff (fused nodes are not differentiable).
// Guarantees: the graph computes the same values; every remaining elementwise node is
// one the predicate rejects; a fused node keeps its root's result name and location;
// body nodes keep their own locations, so errors still point at the user's line.

#include <functional>

#include "passes/pass.h"

namespace weft {

struct FuseOptions {
  /// Whether `node` of `g` (elementwise or reduction: other categories are never asked)
  /// may go into a generated kernel. Default: an elementwise node whose operands and
  /// result are f32, f64, i32, i64 or bool, or a reduction from f32 (f64) to f32 (f64).
  std::function<bool(const Graph& g, const Node& node)> fusible;
  /// Row groups (see the top of this file): reductions that take their consumers. Off,
  /// the fuser groups as it did before them (for measurements).
  bool rows = true;
  /// A fusible reduction that absorbs nothing becomes a `fused` node of one too (a
  /// generated kernel) instead of staying the node it was: for backends without a
  /// library reduction kernel (CUDA).
  bool lone_reductions = false;
  /// As lone_reductions, for reductions of an f16 or bf16 operand only: for backends
  /// whose library reduces 16-bit floats through a converted f32 copy (the CPU's,
  /// runtime/cpu/half.cc; codegen::LowerOptions::fuse_lone_half_reductions).
  bool lone_half_reductions = false;
  /// Kernels that share their work (see "Parts of one concat" at the top of this file):
  /// the elementwise producers of a concat's parts over one iteration space form one
  /// kernel, and a kernel reading only another's values joins it. Off, each part is a
  /// kernel of its own and a reader stays apart, as before (for measurements).
  bool merge_parts = true;
};

class FuseElementwisePass : public Pass {
 public:
  explicit FuseElementwisePass(FuseOptions options = {});
  std::string_view name() const override { return "fuse-elementwise"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  FuseOptions options_;
};

/// Whether `row` is `full` with one or more trailing axes (of size > 1) set to 1: the
/// result shape of a keepdims reduction over a row (size-1 axes may sit anywhere).
bool is_row_shape(const Shape& row, const Shape& full);

/// The default fusibility test (see FuseOptions::fusible).
bool default_fusible(const Graph& g, const Node& node);

}  // namespace weft
