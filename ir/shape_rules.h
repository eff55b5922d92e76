#pragma once
// Shape and dtype rules: one per op in ir/ops.def, registered in a table indexed by `Op`
// (shape_rules_test fails when an op has none). These rules define what a well-typed
// weft graph is; the reference interpreter implements the same semantics.
//
// Example: the result type of `matmul(%x: f32[8,4,6], %w: f32[6,5])`:
//
//   Node n{Op::Matmul, {x, w}};
//   StatusOr<Type> t = infer_node_type(n, {{DType::f32, {8, 4, 6}}, {DType::f32, {6, 5}}});
//   // *t == f32[8,4,5]
//
// and with `%w: f32[5,5]` the error reads
//
//   model.wir:3:8: error: matmul: contraction dims differ: lhs f32[8,4,6] has 6 columns
//   but rhs f32[5,5] has 5 rows
//
// Common conventions. Axes may be negative (-1 is the last axis) and must lie in
// [-rank, rank). There is no implicit dtype promotion anywhere: operands that must agree
// in dtype and do not are an error suggesting `cast`. Arithmetic on `bool` is an error.
// "float" below means f32, f64, f16 or bf16; "signed" means f* or i32/i64.
// Sizes are exact: a size computed from huge dims or attributes (padding, dilation,
// pad's low/high, reshape's and creation ops' `shape`, concat's summed axis) that
// overflows int64 is an error naming the attribute and its value, never wrapped
// (ir/checked_math.h). Shape attributes must have an element count that fits in int64.
//
// Elementwise, unary (result: the operand's type)
//   neg abs sign floor                       float or signed integer
//   exp log log1p sqrt rsqrt tanh sigmoid
//   sin cos erf gelu                         float
//   relu                                     float or integer (i32, i64, u8)
//   not                                      bool
//   gelu {approximate}                       "none" (erf form) or "tanh"; others rejected
//   cast {dtype}                             any dtype to any dtype; same shape
//
// Elementwise, binary and ternary (NumPy broadcasting; both operands of one dtype)
//   add sub mul div pow maximum minimum      numeric (not bool) -> the operands' dtype
//   eq ne lt le gt ge                        any dtype (false < true) -> bool
//   and or                                   bool -> bool
//   select(cond, a, b)                       cond bool; a, b one dtype; the three shapes
//                                            broadcast together -> a's dtype
//
// Reductions
//   sum mean max min {axes?, keepdims}       absent `axes`: every axis; `axes=[]`:
//                                            none (identity). Axes unique after
//                                            normalization. Reduced axes are dropped,
//                                            or kept as size 1 with keepdims. sum needs
//                                            a number (not bool), mean a float; max and
//                                            min take any dtype. Result dtype: the
//                                            operand's.
//   argmax {axis, keepdims}                  rank >= 1, not bool -> i64 (index of the
//                                            first max)
//
// Movement
//   reshape {shape}                          same element count; at most one -1, which
//                                            takes the remaining count; other entries
//                                            >= 0
//   transpose {perm}                         perm is a permutation of 0..rank-1; result
//                                            dim i = operand dim perm[i]
//   broadcast_to {shape}                     the operand broadcasts (NumPy) to exactly
//                                            `shape`
//   slice {start, stop, step?}               one entry per axis; step >= 1 (absent: all
//                                            1). Python clamping on each axis of size d:
//                                            a negative bound b becomes max(b + d, 0), a
//                                            non-negative one min(b, d); the result dim
//                                            is max(0, ceil((stop - start) / step)).
//   concat(xs...) {axis}                     one or more operands of one dtype and rank
//                                            >= 1; every dim equal except `axis`, which
//                                            is summed
//   pad {low, high, value}                   one entry per axis each, >= 0; result dim =
//                                            low + dim + high; `value` fills (converted
//                                            to the dtype)
//   gather(x, idx) {axis}                    idx is i64 and 1-D; result = x's shape with
//                                            dim `axis` replaced by len(idx)
//                                            (index_select)
//   scatter_add(base, idx, src) {axis}       idx i64 1-D; src has base's dtype and base's
//                                            shape with dim `axis` = len(idx); result:
//                                            base's type (base plus src rows added at
//                                            idx; repeated indices accumulate)
//   one_hot(idx) {depth, dtype}              idx i64, any shape; depth >= 1 ->
//                                            dtype[idx.shape..., depth]
//
// Contraction and windowed ops (channels-first layout; stride, padding, dilation and a
// pool's kernel are int lists with one entry per spatial dim)
//   matmul(a, b)                             rank >= 2 each (1-D is an error: reshape
//                                            vectors); one numeric dtype;
//                                            [..., m, k] x [..., k, n] ->
//                                            [broadcast(batch dims), m, n]
//   conv(x, w) {stride?, padding?,           x [N, C, *S] with 1 to 3 spatial dims S
//     dilation?, groups}                     ([W], [H, W] or [D, H, W]), w [O, C/groups,
//                                            *K] of x's rank; one float dtype; groups >= 1
//                                            divides C and O; stride, dilation >= 1 and
//                                            padding >= 0 (symmetric), one entry per
//                                            spatial dim (absent: all 1, 1, 0; ir/window.h).
//                                            Result [N, O, *So] with, per spatial dim,
//                                            So = floor((S + 2p - d(K-1) - 1) / s) + 1,
//                                            which must be >= 1. (Read as conv2d too.)
//   conv_backward_input(gy, w)               -> gy's dtype with shape input_shape;
//     {input_shape, conv attrs}              conv(input_shape, w) must give gy's shape
//   conv_backward_weight(x, gy)              -> x's dtype with shape weight_shape;
//     {weight_shape, conv attrs}             conv(x, weight_shape) must give gy's shape
//   max_pool2d avg_pool2d(x)                 x [N, C, H, W]; kernel >= 1; stride >= 1
//     {kernel, stride?, padding}             (absent: kernel); 0 <= padding <= kernel/2
//                                            (PyTorch's rule); floor mode:
//                                            Ho = floor((H + 2p - k) / s) + 1 >= 1.
//                                            max: numeric, avg: float.
//   max_pool2d_backward(x, gy) {pool attrs}  gy = pool(x)'s type -> x's type
//   avg_pool2d_backward(gy)                  pool(input_shape) must give gy's shape ->
//     {input_shape, pool attrs}              gy's dtype with shape input_shape
//   max_pool2d_select(x, g) {pool attrs}     g has x's type -> max_pool2d(x)'s type
//
// Creation (shape entries >= 0)
//   full {shape, value, dtype}               -> dtype[shape]
//   iota {shape, axis, dtype}                axis in range of shape; numeric dtype;
//                                            values count along `axis` from 0
//   random_uniform(key) {shape, dtype}       key i64[2]; dtype float; values in [0, 1)
//   random_bernoulli(key) {shape, p, dtype}  key i64[2]; 0 <= p <= 1; any dtype (1 with
//                                            probability p, else 0)
//   Random ops are pure functions of their key (a counter-based generator): the same
//   key and attributes give the same tensor.
//
// State
//   assign(target, value)                    identical types; no result (the rule
//                                            returns target's type, which callers ignore).
//                                            That target is a param/state input is the
//                                            verifier's business.
//
// Collective
//   all_reduce(x) {reduction}                "mean" (float dtypes) or "sum" (numeric);
//                                            keeps x's type. Across the ranks of the
//                                            data-parallel group every rank's result is
//                                            the sum or mean of every rank's x; in one
//                                            process it is x.
//
// Composites (a reference kernel plus a decomposition into primitives)
//   softmax log_softmax {axis}               float, rank >= 1; keeps the type
//   layer_norm(x, gamma, beta) {axes, eps}   one float dtype; `axes` must be the last k
//                                            axes of x (in any order, unique); gamma and
//                                            beta have shape x.shape[rank-k:]; eps >= 0;
//                                            keeps x's type
//   cross_entropy(logits, labels)            logits [N, C] float, labels [N] i64
//     {reduction}                            (class indices); "mean" or "sum" -> scalar,
//                                            "none" -> [N]; logits' dtype
//   mse(pred, target) {reduction}            identical float types (no broadcasting);
//                                            "mean"/"sum" -> scalar, "none" -> the shape
//   attention(q, k, v[, mask])               q [..., Sq, D], k [..., Sk, D], v [..., Sk,
//     {scale, causal}                        Dv]: one float dtype, the same leading dims;
//                                            mask bool, broadcasts to [..., Sq, Sk]; scale
//                                            finite -> q's dtype [..., Sq, Dv]
//   attention_grad(q, k, v, y, dy[, mask])   y and dy have attention(q, k, v[, mask])'s
//     {scale, causal}                        type -> three results (dq, dk, dv): q's, k's
//                                            and v's types
//
// Rules assume the node passed the verifier's attribute checks (schema attributes
// present with the right kind); values inside attributes (axes, sizes, strings) are
// checked here.

