// The gradient of a loop (`scan`, ir/ops.def) is a loop running the other way.
//
// The body's own gradient graph is built once (append_gradients on a copy of the body,
// seeded with the cotangents of its next carries and per-iteration outputs). Its
// backward nodes become the body of a reverse scan that carries the cotangent of each
// float carry and an accumulator per const, and reads per iteration:
//  - the forward values it needs: the results of products and reductions saved by the
//    forward scan (its body gains outputs, so it stacks them: [length, ...] each, in
//    buffers the memory planner sizes), elementwise and movement results recomputed
//    from them; with the scan's `remat`, only the carries are saved and everything is
//    recomputed (less memory, one more forward pass of the body). Values that depend on
//    the consts alone are recomputed either way;
//  - the slices of the xs it reads, and the cotangents of the ys.
// Its results are the cotangents of the initial carries, the consts' summed gradients
// and the xs' stacked gradients. A select's gradient sends nothing to the branch it did
// not take, so a masked (halted) sample's iterations pass its cotangent through
// unchanged: per-sample halting needs no code here.

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "autodiff/rules.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"

namespace weft::grad_rules {

StatusOr<std::vector<ValueId>> scan_gradients(Graph& g, int index,
                                              const std::vector<ValueId>& cotangents,
                                              const std::vector<bool>& needs) {
  const Node node = g.node(index);  // a copy: g grows below
  const std::shared_ptr<const Graph> body = node.body;
  const int64_t length = node.int_attr("length");
  const int consts = static_cast<int>(node.int_attr("consts"));
  const int carries = static_cast<int>(node.int_attr("carries"));
  const int inputs = static_cast<int>(body->inputs().size());
  const int outputs = static_cast<int>(body->outputs().size());
  const bool remat = node.bool_attr("remat");
  std::vector<ValueId> none(node.operands.size(), kNoValue);

  // 1. The body and its gradient in one graph: seeds for the float carries (always: a
  //    carry's cotangent flows through every iteration) and for the ys given one.
  Graph grad = *body;
  const int forward_nodes = static_cast<int>(grad.nodes().size());
  std::vector<std::pair<ValueId, ValueId>> seeds;
  std::vector<ValueId> seed_of(outputs, kNoValue);
  for (int k = 0; k < outputs; ++k) {
    const Type t = body->type(body->outputs()[k]);
    if (!is_floating(t.dtype) || (k >= carries && cotangents[k] == kNoValue)) continue;
    seed_of[k] = grad.add_input("", t);
    seeds.push_back({body->outputs()[k], seed_of[k]});
  }
  if (seeds.empty()) return none;
  auto role = [&](int i) { return i < consts ? 0 : i < consts + carries ? 1 : 2; };
  std::vector<ValueId> wrt;
  std::vector<int> wrt_input;  // the body input of each wrt entry
  for (int i = 0; i < inputs; ++i) {
    const ValueId v = body->inputs()[i].value;
    if (!is_floating(body->type(v).dtype) || !(role(i) == 1 || needs[i])) continue;
    wrt.push_back(v);
    wrt_input.push_back(i);
  }
  StatusOr<std::vector<ValueId>> grads = append_gradients(grad, seeds, wrt);
  if (!grads.ok()) {
    return Error{"in the body of a loop: " + grads.error().message, grads.error().loc};
  }
  std::map<int, ValueId> grad_of;  // body input -> its gradient in `grad`
  for (size_t w = 0; w < wrt.size(); ++w) grad_of[wrt_input[w]] = (*grads)[w];

  // 2. Which forward values vary per iteration (they read a carry or an x).
  std::vector<bool> variant(grad.num_values(), false);
  for (int i = consts; i < inputs; ++i) variant[body->inputs()[i].value] = true;
  for (int n = 0; n < forward_nodes; ++n) {
    bool any = false;
    for (ValueId o : grad.node(n).operands) any = any || variant[o];
    for (ValueId r : grad.node(n).results) variant[r] = any;
  }
  auto body_input = [&](ValueId v) { return grad.input_index(v) < inputs ? grad.input_index(v) : -1; };
  auto seed_output = [&](ValueId v) {
    for (int k = 0; k < outputs; ++k) {
      if (seed_of[k] == v) return k;
    }
    return -1;
  };
  auto is_forward = [&](ValueId v) {
    const int at = grad.value(v).node;
    return at >= 0 && at < forward_nodes;
  };

  // 3. What the reverse body reads: consts, stacked carries, x slices, y cotangents,
  //    saved forward values; everything else it recomputes. Saved are the results of
  //    products, reductions and the like; elementwise and movement ops are recomputed
  //    from them (JAX's "dots saveable" policy): they cost less to redo, fused into the
  //    reverse body's kernels, than to stack and read back.
  auto cheap = [](const Node& n) {
    const OpCategory c = n.info().category;
    return c == OpCategory::Elementwise || c == OpCategory::Movement;
  };
  std::set<int> used_consts, used_carries, used_xs, used_seeds;
  std::vector<ValueId> saved;
  std::set<ValueId> seen;
  std::function<void(ValueId)> visit = [&](ValueId v) {
    if (!seen.insert(v).second) return;
    if (const int i = body_input(v); i >= 0) {
      (role(i) == 0 ? used_consts : role(i) == 1 ? used_carries : used_xs).insert(i);
      return;
    }
    if (const int k = seed_output(v); k >= 0) {
      if (k >= carries) used_seeds.insert(k);
      return;
    }
    if (is_forward(v) && variant[v] && !remat && !cheap(grad.node(grad.value(v).node))) {
      saved.push_back(v);
      return;
    }
    for (ValueId o : grad.node(grad.value(v).node).operands) visit(o);
  };
  for (const auto& [i, v] : grad_of) visit(v);

  // 4. The forward scan also stacks the saved values and the carries the reverse body
  //    reads: its body gains outputs, the node results.
  //    Its nodes are taken from `grad`, where differentiating a nested loop rewrote it.
  auto forward = std::make_shared<Graph>(body->name());
  std::vector<ValueId> fmap(grad.num_values(), kNoValue);
  for (int i = 0; i < inputs; ++i) {
    const ValueId v = body->inputs()[i].value;
    fmap[v] = forward->add_input(body->value(v).name, body->type(v), body->inputs()[i].kind);
  }
  for (int n = 0; n < forward_nodes; ++n) {
    copy_node(*forward, grad, grad.node(n), fmap, [&](ValueId r) { return grad.value(r).name; });
  }
  for (ValueId v : body->outputs()) forward->add_output(fmap[v]);
  for (ValueId v : saved) forward->add_output(fmap[v]);
  for (int i : used_carries) forward->add_output(fmap[body->inputs()[i].value]);
  g.node(index).body = forward;
  std::vector<ValueId> stacked;
  for (int k = outputs; k < static_cast<int>(forward->outputs().size()); ++k) {
    const Type t = result_type(g.node(index), static_cast<size_t>(k), g.type(node.result()));
    stacked.push_back(g.add_result(index, "", t));
  }

  // 5. The reverse body: inputs (consts, carries, xs), then the backward nodes.
  Graph reverse("grad_" + body->name());
  std::map<ValueId, ValueId> inner;  // `grad` value -> reverse-body value
  std::vector<ValueId> operands, carry_ct, accumulators;
  std::vector<int> accumulated;  // the const input of each accumulator
  GradBuilder outer(g, node.loc);
  for (int i : used_consts) {
    inner[body->inputs()[i].value] = reverse.add_input("", body->type(body->inputs()[i].value));
    operands.push_back(node.operands[i]);
  }
  const int reverse_consts = static_cast<int>(operands.size());
  for (int k = 0; k < carries; ++k) {
    if (seed_of[k] == kNoValue) continue;
    inner[seed_of[k]] = reverse.add_input("", grad.type(seed_of[k]));
    carry_ct.push_back(k);
    operands.push_back(cotangents[k] != kNoValue ? cotangents[k]
                                                 : outer.zeros(grad.type(seed_of[k])));
  }
  for (const auto& [i, v] : grad_of) {
    if (role(i) != 0) continue;
    accumulators.push_back(reverse.add_input("", body->type(body->inputs()[i].value)));
    accumulated.push_back(i);
    operands.push_back(outer.zeros(body->type(body->inputs()[i].value)));
  }
  const int reverse_carries = static_cast<int>(operands.size()) - reverse_consts;
  for (size_t s = 0; s < saved.size(); ++s) {
    inner[saved[s]] = reverse.add_input("", grad.type(saved[s]));
    operands.push_back(stacked[s]);
  }
  {
    size_t s = saved.size();
    for (int i : used_carries) {
      inner[body->inputs()[i].value] = reverse.add_input("", body->type(body->inputs()[i].value));
      operands.push_back(stacked[s++]);
    }
  }
  for (int i : used_xs) {
    inner[body->inputs()[i].value] = reverse.add_input("", body->type(body->inputs()[i].value));
    operands.push_back(node.operands[i]);
  }
  for (int k : used_seeds) {
    inner[seed_of[k]] = reverse.add_input("", grad.type(seed_of[k]));
    operands.push_back(cotangents[k]);
  }
  std::vector<ValueId> rmap(grad.num_values(), kNoValue);  // `inner` as copy_node's map
  std::function<ValueId(ValueId)> build = [&](ValueId v) -> ValueId {
    if (auto it = inner.find(v); it != inner.end()) return it->second;
    const Node& n = grad.node(grad.value(v).node);
    for (ValueId o : n.operands) rmap[o] = build(o);
    copy_node(reverse, grad, n, rmap, [](ValueId) { return std::string(); });
    for (ValueId r : n.results) inner[r] = rmap[r];
    return inner.at(v);
  };
  for (int k : carry_ct) reverse.add_output(build(grad_of.at(consts + k)));
  for (size_t a = 0; a < accumulators.size(); ++a) {
    const ValueId sum = build(grad_of.at(accumulated[a]));
    reverse.add_output(reverse.add_node(Op::Add, {accumulators[a], sum}, {}, node.loc,
                                        reverse.type(sum)));
  }
  std::vector<int> x_grads;
  for (const auto& [i, v] : grad_of) {
    if (role(i) != 2) continue;
    reverse.add_output(build(v));
    x_grads.push_back(i);
  }
  if (reverse.outputs().empty()) return none;

  // 6. The reverse scan, and each operand's gradient among its results.
  ScanShape shape{length, reverse_carries, reverse_consts, !node.bool_attr("reverse"), false};
  StatusOr<std::vector<ValueId>> results =
      add_scan(g, operands, shape, std::make_shared<const Graph>(std::move(reverse)), node.loc);
  WEFT_CHECK(results.ok(), "the gradient of a loop is ill-typed: " + results.status().to_string());
  std::vector<ValueId> out = none;
  size_t r = 0;
  for (int k : carry_ct) out[consts + k] = (*results)[r++];
  for (int i : accumulated) out[i] = (*results)[r++];
  for (int i : x_grads) out[i] = (*results)[r++];
  return out;
}

}  // namespace weft::grad_rules
