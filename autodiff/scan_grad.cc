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
// and the xs' stacked gradients. A const's gradient terms that are a product of two
// per-iteration values (a weight's xᵀ·g) or a reduction of one (a bias's column sum)
// are not summed in the loop: their operands are stacked (most are already: saved
// activations, the xs, the cotangents) and one product over every iteration's rows, or
// one reduction, follows the loop (JAX's split transpose): one large GEMM instead of
// `length` small ones and an accumulator carried through the loop. A select's gradient sends nothing to the branch it did
// not take, so a masked (halted) sample's iterations pass its cotangent through
// unchanged: per-sample halting needs no code here.

#include <algorithm>
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
  // An early exit (stop, active): the forward loop also stacks a flag per iteration, true
  // where it ran (a slot it skipped is zero: false), and the reverse loop runs where that
  // flag is (its `active`): exactly the iterations that ran, in reverse.
  const bool exits = scan_exit(node).any();
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
  if (exits) {
    forward->add_output(*add_typed_node(*forward, Op::Full, {},
                                        {{"shape", IntList{}}, {"value", 1.0}, {"dtype", DType::boolean}}, node.loc));
  }
  g.node(index).body = forward;
  std::vector<ValueId> stacked;
  for (int k = outputs; k < static_cast<int>(forward->outputs().size()); ++k) {
    const Type t = result_type(g.node(index), static_cast<size_t>(k), g.type(node.result()));
    stacked.push_back(g.add_result(index, "", t));
  }

  // 5. The reverse body: inputs (consts, carries, xs), then the backward nodes.
  Graph reverse("grad_" + body->name());
  std::vector<ValueId> inner(grad.num_values(), kNoValue);  // `grad` value -> reverse-body value
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
  // A const's gradient is a sum over the iterations. Its terms that are a product of two
  // per-iteration values (a weight's xᵀ·g) or a reduction of one (a bias's column sum of
  // g), possibly reshaped or transposed, move out of the loop: the loop stacks their
  // operands, and one product over all iterations' rows (or one reduction) follows it
  // (JAX's split transpose). The other terms are summed in the loop, in a carry.
  std::vector<bool> per_iteration(grad.num_values(), false);
  for (int i = consts; i < inputs; ++i) per_iteration[body->inputs()[i].value] = true;
  for (ValueId s : seed_of) {
    if (s != kNoValue) per_iteration[s] = true;
  }
  for (const Node& n : grad.nodes()) {
    bool any = false;
    for (ValueId o : n.operands) any = any || per_iteration[o];
    for (ValueId r : n.results) per_iteration[r] = any;
  }
  struct Moved {
    int constant;                     // the body input it is a gradient term of
    std::vector<const Node*> peeled;  // reshapes and transposes around the core, outermost first
    const Node* core;                 // matmul or sum
    std::vector<ValueId> operands;    // per iteration: the core's operands (transposes peeled)
    std::vector<bool> transposed;     // whether each was transposed (matmul: [1,0])
    std::vector<ValueId> stacked;     // each operand stacked over the iterations, in g
  };
  std::vector<Moved> moved;
  std::map<int, std::vector<ValueId>> kept;  // const -> terms summed in the loop
  auto backward_node = [&](ValueId v) -> const Node* {
    const int at = grad.value(v).node;
    return at >= forward_nodes ? &grad.node(at) : nullptr;
  };
  std::function<void(int, ValueId)> split = [&](int i, ValueId v) {
    const Node* n = backward_node(v);
    if (n != nullptr && n->op == Op::Add && grad.type(n->operands[0]) == grad.type(v) &&
        grad.type(n->operands[1]) == grad.type(v)) {
      split(i, n->operands[0]);
      split(i, n->operands[1]);
      return;
    }
    Moved m{i, {}, nullptr, {}, {}, {}};
    ValueId c = v;
    for (const Node* p = backward_node(c); p && (p->op == Op::Reshape || p->op == Op::Transpose);
         p = backward_node(c)) {
      m.peeled.push_back(p);
      c = p->operands[0];
    }
    const Node* core = backward_node(c);
    const bool product = core && core->op == Op::Matmul && !core->bool_attr("transpose_a") &&
                         !core->bool_attr("transpose_b") && grad.type(core->operands[0]).shape.rank() == 2 &&
                         grad.type(core->operands[1]).shape.rank() == 2 &&
                         per_iteration[core->operands[0]] && per_iteration[core->operands[1]];
    const bool reduction = core && core->op == Op::Sum && per_iteration[core->operands[0]];
    if (product || reduction) {
      m.core = core;
      for (ValueId o : core->operands) {
        const Node* t = backward_node(o);
        const bool flip = product && t && t->op == Op::Transpose && t->ints_attr("perm") == IntList{1, 0};
        m.operands.push_back(flip ? t->operands[0] : o);
        m.transposed.push_back(flip);
      }
      moved.push_back(std::move(m));
    } else {
      kept[i].push_back(v);
    }
  };
  for (const auto& [i, v] : grad_of) {
    if (role(i) == 0) split(i, v);
  }
  for (const auto& [i, terms] : kept) {
    accumulators.push_back(reverse.add_input("", body->type(body->inputs()[i].value)));
    accumulated.push_back(i);
    operands.push_back(outer.zeros(body->type(body->inputs()[i].value)));
  }
  const int reverse_carries = static_cast<int>(operands.size()) - reverse_consts;
  // What the reverse loop reads per iteration, with the stacked value it reads it from.
  std::map<ValueId, ValueId> stacked_as;
  auto add_xs = [&](ValueId v, ValueId source) {
    inner[v] = reverse.add_input("", grad.type(v));
    operands.push_back(source);
    stacked_as[v] = source;
  };
  for (size_t s = 0; s < saved.size(); ++s) add_xs(saved[s], stacked[s]);
  {
    size_t s = saved.size();
    for (int i : used_carries) add_xs(body->inputs()[i].value, stacked[s++]);
  }
  for (int i : used_xs) add_xs(body->inputs()[i].value, node.operands[i]);
  for (int k : used_seeds) add_xs(seed_of[k], cotangents[k]);
  int64_t active = -1;  // the reverse loop's xs that says which iterations ran
  if (exits) {
    active = static_cast<int64_t>(operands.size()) - reverse_consts - reverse_carries;
    reverse.add_input("ran", Type{DType::boolean, Shape({})});
    operands.push_back(stacked.back());
  }
  std::function<ValueId(ValueId)> build = [&](ValueId v) -> ValueId {
    if (inner[v] != kNoValue) return inner[v];
    const Node& n = grad.node(grad.value(v).node);
    for (ValueId o : n.operands) build(o);
    copy_node(reverse, grad, n, inner, [](ValueId) { return std::string(); });
    return inner[v];
  };
  for (int k : carry_ct) reverse.add_output(build(grad_of.at(consts + k)));
  for (size_t a = 0; a < accumulators.size(); ++a) {
    ValueId sum = accumulators[a];
    for (ValueId term : kept.at(accumulated[a])) {
      const ValueId t = build(term);
      sum = reverse.add_node(Op::Add, {sum, t}, {}, node.loc, reverse.type(t));
    }
    reverse.add_output(sum);
  }
  std::vector<int> x_grads;
  for (const auto& [i, v] : grad_of) {
    if (role(i) != 2) continue;
    reverse.add_output(build(v));
    x_grads.push_back(i);
  }
  // A moved term's operands: stacked already when the loop reads them per iteration (a
  // saved forward value, an x, a cotangent), else stacked by the loop as further ys.
  // With an early exit, the product after the loop also reads the slots that did not
  // run, so every operand must be zero there: saved values are (the forward loop left
  // those slots zero), but an x or a cotangent holds whatever the caller put there (NaN
  // past a padded sequence's end, and NaN·0 is NaN). Those are stacked again by the
  // reverse loop, which writes only the slots that ran.
  auto caller_stacked = [&](ValueId o) {
    const int i = body_input(o);
    return (i >= 0 && role(i) == 2) || seed_output(o) >= 0;
  };
  std::vector<std::pair<Moved*, size_t>> stacked_by_loop;  // (term, operand) per extra y
  for (Moved& m : moved) {
    for (size_t k = 0; k < m.operands.size(); ++k) {
      auto it = stacked_as.find(m.operands[k]);
      const bool reuse = it != stacked_as.end() && !(exits && caller_stacked(m.operands[k]));
      m.stacked.push_back(reuse ? it->second : kNoValue);
      if (reuse) continue;
      reverse.add_output(build(m.operands[k]));
      stacked_by_loop.push_back({&m, k});
    }
  }
  if (reverse.outputs().empty() && moved.empty()) return none;

  // 6. The reverse scan (none when every gradient is a moved term of values the forward
  //    loop stacked already: a map over slots), and each operand's gradient.
  StatusOr<std::vector<ValueId>> results = std::vector<ValueId>{};
  if (!reverse.outputs().empty()) {
    ScanShape shape{length, reverse_carries, reverse_consts, !node.bool_attr("reverse"), false, -1, active};
    results = add_scan(g, operands, shape, std::make_shared<const Graph>(std::move(reverse)), node.loc);
    WEFT_CHECK(results.ok(), "the gradient of a loop is ill-typed: " + results.status().to_string());
  }
  std::vector<ValueId> out = none;
  size_t r = 0;
  for (int k : carry_ct) out[consts + k] = (*results)[r++];
  for (int i : accumulated) out[i] = (*results)[r++];
  for (int i : x_grads) out[i] = (*results)[r++];
  for (const auto& [m, k] : stacked_by_loop) m->stacked[k] = (*results)[r++];
  // The moved terms, over every iteration at once: Σ_t A_t·B_t = [A_0 … A_T-1]·[B_0; …; B_T-1]
  // (the slots side by side along the contracted axis), Σ_t sum(G_t) = sum over the slots
  // too; then the reshapes and transposes that were around them.
  for (const Moved& m : moved) {
    const Type term = grad.type(m.peeled.empty() ? m.core->result() : m.peeled.front()->result());
    ValueId v;
    if (m.core->op == Op::Matmul) {
      // A_t [m, k] stacked [T, m, k] -> [m, T·k]; B_t [k, n] stacked [T, k, n] -> [T·k, n].
      // A transposed operand is stacked untransposed: A_t = P_tᵀ, P stacked [T, k, m] is
      // [T·k, m], transposed; B_t = Q_tᵀ, Q stacked [T, n, k] is [n, T·k], transposed.
      auto lhs = [&]() {
        const Shape s = outer.shape(m.stacked[0]);
        if (m.transposed[0]) {
          return outer.op(Op::Transpose, {outer.op(Op::Reshape, {m.stacked[0]}, {{"shape", IntList{s[0] * s[1], s[2]}}})},
                          {{"perm", IntList{1, 0}}});
        }
        return outer.op(Op::Reshape, {outer.op(Op::Transpose, {m.stacked[0]}, {{"perm", IntList{1, 0, 2}}})},
                        {{"shape", IntList{s[1], s[0] * s[2]}}});
      };
      auto rhs = [&]() {
        const Shape s = outer.shape(m.stacked[1]);
        if (m.transposed[1]) {
          return outer.op(Op::Transpose,
                          {outer.op(Op::Reshape, {outer.op(Op::Transpose, {m.stacked[1]}, {{"perm", IntList{1, 0, 2}}})},
                                    {{"shape", IntList{s[1], s[0] * s[2]}}})},
                          {{"perm", IntList{1, 0}}});
        }
        return outer.op(Op::Reshape, {m.stacked[1]}, {{"shape", IntList{s[0] * s[1], s[2]}}});
      };
      v = outer.op(Op::Matmul, {lhs(), rhs()});
    } else {
      // sum(G_t, axes) over the slots: the slot axis too.
      const ValueId x = m.stacked[0];
      const int rank = outer.shape(x).rank() - 1;
      IntList axes = {0};
      if (const Attribute* given = m.core->attr("axes")) {
        for (int64_t a : std::get<IntList>(*given)) axes.push_back((a < 0 ? a + rank : a) + 1);
      } else {
        for (int a = 0; a < rank; ++a) axes.push_back(a + 1);
      }
      v = outer.op(Op::Sum, {x}, {{"axes", axes}, {"keepdims", m.core->bool_attr("keepdims")}});
      if (m.core->bool_attr("keepdims")) {
        v = outer.op(Op::Reshape, {v}, {{"shape", grad.type(m.core->result()).shape.dims}});
      }
    }
    for (auto p = m.peeled.rbegin(); p != m.peeled.rend(); ++p) v = outer.op((*p)->op, {v}, (*p)->attrs);
    if (outer.type(v) != term) v = outer.op(Op::Reshape, {v}, {{"shape", term.shape.dims}});
    out[m.constant] = out[m.constant] == kNoValue ? v : outer.add(out[m.constant], v);
  }
  return out;
}

}  // namespace weft::grad_rules
