#include "passes/hoist_loop_invariants.h"

#include "ir/scan.h"

#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/fold_constants.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace weft {
namespace {

bool movable(const Node& n) {
  return n.info().category != OpCategory::State && n.op != Op::RandomUniform &&
         n.op != Op::RandomBernoulli;
}

// Rebuilds `g` with every loop's invariants hoisted; true when any moved.
bool hoist(Graph& g);

// A fresh name in `g` based on `base`.
std::string fresh(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.find_value(name); ++k) name = base + "." + std::to_string(k);
  return name;
}

bool hoist(Graph& g) {
  bool any = false;
  // Each body simplified as the default pipeline does the outer graph (a gradient
  // loop's body comes straight from autodiff), and its own loops hoisted first: their
  // invariants may make more of this graph's nodes invariant.
  for (Node& n : g.mutable_nodes()) {
    if (n.op != Op::Scan || !n.body) continue;
    Graph body = *n.body;
    bool changed = false;
    std::vector<std::unique_ptr<Pass>> simplify;
    simplify.push_back(std::make_unique<CanonicalizePass>());
    simplify.push_back(std::make_unique<FoldConstantsPass>());
    simplify.push_back(std::make_unique<DcePass>());
    simplify.push_back(std::make_unique<CsePass>());
    for (const std::unique_ptr<Pass>& pass : simplify) {
      StatusOr<bool> r = pass->run(body);
      WEFT_CHECK(r.ok(), "hoist-loop-invariants: " + std::string(pass->name()) + " failed on a loop body: " +
                             r.status().to_string());
      changed = changed || *r;
    }
    changed = hoist(body) || changed;
    if (changed) {
      n.body = std::make_shared<const Graph>(std::move(body));
      any = true;
    }
  }
  std::vector<ValueId> map;
  Graph out = rebuild_inputs(g, map);
  const std::function<std::string(ValueId)> same_name = [&](ValueId v) { return g.value(v).name; };
  for (const Node& n : g.nodes()) {
    if (n.op != Op::Scan || !n.body) {
      copy_node(out, g, n, map, same_name);
      continue;
    }
    const Graph& body = *n.body;
    const size_t consts = static_cast<size_t>(n.int_attr("consts"));
    std::vector<bool> invariant(body.num_values(), false);
    for (size_t k = 0; k < consts; ++k) invariant[body.inputs()[k].value] = true;
    std::vector<bool> hoisted(body.nodes().size(), false);
    for (size_t i = 0; i < body.nodes().size(); ++i) {
      const Node& b = body.node(static_cast<int>(i));
      if (!movable(b) || b.results.empty()) continue;
      if (!std::all_of(b.operands.begin(), b.operands.end(), [&](ValueId o) { return invariant[o]; })) continue;
      hoisted[i] = true;
      for (ValueId r : b.results) invariant[r] = true;
    }
    // Hoisted values the rest of the body (or its outputs) reads become consts.
    std::vector<bool> needed(body.num_values(), false);
    for (size_t i = 0; i < body.nodes().size(); ++i) {
      if (hoisted[i]) continue;
      for (ValueId o : body.node(static_cast<int>(i)).operands) needed[o] = true;
    }
    for (ValueId o : body.outputs()) needed[o] = true;
    if (std::none_of(hoisted.begin(), hoisted.end(), [](bool h) { return h; })) {
      copy_node(out, g, n, map, same_name);
      continue;
    }
    any = true;
    // The hoisted nodes, before the loop, on the loop's const operands.
    std::vector<ValueId> outer(body.num_values(), kNoValue);
    for (size_t k = 0; k < consts; ++k) outer[body.inputs()[k].value] = map[n.operands[k]];
    const std::string prefix = g.value(n.result()).name + ".";
    for (size_t i = 0; i < body.nodes().size(); ++i) {
      if (!hoisted[i]) continue;
      copy_node(out, body, body.node(static_cast<int>(i)), outer,
                [&](ValueId v) -> std::string { return fresh(out, fresh(g, prefix + body.value(v).name)); });
    }
    // The new body: the old consts, the hoisted values it reads, then carries and xs.
    BodyRebuilder inner(body);
    std::vector<ValueId> operands;
    inner.inputs(0, consts);
    for (size_t k = 0; k < consts; ++k) operands.push_back(map[n.operands[k]]);
    int64_t added = 0;
    for (size_t i = 0; i < body.nodes().size(); ++i) {
      if (!hoisted[i]) continue;
      inner.skip(static_cast<int>(i));
      for (ValueId r : body.node(static_cast<int>(i)).results) {
        if (!needed[r]) continue;
        inner.input_for(r);
        operands.push_back(outer[r]);
        ++added;
      }
    }
    inner.inputs(consts, body.inputs().size());
    for (size_t k = consts; k < body.inputs().size(); ++k) operands.push_back(map[n.operands[k]]);
    inner.copy_nodes();
    Attrs attrs = n.attrs;
    attrs["consts"] = static_cast<int64_t>(consts) + added;
    std::vector<size_t> all(n.results.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    copy_loop(out, g, n, std::move(operands), std::move(attrs), std::make_shared<const Graph>(std::move(inner).finish()),
              all, map);
  }
  if (!any) return false;
  rebuild_outputs(g, std::move(out), map);
  return true;
}

}  // namespace

StatusOr<bool> HoistLoopInvariantsPass::run(Graph& g) { return hoist(g); }

}  // namespace weft
