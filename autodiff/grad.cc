#include "autodiff/grad.h"

#include <algorithm>

#include "autodiff/rules.h"
#include "ir/shape_rules.h"

namespace weft {

ValueId GradBuilder::op(Op op, std::vector<ValueId> operands, Attrs attrs) {
  StatusOr<ValueId> result = add_typed_node(graph_, op, std::move(operands), std::move(attrs), loc_);
  WEFT_CHECK(result.ok(), "autodiff or an optimizer built an ill-typed node: " +
                              result.status().to_string());
  return *result;
}

ValueId GradBuilder::constant(double value, DType dtype) {
  return op(Op::Full, {}, {{"shape", IntList{}}, {"value", value}, {"dtype", dtype}});
}

ValueId GradBuilder::zeros(const Type& type) {
  return op(Op::Full, {}, {{"shape", type.shape.dims}, {"value", 0.0}, {"dtype", type.dtype}});
}

ValueId GradBuilder::broadcast_to(ValueId g, Shape shape) {
  if (this->shape(g) == shape) return g;
  return op(Op::BroadcastTo, {g}, {{"shape", shape.dims}});
}

ValueId GradBuilder::sum_to_shape(ValueId g, Shape target) {
  Shape s = shape(g);
  if (s == target) return g;
  int lead = s.rank() - target.rank();
  WEFT_CHECK(lead >= 0, "sum_to_shape: target has a higher rank");
  IntList axes;
  for (int i = 0; i < s.rank(); ++i) {
    if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(i);
  }
  ValueId summed = op(Op::Sum, {g}, {{"axes", axes}, {"keepdims", true}});
  return op(Op::Reshape, {summed}, {{"shape", target.dims}});
}

const GradEntry& grad_entry(Op op) {
  static const grad_rules::Table table = [] {
    grad_rules::Table t{};
    grad_rules::add_elementwise(t);
    grad_rules::add_reduction(t);
    grad_rules::add_movement(t);
    grad_rules::add_nn(t);
    grad_rules::add_composite(t);
    return t;
  }();
  return table[static_cast<int>(op)];
}

StatusOr<std::vector<ValueId>> append_gradients(Graph& g, ValueId output,
                                                const std::vector<ValueId>& wrt, ValueId seed) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  const Type out_type = g.type(output);
  if (seed == kNoValue && (out_type.shape.rank() != 0 || !is_floating(out_type.dtype))) {
    return Error{"cannot differentiate %" + g.value(output).name + " of type " +
                 out_type.to_string() + ": the output must be a float scalar, or a seed (its "
                 "cotangent) must be given"};
  }
  // Differentiate only nodes on a path from some wrt value to the output.
  std::vector<bool> from_wrt(g.num_values(), false), to_output(g.num_values(), false);
  for (ValueId v : wrt) from_wrt[v] = true;
  for (int i = 0; i < num_nodes; ++i) {
    const Node& n = g.node(i);
    bool any = std::any_of(n.operands.begin(), n.operands.end(), [&](ValueId o) { return from_wrt[o]; });
    // `|=`, not `=`: a wrt value may be a node's result (an intermediate), not an input.
    for (ValueId r : n.results) from_wrt[r] = from_wrt[r] || any;
  }
  to_output[output] = true;
  for (int i = num_nodes - 1; i >= 0; --i) {
    const Node& n = g.node(i);
    if (n.result() == kNoValue || !to_output[n.result()]) continue;
    for (ValueId o : n.operands) to_output[o] = true;
  }
  auto needs_grad = [&](ValueId v) {
    return from_wrt[v] && to_output[v] && is_floating(g.type(v).dtype);
  };

