#pragma once
// The reference interpreter: the oracle that defines what every weft op computes.
// Optimized CPU and CUDA backends are tested against it op by op (STYLE.md, "Tests").
// It executes a type-inferred graph node by node with naive, readable kernels in f32
// and f64 (f16 and bf16 are computed in f32 and rounded to nearest even), one kernel per
// op registered in a table keyed by `Op` (kernels.h), split by category into
// elementwise.cc, reduction.cc, movement.cc, contraction.cc, creation.cc, composite.cc.
//
//   Graph g("f");
//   auto x = g.add_input("x", {DType::f32, {2, 3}});
//   g.add_output(g.add_node(Op::Relu, {x}, {}, {}, Type{DType::f32, {2, 3}}));
//   auto r = weft::reference::run(g, {x_tensor});   // r->outputs[0] = relu(x)
//
// Semantics, beyond the obvious, that every backend must match:
//  - Binary elementwise ops broadcast like NumPy. `maximum`/`minimum` propagate NaN.
//    `pow` is std::pow for floats; for integers it is exact repeated multiplication and
//    a negative exponent is an error. Integer `div` truncates toward zero (C++ and
//    PyTorch's `trunc` rounding, not NumPy's floor division); dividing an integer by
//    zero is an error. `sign(0) = 0`, `sign(NaN) = NaN`. Integer add/sub/mul/neg wrap.
//  - `cast` converts between every dtype pair: float to integer truncates toward zero
//    and saturates (NaN gives 0); to bool is `x != 0`; to f16/bf16 rounds to nearest
//    even (from f64 through f32).
//  - Reductions (`sum mean max min`) reduce over `axes` (absent: all axes; negative
//    axes count from the end), keeping reduced axes as size 1 under `keepdims`. Float
//    sums accumulate in f64. `max`/`min` propagate NaN; over an empty axis they are an
//    error. `argmax {axis}` returns the first index of the maximum as i64 (a NaN counts
//    as the maximum, as in NumPy).
//  - `slice {start, stop, step}`: per axis, Python clamping of start and stop (negative
//    values count from the end), step >= 1 (absent: all 1).
//  - `pad {low, high, value}`: amounts >= 0 (the shape rule refuses negative ones; crop
//    with `slice`).
//  - `gather(x, idx) {axis}` is index_select with an integer 1-D `idx`; an index
//    outside [0, dim) is an error. `scatter_add(base, idx, src) {axis}` returns base
//    with the rows of src added at idx (duplicates accumulate; out of range is an
//    error). `one_hot(idx) {depth, dtype}` appends an axis of size depth; indices outside
//    [0, depth) give all zeros, as in JAX.
//  - `matmul` follows NumPy's matmul on operands of rank >= 2 (batch dims broadcast); the
//    shape rule refuses 1-D operands (reshape a vector to [1,k] or [k,1]).
//  - `conv(x, w)`: over 1, 2 or 3 spatial dims, x [N, C, *spatial], w [O, C/groups,
//    *kernel], `stride`, symmetric `padding`, `dilation` (one entry per spatial dim),
//    `groups`; cross-correlation as in PyTorch's conv1d/2d/3d. `conv_backward_input(gy,
//    w) {input_shape}` and `conv_backward_weight(x, gy) {weight_shape}` are its exact
//    gradients with respect to x and w.
//  - `max_pool2d`/`avg_pool2d {kernel, stride (absent: kernel), padding}`: floor mode;
//    max pads with -inf; avg divides by the full window size, counting padding as zeros
//    (PyTorch's count_include_pad=True). `max_pool2d_backward(x, gy)` routes each
//    window's gradient to the first maximum of the window in row-major order;
//    `avg_pool2d_backward(gy) {input_shape}` spreads it evenly over the window.
//    `max_pool2d_select(x, g)` (pooled shape) reads, for each window, g at that same
//    first maximum of x (0 for a window of padding only): max_pool2d_backward's adjoint.
//  - `full`, `iota {axis}` (the index along `axis`), `random_uniform(key)` and
//    `random_bernoulli(key) {p}`: counter-based Philox 4x32-10, defined in
//    runtime/philox.h; key is i64[2] = (seed, offset).
//  - `assign(target, value)`: `target` must be a graph input; its new value is reported
//    in `RunResult::updated`. The interpreter never mutates inputs: every read in the
//    step sees the old value.
//  - `softmax`/`log_softmax {axis}` subtract the maximum first. `layer_norm(x, gamma,
//    beta) {axes, eps}` normalizes over trailing `axes` with the biased variance; gamma
//    and beta have the normalized shape. `cross_entropy(logits [N,C], labels [N]) {reduction}`
//    is -log_softmax(logits)[n, label[n]], then mean, sum or none; a label outside
//    [0, C) is an error. `gelu {approximate}`: "none" is x·Φ(x) with erf, "tanh" is
//    PyTorch's tanh approximation. `mse(a, b) {reduction}` is (a - b)² reduced.
//  - `scan` (a loop, ir/ops.def): the body run `length` times on the consts, the carries
//    and slot i of each xs (i from 0 up, or down under `reverse`), each iteration's next
//    carries feeding the next; the results are the last carries and the ys stacked by
//    slot. `remat` changes only how the loop is differentiated.
//  - `all_reduce(x) {reduction}`: the interpreter is one process (world size 1), so the
//    sum or mean over the ranks is x itself. Across processes, runtime/cpu's executor
//    runs it through a communicator (runtime/collective/communicator.h).

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::reference {

struct RunResult {
  std::vector<Tensor> outputs;                          ///< In return order.
  std::vector<std::pair<std::string, Tensor>> updated;  ///< assign targets (input name, new value), in input order.
};

/// Runs a type-inferred graph. `inputs` in graph-input order, every input given; a
/// wrong type is an error naming the input and both types. Runtime errors (e.g. a
/// gather index out of range) name the op and its node location.
/// `inputs` is taken by value: callers that no longer need them move them in, and the
/// interpreter keeps them without a second copy.
StatusOr<RunResult> run(const Graph& g, std::vector<Tensor> inputs);

/// Runs loop `node` (a typed `scan`) on its `operands` as run() does, and returns its
/// results (`result_types`: the node's). `each(slot, args)`, when given, is called with
/// the body's arguments before every iteration that runs; an error from it stops the loop
/// and is returned (check-numerics steps a loop with it to find the iteration at fault).
StatusOr<std::vector<Tensor>> run_loop(
    const Node& node, const std::vector<const Tensor*>& operands, const std::vector<Type>& result_types,
    const std::function<Status(int64_t slot, const std::vector<Tensor>& args)>& each = {});

/// A reference kernel. `in` holds the operands (f16/bf16 operands already widened to f32
/// for ops computed in f32); `out` is allocated with the node's result type (for
/// `assign`, the target's type) and zero-filled. Errors name the op and `node.loc`.
using Kernel = Status (*)(const Node& node, const std::vector<const Tensor*>& in, Tensor& out);

/// The kernel registered for `op`; nullptr when missing (completeness test).
const Kernel* find_kernel(Op op);

/// A reference kernel of an op with a fixed count of several results (ops.def:
/// attention_grad's dq, dk, dv): `outs` holds one tensor per result, allocated with the
/// results' types and zero-filled; otherwise as `Kernel`. Such an op's `Kernel` entry only
/// says so: `run` calls this one.
using SeveralKernel = Status (*)(const Node& node, const std::vector<const Tensor*>& in,
                                 std::vector<Tensor>& outs);

/// The several-result kernel registered for `op`; nullptr for the others.
const SeveralKernel* find_several_kernel(Op op);

}  // namespace weft::reference