#include <vector>

#include "ir/graph.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace weft {

/// Computes a node's result type from its operand types and attributes, or returns an
/// Error whose message says what rule failed, naming the operand types (no op name and
/// no location: `infer_node_type` adds both).
using ShapeRule = StatusOr<Type> (*)(const Node& node, const std::vector<Type>& operands);

/// The op's shape rule, or nullptr when it has none (the completeness test asks).
const ShapeRule* find_shape_rule(Op op);

/// Runs the op's rule on `operands` (the operand types, in order) and decorates an error
/// with the op name and `node.loc`, so the final message names the op, where it came
/// from, the operand types and what rule failed, e.g. "matmul: contraction dims differ:
/// lhs f32[4,6] has 6 columns but rhs f32[5,5] has 5 rows". For ops without a result
/// (assign) the returned type only means "the node is well-typed".
StatusOr<Type> infer_node_type(const Node& node, const std::vector<Type>& operands);

/// The type of result `k` of `node` given the type the shape rule inferred (result 0):
/// a `fused` node's further results have its body outputs' types; a `scan` node's are its
/// body's next carries, then its per-iteration outputs with the leading axis `length`; an
/// op with a fixed count of several results (ops.def: attention_grad) gives result k
/// operand k's type (`operands`: the operand types; needed only for such an op).
Type result_type(const Node& node, size_t k, const Type& inferred,
                 const std::vector<Type>& operands = {});

/// Appends `op(operands) {attrs}` at `loc` to `g` with its result typed by the shape
/// rule (operand types must be known): how the builder, the autodiff rules and the
/// optimizer emit nodes. A shape-rule error is returned and nothing is appended. Returns
/// result 0; an op with several results (attention_grad) gets all of them, typed by
/// `result_type`, and the others are `g.node(g.value(r).node).results`.
StatusOr<ValueId> add_typed_node(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs,
                                 Location loc);

}  // namespace weft
