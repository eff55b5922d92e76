#include "passes/prune_scan_results.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/scan.h"
#include "passes/dce.h"

namespace weft {
namespace {

// For each result of scan node `n`: itself (kept), another result of `n` (the same body
// value, stacked once), or kNoValue (nothing reads it).
std::vector<ValueId> plan(const Node& n, const std::vector<int>& reads) {
  const Graph& body = *n.body;
  const size_t carries = static_cast<size_t>(n.int_attr("carries"));
  std::vector<ValueId> to(n.results.begin(), n.results.end());
  std::map<ValueId, ValueId> first;  // body value -> the result that stacks it
  for (size_t j = carries; j < n.results.size(); ++j) {
    if (reads[n.results[j]] == 0) {
      to[j] = kNoValue;
      continue;
    }
    auto [it, inserted] = first.emplace(body.outputs()[j], n.results[j]);
    if (!inserted) to[j] = it->second;
  }
  // A loop that no longer has any result is dead as a whole; keep one for dce to judge.
  bool any = false;
  for (size_t j = 0; j < to.size(); ++j) any = any || to[j] == n.results[j];
  if (!any) to[0] = n.results[0];
  return to;
}

bool pruned(const Node& n, const std::vector<ValueId>& to) {
  for (size_t j = 0; j < to.size(); ++j) {
    if (to[j] != n.results[j]) return true;
  }
  return false;
}

bool prune(Graph& g) {
  bool any = false;
  for (Node& n : g.mutable_nodes()) {
    if (n.op != Op::Scan || !n.body) continue;
    Graph body = *n.body;
    if (prune(body)) {
      n.body = std::make_shared<const Graph>(std::move(body));
      any = true;
    }
  }
  std::vector<int> reads(g.num_values(), 0);
  for (const Node& n : g.nodes()) {
    for (ValueId o : n.operands) ++reads[o];
  }
  for (ValueId o : g.outputs()) ++reads[o];
  bool changes = false;
  for (const Node& n : g.nodes()) {
    changes = changes || (n.op == Op::Scan && n.body && pruned(n, plan(n, reads)));
  }
  if (!changes) return any;

  std::vector<ValueId> map;
  Graph out = rebuild_inputs(g, map);
  const std::function<std::string(ValueId)> same_name = [&](ValueId v) { return g.value(v).name; };
  for (const Node& n : g.nodes()) {
    const std::vector<ValueId> to = n.op == Op::Scan && n.body ? plan(n, reads) : std::vector<ValueId>{};
    if (to.empty() || !pruned(n, to)) {
      copy_node(out, g, n, map, same_name);
      continue;
    }
    // The body with the kept outputs only, then cleared of what computed the others.
    Graph inner = *n.body;
    std::vector<ValueId> outputs;
    std::vector<size_t> kept;
    for (size_t j = 0; j < to.size(); ++j) {
      if (to[j] != n.results[j]) continue;
      outputs.push_back(n.body->outputs()[j]);
      kept.push_back(j);
    }
    inner.set_outputs(std::move(outputs));
    if (!inner.declared_output_types().empty()) {
      std::vector<Type> types;
      for (size_t j : kept) types.push_back(inner.declared_output_types()[j]);
      inner.set_declared_output_types(std::move(types));
    }
    StatusOr<bool> dce = DcePass().run(inner);
    WEFT_CHECK(dce.ok(), "prune-scan-results: dce failed on a loop body: " + dce.status().to_string());
    std::vector<ValueId> operands;
    for (ValueId o : n.operands) operands.push_back(map[o]);
    copy_loop(out, g, n, std::move(operands), n.attrs, std::make_shared<const Graph>(std::move(inner)), kept, map);
    for (size_t j = 0; j < to.size(); ++j) {
      if (to[j] != kNoValue && to[j] != n.results[j]) map[n.results[j]] = map[to[j]];
    }
  }
  rebuild_outputs(g, std::move(out), map);
  return true;
}

}  // namespace

StatusOr<bool> PruneScanResultsPass::run(Graph& g) { return prune(g); }

}  // namespace weft