  std::vector<ValueId> grads(g.num_values(), kNoValue);
  {
    GradBuilder b(g, g.value(output).node >= 0 ? g.node(g.value(output).node).loc : Location{});
    grads[output] = seed != kNoValue ? seed : b.constant(1.0, out_type.dtype);
  }
  for (int i = num_nodes - 1; i >= 0; --i) {
    const Node n = g.node(i);  // a copy: rules append nodes, which may move the vector
    if (n.result() == kNoValue || grads[n.result()] == kNoValue || !needs_grad(n.result())) continue;
    bool any_operand = std::any_of(n.operands.begin(), n.operands.end(), needs_grad);
    if (!any_operand) continue;
    const GradEntry& entry = grad_entry(n.op);
    if (entry.rule == nullptr) {
      std::string why = entry.not_differentiable ? entry.not_differentiable : "no gradient rule";
      return Error{"cannot differentiate through " + std::string(op_name(n.op)) + " (" + why +
                       "), but the gradient w.r.t. one of its operands is needed",
                   n.loc};
    }
    GradBuilder b(g, n.loc);
    std::vector<ValueId> operand_grads = entry.rule(b, n, grads[n.result()]);
    WEFT_CHECK(operand_grads.size() == n.operands.size(),
               std::string(op_name(n.op)) + "'s gradient rule returned the wrong count");
    for (size_t k = 0; k < n.operands.size(); ++k) {
      ValueId o = n.operands[k];
      ValueId d = operand_grads[k];
      if (d == kNoValue || !needs_grad(o)) continue;
      d = b.sum_to_shape(d, g.type(o).shape);
      WEFT_CHECK(g.type(d) == g.type(o), std::string(op_name(n.op)) + "'s gradient for operand " +
                                             std::to_string(k) + " is " + g.type(d).to_string() +
                                             ", not " + g.type(o).to_string());
      grads[o] = grads[o] == kNoValue ? d : b.add(grads[o], d);
    }
  }
  std::vector<ValueId> out;
  for (ValueId v : wrt) {
    if (grads[v] != kNoValue) {
      out.push_back(grads[v]);
    } else {
      GradBuilder b(g, Location{});
      out.push_back(b.zeros(g.type(v)));
    }
  }
  return out;
}

StatusOr<Graph> gradient_graph(const Graph& source, int output, const std::vector<std::string>& wrt,
                               const std::string& seed_name) {
  if (output < 0 || output >= static_cast<int>(source.outputs().size())) {
    return Error{"graph @" + source.name() + " has " + std::to_string(source.outputs().size()) +
                 " outputs; there is no output " + std::to_string(output)};
  }
  Graph g = source;
  g.set_name(source.name() + "_grad");
  std::vector<bool> keep;
  for (const Node& n : g.nodes()) keep.push_back(n.op != Op::Assign);
  g.remove_nodes(keep);
  std::vector<ValueId> wrt_values;
  std::string inputs;
  for (const Input& in : g.inputs()) inputs += (inputs.empty() ? "%" : ", %") + g.value(in.value).name;
  for (const std::string& name : wrt) {
    auto v = g.find_value(name);
    if (!v || g.input_index(*v) < 0) {
      return Error{"cannot differentiate w.r.t. %" + name + ": @" + source.name() +
                   " has no input of that name; its inputs are " + inputs};
    }
    const Input& in = g.inputs()[g.input_index(*v)];
    if (!is_floating(g.type(*v).dtype)) {
      return Error{"cannot differentiate w.r.t. %" + name + ": it is " + g.type(*v).to_string() +
                       ", and only floating-point inputs have gradients",
                   in.loc};
    }
    wrt_values.push_back(*v);
  }
  ValueId out = g.outputs()[output];
  ValueId seed = kNoValue;
  if (!seed_name.empty()) {
    if (g.find_value(seed_name)) {
      return Error{"cannot name the seed input %" + seed_name + ": @" + source.name() +
                   " already has a value of that name"};
    }
    seed = g.add_input(seed_name, g.type(out));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<ValueId> grads, append_gradients(g, out, wrt_values, seed));
  g.set_outputs(grads);
  g.set_declared_output_types({});
  return g;
}

}  // namespace weft
