#include "tools/viz/cpu_viz.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "codegen/lower.h"
#include "passes/merge_updates.h"

namespace weft::viz {

StatusOr<MemoryPlan> cpu_memory_plan(const Graph& g) {
  // updates_in_place reads types: report an untyped graph as plan_memory does.
  for (const Node& node : g.nodes()) {
    for (ValueId v : node.results) {
      if (!g.value(v).type) {
        return Error{"memory planning: %" + g.value(v).name +
                         " has no type (run infer-types first)",
                     node.loc};
      }
    }
  }
  PlanOptions options;
  options.external = updates_in_place(g);
  return plan_memory(g, options);
}

namespace {

// Tags of values that fusion folded into a kernel's body move to the fused node that
// computes them: the body node with the tagged value's producer's op and location (body
// nodes keep their own locations), shown as `#tag (fused)`.
std::map<std::string, std::string> follow_tags_into_kernels(const Graph& before, const Graph& after,
                                                            const std::map<std::string, std::string>& tags) {
  std::map<std::string, std::string> out;
  for (const auto& [name, tag] : tags) {
    if (after.find_value(name)) {
      out[name] += (out[name].empty() ? "" : ", ") + tag;
      continue;
    }
    const std::optional<ValueId> v = before.find_value(name);
    if (!v || before.value(*v).node < 0) continue;
    const Node& producer = before.node(before.value(*v).node);
    for (const Node& n : after.nodes()) {
      if (n.op != Op::Fused || !n.body) continue;
      const bool inside = std::any_of(n.body->nodes().begin(), n.body->nodes().end(), [&](const Node& b) {
        return b.op == producer.op && b.loc == producer.loc;
      });
      if (!inside) continue;
      std::string& t = out[after.value(n.result()).name];
      t += (t.empty() ? "" : ", ") + tag + " (fused)";
      break;
    }
  }
  return out;
}

}  // namespace

StatusOr<std::string> cpu_graph_to_html(Graph g, VizOptions options) {
  const Graph before = g;
  WEFT_RETURN_IF_ERROR(codegen::cpu_pipeline().run(g).status());
  options.tags = follow_tags_into_kernels(before, g, options.tags);
  WEFT_ASSIGN_OR_RETURN(MemoryPlan plan, cpu_memory_plan(g));
  options.plan = &plan;
  options.backend = "cpu";
  if (options.after_pass.empty()) options.after_pass = "schedule-memory";
  return graph_to_html(g, options);
}

}  // namespace weft::viz
