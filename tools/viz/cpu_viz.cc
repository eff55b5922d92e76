#include "tools/viz/cpu_viz.h"

#include "codegen/lower.h"

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
  options.external = codegen::updates_in_place(g);
  return plan_memory(g, options);
}

StatusOr<std::string> cpu_graph_to_html(Graph g, VizOptions options) {
  WEFT_RETURN_IF_ERROR(codegen::cpu_pipeline().run(g).status());
  WEFT_ASSIGN_OR_RETURN(MemoryPlan plan, cpu_memory_plan(g));
  options.plan = &plan;
  options.backend = "cpu";
  if (options.after_pass.empty()) options.after_pass = "schedule-memory";
  return graph_to_html(g, options);
}

}  // namespace weft::viz
