#pragma once
// Test helper: one node of each composite op, in a dtype, with shapes every backend's
// kernel takes, for the per-backend tests of the composite table (ir/kernel_support.h,
// library_composite_gap): runtime/cpu:composite_table_test binds it with the CPU's
// kernels, runtime/cuda:composite_table_test asks the CUDA library, both on the host.
//
//   StatusOr<Graph> g = composite_example(Op::Softmax, DType::f64);
//   const Node& softmax = g->nodes()[0];          // its result is the graph's output
//   for (const CompositeCase& c : every_composite_example()) ...   // every op x dtype

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_rules.h"

namespace weft::testing {

/// The graph of one `op` node on inputs in0, in1, ... of `dtype` (cross_entropy's labels
/// i64), typed by the shape rules: rows of 6 over 4 (softmax and log_softmax over the
/// last axis, layer_norm's w and b [6]), attention on q [2,4,8] and k, v [2,5,8] (head dim
/// 8), attention_grad's y and dy [2,4,8] (its three results are the graph's outputs). Error: the shape rule's, or "no example"
/// for a composite op not listed here (a new composite op: add its example).
inline StatusOr<Graph> composite_example(Op op, DType dtype) {
  const auto t = [&](std::vector<int64_t> dims) { return Type{dtype, Shape{std::move(dims)}}; };
  std::vector<Type> inputs;
  Attrs attrs;
  switch (op) {
    case Op::Softmax:
    case Op::LogSoftmax: inputs = {t({4, 6})}; break;
    case Op::LayerNorm: inputs = {t({4, 6}), t({6}), t({6})}; break;
    case Op::CrossEntropy: inputs = {t({4, 6}), Type{DType::i64, Shape{{4}}}}; break;
    case Op::Mse: inputs = {t({4, 6}), t({4, 6})}; break;
    case Op::Attention:
      inputs = {t({2, 4, 8}), t({2, 5, 8}), t({2, 5, 8})};
      attrs["scale"] = 0.35;
      break;
    case Op::AttentionGrad:
      inputs = {t({2, 4, 8}), t({2, 5, 8}), t({2, 5, 8}), t({2, 4, 8}), t({2, 4, 8})};
      attrs["scale"] = 0.35;
      break;
    default:
      return Error{"no example of composite op " + std::string(op_name(op)) +
                   " in ir/composite_testing.h"};
  }
  Graph g("composite");
  std::vector<ValueId> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    operands.push_back(g.add_input("in" + std::to_string(i), inputs[i]));
  }
  WEFT_ASSIGN_OR_RETURN(ValueId result, add_typed_node(g, op, operands, attrs, Location{}));
  for (ValueId r : g.node(g.value(result).node).results) g.add_output(r);
  return g;
}

/// One composite op in one dtype, as composite_example builds it.
struct CompositeCase {
  std::string name;  ///< "softmax on f16".
  Op op;
  DType dtype;
  StatusOr<Graph> graph;
};

/// composite_example of every composite op of the op table in every float dtype a
/// training step can hold (f32, f64, f16, bf16).
inline std::vector<CompositeCase> every_composite_example() {
  std::vector<CompositeCase> all;
  for (Op op : all_ops()) {
    if (op_info(op).category != OpCategory::Composite) continue;
    for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      all.push_back({std::string(op_name(op)) + " on " + std::string(dtype_name(d)), op, d,
                     composite_example(op, d)});
    }
  }
  return all;
}

}  // namespace weft::testing
